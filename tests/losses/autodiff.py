"""Gradient of a scalar function of one array, on whichever Keras backend runs."""

import keras
import numpy as np


def value_and_grad(fn, x):
    """Return `(fn(x), d fn / d x)` as NumPy arrays, `x` float32."""
    backend = keras.backend.backend()
    x = np.asarray(x, dtype=np.float32)
    if backend == "tensorflow":
        import tensorflow as tf

        v = tf.Variable(x)
        with tf.GradientTape() as tape:
            out = fn(v)
        return np.asarray(out), np.asarray(tape.gradient(out, v))
    if backend == "jax":
        import jax

        out, grad = jax.value_and_grad(lambda a: fn(a))(x)
        return np.asarray(out), np.asarray(grad)
    if backend == "torch":
        import torch

        t = torch.tensor(x, requires_grad=True)
        out = fn(t)
        out.backward()
        return out.detach().numpy(), t.grad.numpy()
    raise NotImplementedError(backend)
