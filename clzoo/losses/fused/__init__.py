"""The fused GPU path of the losses: one Triton kernel per loss family, O(N) memory.

`clzoo.losses.fused.dispatch` decides per call whether a loss takes it (its
`kernel` argument); `function` (torch autograd) and `triton_kernels` are the
torch side, `function_jax` (custom VJP) and `pallas_kernels` the JAX side.
Nothing here imports torch, Triton or Pallas until a loss takes the fused path.
"""
