"""The per-sample loss every embedding loss is computed by: anchors against the global batch.

A loss module supplies only `anchor_terms(similarities, masks)`: which masks
form its positive set and its denominator (see `pairs.PairMasks`,
`similarities.Similarities`). Everything else (input checks, the global
batch, memory columns, blockwise evaluation, the mean over views) is here.
"""

from keras import ops

from clzoo.losses.blockwise import blockwise
from clzoo.losses.fused.dispatch import implementation, use_fused
from clzoo.losses.memory_bank import resolve_memory
from clzoo.losses.pairs import PairMasks, global_ids, memory_columns
from clzoo.losses.similarities import MAX_EXP_RANGE, Similarities
from clzoo.validation.inputs import standardize_embeddings


def per_sample_loss(y_true, y_pred, temperature, anchor_terms, normalize=True,
                    supervised=True, min_views=1, loss_name="This loss", weights=(1.0,),
                    chunk_size=None, label_similarity=None, kernel="xla", fused=None, memory=None):
    """Per-sample loss `(batch,)` of a multi-view batch, from the loss's `anchor_terms`.

    Standardizes the inputs, gathers the global batch across `tf.distribute`
    replicas (each local anchor meets every other embedding of the global
    batch), builds float32 logits and masks, and lets the loss turn them into
    per-anchor terms.

    Args:
        y_true: labels (ignored when `supervised=False`: each sample is its
            own class, the instance-discrimination setting).
        y_pred: embeddings `(batch, views, dim)` or `(batch, dim)`.
        temperature: validated positive float, or a scalar float32 tensor
            (learnable temperature: the logits then take the row-maximum
            path of `Similarities`).
        anchor_terms: `fn(similarities, masks) -> [(value (n,), valid (n,)), ...]`,
            one pair per term of the loss (`Similarities`, `PairMasks`).
        normalize: L2-normalize embeddings.
        supervised: use `y_true` as class labels.
        min_views: smallest number of views the loss accepts.
        loss_name: used in error messages.
        weights: weight of each term in the per-sample value.
        chunk_size: None (all anchors at once) or anchors per block
            (`clzoo.losses.blockwise`): the same values and gradients.
        label_similarity: None, or "cosine" / "jaccard": label rows
            `(batch, classes)` (multi-hot, soft) are accepted and pairs are
            weighted by `PairMasks.label_weight`; class ids still work.
        kernel: `"auto"`, `"fused"` or `"xla"` (`clzoo.losses.fused.dispatch`).
        fused: None (no fused kernel for this loss) or `dispatch.Fused`: the
            kernel's mode for this loss, and why the call's options are not
            covered, if they are not.
        memory: None, or `(embeddings, labels, valid)` entries every anchor is also contrasted
            with (`clzoo.losses.memory_bank`); None takes `with_memory`'s, if one is active.

    Returns:
        float32 `(batch,)`: per term, the mean over each sample's valid
        anchors (0 when none is valid), weighted and summed.
    """
    z, batch, views = standardize_embeddings(y_pred, normalize)
    _check_views(views, min_views, loss_name)
    memory = resolve_memory(memory)
    z_all, rows, cols = global_ids(z, y_true, batch, views, supervised, label_similarity)
    if fused is not None and use_fused(kernel, z_all, _uncovered(fused, z, z_all, memory)):
        return _fused_per_sample(z_all, rows[0], temperature, fused, views)
    z_all, cols, valid = memory_columns(z_all, cols, supervised, normalize, z.shape[1], memory)
    bound = _logit_bound(temperature, normalize)

    def block(z_rows, z_cols, row_ids):
        masks = PairMasks(row_ids, cols, label_similarity, valid)
        # Scaling the rows, not the product, saves one (n, N) buffer. Unchunked, the
        # logits are kept for the backward pass: three matmuls in all, none recomputed.
        similarities = Similarities(z_rows / temperature, z_cols, bound,
                                    keep_logits=chunk_size is None)
        terms = anchor_terms(similarities, masks)
        return tuple(t for value, valid in terms
                     for t in (value, ops.cast(valid, "float32")))

    if chunk_size is None:
        outputs = block(z, z_all, rows)
    else:
        outputs = blockwise(block, z, z_all, rows, chunk_size, y_pred.shape, 2 * len(weights))
    total = 0.0
    for k, weight in enumerate(weights):
        total = total + weight * mean_over_views(outputs[2 * k], outputs[2 * k + 1] > 0, views)
    return total


def _uncovered(fused, z, z_all, memory):
    """The loss's own reason the kernel does not cover it, a memory, or a gathered global batch
    (the kernel contrasts one matrix with itself: anchors and columns must be the same rows)."""
    if fused.uncovered:
        return fused.uncovered
    if memory is not None:
        return "a memory queue is given (memory= or clzoo.losses.with_memory)"
    return None if z_all.shape[0] == z.shape[0] else "the batch is gathered across replicas"


def _fused_per_sample(z, labels, temperature, fused, views):
    """The per-sample loss from the fused kernel's per-anchor values (`clzoo.losses.fused`)."""
    loss, valid = implementation().anchor_loss(z, labels, 1.0 / temperature, fused.mode, fused.epsilon)
    return mean_over_views(loss, valid, views)


def _check_views(views, min_views, loss_name):
    if views < min_views:
        raise ValueError(
            f"{loss_name} needs at least {min_views} views per sample: its positives are "
            f"the sample's other views. Received: y_pred with views={views}"
        )


def _logit_bound(temperature, normalize):
    """`1 / temperature` when unit rows bound the logits tightly enough for one shared
    exponential (`Similarities`); None otherwise (learnable temperature, no normalization)."""
    fixed = isinstance(temperature, float)
    return 1.0 / temperature if fixed and normalize and 2.0 / temperature <= MAX_EXP_RANGE else None


def mean_over_views(anchor_loss, anchor_valid, views):
    """Per-sample loss `(batch,)`: mean over the sample's valid anchors, 0 if none."""
    loss = ops.reshape(anchor_loss, (-1, views))
    valid = ops.reshape(ops.cast(anchor_valid, "float32"), (-1, views))
    total = ops.sum(ops.where(valid > 0, loss, 0.0), axis=-1)
    return total / ops.maximum(ops.sum(valid, axis=-1), 1.0)
