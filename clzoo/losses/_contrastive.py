"""Private machinery shared by every embedding loss.

One place builds what all contrastive losses need from a multi-view batch:
float32 cosine logits, and the anchor / positive / noise masks. A loss module
only chooses which masks form its positive set and its denominator.

Layout: `y_pred` of shape `(batch, views, dim)` is flattened sample-major, so
row `b * views + v` is view `v` of sample `b`. Every row is an anchor once.
"""

import functools
import math

import keras
import numpy as np
from keras import ops

from clzoo.losses import _checks as K
from clzoo.losses import _label_similarity as LS
from clzoo.losses import _row_ops as R
from clzoo.losses.memory import active_memory, extend_columns


def validate_number(value, name, low=None, high=None, low_open=False, what="a number"):
    """Return `value` as a float in `[low, high]` (or `(low, high]`), else a `ValueError` naming it.

    Python and NumPy scalars are accepted (`np.float32(0.1)`, `np.int64(4)`);
    bools, strings, arrays, NaN and infinities are refused.
    """
    ok = K.is_number(value) and math.isfinite(float(value))
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        raise ValueError(f"`{name}` must be {what}. Received: {name}={value!r}")
    return float(value)


def validate_temperature(temperature, name="temperature"):
    """Return `temperature` as a float, or raise a `ValueError` naming it.

    A scalar backend tensor (the value of a `LearnableTemperature`) is
    returned as it is.
    """
    if ops.is_tensor(temperature) and not isinstance(temperature, np.ndarray) \
            and len(temperature.shape) == 0:
        return temperature
    return validate_number(temperature, name, low=0.0, low_open=True,
                           what="a positive, finite number")


def validate_positive_int(value, name, allow_none=True):
    """Return `value` (None or a positive Python / NumPy integer) as an int, else a `ValueError`."""
    if value is None and allow_none:
        return None
    if not K.is_number(value, integral=True) or value < 1:
        raise ValueError(f"`{name}` must be None or a positive integer. Received: {name}={value!r}")
    return int(value)


