"""Extra columns for the embedding losses: a memory of past keys (MoCo queue, cross-batch memory).

Every embedding loss (`SINCERELoss`, `SupConLoss`, `SupInfoNCELoss`, `NSCLLoss`, `DCLLoss`,
`InfoNCELoss`, `SpreadLoss` and their function twins) takes `memory=(embeddings, labels, valid)`
and contrasts each anchor of the batch against the batch *and* the memory entries, as
pytorch-metric-learning's `CrossBatchMemory` passes its memory to the loss.
`clzoo.models.ContrastiveModel(queue_size=...)` passes its queue so inside `fit`. `with_memory(...)`
is a context manager giving the same memory to every loss called inside it without one of its own
(a custom training loop that calls a loss it does not build).

Definition (anchor `i` of the batch, `s = cos / temperature`):

- Columns are the `N` embeddings of the (global) batch followed by the `K`
  memory entries `m_1 .. m_K` whose `valid` flag is set.
- Memory entries are never anchors, never the anchor itself and never another
  view of the anchor's sample; no gradient flows into them.
- Supervised losses read the memory labels: an entry with the anchor's label
  is a positive (SupCon, SINCERE, SupInfoNCE: it adds a pair term and, for
  SupCon, a denominator term), an entry of another class is noise (every
  loss, NSCL included). So SINCERE's pair term becomes
  `-log(exp(s_ip) / (exp(s_ip) + sum_{n in batch + memory, y_n != y_i} exp(s_in)))`,
  averaged over positives `p` in batch + memory.
- Self-supervised losses (InfoNCE, DCL) ignore the labels: each entry is its
  own instance, hence noise for every anchor (MoCo's negatives). An entry may
  be a key of the anchor's own image from an earlier step; MoCo accepts the
  same collision, whose odds are `K / dataset size` per anchor.

This is the dictionary of MoCo (He et al. 2020, eq. 1, where the queue keys
are the negatives) extended with labels as in SupCon's "MoCo-style" memory
(Khosla et al. 2020, sec. 4 / supplement) and cross-batch memory (Wang et al.
2020, eq. 6): same-class entries become positives.
"""

import contextlib
import threading

import keras
from keras import ops

_STATE = threading.local()


def active_memory():
    """The `(embeddings, labels, valid)` set by the innermost `with_memory`, or None."""
    stack = getattr(_STATE, "stack", None)
    return stack[-1] if stack else None


@contextlib.contextmanager
def with_memory(embeddings, labels=None, valid=None):
    """Losses called inside without a `memory` argument contrast their anchors against batch +
    `embeddings` (the argument is the explicit form: `SINCERELoss()(y, z, memory=(embeddings, labels))`).

    Thread-local, so that each `tf.distribute` replica thread sees its own
    memory; a `None` embeddings argument disables the memory inside.

    Args:
        embeddings: float `(K, dim)` memory entries (keys of earlier steps),
            normalized by the loss like `y_pred`. No gradient flows into them.
        labels: integer class ids `(K,)` (int64 where the backend has it), or None (every entry
            its own class: noise for every anchor).
        valid: bool `(K,)`, False for empty slots (never positive, never
            noise), or None (all valid).

    Raises:
        ValueError: naming the argument, for a rank other than 2 (`embeddings`)
            or 1 (`labels`, `valid`) or lengths other than K.

    Example:

    >>> import numpy as np, clzoo
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(4, 2, 8)).astype("float32")
    >>> memory = rng.normal(size=(16, 8)).astype("float32")
    >>> with clzoo.losses.with_memory(memory, np.arange(16) % 2):
    ...     with_queue = float(clzoo.losses.SINCERELoss()(np.array([0, 0, 1, 1]), z))
    >>> with_queue > 0
    True
    """
    memory = None if embeddings is None else _validated(embeddings, labels, valid)
    stack = getattr(_STATE, "stack", None)
    if stack is None:
        stack = _STATE.stack = []
    stack.append(memory)
    try:
        yield
    finally:
        stack.pop()


