"""epsilon-SupInfoNCE (Barbano et al. 2023), in the SINCERE paper's notation."""

import keras

from clzoo.losses.base import ContrastiveLoss, own_arguments
from clzoo.losses.docstrings import shared_docstring
from clzoo.losses.fused.dispatch import Fused, validate_kernel
from clzoo.losses.per_sample import per_sample_loss
from clzoo.validation.arguments import validate_chunk_size, validate_number, validate_temperature


def _validate_epsilon(epsilon):
    return validate_number(epsilon, "epsilon", low=0.0, what="a finite number >= 0")


def _validate_options(epsilon):
    return {"epsilon": _validate_epsilon(epsilon)}


@shared_docstring
def sup_info_nce_loss(y_true, y_pred, temperature=0.1, epsilon=0.25, normalize=True,
                      chunk_size=None, kernel="auto", memory=None):
    """epsilon-SupInfoNCE per sample (SINCERE paper eq. 15; Barbano et al. 2023).

    As SINCERE, but the positive's own term in the denominator carries a
    margin `epsilon`:

        l(i, p) = -log(exp(s_ip) / (exp(s_ip - epsilon) + sum_{n: y_n != y_i} exp(s_in)))

    `epsilon=0` is exactly SINCERE. Anchors, positives and the per-sample
    mean are as in `clzoo.losses.sincere_loss`.

    Args:
        y_true: integer labels `(batch,)` / `(batch, 1)` or one-hot.
        y_pred: embeddings `(batch, views, dim)` or `(batch, dim)`.
        temperature: positive float. Defaults to `0.1`.
        epsilon: margin >= 0, in logit units. Defaults to `0.25`.
        normalize: L2-normalize `y_pred` first. Defaults to `True`.
        $chunk_size
        $memory
        $kernel

    Returns:
        float32 `(batch,)`.

    Raises:
        ValueError: for a non-positive temperature, a negative epsilon, or
            bad input shapes.

    $example
    >>> tuple(clzoo.losses.sup_info_nce_loss(np.array([0, 0, 1, 1]), z, epsilon=0.1).shape)
    (4,)

    Reference:
    - [Barbano et al., Unbiased Supervised Contrastive Learning, ICLR 2023](https://arxiv.org/abs/2211.05568)
    - Feeney and Hughes, SINCERE, eq. 15
    """
    temperature = validate_temperature(temperature)
    epsilon = _validate_epsilon(epsilon)

    def anchor_terms(sims, masks):
        return [sims.noise_contrastive(masks.other_class, masks.same_class, epsilon)]

    return per_sample_loss(y_true, y_pred, temperature, anchor_terms, normalize,
                             chunk_size=validate_chunk_size(chunk_size),
                             kernel=validate_kernel(kernel), fused=Fused("noise_contrastive", epsilon),
                             memory=memory)


@keras.saving.register_keras_serializable(package="clzoo")
@shared_docstring
class SupInfoNCELoss(ContrastiveLoss):
    """epsilon-SupInfoNCE: SINCERE with a margin `epsilon` on the positive's denominator term.

    Formula:

    ```
    l(i, p) = log(exp(s_ip - epsilon) + sum_{n: y_n != y_i} exp(s_in)) - s_ip
    ```

    Args:
        $temperature
        epsilon: margin >= 0 (the SINCERE paper searched 0.1, 0.25, 0.5).
            Defaults to `0.25`.
        $as_sincere

    $example
    >>> loss = clzoo.losses.SupInfoNCELoss(epsilon=0.25)
    >>> float(loss(np.array([0, 0, 1, 1]), z)) > 0
    True

    Reference:
    - [Barbano et al. 2023](https://arxiv.org/abs/2211.05568); SINCERE eq. 15
    """

    function = staticmethod(sup_info_nce_loss)
    validate_options = staticmethod(_validate_options)

    def __init__(self, temperature=0.1, epsilon=0.25, normalize=True, chunk_size=None,
                 reduction="sum_over_batch_size", name="sup_info_nce_loss", dtype=None,
                 check_values=False, kernel="auto", **learnable):
        super().__init__(**own_arguments(locals()))