def validate_bool(value, name):
    """Return `value` (a Python or NumPy bool) as a bool, else a `ValueError` naming it."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"`{name}` must be True or False. Received: {name}={value!r}")
    return bool(value)


def _static_size(size, name, shape, arg="y_pred"):
    if size is not None and size < 1:
        raise ValueError(f"`{arg}` has {name} 0; a contrastive loss needs at least one sample with a "
                         f"non-empty embedding. Received: {arg}.shape={shape}")


def embedding_tensor(y_pred, dtype=None):
    """`y_pred` as a real-valued tensor (of `dtype` when given).

    Raises:
        ValueError: naming `y_pred`, for string, object, complex or bool values.
    """
    y_pred = K.as_array_or_tensor(y_pred, "y_pred")
    if K.dtype_of(y_pred) == "bool":
        raise ValueError("`y_pred` must be real-valued embeddings. Received: y_pred with dtype bool")
    return ops.convert_to_tensor(y_pred, dtype=dtype)


def standardize_embeddings(y_pred, normalize=True):
    """Flatten `(batch, views, dim)` or `(batch, dim)` to float32 `(batch*views, dim)`.

    Returns:
        `(embeddings, batch, views)`; `batch` may be a symbolic scalar when
        the static batch size is unknown.

    Raises:
        ValueError: naming `y_pred`, if it is not of rank 2 or 3, has an
            empty batch, `dim == 0` or `views == 0`, or is complex, string or
            bool.
    """
    y_pred = embedding_tensor(y_pred)
    rank = K.rank_of(y_pred)
    if rank not in (2, 3):
        shape = tuple(y_pred.shape) if rank is not None else "unknown"
        raise ValueError(
            "`y_pred` must be embeddings of shape (batch, views, dim) or "
            f"(batch, dim). Received: y_pred.shape={shape}"
        )
    if rank == 2:
        y_pred = ops.expand_dims(y_pred, 1)
    batch, views, dim = y_pred.shape
    if views is None or dim is None:
        raise ValueError(
            "The views and dim axes of `y_pred` must have a static size. "
            f"Received: y_pred.shape={tuple(y_pred.shape)}"
        )
    shape = tuple(y_pred.shape) if rank == 3 else (batch, dim)
    for size, what in ((batch, "an empty batch"), (views, "views"), (dim, "dim")):
        _static_size(size, what, shape)
    if batch is None:
        batch = ops.shape(y_pred)[0]
    # Logits and log-sum-exp in float32 even under mixed precision.
    z = ops.cast(ops.reshape(y_pred, (-1, dim)), "float32")
    if normalize:
        z = l2_normalize(z)
    return z, batch, views


def l2_normalize(z):
    """Unit rows of float `(..., dim)` `z`, exact at any scale the dtype holds.

    A row whose squares would underflow (float32 rows of 1e-30) or overflow
    (1e30; float16 rows of 1e3) is divided by its largest |entry| first, so
    it gives the same unit vector, and gradient times scale, as the row at
    scale 1; other rows take the plain `z / ||z||`. An all-zero row stays the
    zero vector (cosine similarity 0 with every embedding) with a zero
    gradient, never NaN; a NaN / inf row gives NaN.
    """
    low, high = _safe_norm_range(z)
    # The result does not depend on the scale, so its gradient through the scale is zero.
    largest = ops.stop_gradient(ops.max(ops.abs(z), axis=-1, keepdims=True))
    zero = ops.equal(largest, 0)  # not `largest > 0`: a NaN row must stay NaN
    in_range = ops.logical_and(largest >= low, largest <= high)
    unit = z / ops.where(ops.logical_or(zero, in_range), 1.0, largest)
    squares = ops.sum(ops.square(unit), axis=-1, keepdims=True)
    # sqrt of 1, not of 0, on a zero row: sqrt's infinite slope at 0 would make its gradient NaN.
    return ops.where(zero, 0.0, unit / ops.sqrt(ops.where(zero, 1.0, squares)))


# Smallest normal and largest finite value of each float dtype.
_FLOAT_RANGE = {"float16": (6.1e-5, 65504.0), "bfloat16": (1.2e-38, 3.3e38),
                "float32": (1.2e-38, 3.4e38), "float64": (2.3e-308, 1.7e308)}


def _safe_norm_range(z):
    """`(low, high)`: rows whose largest |entry| lies in it keep a sum of squares in range, and every
    square that matters to it above the subnormals (which XLA and TensorFlow flush to zero)."""
    dtype = keras.backend.standardize_dtype(z.dtype)
    tiny, huge = _FLOAT_RANGE.get(dtype, _FLOAT_RANGE["float16"])
    bits = K.EXACT_INT_BITS.get(dtype, 11)
    dim = z.shape[-1] or 2**20
    return math.sqrt(tiny) * 2.0 ** (bits // 2 + 1), 0.5 * math.sqrt(huge / dim)


_LABELS_HELP = (
    "`y_true` must be integer class ids of shape (batch,) or (batch, 1), or exactly one-hot rows "
    "(batch, classes)"
)


_FLOAT_IDS_HELP = "Float `y_true` must hold whole-number class ids (no fractions, NaN or inf"


def _first_bad_id(ok_np, y_np):
    bad = int(np.argmin(ok_np.reshape(-1)))
    return f". Received: y_true[{bad}]={y_np.reshape(-1)[bad]!r}"


def _host_ids(y_true):
    """NumPy labels, made exact on the host: float ids -> int64, then ids beyond int32 on a
    backend without int64 (JAX without x64) -> dense ids with the same classes."""
    if not isinstance(y_true, np.ndarray):
        return y_true
    if y_true.dtype.kind == "f" and (y_true.ndim < 2 or y_true.shape[-1] == 1):
        bits = _exact_bits(K.dtype_of(y_true))
        ok = np.isfinite(y_true) & (y_true == np.round(y_true)) & (np.abs(y_true) < 2.0**bits)
        K.require(ok, _float_ids_help(K.dtype_of(y_true), bits), (ok, y_true), _first_bad_id)
        y_true = y_true.astype(np.int64)
    if K.id_outside_int32(y_true) is not None:
        return np.unique(y_true, return_inverse=True)[1].reshape(y_true.shape).astype("int32")
    return y_true


def _one_hot_ids(y_true):
    """Class ids of exactly one-hot rows; anything else is refused (never argmaxed)."""
    y_true = ops.convert_to_tensor(y_true)
    binary = ops.logical_or(ops.equal(y_true, 0), ops.equal(y_true, 1))
    ones = ops.sum(ops.cast(ops.equal(y_true, 1), "int32"), axis=-1)
    row_ok = ops.logical_and(ops.all(binary, axis=-1), ops.equal(ones, 1))

    def detail(row_ok_np, y_np):
        bad = int(np.argmin(row_ok_np))
        return f". Received: y_true.shape={y_np.shape}, row {bad} = {y_np[bad][:8].tolist()}"

    ids = ops.cast(ops.argmax(y_true, axis=-1), "int32")
    return K.require(ops.all(row_ok),
                     _LABELS_HELP + ". A rank-2 y_true that is not one-hot is refused: (batch, views) "
                     "labels, multi-hot rows and soft rows (MixUp, label smoothing: use "
                     "SoftTargetInfoNCELoss) are never argmaxed", (row_ok, y_true), detail, gate=ids)


def _exact_bits(dtype):
    """Float ids are exact only while |id| < 2^bits (the dtype's mantissa + 1; at most int32's
    31 bits on a backend without int64): above that, neighbouring ids may already have merged."""
    bits = K.EXACT_INT_BITS.get(dtype, 24)
    return min(bits, 31) if K.index_dtype() == "int32" else bits


def _float_ids_help(dtype, bits):
    return (f"{_FLOAT_IDS_HELP}, |id| < 2^{bits}: {dtype} cannot tell larger ids apart, so some "
            "may already be merged; pass integer labels)")


def _whole_float_ids(y_true):
    """Float labels that are whole numbers the dtype holds exactly, as integers; others refused."""
    dtype = K.dtype_of(y_true)
    bits = _exact_bits(dtype)
    y_true = ops.convert_to_tensor(y_true)
    ok = ops.logical_and(ops.equal(y_true, ops.round(y_true)), ops.abs(y_true) < 2.0**bits)
    ids = ops.cast(y_true, "int64" if bits > 31 else "int32")
    return K.require(ops.all(ok), _float_ids_help(dtype, bits), (ok, y_true), _first_bad_id, gate=ids)


def _int_ids(y_true):
    """Integer labels without a float round trip: 64-bit ids stay 64-bit where the backend allows."""
    wide = K.dtype_of(y_true) in ("int64", "uint32", "uint64")
    return ops.cast(y_true, K.index_dtype() if wide else "int32")


def _check_count(labels, batch, shape):
    count = labels.shape[0]
    samples = batch if isinstance(batch, int) else "a dynamic number of"
    message = (f"`y_true` must hold one label per sample of `y_pred` ({samples} samples). "
               f"Received: {count if count is not None else 'a dynamic number of'} labels "
               f"(y_true.shape={shape})")
    if isinstance(batch, int) and count is not None:
        if count != batch:
            raise ValueError(message)
        return labels
    # Unknown at trace time (tf.function with a None batch): checked when the step runs.
    return K.require(ops.equal(ops.shape(labels)[0], batch), message, gate=labels)


def standardize_labels(y_true, batch):
    """Validate labels and return integer class ids `(batch,)` (int32, or int64 for 64-bit ids).

    Accepted: integer `(batch,)` / `(batch, 1)` (used as they are, no float
    round trip, so ids >= 2^24 and beyond int32 stay distinct), exactly
    one-hot `(batch, classes)`, and float labels holding whole numbers.
    `y_true=None` gives instance labels `0..batch-1` (self-supervised losses).

    Raises:
        ValueError: naming `y_true`: string / complex dtypes, rank other than
            1 or 2, rank-2 rows that are not exactly one-hot (soft, multi-hot,
            `(batch, views)` ids), non-integer floats, or a label count other
            than the batch size of `y_pred`. Inside compiled graphs the
            value checks raise at run time (see `_checks.require`).
    """
    if y_true is None:
        return ops.arange(batch, dtype="int32")
    y_true = _host_ids(K.as_array_or_tensor(y_true, "y_true"))
    if K.dtype_of(y_true) == "bool":
        y_true = ops.cast(y_true, "int32")
    rank = K.rank_of(y_true)
    shape = tuple(y_true.shape) if rank is not None else "unknown"
    if rank not in (1, 2, None):
        raise ValueError(f"{_LABELS_HELP}. Received: y_true.shape={shape}")
    if rank == 2 and y_true.shape[-1] is not None and y_true.shape[-1] > 1:
        labels = _one_hot_ids(y_true)
    else:  # (batch,), (batch, 1); an unknown layout must then hold exactly one id per sample.
        labels = ops.reshape(ops.convert_to_tensor(y_true), (-1,))
        float_labels = K.kind_of(labels) == "float"
        labels = _whole_float_ids(labels) if float_labels else _int_ids(labels)
    return _check_count(labels, batch, shape)


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
        label_weight: float32 pair weight in [0, 1] (`_label_similarity`):
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
        # Memory entries (`clzoo.losses.memory`): `valid` flags the columns that exist; an
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


def _replica_context():
    """The `tf.distribute` replica context when running on several replicas, else None."""
    if keras.backend.backend() != "tensorflow":
        return None  # JAX DataParallel hands the loss the global batch already.
    import tensorflow as tf

    if not tf.distribute.has_strategy():
        return None
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return None
    return context


def _gather_global_batch(z, labels, views):
    """All-gather embeddings and labels across `tf.distribute` replicas.

    Returns `(z_all, labels_all, offset)` where `offset` is the index of this
    replica's first sample in the global batch. Gradients flow back to each
    replica's own slice through the all-gather.
    """
    context = _replica_context()
    if context is None:
        return z, labels, 0
    import tensorflow as tf

    local = tf.shape(labels)[0]
    sizes = context.all_gather(tf.reshape(local, (1,)), axis=0)
    replica = context.replica_id_in_sync_group
    offset = tf.reduce_sum(sizes[:replica])
    return context.all_gather(z, axis=0), context.all_gather(labels, axis=0), offset


def validate_chunk_size(chunk_size):
    """Return `chunk_size` (None or a positive int) or raise a `ValueError` naming it."""
    return validate_positive_int(chunk_size, "chunk_size")


def _global_ids(z, y_true, batch, views, supervised, label_similarity):
    """Gather the global batch; return `(z_all, rows, cols)`, the per-embedding ids of `PairMasks`.

    Label rows (multi-hot / soft `y_true` with `label_similarity`) travel as a
    fourth entry of `rows` / `cols`; the class ids are then the sample ids.
    """
    label_rows = supervised and label_similarity is not None and LS.is_label_matrix(y_true)
    if label_rows:
        labels = LS.standardize_label_rows(y_true, label_similarity)
        labels = _check_count(labels, batch, tuple(labels.shape))
    else:
        labels = standardize_labels(y_true if supervised else None, batch)
    z_all, labels_all, offset = _gather_global_batch(z, labels, views)
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


def _memory_columns(z_all, cols, supervised, normalize, dim):
    """Memory entries (MoCo queue) as extra columns when `clzoo.losses.with_memory` is active:
    `(z_all, cols, valid)`, `valid` None without memory."""
    if active_memory() is None:
        return z_all, cols, None
    if len(cols) > 3:
        raise ValueError("A memory queue holds class ids, not label rows: `label_similarity` with "
                         "multi-hot / soft `y_true` cannot be combined with a queue. Received: "
                         "label rows while `with_memory` is active")
    z_all, cols = extend_columns(z_all, cols, supervised, l2_normalize if normalize else None,
                                 keras.backend.standardize_dtype(cols[0].dtype), dim)
    return z_all, cols[:3], cols[3]


def per_sample_loss(y_true, y_pred, temperature, anchor_terms, normalize=True,
                    supervised=True, min_views=1, loss_name="This loss", weights=(1.0,),
                    chunk_size=None, label_similarity=None):
    """The one engine of every embedding loss: anchors against the global batch, per sample.

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
        chunk_size: None (all anchors at once) or anchors per block. Blocks
            run in a loop and are recomputed in the backward pass, where the
            reductions of `Similarities` have hand-written gradients (boolean
            masks and float label weights alike), so a forward + backward
            pass holds about six `chunk_size x N` float32 buffers instead of
            several `N x N`, eagerly or compiled; values and gradients are
            the same.
        label_similarity: None, or "cosine" / "jaccard": label rows
            `(batch, classes)` (multi-hot, soft) are accepted and pairs are
            weighted by `PairMasks.label_weight`; class ids still work.

    Returns:
        float32 `(batch,)`: per term, the mean over each sample's valid
        anchors (0 when none is valid), weighted and summed.
    """
    z, batch, views = standardize_embeddings(y_pred, normalize)
    if views < min_views:
        raise ValueError(
            f"{loss_name} needs at least {min_views} views per sample: its positives are "
            f"the sample's other views. Received: y_pred with views={views}"
        )
    z_all, rows, cols = _global_ids(z, y_true, batch, views, supervised, label_similarity)
    z_all, cols, valid = _memory_columns(z_all, cols, supervised, normalize, z.shape[1])

    fixed = isinstance(temperature, float)
    bound = 1.0 / temperature if fixed and normalize and 2.0 / temperature <= _MAX_EXP_RANGE else None

    def block(z_rows, z_cols, row_ids):
        masks = PairMasks(row_ids, cols, label_similarity, valid)
        # Scaling the rows, not the product, saves one (n, N) buffer.
        terms = anchor_terms(Similarities(z_rows / temperature, z_cols, bound), masks)
        return tuple(t for value, valid in terms
                     for t in (value, ops.cast(valid, "float32")))

    if chunk_size is None:
        outputs = block(z, z_all, rows)
    else:
        outputs = _blockwise(block, z, z_all, rows, chunk_size, y_pred.shape, 2 * len(weights))
    total = 0.0
    for k, weight in enumerate(weights):
        total = total + weight * mean_over_views(outputs[2 * k], outputs[2 * k + 1] > 0, views)
    return total


def _runs_eagerly():
    """True where blocks are dispatched op by op: eager TensorFlow and PyTorch."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.executing_eagerly()
    return backend == "torch"


