"""`training.precision`: the Keras dtype policy a run builds and trains its model under.

`float32` (the default), `mixed_bfloat16` or `mixed_float16` (Keras' mixed-precision policies:
variables in float32, layer computations in the half type). Under `mixed_float16` the optimizer
is wrapped in `keras.optimizers.LossScaleOptimizer` (float16's range underflows small gradients;
bfloat16 has float32's range and needs no scaling). The losses compute in float32 whatever the
policy: a `keras.losses.Loss` casts its inputs to its own dtype (float32), so the similarities,
log-sum-exps and their gradients are float32 (`clzoo.losses.precision` keeps their products at
full float32 precision).
"""

import contextlib

import keras

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


@contextlib.contextmanager
def dtype_policy(precision):
    """Keras' global dtype policy set to `precision` for the block, the previous one restored after.

    Layers built inside the block take the policy (Keras' mixed precision: variables float32,
    computations in the half type); the global setting is restored exactly, an unset one included.

    Raises:
        ValueError: `precision` is not one of `PRECISIONS`.

    Example:

    >>> import keras
    >>> from clzoo.train.precision import dtype_policy
    >>> with dtype_policy("mixed_bfloat16"):
    ...     layer = keras.layers.Dense(2)
    >>> layer.compute_dtype, layer.variable_dtype, keras.config.dtype_policy().name
    ('bfloat16', 'float32', 'float32')
    """
    if precision not in PRECISIONS:
        raise ValueError(f"training.precision must be one of {', '.join(PRECISIONS)}. "
                         f"Received: {precision!r}")
    from keras.src.backend.common import global_state

    # the raw setting, None included: keras.config.dtype_policy() would fix the default in place
    previous = global_state.get_global_attribute("dtype_policy", None)
    keras.config.set_dtype_policy(precision)
    try:
        yield
    finally:
        global_state.set_global_attribute("dtype_policy", previous)


def scaled(optimizer, precision):
    """`optimizer` in a `LossScaleOptimizer` under `mixed_float16`, else as it is."""
    if precision != "mixed_float16" or isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        return optimizer
    return keras.optimizers.LossScaleOptimizer(optimizer)


def inner_optimizer(optimizer):
    """The optimizer a `LossScaleOptimizer` wraps, else `optimizer` (what the levers configure)."""
    return getattr(optimizer, "inner_optimizer", optimizer)
