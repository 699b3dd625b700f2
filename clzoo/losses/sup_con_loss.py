"""Supervised Contrastive Learning loss (SupCon), L_out and L_in."""

import keras
from keras import ops

from clzoo.losses import label_similarity as LS
from clzoo.losses.base import ContrastiveLoss, own_arguments
from clzoo.losses.docstrings import shared_docstring
from clzoo.losses.fused.dispatch import Fused, validate_kernel
from clzoo.losses.per_sample import per_sample_loss
from clzoo.validation.arguments import validate_chunk_size, validate_positive_int, validate_temperature

_VARIANTS = ("out", "in")


def _validate(variant, base_temperature, max_positives, label_similarity=None):
    """Check the SupCon arguments; return `(base_temperature, max_positives)` as float / int or None."""
    LS.validate_label_similarity(label_similarity)
    if label_similarity is not None and max_positives is not None:
        raise ValueError("`max_positives` caps hard positives and cannot be combined with "
                         "`label_similarity` (weighted positives). Received: "
                         f"max_positives={max_positives!r}, label_similarity={label_similarity!r}")
    if variant not in _VARIANTS:
        raise ValueError(
            f"`variant` must be one of {_VARIANTS}. Received: variant={variant!r}"
        )
    if base_temperature is not None:
        base_temperature = validate_temperature(base_temperature, name="base_temperature")
    return base_temperature, validate_positive_int(max_positives, "max_positives")


def _validate_options(base_temperature, variant, max_positives, label_similarity):
    """The `SupConLoss` arguments, checked by `_validate`, in the function's order."""
    base_temperature, max_positives = _validate(variant, base_temperature, max_positives,
                                                label_similarity)
    return {"base_temperature": base_temperature, "variant": variant,
            "max_positives": max_positives, "label_similarity": label_similarity}


def _capped_positives(masks, max_positives):
    """Keep at most `max_positives` positives per anchor: own views first, then batch order."""
    own = ops.cast(masks.same_instance, "int32")
    others = ops.cast(
        ops.logical_and(
            masks.same_class, ops.logical_not(masks.same_instance)
        ),
        "int32",
    )
    own_rank = ops.cumsum(own, axis=-1)
    other_rank = ops.sum(own, axis=-1, keepdims=True) + ops.cumsum(
        others, axis=-1
    )
    keep_own = ops.logical_and(own > 0, own_rank <= max_positives)
    keep_other = ops.logical_and(others > 0, other_rank <= max_positives)
    return ops.logical_or(keep_own, keep_other)


def _weighted_terms(sims, masks, variant):
    """Anchor terms with label-similarity weights `w_ip` in place of the same-class indicator."""
    weight = masks.label_weight
    row_lse = sims.logsumexp(masks.not_self)
    if variant == "out":
        return [sims.mean_gap(row_lse, weight)]
    count = ops.sum(weight, axis=-1, keepdims=True)
    log_mean_positive = sims.logsumexp(weight) - ops.log(ops.where(count > 0, count, 1.0))
    return [(ops.squeeze(row_lse - log_mean_positive, axis=-1), ops.squeeze(count, axis=-1) > 0)]


def _fused(variant, max_positives, label_similarity):
    """The fused kernel's mode for these options (`clzoo.losses.fused`)."""
    uncovered = ("label_similarity is set" if label_similarity is not None else
                 "max_positives is set" if max_positives is not None else None)
    return Fused("supcon_" + variant, uncovered=uncovered)