def _sequential_map(fn, xs, n_outputs):
    """`ops.map` of `fn` returning `n_outputs` float32 `(chunk,)` vectors, one block at a time.

    A graph-mode `tf.map_fn` runs 10 iterations at once by default (and
    Keras' `ops.map` traces `fn` once more to learn its outputs).
    """
    if keras.backend.backend() != "tensorflow":
        return ops.map(fn, xs)
    import tensorflow as tf

    signature = (tf.TensorSpec((xs[0].shape[1],), "float32"),) * n_outputs
    return tf.map_fn(fn, xs, fn_output_signature=signature, parallel_iterations=1)


def _blockwise(block, z, z_all, rows, chunk_size, input_shape, n_outputs):
    """`block` over consecutive row blocks of `chunk_size` anchors, concatenated.

    Each block is wrapped in `keras.remat`: a pass keeps only the block
    inputs and per-anchor outputs, and the backward pass recomputes one
    `chunk_size x N` block at a time. Compiled (`tf.function`, JAX), the full
    blocks run in one sequential loop (`tf.map_fn` with
    `parallel_iterations=1`, `lax.map`) the compiler cannot unroll, so it
    never schedules two blocks at once; eager
    TensorFlow and PyTorch run a Python loop (eager `tf.map_fn` evaluates an
    extra block to learn the output signature, and keeps more alive). A
    shorter last block runs on its own.
    """
    n_rows = z.shape[0]
    if n_rows is None:
        raise ValueError(
            "`chunk_size` needs a static batch size (e.g. tf.data with "
            f"drop_remainder=True). Received: y_pred.shape={tuple(input_shape)}"
        )
    n_full, rest = divmod(n_rows, chunk_size)

    def remat_block(z_rows, row_ids):
        # z_all is an explicit argument so that its gradient is recomputed too.
        return keras.remat(lambda zr, zc: block(zr, zc, row_ids))(z_rows, z_all)

    if _runs_eagerly():
        starts = range(0, n_rows, chunk_size)
        pieces = [remat_block(z[a:a + chunk_size], tuple(r[a:a + chunk_size] for r in rows))
                  for a in starts]
    else:
        pieces = []
        if n_full:
            stop = n_full * chunk_size

            def blocked(t):
                return ops.reshape(t[:stop], (n_full, chunk_size) + tuple(t.shape[1:]))

            mapped = _sequential_map(
                lambda x: remat_block(x[0], tuple(x[1:])),
                (blocked(z),) + tuple(blocked(r) for r in rows), n_outputs,
            )
            pieces.append([ops.reshape(m, (stop,)) for m in mapped])
        if rest:
            start = n_full * chunk_size
            pieces.append(remat_block(z[start:], tuple(r[start:] for r in rows)))
    if len(pieces) == 1:
        return tuple(pieces[0])
    return tuple(ops.concatenate(parts, axis=0) for parts in zip(*pieces))


