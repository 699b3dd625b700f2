"""InfoNCE / NT-Xent, the SimCLR instance-discrimination loss."""

import keras

from clzoo.losses.base import ContrastiveLoss, own_arguments
from clzoo.losses.docstrings import shared_docstring
from clzoo.losses.fused.dispatch import Fused, validate_kernel
from clzoo.losses.per_sample import per_sample_loss
from clzoo.validation.arguments import validate_chunk_size, validate_temperature


def _anchor_terms(sims, masks):
    return [sims.noise_contrastive(masks.other_class, masks.same_instance)]


@shared_docstring
def info_nce_loss(y_true, y_pred, temperature=0.1, normalize=True, chunk_size=None, kernel="auto",
                  memory=None):
    """InfoNCE (NT-Xent) per sample (Chen et al. 2020, eq. 1; SINCERE eq. 2).

    Positives of an anchor are the other views of its own sample; every view
    of every other sample is noise. Labels are ignored (pass `None` or
    anything of batch length): InfoNCE is SINCERE with the instance as label.

        l(i, p) = -log(exp(s_ip) / (exp(s_ip) + sum_{n: sample(n) != sample(i)} exp(s_in)))

    Args:
        y_true: ignored (may be `None`).
        y_pred: embeddings `(batch, views, dim)`, `views >= 2`.
        temperature: positive float. Defaults to `0.1`.
        normalize: L2-normalize `y_pred` first. Defaults to `True`.
        $chunk_size
        $memory
        $kernel

    Returns:
        float32 `(batch,)`.

    Raises:
        ValueError: for a non-positive temperature, fewer than 2 views or a
            bad rank.

    $example
    >>> tuple(clzoo.losses.info_nce_loss(None, z).shape)
    (4,)

    Reference:
    - [Chen et al., SimCLR, 2020](https://arxiv.org/abs/2002.05709);
      [van den Oord et al., CPC, 2018](https://arxiv.org/abs/1807.03748)
    """
    temperature = validate_temperature(temperature)
    return per_sample_loss(None, y_pred, temperature, _anchor_terms, normalize,
                             supervised=False, min_views=2, loss_name="InfoNCELoss",
                             chunk_size=validate_chunk_size(chunk_size),
                             kernel=validate_kernel(kernel), fused=Fused("noise_contrastive"), memory=memory)


@keras.saving.register_keras_serializable(package="clzoo")
@shared_docstring
class InfoNCELoss(ContrastiveLoss):
    """InfoNCE / NT-Xent (SimCLR): each view must pick out its sample's other views.

    Formula:

    ```
    l(i, p) = log(exp(s_ip) + sum_{n: sample(n) != sample(i)} exp(s_in)) - s_ip
    ```

    for `p` another view of anchor `i`'s sample. Labels are ignored.

    Args:
        $temperature
        $as_sincere

    $example
    >>> float(clzoo.losses.InfoNCELoss()(np.zeros(4), z)) > 0
    True

    Reference:
    - [Chen et al., SimCLR, 2020](https://arxiv.org/abs/2002.05709)
    """

    function = staticmethod(info_nce_loss)
    uses_labels = False

    def __init__(self, temperature=0.1, normalize=True, chunk_size=None,
                 reduction="sum_over_batch_size", name="info_nce_loss", dtype=None,
                 check_values=False, kernel="auto", **learnable):
        super().__init__(**own_arguments(locals()))
