"""Decoupled contrastive loss (DCL, Yeh et al. 2022)."""

import keras
from keras import ops

from clzoo.losses import _contrastive as C


def dcl_loss(y_true, y_pred, temperature=0.1, normalize=True):
    """Decoupled contrastive loss per sample (NSCL paper eq. 1; Yeh et al. 2022).

    InfoNCE without the positive in its own denominator. Positives are the
    anchor's other views; noise is every view of every other sample:

        l(i, p) = -log(exp(s_ip) / sum_{n: sample(n) != sample(i)} exp(s_in))

    Labels are ignored. An anchor with no noise (a batch of one sample) is
    not a valid anchor and contributes 0.

    Args:
        y_true: ignored (may be `None`).
        y_pred: embeddings `(batch, views, dim)`, `views >= 2`.
        temperature: positive float. Defaults to `0.1`.
        normalize: L2-normalize `y_pred` first. Defaults to `True`.

    Returns:
        float32 `(batch,)`; may be negative (no positive in the denominator).

    Raises:
        ValueError: for a non-positive temperature, fewer than 2 views or a
            bad rank.

    Example:

    >>> import numpy as np, clzoo
    >>> z = np.random.default_rng(0).normal(size=(4, 2, 8)).astype("float32")
    >>> clzoo.losses.dcl_loss(None, z).shape
    (4,)

    Reference:
    - [Yeh et al., Decoupled Contrastive Learning, ECCV 2022](https://arxiv.org/abs/2110.06848);
      Luthra, Yang and Galanti, eq. 1
    """
    temperature = C.validate_temperature(temperature)
    logits, masks, views = C.contrastive_logits(
        None, y_pred, temperature, normalize, supervised=False, min_views=2,
        loss_name="DCLLoss")
    return _decoupled(logits, masks.same_instance, masks.other_class, views)


def _decoupled(logits, positives, noise, views):
    pair_loss, has_noise = C.decoupled_pair_loss(logits, noise)
    anchor_loss, has_positive = C.mean_over_positives(pair_loss, positives)
    return C.mean_over_views(anchor_loss, ops.logical_and(has_positive, has_noise), views)


@keras.saving.register_keras_serializable(package="clzoo")
class DCLLoss(C.ContrastiveLoss):
    """Decoupled contrastive loss: InfoNCE with the positive removed from the denominator.

    Formula:

    ```
    l(i, p) = log(sum_{n: sample(n) != sample(i)} exp(s_in)) - s_ip
    ```

    Args:
        temperature: positive float. Defaults to `0.1`.
        normalize, reduction, name, dtype: as `clzoo.losses.SINCERELoss`.

    Example:

    >>> import numpy as np, clzoo
    >>> z = np.random.default_rng(0).normal(size=(4, 2, 8)).astype("float32")
    >>> clzoo.losses.DCLLoss()(None, z).shape
    ()

    Reference:
    - [Yeh et al. 2022](https://arxiv.org/abs/2110.06848)
    """

    def __init__(self, temperature=0.1, normalize=True,
                 reduction="sum_over_batch_size", name="dcl_loss", dtype=None):
        super().__init__(temperature=temperature, normalize=normalize,
                         reduction=reduction, name=name, dtype=dtype)

    def call(self, y_true, y_pred):
        return dcl_loss(None, y_pred, temperature=self.temperature, normalize=self.normalize)
