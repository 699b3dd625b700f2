"""A function with a hand-written backward pass, on TensorFlow, JAX and PyTorch.

`keras.ops.custom_gradient` does not fit the blockwise losses: JAX refuses a
gradient rule that closes over tracers made outside it (the masks, under
`jax.checkpoint`), PyTorch's checkpoint cannot discard tensors a closure
keeps, and TensorFlow's eager tape records (and keeps) every step of the
forward pass. Here every tensor is an explicit input, the backward pass
reads only the residuals the forward pass declares, and the forward pass
runs on gradient-stopped inputs.
"""

import functools

import keras


def custom_vjp(forward, backward, differentiable=1):
    """`fn(*inputs) -> value` whose gradient is given by `backward`.

    Args:
        forward: `forward(*inputs) -> (value, residuals)`: one output tensor
            and a tuple of the tensors the backward pass needs.
        backward: `backward(residuals, upstream) -> tuple` of the gradients
            of the first `differentiable` inputs, `upstream` being the
            gradient of `value`.
        differentiable: number of leading inputs that get a gradient; the
            others (boolean masks, ids) get none.

    Returns:
        A function of the same inputs as `forward`, returning `value`.
    """
    backend = keras.backend.backend()
    wrap = {"tensorflow": _tensorflow, "jax": _jax, "torch": _torch}.get(backend)
    if wrap is None:
        raise ValueError(f"Chunked losses support the tensorflow, jax and torch backends. "
                         f"Received: KERAS_BACKEND={backend!r}")
    return wrap(forward, backward, differentiable)


def _tensorflow(forward, backward, differentiable):
    import tensorflow as tf

    def call(*inputs):
        extra = (None,) * (len(inputs) - differentiable)

        @tf.custom_gradient
        def fn(*xs):
            value, residuals = forward(*[tf.stop_gradient(x) for x in xs])
            return value, lambda upstream: tuple(backward(residuals, upstream)) + extra

        return fn(*inputs)

    return call


def _jax(forward, backward, differentiable):
    import jax

    def call(*inputs):
        extra = (None,) * (len(inputs) - differentiable)
        fn = jax.custom_vjp(lambda *xs: forward(*xs)[0])
        fn.defvjp(forward, lambda residuals, upstream: tuple(backward(residuals, upstream)) + extra)
        return fn(*inputs)

    return call


def _torch(forward, backward, differentiable):
    function = _torch_function()

    def call(*inputs):
        return function.apply(forward, backward, len(inputs) - differentiable, *inputs)

    return call


@functools.cache
def _torch_function():
    import torch

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, forward_fn, backward_fn, extra, *inputs):
            value, residuals = forward_fn(*inputs)
            # save_for_backward, not a ctx attribute: torch's checkpoint then
            # drops these tensors after the forward pass and recomputes them.
            ctx.save_for_backward(*residuals)
            ctx.backward_fn, ctx.extra = backward_fn, extra
            return value

        @staticmethod
        def backward(ctx, upstream):
            grads = tuple(ctx.backward_fn(ctx.saved_tensors, upstream))
            return (None, None, None) + grads + (None,) * ctx.extra

    return Function
