"""Labels in: `y_true` validated, never coerced, and turned into integer class ids `(batch,)`."""

import numpy as np
from keras import ops

from clzoo.validation import checks as K

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



def check_count(labels, batch, shape):
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
            value checks raise at run time (see `checks.require`).
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
    return check_count(labels, batch, shape)
