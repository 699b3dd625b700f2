"""Issue 59 item 1: the Pallas kernel lowers for a GPU. Interpret mode (the other tests) runs the
kernel's Python on the CPU and never meets Pallas' Triton lowering, which refused it: "Only
2-argument stack is supported in Triton" (SupCon's statistics) and "Unimplemented primitive ...
reduce_or" (the noise-contrastive losses). Here forward and backward of every mode are lowered for
CUDA with `jax.export` on this CPU machine (the lowering, not a run)."""

import numpy as np
import pytest

pytestmark = pytest.mark.backends("jax")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytest.importorskip("jax.experimental.pallas.triton")

TRITON_CALL = "__gpu$xla.gpu.triton"  # the custom call Pallas' Triton backend emits


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("mode", ["supcon_out", "supcon_in", "noise_contrastive"])
def test_forward_and_backward_lower_for_cuda(mode, dtype, monkeypatch):
    from clzoo.losses.fused import function_jax

    monkeypatch.setenv("CLZOO_PALLAS_INTERPRET", "0")  # the real kernel, not its interpreter
    rng = np.random.default_rng(0)
    z = jnp.asarray(rng.normal(size=(150, 20)), dtype)  # padded to 192 rows, 32 dimensions
    labels = jnp.asarray(np.arange(150) % 7)

    def loss(z):
        return jnp.sum(function_jax.anchor_loss(z, labels, 5.0, mode, epsilon=0.25)[0])

    checks = [jax.export.DisabledSafetyCheck.custom_call(TRITON_CALL)]
    for fn in (loss, jax.grad(loss)):
        exported = jax.export.export(jax.jit(fn), platforms=["cuda"], disabled_checks=checks)(z)
        text = exported.mlir_module()
        assert TRITON_CALL in text and exported.platforms == ("cuda",)
