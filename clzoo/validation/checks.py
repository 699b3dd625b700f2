"""Input checks shared by the losses: dtypes, label layouts and data-value checks.

Value checks (`require`) behave the same on every backend and execution mode:

- eager (concrete tensors, all of torch): evaluated at once, `ValueError`;
- inside a TensorFlow graph (`tf.function`, `fit`): `tf.debugging.Assert`,
  raised at run time as `tf.errors.InvalidArgumentError` with the same
  message (XLA drops asserts, so callers also poison the value with NaN);
- inside a JAX trace (`jax.jit`, `fit`): a host callback raising the
  `ValueError`, surfacing as `jax.errors.JaxRuntimeError` that carries the
  same message (inside a loss call a `jax.pure_callback` the loss value
  depends on, so that on a GPU the error comes with the loss: `_jax_check`).

Callers only ask for value checks on paths that need them (rank-2 or float
labels, a given `sample_weight`, opt-in `check_values`), so integer
`(batch,)` labels without weights add no op and no host sync. The backend
imports are lazy (style rule 2: the one other backend-specific helper is the
`tf.distribute` gather).
"""

import contextlib
import functools
import logging
import numbers
import re
import threading

import keras
import numpy as np
from keras import ops

from clzoo.compat import in_symbolic_build

INT32_MAX = 2**31 - 1

# Whole numbers a float dtype holds exactly and without neighbours merging: |x| < 2^(mantissa + 1).
EXACT_INT_BITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}

_collected = threading.local()


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


class InputCheckError(ValueError):
    """A loss input check failed; also raised on the host from inside `jax.jit` (see `require`)."""


_CALLBACK_ERROR = re.compile(r"InputCheckError: (.+)$", re.MULTILINE)


_GRAPH_MESSAGES = set()  # the messages of the asserts in TensorFlow graphs (a fixed set: the code's)


def input_check_message(error):
    """Our check's message inside a backend error (JAX wraps host-callback errors, TensorFlow's
    failed assert prints it inside a graph traceback), else None."""
    if isinstance(error, InputCheckError):
        return str(error)
    found = _CALLBACK_ERROR.findall(str(error))
    if found:
        return found[-1]
    text = str(error)
    if "assertion failed" in text:
        return max((m for m in _GRAPH_MESSAGES if m in text), key=len, default=None)
    return None


def _not_our_check(record):
    """Logging filter: JAX logs every failed host callback with its traceback before raising."""
    return not (record.exc_info and isinstance(record.exc_info[1], InputCheckError))


# Installed once; creating the loggers does not import JAX.
for _logger in ("jax._src.debugging", "jax._src.callback"):
    logging.getLogger(_logger).addFilter(_not_our_check)


def _raise_unless(ok, *values, message, detail):
    if not bool(np.all(np.asarray(ok))):
        extra = detail(*[np.asarray(v) for v in values]) if detail else ""
        raise InputCheckError(message + extra)


def require(ok, message, values=(), detail=None, gate=None):
    """Raise `ValueError(message + detail(*values))` unless the scalar bool tensor `ok` holds.

    Eager: checked now (one scalar copied to the host; `values` only when
    the check fails). TensorFlow graph: an assert op. JAX trace: a host
    callback. See the module docstring for the error types at run time.

    Returns:
        `gate`, which in a TensorFlow graph runs only after the assert (so a
        shape error downstream cannot pre-empt the clear message).
    """
    if in_symbolic_build():  # Keras' placeholders (torch builds with ones), not the user's data
        return gate
    concrete_ok = concrete(ok)
    if concrete_ok is not None:
        if not bool(np.all(concrete_ok)):  # values reach the host only for the message
            _raise_unless(concrete_ok, *[concrete(v) for v in values], message=message, detail=detail)
        return gate
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        stack = getattr(_collected, "stack", None)
        if stack:  # XLA (`jit_compile=True`) drops the assert; the caller poisons with `ok` instead
            stack[-1].append(ok)
        _GRAPH_MESSAGES.add(message)
        check = tf.debugging.Assert(ok, [message, *values], summarize=8)
        if gate is not None:
            with tf.control_dependencies([check]):
                gate = tf.identity(gate)
    elif backend == "jax":
        _jax_check(ok, values, message, detail)
    return gate


def _jax_check(ok, values, message, detail):
    """The host callback of `require` inside a JAX trace.

    On a GPU a failed `jax.debug.callback` surfaces only at JAX's next effects barrier (in `fit`,
    after training went on with the bad batch); inside a loss call (`collecting_checks`) the check
    is a `jax.pure_callback` whose result the loss value is poisoned with, so the error arrives
    with the loss. Elsewhere no value would use that result (it would be dropped as dead code),
    so the check stays a debug callback.
    """
    import jax

    stack = getattr(_collected, "stack", None)
    if not stack:
        jax.debug.callback(functools.partial(_raise_unless, message=message, detail=detail),
                           ok, *values)
        return
    passed = jax.pure_callback(functools.partial(_passed, message=message, detail=detail),
                               jax.ShapeDtypeStruct((), "bool"), ok, *values)
    stack[-1].append(passed)


def _passed(ok, *values, message, detail):
    """`_raise_unless` as a `jax.pure_callback`: True, or the check's error."""
    _raise_unless(ok, *values, message=message, detail=detail)
    return np.asarray(True)


def poison(value, ok):
    """`value` where `ok` holds, NaN elsewhere: a failed check is never a silent number."""
    return ops.where(ok, value, float("nan"))


@contextlib.contextmanager
def collecting_checks():
    """Collect the graph-mode checks `require` adds inside this block.

    Yields a list of scalar bool tensors; pass it to `poison_unless_all`.
    TensorFlow graphs add their asserted conditions (XLA-compiled steps drop
    `tf.debugging.Assert`) and JAX traces their `jax.pure_callback` results
    (a failed debug callback surfaces late on a GPU, `_jax_check`): either
    way the loss value itself carries the failure.
    """
    stack = _collected.__dict__.setdefault("stack", [])
    stack.append([])
    try:
        yield stack[-1]
    finally:
        stack.pop()


def poison_unless_all(values, oks):
    """`values` where every check in `oks` holds, NaN everywhere otherwise."""
    if not oks:
        return values
    ok = functools.reduce(ops.logical_and, [ops.cast(o, "bool") for o in oks])
    return poison(values, ok)


def id_outside_int32(labels):
    """An id of the NumPy integer array `labels` outside int32 on a backend without int64 (JAX
    without `jax_enable_x64`), as an int; None when there is none or `labels` is anything else."""
    if not (isinstance(labels, np.ndarray) and labels.dtype.kind in "iu" and labels.size):
        return None
    if index_dtype() == "int64":
        return None
    low, high = labels.min(), labels.max()
    if high > INT32_MAX:
        return int(high)
    return int(low) if low < -INT32_MAX - 1 else None


def check_int32_ids(labels, name="y_true"):
    """Refuse a NumPy integer array holding ids outside int32 on JAX without `jax_enable_x64`.

    JAX would wrap such ids modulo 2^32 when the array enters a jitted step
    (`fit`), before any loss sees them, merging classes silently.

    Raises:
        ValueError: naming `name`, the id found and the two ways out.
    """
    bad = id_outside_int32(labels)
    if bad is not None:
        raise ValueError(f"`{name}` holds class id {bad}, outside int32, and JAX without "
                         "`jax_enable_x64` would wrap it modulo 2^32, merging classes. Map the ids to "
                         "0..num_classes-1 first (`np.unique(y, return_inverse=True)[1]`) or set "
                         "`jax.config.update('jax_enable_x64', True)` before building the model")
    return labels
