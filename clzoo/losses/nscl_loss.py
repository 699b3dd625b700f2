"""Negatives-only supervised contrastive loss (NSCL, Luthra, Yang and Galanti)."""

import keras

from clzoo.losses.base import ContrastiveLoss, own_arguments
from clzoo.losses.dcl_loss import decoupled_anchor_terms
from clzoo.losses.docstrings import shared_docstring
from clzoo.losses.per_sample import per_sample_loss
from clzoo.validation.arguments import validate_chunk_size, validate_temperature


@shared_docstring
def nscl_loss(y_true, y_pred, temperature=0.1, normalize=True, chunk_size=None, memory=None):
    """NSCL per sample (Luthra, Yang and Galanti, sec. 3.1).

    DCL with the denominator restricted to samples of other classes:
    positives are the anchor's other views, noise is every view of every
    sample with another label; same-class samples are neither.

        l(i, p) = -log(exp(s_ip) / sum_{n: y_n != y_i} exp(s_in))

    Anchors with no noise (an all-same-class batch) are not valid and
    contribute 0.

    Args:
        y_true: integer labels `(batch,)` / `(batch, 1)` or one-hot.
        y_pred: embeddings `(batch, views, dim)`, `views >= 2`.
        temperature: positive float. Defaults to `0.1`.
        normalize: L2-normalize `y_pred` first. Defaults to `True`.
        $chunk_size
        $memory

    Returns:
        float32 `(batch,)`.

    Raises:
        ValueError: for a non-positive temperature, fewer than 2 views, a
            bad rank or a label count that does not match the batch.

    $example
    >>> tuple(clzoo.losses.nscl_loss(np.array([0, 0, 1, 1]), z).shape)
    (4,)

    Reference:
    - Luthra, Yang and Galanti, Self-Supervised Contrastive Learning is
      Approximately Supervised Contrastive Learning, sec. 3.1
    """
    temperature = validate_temperature(temperature)
    return per_sample_loss(y_true, y_pred, temperature, decoupled_anchor_terms, normalize,
                             min_views=2, loss_name="NSCLLoss",
                             chunk_size=validate_chunk_size(chunk_size), memory=memory)


@keras.saving.register_keras_serializable(package="clzoo")
@shared_docstring
class NSCLLoss(ContrastiveLoss):
    """Negatives-only supervised contrastive loss: DCL whose noise is other classes only.

    Formula:

    ```
    l(i, p) = log(sum_{n: y_n != y_i} exp(s_in)) - s_ip,   p another view of i's sample
    ```

    Args:
        $temperature
        $as_sincere

    $example
    >>> tuple(clzoo.losses.NSCLLoss()(np.array([0, 0, 1, 1]), z).shape)
    ()

    Reference:
    - Luthra, Yang and Galanti, Self-Supervised Contrastive Learning is
      Approximately Supervised Contrastive Learning, sec. 3.1
    """

    function = staticmethod(nscl_loss)

    def __init__(self, temperature=0.1, normalize=True, chunk_size=None,
                 reduction="sum_over_batch_size", name="nscl_loss", dtype=None,
                 check_values=False, **learnable):
        super().__init__(**own_arguments(locals()))
