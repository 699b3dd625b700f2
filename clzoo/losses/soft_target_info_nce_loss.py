"""Soft-target InfoNCE (Hugger and Uhlmann) for classifiers trained with MixUp / CutMix / label smoothing."""

import keras
import numpy as np
from keras import ops

from clzoo.losses import precision
from clzoo.losses.base import FunctionLoss, own_arguments
from clzoo.validation import checks as K
from clzoo.validation.arguments import validate_bool, validate_temperature
from clzoo.validation.sample_weights import standardize_sample_weight

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


def _validate_options(temperature, noise_probs, validate_targets):
    return {"temperature": validate_temperature(temperature),
            "noise_probs": _validate_noise_probs(noise_probs),
            "validate_targets": validate_bool(validate_targets, "validate_targets")}


def _check_targets(y_true):
    """Finite, non-negative target rows summing to 1; see `checks.require` for compiled steps."""
    row_sums = ops.sum(y_true, axis=-1)
    row_ok = ops.logical_and(ops.all(ops.logical_and(ops.isfinite(y_true), y_true >= 0), axis=-1),
                             ops.abs(row_sums - 1.0) <= _ROW_SUM_TOLERANCE)

    def detail(row_ok_np, sums_np, targets_np):
        bad = int(np.argmin(row_ok_np))
        cause = ("has a negative entry" if np.any(targets_np[bad] < 0) else
                 "has NaN or inf" if not np.all(np.isfinite(targets_np[bad])) else
                 f"sums to {sums_np[bad]:.6g}")
        return f". Received: row {bad} {cause} ({targets_np[bad][:8].tolist()})"

    K.require(ops.all(row_ok), "`y_true` must hold soft targets: finite, non-negative rows "
                "summing to 1 (one-hot, MixUp / CutMix mixtures, label smoothing)",
                (row_ok, row_sums, y_true), detail)
    return row_ok


def _standardize(y_true, y_pred):
    y_true = K.as_array_or_tensor(y_true, "y_true")
    y_pred = K.as_array_or_tensor(y_pred, "y_pred")
    ranks = (K.rank_of(y_true), K.rank_of(y_pred))
    shapes = tuple(tuple(x.shape) if r is not None else "unknown" for x, r in zip((y_true, y_pred), ranks))
    if ranks != (2, 2):
        hint = (" Integer class ids (batch,) belong to the hard-label losses (SupConLoss, ...) or "
                "must be one-hot encoded first." if ranks[0] == 1 else "")
        raise ValueError(
            "`y_true` (soft targets) and `y_pred` (logits) must both have shape "
            f"(batch, classes). Received: y_true.shape={shapes[0]}, y_pred.shape={shapes[1]}.{hint}")
    y_true = ops.cast(ops.convert_to_tensor(y_true), "float32")
    y_pred = ops.cast(ops.convert_to_tensor(y_pred), "float32")
    for axis, what in ((0, "an empty batch"), (1, "classes")):
        for name, x in (("y_true", y_true), ("y_pred", y_pred)):
            if x.shape[axis] == 0:
                raise ValueError(f"`{name}` has {what} 0. Received: {name}.shape={tuple(x.shape)}")
    mismatch = [a for a in (0, 1) if None not in (y_true.shape[a], y_pred.shape[a])
                and y_true.shape[a] != y_pred.shape[a]]
    if mismatch:
        raise ValueError(
            "`y_true` and `y_pred` must have the same shape (batch, classes). "
            f"Received: y_true.shape={tuple(y_true.shape)}, y_pred.shape={tuple(y_pred.shape)}")
    return y_true, y_pred


def soft_target_info_nce_loss(y_true, y_pred, temperature=1.0, noise_probs=None,
                              validate_targets=True):
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
        validate_targets: check that target rows are finite, non-negative
            and sum to 1 (within 1e-3), also inside compiled steps (`fit`,
            `tf.function`, `jax.jit`); a failing batch also gets a NaN loss,
            so even an XLA-compiled TF step (which drops asserts) never
            trains on it silently. Costs a host callback per step on JAX
            inside `jit`. Defaults to `True`.

    Returns:
        float32 `(batch,)`.

    Raises:
        ValueError: for a non-positive temperature, bad `noise_probs`, inputs
            not of rank 2 or of different shapes, an empty batch or 0 classes,
            string / complex inputs, `noise_probs` of the wrong length, or
            target rows that are not soft targets. Inside a compiled step the
            target check raises when the step runs: TensorFlow
            `InvalidArgumentError`, JAX `JaxRuntimeError`, with the same message.

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
    temperature = validate_temperature(temperature)
    noise_probs = _validate_noise_probs(noise_probs)
    y_true, y_pred = _standardize(y_true, y_pred)
    classes = y_pred.shape[-1]
    if noise_probs is not None and classes is not None and len(noise_probs) != classes:
        raise ValueError(
            f"`noise_probs` needs one probability per class ({classes}). "
            f"Received: {len(noise_probs)} values"
        )
    row_ok = _check_targets(y_true) if validate_targets else None
    scores = y_pred / temperature
    # A uniform prior adds the same log K to every score (targets sum to 1), so it cancels.
    if noise_probs is not None:
        scores = scores - ops.log(ops.convert_to_tensor(noise_probs, "float32"))
    # pair[b, l] = t_l . s_b
    pair = precision.matmul(scores, ops.transpose(y_true))
    positive = ops.sum(scores * y_true, axis=-1)
    loss = ops.logsumexp(pair, axis=-1) - positive
    return loss if row_ok is None else K.poison(loss, ops.all(row_ok))


@keras.saving.register_keras_serializable(package="clzoo")
class SoftTargetInfoNCELoss(FunctionLoss):
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
        validate_targets: refuse target rows that are not finite,
            non-negative and summing to 1, eagerly and inside `fit` /
            `tf.function` / `jax.jit` (see the function). Defaults to `True`.
        reduction, name, dtype: as `keras.losses.Loss`.

    Raises:
        ValueError: on invalid arguments, inputs that are not soft targets /
            logits of one shape, or a `sample_weight` that is not a scalar,
            `(batch,)` or `(batch, 1)` of finite non-negative numbers (each
            message names the argument). Compiled steps raise the target
            check when they run (TensorFlow `InvalidArgumentError`, JAX
            `JaxRuntimeError`, same message).

    Example:

    >>> import numpy as np, clzoo
    >>> loss = clzoo.losses.SoftTargetInfoNCELoss()
    >>> targets = np.array([[0.9, 0.1], [0.2, 0.8]], "float32")
    >>> float(loss(targets, np.array([[2.0, 0.0], [0.0, 2.0]], "float32"))) > 0
    True

    Reference:
    - Hugger and Uhlmann, eq. 12
    """

    function = staticmethod(soft_target_info_nce_loss)
    validate_options = staticmethod(_validate_options)

    def __init__(self, temperature=1.0, noise_probs=None,
                 reduction="sum_over_batch_size", name="soft_target_info_nce_loss",
                 dtype=None, validate_targets=True):
        super().__init__(**own_arguments(locals()))

    def __call__(self, y_true, y_pred, sample_weight=None):
        y_pred = K.as_array_or_tensor(y_pred, "y_pred")
        y_true = K.as_array_or_tensor(y_true, "y_true")
        if sample_weight is not None and K.rank_of(y_pred):
            batch = y_pred.shape[0] if y_pred.shape[0] is not None else ops.shape(y_pred)[0]
            sample_weight = standardize_sample_weight(sample_weight, batch)
        return super().__call__(y_true, y_pred, sample_weight=sample_weight)
