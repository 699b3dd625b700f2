"""`sample_weight` validated (scalar, `(batch,)` or `(batch, 1)`, finite, >= 0) and Keras' reduction."""

import keras
import numpy as np
from keras import ops

from clzoo.validation import checks as K


def standardize_sample_weight(sample_weight, batch):
    """Validate `sample_weight`: a scalar, `(batch,)` or `(batch, 1)`, finite and non-negative.

    Shape and values are always checked: at once on concrete tensors (eager
    calls, torch), when the step runs inside compiled ones (`fit`,
    `evaluate`, `tf.function`, `jax.jit`; see `checks.require`), since a
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