@shared_docstring
def sup_con_loss(
    y_true,
    y_pred,
    temperature=0.1,
    base_temperature=None,
    variant="out",
    max_positives=None,
    normalize=True,
    chunk_size=None,
    label_similarity=None,
    kernel="auto",
    memory=None,
):
    """SupCon loss per sample (Khosla et al. 2020, supplement eqs. 1-2).

    With `s = cos / temperature`, `A(i)` every embedding but the anchor and
    `P(i)` those sharing its label:

    - `variant="out"` (L_out, eq. 2): `mean_{p in P(i)} [LSE_{a in A(i)} s_ia - s_ip]`
    - `variant="in"` (L_in, eq. 1): `LSE_{a in A(i)} s_ia - log mean_{p in P(i)} exp(s_ip)`

    both scaled by `temperature / base_temperature`. Same-class embeddings
    other than `p` stay in the denominator (they act as noise), as in the
    paper. `max_positives` caps `P(i)` (supplement sec. 7), keeping the
    anchor's own other views first, then same-class samples in batch order;
    dropped positives also leave the denominator. A sample's value is the
    mean over its views that have a positive, and 0 if none has.

    Multi-label and soft positives (`label_similarity="cosine"` or
    `"jaccard"`): `y_true` may be multi-hot or soft rows `(batch, classes)`
    and the indicator `1[p in P(i)]` of eqs. 1-2 becomes the label
    similarity `w_ip` in [0, 1] (own other views 1, see below), so

    - L_out: `sum_p w_ip [LSE_{a in A(i)} s_ia - s_ip] / sum_p w_ip`
    - L_in: `LSE_{a in A(i)} s_ia - log(sum_p w_ip exp(s_ip) / sum_p w_ip)`

    with the denominator `A(i)` unchanged (every other embedding). One-hot
    rows give `w` in {0, 1}: exactly the hard-label loss. An anchor with
    `sum_p w_ip = 0` has no positive. The similarities:
    `"cosine"`: `w_ij = <y_i, y_j> / (||y_i|| ||y_j||)`; `"jaccard"`:
    `<y_i, y_j> / (||y_i||^2 + ||y_j||^2 - <y_i, y_j>)` (|A n B| / |A u B|
    for multi-hot rows). Cannot be combined with `max_positives`.

    Args:
        y_true: integer labels `(batch,)` / `(batch, 1)` or one-hot
            `(batch, classes)`.
        y_pred: embeddings `(batch, views, dim)` or `(batch, dim)`.
        temperature: positive float. Defaults to `0.1`.
        base_temperature: positive float or None (same as `temperature`,
            no rescaling). Defaults to `None`.
        variant: `"out"` or `"in"`. Defaults to `"out"`.
        max_positives: None or positive int. Defaults to `None` (no cap).
        normalize: L2-normalize `y_pred` first. Defaults to `True`.
        $chunk_size
        $memory
        $kernel
        label_similarity: None (hard labels; a rank-2 `y_true` must be
            exactly one-hot), `"cosine"` or `"jaccard"` (multi-hot / soft
            rows weigh the positives, see above). Defaults to `None`.

    Returns:
        float32 tensor `(batch,)`.

    Raises:
        ValueError: for invalid arguments, a `y_pred` rank other than 2 or 3,
            a label count that does not match the batch, or (with
            `label_similarity`) negative / non-finite label rows.

    $example
    >>> tuple(clzoo.losses.sup_con_loss(np.array([0, 0, 1, 1]), z).shape)
    (4,)
    >>> multi_hot = np.array([[1, 0, 1], [1, 0, 1], [0, 1, 1], [1, 0, 0]])
    >>> tuple(clzoo.losses.sup_con_loss(multi_hot, z, label_similarity="cosine").shape)
    (4,)

    Reference:
    - [Khosla et al., Supervised Contrastive Learning, 2020, eqs. 1-2 of the
      supplement](https://arxiv.org/abs/2004.11362)
    """
    temperature = validate_temperature(temperature)
    base_temperature, max_positives = _validate(variant, base_temperature, max_positives,
                                                label_similarity)

    def anchor_terms(sims, masks):
        if label_similarity is not None:
            return _weighted_terms(sims, masks, variant)
        positives = masks.same_class
        denominator = masks.not_self
        if max_positives is not None:
            positives = _capped_positives(masks, max_positives)
            dropped = ops.logical_and(masks.same_class, ops.logical_not(positives))
            denominator = ops.logical_and(denominator, ops.logical_not(dropped))
        row_lse = sims.logsumexp(denominator)
        if variant == "out":
            return [sims.mean_gap(row_lse, positives)]
        count = ops.sum(ops.cast(positives, "float32"), axis=-1, keepdims=True)
        log_mean_positive = sims.logsumexp(positives) - ops.log(
            ops.maximum(count, 1.0))
        return [(ops.squeeze(row_lse - log_mean_positive, axis=-1),
                 ops.squeeze(count, axis=-1) > 0)]

    scale = temperature / (base_temperature or temperature)
    return scale * per_sample_loss(y_true, y_pred, temperature, anchor_terms, normalize,
                                     chunk_size=validate_chunk_size(chunk_size),
                                     label_similarity=label_similarity,
                                     kernel=validate_kernel(kernel),
                                     fused=_fused(variant, max_positives, label_similarity),
                                     memory=memory)


