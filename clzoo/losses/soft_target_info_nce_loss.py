"""Soft-target InfoNCE (Hugger and Uhlmann) for classifiers trained with MixUp / CutMix / label smoothing."""

import keras
import numpy as np
from keras import ops

from clzoo.losses import _contrastive as C

# Soft-target rows must sum to 1 within this tolerance.
_ROW_SUM_TOLERANCE = 1e-3


def _validate_noise_probs(noise_probs):
    if noise_probs is None:
        return None
    probs = np.asarray(noise_probs, dtype=np.float64).reshape(-1)
    if probs.size == 0 or not np.all(np.isfinite(probs)) or np.any(probs <= 0) \
            or abs(probs.sum() - 1.0) > 1e-4:
        raise ValueError(
            "`noise_probs` must be a list of positive class probabilities summing "
            f"to 1. Received: noise_probs={list(np.round(probs, 6))!r} (sum {probs.sum():.6g})"
        )
    return [float(p) for p in probs]


def _concrete(x):
    """NumPy value of `x`, or None while tracing a graph."""
    try:
        return np.asarray(ops.convert_to_numpy(x))
    except Exception:  # symbolic tensors (tf.function, jax.jit) have no value yet
        return None


def soft_target_info_nce_loss(y_true, y_pred, temperature=1.0, noise_probs=None):
    """Soft-target InfoNCE per sample (Hugger and Uhlmann, eq. 12).

    With class scores `s_b = logits_b / temperature - log(eta)` (eta the noise
    prior over classes) and soft targets `t_l` of the batch, sample `b`'s
    positive score is `t_b . s_b` and the other samples' targets `t_l` give
    its noise scores `t_l . s_b`:

        loss_b = -log(exp(t_b . s_b) / (exp(t_b . s_b) + sum_{l != b} exp(t_l . s_b)))

    Args:
        y_true: soft targets, float `(batch, classes)`, rows summing to 1
            (one-hot, MixUp / CutMix mixtures, label smoothing).
        y_pred: classifier logits `(batch, classes)` (scores `z . w_k`).
        temperature: positive float. Defaults to `1.0`.
        noise_probs: class prior eta, `classes` positive floats summing to 1;
            `None` means uniform. Defaults to `None`.

    Returns:
        float32 `(batch,)`.

    Raises:
        ValueError: for a non-positive temperature, bad `noise_probs`, inputs
            not of rank 2 or of different shapes, `noise_probs` of the wrong
            length, or (when values are known) target rows not summing to 1.

    Example:

    >>> import numpy as np, clzoo
    >>> targets = np.eye(3, dtype="float32")[[0, 1, 2, 0]]
    >>> logits = np.random.default_rng(0).normal(size=(4, 3)).astype("float32")
    >>> tuple(clzoo.losses.soft_target_info_nce_loss(targets, logits).shape)
    (4,)

    Reference:
    - Hugger and Uhlmann, Towards noise contrastive estimation with soft
      targets for conditional models, eq. 12
    """
    temperature = C.validate_temperature(temperature)
    noise_probs = _validate_noise_probs(noise_probs)
    y_true = ops.cast(ops.convert_to_tensor(y_true), "float32")
    y_pred = ops.cast(ops.convert_to_tensor(y_pred), "float32")
    if len(y_pred.shape) != 2 or len(y_true.shape) != 2:
        raise ValueError(
            "`y_true` (soft targets) and `y_pred` (logits) must both have shape "
            f"(batch, classes). Received: y_true.shape={tuple(y_true.shape)}, "
            f"y_pred.shape={tuple(y_pred.shape)}"
        )
    if None not in (y_true.shape[-1], y_pred.shape[-1]) and y_true.shape != y_pred.shape \
            and None not in (y_true.shape[0], y_pred.shape[0]):
        raise ValueError(
            "`y_true` and `y_pred` must have the same shape (batch, classes). "
            f"Received: y_true.shape={tuple(y_true.shape)}, y_pred.shape={tuple(y_pred.shape)}"
        )
    classes = y_pred.shape[-1]
    if noise_probs is not None and classes is not None and len(noise_probs) != classes:
        raise ValueError(
            f"`noise_probs` needs one probability per class ({classes}). "
            f"Received: {len(noise_probs)} values"
        )
    targets = _concrete(y_true)
    if targets is not None and targets.size:
        sums = targets.sum(axis=-1)
        if np.any(np.abs(sums - 1.0) > _ROW_SUM_TOLERANCE) or np.any(targets < 0):
            bad = int(np.argmax(np.abs(sums - 1.0)))
            raise ValueError(
                "`y_true` must hold soft targets: non-negative rows summing to 1. "
                f"Received: row {bad} sums to {sums[bad]:.6g}"
            )
    scores = y_pred / temperature
    # A uniform prior adds the same log K to every score (targets sum to 1), so it cancels.
    if noise_probs is not None:
        scores = scores - ops.log(ops.convert_to_tensor(noise_probs, "float32"))
    # pair[b, l] = t_l . s_b
    pair = ops.matmul(scores, ops.transpose(y_true))
    positive = ops.sum(scores * y_true, axis=-1)
    return ops.logsumexp(pair, axis=-1) - positive


@keras.saving.register_keras_serializable(package="clzoo")
class SoftTargetInfoNCELoss(keras.losses.Loss):
    """Soft-target InfoNCE on classifier logits; the batch's other soft targets are the noise.

    Formula:

    ```
    s_b    = logits_b / temperature - log(noise_probs)
    loss_b = logsumexp_l (t_l . s_b) - t_b . s_b
    ```

    Args:
        temperature: positive float. Defaults to `1.0`.
        noise_probs: class prior (list summing to 1) or `None` for uniform.
            Defaults to `None`.
        reduction, name, dtype: as `keras.losses.Loss`.

    Example:

    >>> import numpy as np, clzoo
    >>> loss = clzoo.losses.SoftTargetInfoNCELoss()
    >>> targets = np.array([[0.9, 0.1], [0.2, 0.8]], "float32")
    >>> float(loss(targets, np.array([[2.0, 0.0], [0.0, 2.0]], "float32"))) > 0
    True

    Reference:
    - Hugger and Uhlmann, eq. 12
    """

    def __init__(self, temperature=1.0, noise_probs=None,
                 reduction="sum_over_batch_size", name="soft_target_info_nce_loss",
                 dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.temperature = C.validate_temperature(temperature)
        self.noise_probs = _validate_noise_probs(noise_probs)

    def call(self, y_true, y_pred):
        return soft_target_info_nce_loss(y_true, y_pred, temperature=self.temperature,
                                         noise_probs=self.noise_probs)

    def get_config(self):
        config = super().get_config()
        config.update({"temperature": self.temperature, "noise_probs": self.noise_probs})
        return config
