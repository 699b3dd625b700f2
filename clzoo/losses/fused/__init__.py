"""The fused GPU path of the losses: one Triton kernel per loss family, O(N) memory.

`clzoo.losses.fused.dispatch` decides per call whether a loss takes it (its
`kernel` argument); `function` holds the autograd function and
`triton_kernels` the kernels. Nothing here imports torch or Triton until a
loss takes the fused path.
"""