# With unit vectors every logit lies in [-1/t, 1/t], so exp(logit - 1/t) lies
# in [exp(-2/t), 1]: no overflow, and no float32 underflow while 2/t <= 80.
_MAX_EXP_RANGE = 80.0


class Similarities:
    """Anchor-by-embedding logits and the per-anchor reductions every loss builds from them.

    Each reduction has a hand-written gradient (`clzoo.losses._row_ops`), so
    a block's backward pass recomputes its logits and holds its masks and at
    most three `(n, N)` float32 temporaries. Two exact ways to evaluate the same
    formulas: when the logits are known to lie in `[bound - 80, bound]`
    (unit vectors, temperature >= 0.025), one `exp(logits - bound)` serves
    each sum and pair term; otherwise row maxima are subtracted
    (temperatures down to 0.01 and below, unnormalized embeddings).

    Args:
        rows: float32 `(n, D)` anchors divided by the temperature.
        cols: float32 `(N, D)` every embedding; the logits are `rows @ cols^T`.
        bound: None, or a float with `bound - 80 <= logits <= bound`.
    """

    def __init__(self, rows, cols, bound=None):
        self.rows, self.cols, self.bound = rows, cols, bound
        self.logits = ops.matmul(rows, ops.transpose(cols))

    @property
    def _block(self):
        return self.rows, self.cols, self.logits

    def logsumexp(self, mask):
        """Row-wise `log sum_{j in mask} exp(s_ij)`, `(n, 1)`; very negative when the row is empty.

        `mask` may be float32 weights `w_ij >= 0`: `log sum_j w_ij exp(s_ij)`.
        """
        return R.row_logsumexp(self._block, mask, self.bound)

    def mean_gap(self, row, positive_mask):
        """`(mean_{p in P(i)} (row_i - s_ip), has_positive)`, both `(n,)` (SupCon L_out, DCL).

        `row` is `(n, 1)`; an anchor without positives gets 0 and a zero gradient.
        `positive_mask` may be float32 weights `w_ip >= 0`: the weighted mean.
        """
        has_positive = ops.any(R.present(positive_mask), axis=-1)
        return R.mean_gap(row, self._block, positive_mask), has_positive

    def noise_contrastive(self, noise_mask, positive_mask, positive_shift=0.0):
        """`(anchor_loss, has_positive)`, `(n,)`: the mean over positives `p` of
        `-log(exp(s_ip - shift) / (exp(s_ip - shift) + sum_{n in N(i)} exp(s_in)))`.

        The SINCERE / InfoNCE form (`positive_shift=0`) and epsilon-SupInfoNCE's
        margin (`positive_shift=epsilon`). Boolean masks must be disjoint;
        both may instead be float32 weights (`v_in` in the noise sum, `w_ip`
        in the mean over positives), which may overlap.
        """
        value = R.mean_noise_contrastive(self._block, noise_mask, positive_mask,
                                         float(positive_shift), self.bound)
        return value, ops.any(R.present(positive_mask), axis=-1)

    def decoupled(self, noise_mask, positive_mask):
        """Mean over positives of `-log(exp(s_ip) / sum_{n in N(i)} exp(s_in))` (DCL, NSCL).

        Returns `(anchor_loss, valid)`, `(n,)`; an anchor is valid when it has
        a positive and a non-empty noise set.
        """
        anchor_loss, has_positive = self.mean_gap(self.logsumexp(noise_mask), positive_mask)
        return anchor_loss, ops.logical_and(has_positive, ops.any(noise_mask, axis=-1))


