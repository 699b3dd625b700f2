"""The fused per-anchor loss as a PyTorch autograd function over the Triton kernels.

`anchor_loss(z, labels, inverse_temperature, mode)` is what the losses' fused
path calls; it is also the kernel's benchmark entry (`benchmarks/fused_kernel.py`).
"""

import contextlib

from clzoo.losses.fused.dispatch import check_embeddings, interpreting, require_triton

require_triton()

import torch  # noqa: E402
import triton  # noqa: E402

from clzoo.losses.fused import triton_kernels as T  # noqa: E402

MODES = {"supcon_out": T.SUPCON_OUT.value, "supcon_in": T.SUPCON_IN.value,
         "noise_contrastive": T.NOISE_CONTRASTIVE.value}
# (BLOCK_M, BLOCK_N, num_warps, num_stages) of the forward and the backward kernel, per input dtype:
# the fastest of `benchmarks/fused_kernel.py --sweep 65536` on an H200 (benchmarks/fused_kernel.json).
BLOCKS = {torch.float32: ((64, 64, 4, 3), (128, 32, 8, 3)),
          torch.bfloat16: ((64, 64, 4, 3), (64, 32, 4, 3))}
PRECISIONS = ("tf32x3", "ieee", "tf32")


def anchor_loss(z, labels, inverse_temperature, mode, epsilon=0.0, precision="tf32x3", blocks=None):
    """Per-anchor loss of one embedding matrix against itself, in O(N) memory.

    Args:
        z: `(N, D)` float32 or bfloat16 embeddings, already L2-normalized
            when the loss normalizes (CUDA, or CPU under the Triton
            interpreter), `D <= 128` (`dispatch.MAX_DIM`).
        labels: `(N,)` integer ids: class labels, or sample ids for InfoNCE.
        inverse_temperature: `1 / temperature`, a float or a scalar tensor
            (its gradient is returned: learnable temperature).
        mode: `"supcon_out"` / `"supcon_in"` (Khosla et al. 2020, supplement
            eqs. 2 / 1) or `"noise_contrastive"` (SINCERE, Feeney and Hughes
            eq. 12; epsilon-SupInfoNCE, their eq. 15; InfoNCE with sample ids);
            formulas in `clzoo.losses.fused.triton_kernels`.
        epsilon: the epsilon-SupInfoNCE margin (noise_contrastive only; 0 is SINCERE).
        precision: float32 products: `"tf32x3"` (three TF32 tensor-core
            products with error compensation: float32 accuracy, checked to
            2e-5 against float64 by `tests/losses/fused_check.py` on an H200),
            `"ieee"` (plain float32 FMA, exact but about 40x slower on Hopper)
            or `"tf32"` (one TF32 product, about 1e-3 relative). bfloat16
            inputs always multiply in bfloat16 with float32 accumulation.
        blocks: None (`BLOCKS`) or `((BLOCK_M, BLOCK_N, num_warps, num_stages)`
            of the forward kernel, the same of the backward kernel).

    Returns:
        `(loss, valid)`: float32 `(N,)` per-anchor values (0 where invalid)
        and bool `(N,)`, anchors with at least one positive.

    Raises:
        ValueError: for a shape, dtype, device, mode or precision the kernel does not take
            (bfloat16 in Triton's CPU interpreter included).
        RuntimeError: a second derivative (a gradient taken with `create_graph=True`).
    """
    _check(z, labels, mode, precision)
    ids = torch.unique(labels, return_inverse=True)[1].to(torch.int32)  # any int ids -> int32
    beta = torch.as_tensor(inverse_temperature, dtype=torch.float32, device=z.device).reshape(1)
    options = (MODES[mode], float(epsilon), precision, blocks or BLOCKS[z.dtype])
    if mode != "noise_contrastive":
        return _AnchorLoss.apply(z, ids, beta, options)
    # Rows sorted by label make the positives' pass block-diagonal (tiles without a pair are skipped).
    order = torch.argsort(ids, stable=True)
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(order.numel(), device=order.device)
    loss, valid = _AnchorLoss.apply(z[order], ids[order], beta, options)
    return loss[inverse], valid[inverse]


