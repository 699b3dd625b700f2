"""L_spread of Chen et al. 2022 ("Perfectly Balanced"): attraction plus intra-class repulsion."""

import keras
from keras import ops

from clzoo.losses.base import ContrastiveLoss, own_arguments
from clzoo.losses.docstrings import shared_docstring
from clzoo.losses.per_sample import per_sample_loss
from clzoo.validation.arguments import validate_chunk_size, validate_number, validate_temperature


def _validate_alpha(alpha):
    return validate_number(alpha, "alpha", 0.0, 1.0, what="a number in [0, 1]")


def _validate_options(alpha):
    return {"alpha": _validate_alpha(alpha)}


def _anchor_terms(sims, masks):
    attract = sims.noise_contrastive(masks.other_class, masks.same_class)
    same_class_other_sample = ops.logical_and(
        masks.same_class, ops.logical_not(masks.same_instance))
    return [attract, sims.noise_contrastive(same_class_other_sample, masks.same_instance)]


@shared_docstring
def spread_loss(y_true, y_pred, temperature=0.5, alpha=0.5, normalize=True, chunk_size=None, memory=None):
    """L_spread per sample: `alpha * L_attract + (1 - alpha) * L_repel` (Chen et al. 2022, eqs. 1-3).

    - L_attract (eq. 2) is SINCERE-form: for each same-class positive `p`,
      `-log(exp(s_ip) / (exp(s_ip) + sum_{n: y_n != y_i} exp(s_in)))`.
    - L_repel (eq. 3) is a class-conditional InfoNCE: the positive is the
      anchor's own other view, the noise is the other samples of its class,
      `-log(exp(s_ip) / (exp(s_ip) + sum_{n: y_n == y_i, sample(n) != sample(i)} exp(s_in)))`.

    Each term is the mean over the anchor's positives, then over the
    sample's views; a sample's value is the weighted sum of the two.

    Args:
        y_true: integer labels `(batch,)` / `(batch, 1)` or one-hot.
        y_pred: embeddings `(batch, views, dim)`, `views >= 2`.
        temperature: positive float. Defaults to `0.5` (the paper's sweeps
            start there).
        alpha: weight of L_attract in [0, 1]; `alpha=1` is L_attract alone.
            Defaults to `0.5`.
        normalize: L2-normalize `y_pred` first. Defaults to `True`.
        $chunk_size
        $memory

    Returns:
        float32 `(batch,)`.

    Raises:
        ValueError: for a non-positive temperature, alpha outside [0, 1],
            fewer than 2 views, a bad rank or a label/batch mismatch.

    $example
    >>> tuple(clzoo.losses.spread_loss(np.array([0, 0, 1, 1]), z, alpha=0.25).shape)
    (4,)

    Reference:
    - Chen et al., Perfectly Balanced: Improving Transfer and Robustness of
      Supervised Contrastive Learning, ICML 2022, eqs. 1-3
    """
    temperature = validate_temperature(temperature)
    alpha = _validate_alpha(alpha)
    return per_sample_loss(y_true, y_pred, temperature, _anchor_terms, normalize,
                             min_views=2, loss_name="SpreadLoss", weights=(alpha, 1.0 - alpha),
                             chunk_size=validate_chunk_size(chunk_size), memory=memory)


@keras.saving.register_keras_serializable(package="clzoo")
@shared_docstring
class SpreadLoss(ContrastiveLoss):
    """L_spread: SINCERE-form class attraction plus class-conditional InfoNCE repulsion.

    Formula:

    ```
    loss = alpha * L_attract + (1 - alpha) * L_repel
    L_attract(i, p) = log(exp(s_ip) + sum_{n: y_n != y_i} exp(s_in)) - s_ip,   y_p == y_i
    L_repel(i, a)   = log(exp(s_ia) + sum_{n: y_n == y_i, other sample} exp(s_in)) - s_ia,
                      a another view of i's sample
    ```

    Args:
        $temperature
        alpha: weight of L_attract in [0, 1]. Defaults to `0.5`.
        $as_sincere

    $example
    >>> tuple(clzoo.losses.SpreadLoss(alpha=0.25)(np.array([0, 0, 1, 1]), z).shape)
    ()

    Reference:
    - Chen et al., Perfectly Balanced, ICML 2022, eqs. 1-3; app. E.2 for
      (temperature, alpha) per dataset
    """

    function = staticmethod(spread_loss)
    validate_options = staticmethod(_validate_options)

    def __init__(self, temperature=0.5, alpha=0.5, normalize=True, chunk_size=None,
                 reduction="sum_over_batch_size", name="spread_loss", dtype=None,
                 check_values=False, **learnable):
        super().__init__(**own_arguments(locals()))