def mean_over_views(anchor_loss, anchor_valid, views):
    """Per-sample loss `(batch,)`: mean over the sample's valid anchors, 0 if none."""
    loss = ops.reshape(anchor_loss, (-1, views))
    valid = ops.reshape(ops.cast(anchor_valid, "float32"), (-1, views))
    total = ops.sum(ops.where(valid > 0, loss, 0.0), axis=-1)
    return total / ops.maximum(ops.sum(valid, axis=-1), 1.0)


def standardize_sample_weight(sample_weight, batch):
    """Validate `sample_weight`: a scalar, `(batch,)` or `(batch, 1)`, finite and non-negative.

    Shape and values are always checked: at once on concrete tensors (eager
    calls, torch), when the step runs inside compiled ones (`fit`,
    `evaluate`, `tf.function`, `jax.jit`; see `_checks.require`), since a
    negative weight there would silently turn training into gradient ascent.
    The cost is one pass over `(batch,)` weights, only when weights are given.

    Raises:
        ValueError: naming `sample_weight` (wrong shape, negative, NaN / inf,
            string or complex).
    """
    if sample_weight is None:
        return None
    weight = ops.convert_to_tensor(K.as_array_or_tensor(sample_weight, "sample_weight"))
    rank = K.rank_of(weight)
    shape = tuple(weight.shape) if rank is not None else "unknown"
    message = ("`sample_weight` must be a scalar or one weight per sample, shape (batch,) or "
               f"(batch, 1) with batch={batch if isinstance(batch, int) else 'dynamic'}. "
               f"Received: sample_weight.shape={shape}")
    if rank is None or rank > 2 or (rank == 2 and weight.shape[1] not in (1, None)):
        raise ValueError(message)
    if rank == 2 and weight.shape[1] is None:
        weight = K.require(ops.equal(ops.shape(weight)[1], 1), message, gate=weight)
    if rank >= 1:
        if isinstance(batch, int) and weight.shape[0] is not None:
            if weight.shape[0] != batch:
                raise ValueError(message)
        else:
            weight = K.require(ops.equal(ops.shape(weight)[0], batch), message, gate=weight)
    valid = ops.all(ops.logical_and(ops.isfinite(weight), weight >= 0))
    return K.require(valid, SAMPLE_WEIGHT_VALUES, (weight,), _weight_detail, gate=weight)


