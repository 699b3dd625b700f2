"""Shared helpers of the hostile-input tests: compiled calls and the error each backend raises there."""

import keras
import numpy as np
from keras import ops

BACKEND = keras.backend.backend()
RNG = np.random.default_rng(14)


def embeddings(batch=4, views=2, dim=8):
    return RNG.normal(size=(batch, views, dim)).astype("float32")


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


def compiled(fn, unknown_batch=True):
    """`fn(y_true, y_pred)` compiled the way `fit` would: tf.function with a None batch, jax.jit."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        def run(y_true, y_pred):
            specs = [tf.TensorSpec([None if unknown_batch else s for s in x.shape[:1]]
                                   + list(x.shape[1:]), tf.as_dtype(x.dtype))
                     for x in (y_true, y_pred)]
            return tf.function(fn, input_signature=specs)(y_true, y_pred)

        return run
    if BACKEND == "jax":
        import jax

        return jax.jit(fn)
    return fn  # torch runs eagerly, as its trainer does


def runtime_error():
    """Exception type of a data-value check that fails inside a compiled step."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.errors.InvalidArgumentError
    if BACKEND == "jax":
        import jax

        return jax.errors.JaxRuntimeError
    return ValueError


def identity_model(shape):
    """A model whose output is its input (embeddings in, embeddings out), for compile / evaluate / fit."""
    inputs = keras.Input(shape)
    scale = keras.layers.Dense(shape[-1], use_bias=False, kernel_initializer="identity")
    return keras.Model(inputs, scale(inputs))
