"""Decoupled contrastive loss (DCL, Yeh et al. 2022)."""

import keras

from clzoo.losses.base import ContrastiveLoss, own_arguments
from clzoo.losses.docstrings import shared_docstring
from clzoo.losses.per_sample import per_sample_loss
from clzoo.validation.arguments import validate_chunk_size, validate_temperature


@shared_docstring
def dcl_loss(y_true, y_pred, temperature=0.1, normalize=True, chunk_size=None, memory=None):
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
        $chunk_size
        $memory

    Returns:
        float32 `(batch,)`; may be negative (no positive in the denominator).

    Raises:
        ValueError: for a non-positive temperature, fewer than 2 views or a
            bad rank.

    $example
    >>> tuple(clzoo.losses.dcl_loss(None, z).shape)
    (4,)

    Reference:
    - [Yeh et al., Decoupled Contrastive Learning, ECCV 2022](https://arxiv.org/abs/2110.06848);
      Luthra, Yang and Galanti, eq. 1
    """
    temperature = validate_temperature(temperature)
    return per_sample_loss(None, y_pred, temperature, decoupled_anchor_terms, normalize,
                             supervised=False, min_views=2, loss_name="DCLLoss",
                             chunk_size=validate_chunk_size(chunk_size), memory=memory)


def decoupled_anchor_terms(sims, masks):
    """DCL / NSCL: positives are the anchor's other views; noise is `other_class`.

    With instance labels `other_class` is every other sample (DCL); with
    class labels it is every other class (NSCL).
    """
    return [sims.decoupled(masks.other_class, masks.same_instance)]


@keras.saving.register_keras_serializable(package="clzoo")
@shared_docstring
class DCLLoss(ContrastiveLoss):
    """Decoupled contrastive loss: InfoNCE with the positive removed from the denominator.

    Formula:

    ```
    l(i, p) = log(sum_{n: sample(n) != sample(i)} exp(s_in)) - s_ip
    ```

    Args:
        $temperature
        $as_sincere

    $example
    >>> tuple(clzoo.losses.DCLLoss()(None, z).shape)
    ()

    Reference:
    - [Yeh et al. 2022](https://arxiv.org/abs/2110.06848)
    """

    function = staticmethod(dcl_loss)
    uses_labels = False

    def __init__(self, temperature=0.1, normalize=True, chunk_size=None,
                 reduction="sum_over_batch_size", name="dcl_loss", dtype=None,
                 check_values=False, **learnable):
        super().__init__(**own_arguments(locals()))