SAMPLE_WEIGHT_VALUES = "`sample_weight` must be finite and non-negative"


def _weight_detail(w):
    low = np.nanmin(w) if w.size and not np.all(np.isnan(w)) else None
    return f". Received: sample_weight min={low}, finite={bool(np.all(np.isfinite(w)))}"


def check_host_sample_weight(weight):
    """Refuse a NumPy `sample_weight` holding negative, NaN or inf values (`ValueError` naming it)."""
    if isinstance(weight, np.ndarray) and weight.dtype.kind in "fiu":
        if not np.all(np.isfinite(weight) & (weight >= 0)):
            raise ValueError(SAMPLE_WEIGHT_VALUES + _weight_detail(weight))
    return weight


class _PerSampleValues(keras.losses.Loss):
    """Keras' own `sample_weight` handling and reduction, applied to precomputed per-sample values."""

    def call(self, y_true, y_pred):
        return y_pred


def reduce_per_sample(loss, values, sample_weight):
    """Weight and reduce `values` `(batch,)` exactly as `keras.losses.Loss.__call__` would for `loss`."""
    reducer = _PerSampleValues(reduction=loss.reduction, name=loss.name, dtype=loss.dtype)
    return reducer(values, values, sample_weight=sample_weight)


def check_finite_embeddings(y_pred):
    """Refuse NaN / inf in `y_pred` (see `_checks.require` for compiled steps)."""
    finite = ops.all(ops.isfinite(ops.convert_to_tensor(y_pred)))
    K.require(finite, "`y_pred` holds NaN or inf embeddings (check the model's outputs, learning "
              "rate or mixed-precision loss scale); every gradient of the batch would be NaN")
    return finite


