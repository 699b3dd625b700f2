"""Gradient of a scalar function of one array, on whichever Keras backend runs."""

import keras
import numpy as np


def value_and_grad(fn, x, compiled=False):
    """Return `(fn(x), d fn / d x)` as NumPy arrays, `x` float32.

    `compiled=True` traces the pass with `tf.function` / `jax.jit` (PyTorch
    stays eager).
    """
    backend = keras.backend.backend()
    x = np.asarray(x, dtype=np.float32)
    if backend == "tensorflow":
        import tensorflow as tf

        def step(v):
            with tf.GradientTape() as tape:
                tape.watch(v)
                out = fn(v)
            return out, tape.gradient(out, v)

        if compiled:
            step = tf.function(step)
        out, grad = step(tf.constant(x))
        return np.asarray(out), np.asarray(grad)
    if backend == "jax":
        import jax

        step = jax.value_and_grad(lambda a: fn(a))
        out, grad = (jax.jit(step) if compiled else step)(x)
        return np.asarray(out), np.asarray(grad)
    if backend == "torch":
        # On Keras' device (a GPU when there is one), and back to the host for NumPy.
        t = keras.ops.convert_to_tensor(x).detach().requires_grad_()
        out = fn(t)
        out.backward()
        return out.detach().cpu().numpy(), t.grad.cpu().numpy()
    raise NotImplementedError(backend)


def numeric_gradient(fn, x, eps=1e-6):
    """Central finite differences `(fn(x + eps e_k) - fn(x - eps e_k)) / (2 eps)` of a scalar NumPy
    function, element by element; `x` is not modified."""
    numeric = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        numeric[idx] = (fn(up) - fn(down)) / (2 * eps)
    return numeric