def _check(z, labels, mode, precision):
    check_embeddings(tuple(z.shape), str(z.dtype).removeprefix("torch."), mode, MODES)
    if precision not in PRECISIONS:
        raise ValueError(f"`precision` must be one of {PRECISIONS}. Received: precision={precision!r}")
    if tuple(labels.shape) != (z.shape[0],) or labels.dtype.is_floating_point:
        raise ValueError(f"`labels` must be integer ids of shape ({z.shape[0]},). "
                         f"Received: {labels.dtype} {tuple(labels.shape)}")
    if not (z.is_cuda or interpreting()):
        raise ValueError("The fused kernel runs on a CUDA device (or on the CPU under "
                         f"TRITON_INTERPRET=1, for tests). Received: a tensor on {z.device}")
    if not z.is_cuda and z.dtype == torch.bfloat16:  # the interpreter: NumPy has no bfloat16
        raise ValueError("Triton's interpreter (TRITON_INTERPRET=1) computes bfloat16 tiles "
                         "wrongly; on the CPU pass float32 embeddings (bfloat16 runs on a CUDA device)")


def _launch(z, options, kernel):
    """`(grid, meta-parameters)` of the forward (`kernel=0`) or backward (1) kernel."""
    mode, _, precision, blocks = options
    block_m, block_n, warps, stages = blocks[kernel]
    meta = {"MODE": mode, "BLOCK_M": block_m, "BLOCK_N": block_n, "num_warps": warps,
            "num_stages": stages, "BLOCK_D": max(16, triton.next_power_of_2(z.shape[1])),
            "PRECISION": precision if z.dtype == torch.float32 else "tf32"}
    return (triton.cdiv(z.shape[0], block_m),), meta


@contextlib.contextmanager
def _tiles_that_fit():
    """Triton's OutOfResources (tiles too large for this GPU's shared memory) as a ValueError."""
    try:
        yield
    except triton.runtime.errors.OutOfResources as error:
        raise ValueError(f"The fused kernel's tiles do not fit this GPU ({error}); pass smaller "
                         "`blocks` to anchor_loss, or use kernel='xla'") from error


class _AnchorLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, labels, beta, options):
        z = z.contiguous()
        (n, d), epsilon = z.shape, options[1]
        loss = torch.empty(n, dtype=torch.float32, device=z.device)
        stats = torch.empty(3, n, dtype=torch.float32, device=z.device)
        grid, meta = _launch(z, options, 0)
        with _tiles_that_fit():
            T._forward_kernel[grid](z, labels, beta, loss, stats, n, d, z.stride(0), epsilon, **meta)
        ctx.save_for_backward(z, labels, beta, stats)
        ctx.options = options
        valid = stats[2] > 0
        ctx.mark_non_differentiable(valid)
        return loss, valid

    @staticmethod
    def backward(ctx, upstream, _):
        if torch.is_grad_enabled():  # backward(create_graph=True): autograd records this pass
            raise RuntimeError("The fused kernel has no second derivative (a gradient taken with "
                               "create_graph=True goes through it): use kernel='xla' for gradients "
                               "of gradients")
        z, labels, beta, stats = ctx.saved_tensors
        (n, d), epsilon = z.shape, ctx.options[1]
        upstream = upstream.to(torch.float32).contiguous()
        dz = torch.empty(n, d, dtype=torch.float32, device=z.device)
        dbeta = torch.empty(n, dtype=torch.float32, device=z.device)
        grid, meta = _launch(z, ctx.options, 1)
        with _tiles_that_fit():
            T._backward_kernel[grid](z, labels, beta, stats, upstream, dz, dbeta, n, d, z.stride(0),
                                     epsilon, **meta)
        dbeta = dbeta.sum().reshape(1) if ctx.needs_input_grad[2] else None
        return dz.to(z.dtype), None, dbeta, None