# The `LearnableTemperature` arguments a loss takes with temperature="learnable".
_LEARNABLE_ARGS = ("temperature_init", "min_temperature", "max_temperature")


class ContrastiveLoss(keras.losses.Loss):
    """Base class of the embedding losses: validation, config and reduction.

    Subclasses implement `call(y_true, y_pred)` returning a `(batch,)` tensor
    and add their own arguments to `get_config()`. Every embedding loss takes
    `chunk_size` and `check_values`.

    `chunk_size` (None, or anchors per block) computes the same loss and
    gradient blockwise: each block is recomputed in the backward pass with a
    hand-written gradient (`_row_ops.py`), so a forward + backward pass holds
    about six `chunk_size x N` float32 buffers (`24 * chunk_size * N` bytes:
    3 GiB at 2048 x 65,536) instead of several `N x N` ones (`N = batch *
    views`), eager or compiled. It needs a static batch size (`ValueError`
    otherwise). With `label_similarity` (SupCon, SINCERE) the blocks take the
    same exact gradients but also hold the float32 label weights: 3.8 (JAX
    compiled) to 6.0 GiB (TensorFlow eager) at 2048 x 65,536 for SINCERE
    (`benchmarks/README.md`); halve `chunk_size` for the class-id footprint.

    Unlike `keras.losses.Loss`, labels reach `call` as given (Keras would
    cast them to float32, merging ids >= 2^24); they are validated by
    `standardize_labels`. `sample_weight` must be a scalar, `(batch,)` or
    `(batch, 1)`, finite and non-negative (`ValueError` naming it), inside
    `fit` / `evaluate` too (see `standardize_sample_weight`).

    Where a check cannot raise, the loss is NaN rather than a wrong number:
    TensorFlow's XLA (`jit_compile=True`) drops asserts. On JAX without
    `jax_enable_x64`, JAX itself wraps int64 ids outside int32 when a batch
    enters a jitted step, before any loss runs; `clzoo.models.ContrastiveModel`
    refuses such labels first (`ValueError`), a plain `keras.Model` cannot.

    `check_values=True` also refuses NaN / inf embeddings inside compiled
    steps (`fit`, `tf.function`, `jax.jit`). It is off by default because it
    costs a full pass over `y_pred` and, on JAX, a device-to-host callback
    per step; with it off, integer `(batch,)` labels and no `sample_weight`
    add no check at all to the step.

    `temperature="learnable"` makes the temperature a trained weight (CLIP,
    Radford et al. 2021, sec. 2.5): the loss owns a
    `clzoo.losses.LearnableTemperature` layer (`temperature_layer`, built from
    the keyword arguments `temperature_init=0.07`, `min_temperature=0.01`,
    `max_temperature=1.0`), which `clzoo.models.ContrastiveModel.compile`
    adopts as a sublayer, so `fit` trains it and `model.save` /
    `keras.saving.load_model` keep it. `temperature_value()` is the float
    or the current tensor. Not combinable with `chunk_size` (the blockwise
    recomputation does not carry the temperature's gradient).
    """

    def __init__(
        self,
        temperature=0.1,
        normalize=True,
        chunk_size=None,
        reduction="sum_over_batch_size",
        name=None,
        dtype=None,
        check_values=False,
        **learnable,
    ):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.normalize = validate_bool(normalize, "normalize")
        self.chunk_size = validate_chunk_size(chunk_size)
        self.check_values = validate_bool(check_values, "check_values")
        self.temperature, self.temperature_layer = _temperature(temperature, self.chunk_size,
                                                                learnable)

    def temperature_value(self):
        """The temperature to divide logits by: a float, or the learnable layer's current tensor."""
        if self.temperature_layer is None:
            return self.temperature
        return self.temperature_layer.temperature()

    # Self-supervised losses set this to False and accept `y_true=None`.
    uses_labels = True
    # Keyword arguments taken through `**learnable` (recipes check them by name).
    extra_arguments = _LEARNABLE_ARGS

    def __call__(self, y_true, y_pred, sample_weight=None):
        with keras.name_scope(self.name):
            y_pred = embedding_tensor(y_pred, self.dtype)
            if y_true is None and self.uses_labels:
                raise ValueError(f"{type(self).__name__} needs class labels. Received: y_true=None")
            batch = y_pred.shape[0] if y_pred.shape[0] is not None else ops.shape(y_pred)[0]
            with K.collecting_checks() as checks:
                weight = standardize_sample_weight(sample_weight, batch)
                values = self.call(y_true, y_pred)
                if self.check_values:
                    check_finite_embeddings(y_pred)
            return reduce_per_sample(self, K.poison_unless_all(values, checks), weight)

    def get_config(self):
        config = super().get_config()
        config.update({"temperature": self.temperature, "normalize": self.normalize,
                       "chunk_size": self.chunk_size, "check_values": self.check_values})
        if self.temperature_layer is not None:
            config.update({key: getattr(self.temperature_layer, key) for key in _LEARNABLE_ARGS})
        return config


def _temperature(temperature, chunk_size, learnable):
    """`(temperature, LearnableTemperature or None)` from the loss arguments; `ValueError` otherwise."""
    from clzoo.losses.learnable_temperature import LearnableTemperature

    unknown = sorted(set(learnable) - set(_LEARNABLE_ARGS))
    if unknown:
        raise TypeError(f"Unexpected keyword arguments: {unknown}")
    if not (isinstance(temperature, str) and temperature == "learnable"):
        if learnable:
            raise ValueError(f"{sorted(learnable)} apply only to temperature='learnable'. "
                             f"Received: temperature={temperature!r}")
        if isinstance(temperature, str):
            raise ValueError("`temperature` must be a positive, finite number or 'learnable'. "
                             f"Received: temperature={temperature!r}")
        return validate_temperature(temperature), None
    if chunk_size is not None:
        raise ValueError("temperature='learnable' cannot be combined with `chunk_size`. "
                         f"Received: chunk_size={chunk_size!r}")
    return "learnable", LearnableTemperature(**learnable, name="learnable_temperature")
