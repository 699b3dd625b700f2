"""Who is whose positive: per-embedding ids of the global batch and the anchor / column masks.

Every anchor (a row) is compared with every embedding of the global batch
(a column), plus the memory entries (`clzoo.losses.memory_bank`). Each side
is described by flat int arrays (label, sample id, position); `PairMasks`
turns them into the boolean relations the losses choose their positive set
and denominator from.
"""

import functools

import keras
from keras import ops

from clzoo.losses import distributed
from clzoo.losses import label_similarity as LS
from clzoo.losses.memory_bank import extend_columns
from clzoo.validation.inputs import l2_normalize
from clzoo.validation.labels import check_count, standardize_labels


class PairMasks:
    """Boolean `(n, N)` relations between anchors (rows) and embeddings (columns).

    Rows are a block of this device's anchors; columns are all `N`
    embeddings of the global batch. Each side is described by flat int32
    arrays (one entry per embedding): class label, sample id and position in
    the global batch.

    Attributes:
        self_pair: the anchor itself.
        same_instance: other views of the anchor's sample.
        same_class: embeddings with the anchor's label, other than the anchor
            itself (includes `same_instance`).
        other_class: embeddings whose label differs from the anchor's.
        not_self: every embedding but the anchor.
        label_weight: float32 pair weight in [0, 1] (`clzoo.losses.label_similarity`):
            1 for the anchor's other views, the label similarity for other
            samples (the same-label indicator for class ids), 0 for the
            anchor itself.

    With label rows (multi-hot / soft `y_true`), each side carries a fourth
    array, the prepared label rows, and the class ids are the sample ids:
    losses then read `label_weight`, not `same_class` / `other_class`.
    """

    def __init__(self, rows, cols, label_similarity=None, valid=None):
        self._rows, self._cols = rows, cols
        self._label_similarity = label_similarity
        # Memory entries (`clzoo.losses.memory_bank`): `valid` flags the columns that exist; an
        # empty memory slot is neither a positive nor noise.
        self._valid = None if valid is None else valid[None, :]

    def _existing(self, mask):
        return mask if self._valid is None else ops.logical_and(mask, self._valid)

    # Built on first use: a loss pays only for the relations it reads (this
    # matters on eager backends, where nothing fuses them away). The building
    # blocks are recomputed rather than cached: a comparison is cheap, and a
    # cached `(n, N)` mask stays alive for the whole block.
    def _pair(self, k):
        return ops.equal(self._rows[k][:, None], self._cols[k][None, :])

    @property
    def self_pair(self):
        return self._pair(2)

    @property
    def not_self(self):
        return self._existing(ops.not_equal(self._rows[2][:, None], self._cols[2][None, :]))

    @property
    def _equal_label(self):
        return self._existing(self._pair(0))

    @functools.cached_property
    def same_class(self):
        return ops.logical_and(self._equal_label, self.not_self)

    @functools.cached_property
    def same_instance(self):
        return ops.logical_and(self._pair(1), self.not_self)

    @functools.cached_property
    def other_class(self):
        return self._existing(ops.logical_not(self._pair(0)))

    @functools.cached_property
    def label_weight(self):
        if len(self._rows) > 3:
            weight = LS.pair_similarity(self._rows[3], self._cols[3], self._label_similarity)
        else:
            weight = ops.cast(self._equal_label, "float32")
        weight = ops.where(self.same_instance, 1.0, weight)
        return ops.where(self.self_pair, 0.0, weight)



def _flat_ids(labels, views, offset):
    """Per-embedding (label, sample id, global position) for samples starting at `offset`."""
    samples = ops.arange(ops.shape(labels)[0], dtype="int32") + offset
    return (
        ops.repeat(labels, views, axis=0),
        ops.repeat(samples, views, axis=0),
        ops.arange(ops.shape(labels)[0] * views, dtype="int32") + offset * views,
    )



def global_ids(z, y_true, batch, views, supervised, label_similarity):
    """Gather the global batch; return `(z_all, rows, cols)`, the per-embedding ids of `PairMasks`.

    Label rows (multi-hot / soft `y_true` with `label_similarity`) travel as a
    fourth entry of `rows` / `cols`; the class ids are then the sample ids.
    """
    label_rows = supervised and label_similarity is not None and LS.is_label_matrix(y_true)
    if label_rows:
        labels = LS.standardize_label_rows(y_true, label_similarity)
        labels = check_count(labels, batch, tuple(labels.shape))
    else:
        labels = standardize_labels(y_true if supervised else None, batch)
    z_all, labels_all, offset = distributed.gather_global_batch(z, labels, views)
    extra_rows, extra_cols = (), ()
    if label_rows:
        extra_rows = (ops.repeat(labels, views, axis=0),)
        extra_cols = (ops.repeat(labels_all, views, axis=0),)
    if not supervised or label_rows:
        # Instance ids must be unique across replicas: use global positions.
        labels = ops.arange(ops.shape(labels)[0], dtype="int32") + offset
        labels_all = ops.arange(ops.shape(labels_all)[0], dtype="int32")
    rows = _flat_ids(labels, views, offset) + extra_rows
    cols = _flat_ids(labels_all, views, 0) + extra_cols
    return z_all, rows, cols



def memory_columns(z_all, cols, supervised, normalize, dim, memory):
    """Memory entries (MoCo queue; `memory` from `clzoo.losses.memory_bank.resolve_memory`) as extra
    columns: `(z_all, cols, valid)`, `valid` None without memory."""
    if memory is None:
        return z_all, cols, None
    if len(cols) > 3:
        raise ValueError("A memory queue holds class ids, not label rows: `label_similarity` with "
                         "multi-hot / soft `y_true` cannot be combined with a queue. Received: "
                         "label rows with a memory")
    z_all, cols = extend_columns(z_all, cols, supervised, l2_normalize if normalize else None,
                                 keras.backend.standardize_dtype(cols[0].dtype), dim, memory)
    return z_all, cols[:3], cols[3]
