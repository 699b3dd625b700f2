"""Embeddings in: `y_pred` checked, flattened to `(batch * views, dim)` float32 rows and normalized.

Layout: `y_pred` of shape `(batch, views, dim)` is flattened sample-major, so
row `b * views + v` is view `v` of sample `b`. Every row is an anchor once.
"""

import math

import keras
from keras import ops

from clzoo.validation import checks as K


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



def check_finite_embeddings(y_pred):
    """Refuse NaN / inf in `y_pred` (see `checks.require` for compiled steps)."""
    finite = ops.all(ops.isfinite(ops.convert_to_tensor(y_pred)))
    K.require(finite, "`y_pred` holds NaN or inf embeddings (check the model's outputs, learning "
              "rate or mixed-precision loss scale); every gradient of the batch would be NaN")
    return finite
