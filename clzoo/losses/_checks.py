"""Private input checks shared by the losses: dtypes, label layouts and data-value checks.

Value checks (`require`) behave the same on every backend and execution mode:

- eager (concrete tensors, all of torch): evaluated at once, `ValueError`;
- inside a TensorFlow graph (`tf.function`, `fit`): `tf.debugging.Assert`,
  raised at run time as `tf.errors.InvalidArgumentError` with the same
  message (XLA drops asserts, so callers also poison the value with NaN);
- inside a JAX trace (`jax.jit`, `fit`): `jax.debug.callback` raising the
  `ValueError` on the host, surfacing as `jax.errors.JaxRuntimeError` that
  carries the same message.

Callers only ask for value checks on paths that need them (rank-2 or float
labels, opt-in `check_values`), so integer `(batch,)` labels add no op and no
host sync. The backend imports are lazy (style rule 2: the one other
backend-specific helper is the `tf.distribute` gather).
"""

import functools
import numbers

import keras
import numpy as np
from keras import ops

INT32_MAX = 2**31 - 1


def is_number(value, integral=False):
    """True for Python / NumPy real numbers (`np.float32(0.1)`, `np.int64(4)`), never for bools."""
    if isinstance(value, (bool, np.bool_)):
        return False
    return isinstance(value, numbers.Integral if integral else numbers.Real)


def dtype_of(x):
    """Keras' standardized dtype name of a tensor or array (`"float32"`, `"int64"`, `"string"`)."""
    try:
        return keras.backend.standardize_dtype(x.dtype)
    except (ValueError, TypeError, AttributeError):
        return str(getattr(x, "dtype", type(x).__name__))


def _kind(dtype):
    if dtype.startswith(("float", "bfloat")):
        return "float"
    if dtype.startswith(("int", "uint")) or dtype == "bool":
        return "int"
    return "other"  # complex, string, object, ...


def as_array_or_tensor(x, name):
    """`x` converted to a tensor of its own dtype; strings, objects and complex numbers are refused.

    Raises:
        ValueError: naming `name` and the dtype received.
    """
    if isinstance(x, (list, tuple)) or np.isscalar(x):
        x = np.asarray(x)
    if isinstance(x, np.ndarray) and x.dtype.kind in "USOcMmV":
        raise ValueError(f"`{name}` must be numeric; strings, objects and complex numbers are refused "
                         f"(map class names to integer ids first). Received: {name} with dtype "
                         f"{x.dtype}")
    dtype = dtype_of(x)
    if _kind(dtype) == "other":
        raise ValueError(f"`{name}` must be real numbers. Received: {name} with dtype {dtype}")
    return x if isinstance(x, np.ndarray) else ops.convert_to_tensor(x)


def kind_of(x):
    """`"float"` or `"int"` (bools count as integers)."""
    return _kind(dtype_of(x))


def rank_of(x):
    """Static rank, or None when unknown (TensorFlow graphs)."""
    try:
        return len(x.shape)
    except (ValueError, TypeError):
        return None


def index_dtype():
    """`"int64"` where the backend has it; JAX without `jax_enable_x64` has only int32."""
    if keras.backend.backend() == "jax":
        import jax

        return "int64" if jax.config.jax_enable_x64 else "int32"
    return "int64"


def is_concrete(x):
    """True when `x` has a value now (NumPy, eager tensors, all of torch); False while tracing
    (tf.function, jax.jit) or for symbolic tensors. Never copies `x` to the host."""
    if isinstance(x, np.ndarray):
        return True
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.executing_eagerly() and hasattr(x, "numpy")
    if backend == "jax":
        import jax

        return not isinstance(x, jax.core.Tracer) and not isinstance(x, keras.KerasTensor)
    return not isinstance(x, keras.KerasTensor)


def concrete(x):
    """NumPy value of `x`, or None while tracing (tf.function, jax.jit)."""
    if not is_concrete(x):
        return None
    try:
        return np.asarray(ops.convert_to_numpy(x))
    except Exception:  # any other symbolic tensor has no value yet
        return None


def _raise_unless(ok, *values, message, detail):
    if not bool(np.all(np.asarray(ok))):
        extra = detail(*[np.asarray(v) for v in values]) if detail else ""
        raise ValueError(message + extra)


def require(ok, message, values=(), detail=None, gate=None):
    """Raise `ValueError(message + detail(*values))` unless the scalar bool tensor `ok` holds.

    Eager: checked now (one scalar copied to the host; `values` only when
    the check fails). TensorFlow graph: an assert op. JAX trace: a host
    callback. See the module docstring for the error types at run time.

    Returns:
        `gate`, which in a TensorFlow graph runs only after the assert (so a
        shape error downstream cannot pre-empt the clear message).
    """
    concrete_ok = concrete(ok)
    if concrete_ok is not None:
        if not bool(np.all(concrete_ok)):  # values reach the host only for the message
            _raise_unless(concrete_ok, *[concrete(v) for v in values], message=message, detail=detail)
        return gate
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        check = tf.debugging.Assert(ok, [message, *values], summarize=8)
        if gate is not None:
            with tf.control_dependencies([check]):
                gate = tf.identity(gate)
    elif backend == "jax":
        import jax

        jax.debug.callback(functools.partial(_raise_unless, message=message, detail=detail),
                           ok, *values)
    return gate


def poison(value, ok):
    """`value` where `ok` holds, NaN elsewhere: a failed check is never a silent number."""
    return ops.where(ok, value, float("nan"))