def resolve_memory(memory):
    """The memory a loss call contrasts with: `memory` (a tuple `(embeddings[, labels[, valid]])`,
    checked), else the innermost `with_memory`'s, else None.

    Raises:
        ValueError: naming `memory` when it is not such a tuple, or the entry that does not fit.
    """
    if memory is None:
        return active_memory()
    if not isinstance(memory, (tuple, list)) or not 1 <= len(memory) <= 3:
        raise ValueError("`memory` must be a tuple (embeddings, labels, valid) with labels and valid "
                         f"optional. Received: memory of type {type(memory).__name__}")
    embeddings, labels, valid = (tuple(memory) + (None, None))[:3]
    return None if embeddings is None else _validated(embeddings, labels, valid)


def _validated(embeddings, labels, valid):
    embeddings = ops.convert_to_tensor(embeddings)
    if len(embeddings.shape) != 2 or embeddings.shape[0] is None:
        raise ValueError("`embeddings` of the memory must have shape (K, dim) with a static K. "
                         f"Received: embeddings.shape={tuple(embeddings.shape)}")
    size = embeddings.shape[0]
    checked = []
    for name, value in (("labels", labels), ("valid", valid)):
        if value is not None:
            value = ops.convert_to_tensor(value)
            if tuple(value.shape) != (size,):
                raise ValueError(f"`{name}` of the memory must have shape ({size},), one per entry. "
                                 f"Received: {name}.shape={tuple(value.shape)}")
        checked.append(value)
    return embeddings, checked[0], checked[1]


def extend_columns(z_all, cols, supervised, normalize, labels_dtype, dim, memory):
    """Append the memory to the loss's columns (used by `per_sample_loss`).

    Args:
        z_all: float32 `(N, dim)` column embeddings of the batch.
        cols: `(label, sample id, position)` int arrays `(N,)` of the columns.
        supervised: whether the loss reads labels.
        normalize: the batch's normalization (`clzoo.validation.inputs.l2_normalize`),
            applied to the memory entries too, or None.
        labels_dtype: dtype of the batch labels.
        dim: the static embedding size of `y_pred` (an all-gathered `z_all`
            may have lost it).
        memory: `(embeddings, labels, valid)` from `resolve_memory`, or None.

    Returns:
        `(z_all, cols)`: unchanged without a memory; else `(N + K, dim)` and
        `(label, sample id, position, valid)` arrays of length `N + K`. Memory
        entries get sample id and position `-1 - k` (never an anchor's) and,
        for self-supervised losses, label `-1 - k` (noise for every anchor).
    """
    if memory is None:
        return z_all, cols
    embeddings, labels, valid = memory
    if embeddings.shape[1] != dim:
        raise ValueError(f"The memory entries must have the embedding dim of `y_pred` "
                         f"({dim}). Received: memory embeddings.shape={tuple(embeddings.shape)}")
    if z_all.shape[1] is None:
        z_all = ops.reshape(z_all, (-1, dim))
    size = embeddings.shape[0]
    m = ops.stop_gradient(ops.cast(embeddings, "float32"))
    if normalize is not None:
        m = normalize(m)
    own = -1 - ops.arange(size, dtype="int32")
    memory_labels = own if (labels is None or not supervised) else labels
    valid = ops.ones((size,), "bool") if valid is None else ops.cast(valid, "bool")
    # int64 when either side holds 64-bit ids, so no id is truncated to meet the other's dtype
    wide = "int64" in (keras.backend.standardize_dtype(labels_dtype),
                       keras.backend.standardize_dtype(memory_labels.dtype))
    ids = "int64" if wide else "int32"
    n = ops.shape(cols[0])[0]
    batch_valid = ops.ones((n,), "bool")
    new_cols = (
        ops.concatenate([ops.cast(cols[0], ids), ops.cast(memory_labels, ids)], axis=0),
        ops.concatenate([cols[1], own], axis=0),
        ops.concatenate([cols[2], own], axis=0),
        ops.concatenate([batch_valid, valid], axis=0),
    )
    return ops.concatenate([z_all, m], axis=0), new_cols