@keras.saving.register_keras_serializable(package="clzoo")
@shared_docstring
class SupConLoss(ContrastiveLoss):
    """Supervised contrastive loss of Khosla et al. 2020 (L_out or L_in).

    Every one of the `batch * views` embeddings is an anchor; its positives
    are all other embeddings with its label, and its denominator holds every
    other embedding, so same-class samples other than the positive are
    pushed away too (the intra-class repulsion SINCERE removes).

    Formula (L_out, the paper's recommended variant):

    ```
    s_ij    = cos(z_i, z_j) / temperature
    l(i, p) = log(sum_{a != i} exp(s_ia)) - s_ip
    loss_i  = (temperature / base_temperature) * mean_{p: y_p == y_i, p != i} l(i, p)
    loss_b  = mean over the views of sample b that have a positive (0 if none)
    ```

    Args:
        $temperature
        base_temperature: positive float or None, the reference code's
            rescaling constant; None means equal to `temperature` (no
            rescaling). Defaults to `None`.
        variant: `"out"` (L_out) or `"in"` (L_in). Defaults to `"out"`.
        max_positives: None or positive int capping the positives per anchor
            (supplement sec. 7). Defaults to `None`.
        normalize: L2-normalize embeddings first. Defaults to `True`.
        $chunk_size
        $kernel
        label_similarity: None (hard labels: a rank-2 `y_true` must be
            exactly one-hot, anything else is refused), `"cosine"` or
            `"jaccard"`: multi-hot or soft `y_true` rows `(batch, classes)`
            (several labels per sample, MixUp / CutMix mixtures) and each
            positive weighted by the label similarity of the pair (see
            `clzoo.losses.sup_con_loss`); one-hot rows give exactly the
            hard-label loss. Defaults to `None`.
        $check_values
        reduction, name, dtype: as `keras.losses.Loss`.

    Inputs: `y_true` labels `(batch,)` / `(batch, 1)` / one-hot; `y_pred`
    `(batch, views, dim)` or `(batch, dim)`. `call` returns `(batch,)`.

    Raises:
        ValueError: on invalid arguments or inputs, naming the argument.

    $example
    >>> loss = clzoo.losses.SupConLoss(temperature=0.1)
    >>> float(loss(np.array([0, 0, 1, 1]), z)) > 0
    True

    Reference:
    - [Khosla et al., Supervised Contrastive Learning, NeurIPS 2020](https://arxiv.org/abs/2004.11362)
    """

    function = staticmethod(sup_con_loss)
    validate_options = staticmethod(_validate_options)

    def __init__(self, temperature=0.1, base_temperature=None, variant="out", max_positives=None,
                 normalize=True, chunk_size=None, reduction="sum_over_batch_size",
                 name="sup_con_loss", dtype=None, check_values=False, label_similarity=None,
                 kernel="auto", **learnable):
        super().__init__(**own_arguments(locals()))
