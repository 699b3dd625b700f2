"""Unchunked losses keep their logits: forward + backward costs the three matmuls of the floor.

The floor of a loss over `N` embeddings is one `(N, D) x (D, N)` product forward and two
backward (`d rows`, `d cols`). Recomputing the logits in the backward pass (what a chunked
loss must do to stay in O(N * chunk) memory) or contracting each row reduction's gradient
separately costs more; these tests count the products each backend actually runs.
"""

import keras
import numpy as np
import pytest

import clzoo
from tests.losses.autodiff import value_and_grad

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")

LOSSES = {
    "SupConLoss": lambda chunk: clzoo.losses.SupConLoss(chunk_size=chunk),
    "SINCERELoss": lambda chunk: clzoo.losses.SINCERELoss(chunk_size=chunk),
    "InfoNCELoss": lambda chunk: clzoo.losses.InfoNCELoss(chunk_size=chunk),
    "DCLLoss": lambda chunk: clzoo.losses.DCLLoss(chunk_size=chunk),
}
RNG = np.random.default_rng(0)
Z = RNG.normal(size=(8, 2, 16)).astype("float32")
Y = RNG.integers(0, 3, size=8).astype("int32")


def _count_products(loss):
    """Matrix products in one compiled forward + backward pass of `loss(Y, z)` w.r.t. `z`."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        @tf.function
        def step(z):
            with tf.GradientTape() as tape:
                tape.watch(z)
                value = loss(Y, z)
            return value, tape.gradient(value, z)

        graph = step.get_concrete_function(tf.TensorSpec(Z.shape, tf.float32)).graph
        return sum(op.type in ("MatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum")
                   for op in _all_ops(graph))
    if backend == "jax":
        import jax

        jaxpr = jax.make_jaxpr(jax.value_and_grad(lambda z: loss(Y, z)))(Z)
        return str(jaxpr).count("dot_general")
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        products = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.overloadpacket in (torch.ops.aten.mm, torch.ops.aten.bmm, torch.ops.aten.matmul):
                Count.products += 1
            return func(*args, **(kwargs or {}))

    z = torch.tensor(Z, requires_grad=True)
    with Count():
        loss(torch.tensor(Y), z).backward()
    return Count.products


def _all_ops(graph):
    """Every op of a TF graph, inside function bodies (custom gradients) too."""
    ops = list(graph.get_operations())
    for function in graph._functions.values():  # noqa: SLF001 (the gradient bodies live here)
        ops += list(function.graph.get_operations()) if hasattr(function, "graph") else []
    return ops


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_unchunked_forward_and_backward_run_three_products(name):
    assert _count_products(LOSSES[name](None)) == 3


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_chunked_still_recomputes_the_logits_in_the_backward_pass(name):
    # One block holding the whole batch: the memory-saving path, whose backward pass recomputes.
    assert _count_products(LOSSES[name](16)) > 3


@pytest.mark.large
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_kept_and_recomputed_logits_give_the_same_value_and_gradient(name):
    kept_value, kept_grad = value_and_grad(lambda z: LOSSES[name](None)(Y, z), Z)
    value, grad = value_and_grad(lambda z: LOSSES[name](16)(Y, z), Z)
    np.testing.assert_allclose(kept_value, value, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(kept_grad, grad, rtol=1e-5, atol=1e-6)
