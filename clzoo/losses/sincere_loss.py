"""SINCERE: Supervised Information Noise-Contrastive Estimation REvisited."""

import keras

from clzoo.losses import label_similarity as LS
from clzoo.losses.base import ContrastiveLoss, own_arguments
from clzoo.losses.docstrings import shared_docstring
from clzoo.losses.fused.dispatch import Fused, validate_kernel
from clzoo.losses.per_sample import per_sample_loss
from clzoo.validation.arguments import validate_chunk_size, validate_temperature


def _validate_options(label_similarity):
    return {"label_similarity": LS.validate_label_similarity(label_similarity)}


def _anchor_terms(sims, masks):
    return [sims.noise_contrastive(masks.other_class, masks.same_class)]


def _weighted_anchor_terms(sims, masks):
    """Positives weighted by `w_ip`; every other embedding is noise with weight `1 - w_in`."""
    # not_self, not just "not the anchor": an empty memory slot is no noise either. The noise
    # weights 1 - w are derived inside the reduction: no second float (n, N) buffer per block.
    return [sims.noise_contrastive(masks.not_self, masks.label_weight, noise_from_positive=True)]


@shared_docstring
def sincere_loss(y_true, y_pred, temperature=0.1, normalize=True, chunk_size=None,
                 label_similarity=None, kernel="auto", memory=None):
    """SINCERE loss per sample (Feeney and Hughes, eq. 12).

    For anchor `i` and each positive `p` (another embedding with the anchor's
    label, including the anchor's own other views) the pair term is

        -log(exp(s_ip) / (exp(s_ip) + sum_{n in N(i)} exp(s_in)))

    where `s = cos / temperature` and the noise set `N(i)` holds only
    embeddings of other classes. Same-class embeddings never sit in a
    denominator except as the pair's own positive, so SINCERE has no
    intra-class repulsion (unlike SupCon L_out). An anchor's value is the mean
    of its pair terms; a sample's value is the mean over its views that have
    a positive, and 0 if none has (a class seen once in a one-view batch).

    Multi-label and soft positives (`label_similarity="cosine"` or
    `"jaccard"`): `y_true` may be multi-hot or soft rows `(batch, classes)`
    and class membership becomes the label similarity `w_in` in [0, 1]
    (1 for the anchor's own other views; the formulas are in
    `clzoo.losses.sup_con_loss`). Each other embedding belongs to the target
    set with weight `w_in` and to the noise set with weight `1 - w_in`:

        l(i, p) = -log(exp(s_ip) / (exp(s_ip) + sum_{n != i} (1 - w_in) exp(s_in)))
        loss_i  = sum_p w_ip l(i, p) / sum_p w_ip

    (the positive `p` itself stays in the noise sum with weight `1 - w_ip`,
    so every pair term is >= 0). One-hot rows give `w` in {0, 1}: the
    noise set is exactly the other classes and the value is exactly eq. 12.

    Args:
        y_true: integer class labels, shape `(batch,)` or `(batch, 1)`, or
            one-hot `(batch, classes)`.
        y_pred: embeddings, float, shape `(batch, views, dim)` or
            `(batch, dim)`.
        temperature: positive float dividing the cosine similarities.
            Defaults to `0.1`.
        normalize: L2-normalize `y_pred` along `dim` first. Defaults to `True`.
        $chunk_size
        $memory
        $kernel
        label_similarity: None (hard labels; a rank-2 `y_true` must be
            exactly one-hot), `"cosine"` or `"jaccard"` (multi-hot / soft
            rows, see above). Defaults to `None`.

    Returns:
        float32 tensor of shape `(batch,)`, in nats.

    Raises:
        ValueError: for a non-positive temperature, a `y_pred` rank other
            than 2 or 3, or a label count that does not match the batch.

    $example
    >>> tuple(clzoo.losses.sincere_loss(np.array([0, 0, 1, 1]), z).shape)
    (4,)

    Reference:
    - [Feeney and Hughes, SINCERE, eq. 12](https://arxiv.org/abs/2309.14277)
    """
    temperature = validate_temperature(temperature)
    terms = _anchor_terms if LS.validate_label_similarity(label_similarity) is None else (
        _weighted_anchor_terms)
    return per_sample_loss(y_true, y_pred, temperature, terms, normalize,
                             chunk_size=validate_chunk_size(chunk_size),
                             label_similarity=label_similarity, kernel=validate_kernel(kernel),
                             fused=Fused("noise_contrastive", uncovered=(
                                 None if label_similarity is None else "label_similarity is set")),
                             memory=memory)


@keras.saving.register_keras_serializable(package="clzoo")
@shared_docstring
class SINCERELoss(ContrastiveLoss):
    """SINCERE loss: supervised InfoNCE without intra-class repulsion.

    Every one of the `batch * views` embeddings is an anchor. For anchor `i`
    and each positive `p` (same label, `p != i`) the target is `p` and the
    noise set is every embedding of another class; the loss is the
    cross-entropy of picking `p` among `{p} + noise`.

    Formula:

    ```
    s_ij     = cos(z_i, z_j) / temperature
    l(i, p)  = log(exp(s_ip) + sum_{n: y_n != y_i} exp(s_in)) - s_ip
    loss_i   = mean_{p: y_p == y_i, p != i} l(i, p)
    loss_b   = mean over the views of sample b that have a positive (0 if none)
    ```

    Args:
        $temperature
        normalize: L2-normalize embeddings first. Defaults to `True`.
        $chunk_size
        $kernel
        label_similarity: None (hard labels: a rank-2 `y_true` must be
            exactly one-hot, anything else is refused), `"cosine"` or
            `"jaccard"`: multi-hot or soft `y_true` rows `(batch, classes)`,
            positives and noise weighted by the label similarity (see
            `clzoo.losses.sincere_loss`); one-hot rows give exactly the
            hard-label loss. Defaults to `None`.
        reduction: Keras reduction of the per-sample values.
            Defaults to `"sum_over_batch_size"`.
        name: optional name.
        dtype: dtype of the returned loss. Defaults to the Keras float type.
        $check_values

    Inputs: `y_true` integer labels `(batch,)` / `(batch, 1)` or one-hot
    `(batch, classes)`; `y_pred` embeddings `(batch, views, dim)` or
    `(batch, dim)`. `call` returns the per-sample loss `(batch,)`.

    Raises:
        ValueError: as `clzoo.losses.sincere_loss`.

    $example
    >>> loss = clzoo.losses.SINCERELoss(temperature=0.1)
    >>> float(loss(np.array([0, 0, 1, 1]), z)) > 0
    True

    With a model: `model.compile(optimizer="adam", loss=clzoo.losses.SINCERELoss())`.

    Reference:
    - [Feeney and Hughes, SINCERE: Supervised Information Noise-Contrastive
      Estimation REvisited, eq. 12](https://arxiv.org/abs/2309.14277)
    """

    function = staticmethod(sincere_loss)
    validate_options = staticmethod(_validate_options)

    def __init__(self, temperature=0.1, normalize=True, chunk_size=None,
                 reduction="sum_over_batch_size", name="sincere_loss", dtype=None,
                 check_values=False, label_similarity=None, kernel="auto", **learnable):
        super().__init__(**own_arguments(locals()))
