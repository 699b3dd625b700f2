"""The fused kernel for the JAX backend, in Pallas: the same tiles and formulas as `triton_kernels`.

One program owns `block_m` anchors and loops over every column block of the same `z`
(`jax.lax.fori_loop`), with an online maximum; the backward pass recomputes each tile and
takes `g_ij + g_ji` from it (every mask is symmetric). See `triton_kernels` for the modes and
the statistics kept per anchor. Inputs arrive padded (`function_jax.anchor_loss`): `n` is the
number of real rows, the rest are masked out.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

SUPCON_OUT, SUPCON_IN, NOISE_CONTRASTIVE = 0, 1, 2
_START = -1.0e30  # a finite start for the running maximum: exp(start - start) stays 1


def _masks(rows, yi, cols, yj, n, mode):
    pair = (rows[:, None] < n) & (cols[None, :] < n)
    not_self = pair & (rows[:, None] != cols[None, :])
    same = not_self & (yi[:, None] == yj[None, :])
    if mode == NOISE_CONTRASTIVE:
        return same, pair & (yi[:, None] != yj[None, :])
    return same, not_self


def _online_logsumexp(s, mask, running_max, running_sum):
    masked = jnp.where(mask, s, -jnp.inf)
    new_max = jnp.maximum(running_max, jnp.max(masked, axis=1))
    running_sum = running_sum * jnp.exp(running_max - new_max) + jnp.sum(
        jnp.exp(masked - new_max[:, None]), axis=1)
    return new_max, running_sum


def _cosine(zi, zj, precision):
    return jax.lax.dot_general(zi, zj, (((1,), (1,)), ((), ())), precision=precision,
                               preferred_element_type=jnp.float32)


def _block(ref, start, size):
    return ref[pl.ds(start, size)]


def forward_kernel(z_ref, labels_ref, beta_ref, loss_ref, lse_ref, second_ref, count_ref, *, n,
                   mode, epsilon, block_m, block_n, precision):
    start_i = pl.program_id(0) * block_m
    rows = start_i + jax.lax.broadcasted_iota(jnp.int32, (block_m,), 0)
    zi, yi, beta = _block(z_ref, start_i, block_m), _block(labels_ref, start_i, block_m), beta_ref[0]
    blocks = z_ref.shape[0] // block_n

    def body(j, carry):
        max_a, sum_a, max_p, sum_p, positive_logits, count = carry
        cols = j * block_n + jax.lax.broadcasted_iota(jnp.int32, (block_n,), 0)
        zj, yj = _block(z_ref, j * block_n, block_n), _block(labels_ref, j * block_n, block_n)
        s = _cosine(zi, zj, precision) * beta
        same, denominator = _masks(rows, yi, cols, yj, n, mode)
        max_a, sum_a = _online_logsumexp(s, denominator, max_a, sum_a)
        if mode == SUPCON_IN:
            max_p, sum_p = _online_logsumexp(s, same, max_p, sum_p)
        positive_logits += jnp.sum(jnp.where(same, s, 0.0), axis=1)
        count += jnp.sum(same.astype(jnp.float32), axis=1)
        return max_a, sum_a, max_p, sum_p, positive_logits, count

    start, zeros = jnp.full((block_m,), _START, jnp.float32), jnp.zeros((block_m,), jnp.float32)
    max_a, sum_a, max_p, sum_p, positive_logits, count = jax.lax.fori_loop(
        0, blocks, body, (start, zeros, start, zeros, zeros, zeros))
    lse_a = max_a + jnp.log(sum_a)  # -inf for an empty denominator
    safe_count = jnp.maximum(count, 1.0)
    if mode == SUPCON_OUT:
        loss, second = lse_a - positive_logits / safe_count, zeros
    elif mode == SUPCON_IN:
        second = max_p + jnp.log(sum_p)
        loss = lse_a - second + jnp.log(safe_count)
    else:
        total, second = _noise_contrastive_pass(z_ref, labels_ref, zi, yi, rows, beta, lse_a, n,
                                                epsilon, block_n, precision)
        loss = total / safe_count
    loss_ref[...] = jnp.where(count > 0, loss, 0.0)
    # three outputs, not one stacked (3, N): Pallas' Triton lowering stacks only two arrays
    lse_ref[...], second_ref[...], count_ref[...] = lse_a, second, count


def _noise_contrastive_pass(z_ref, labels_ref, zi, yi, rows, beta, lse_q, n, epsilon, block_n,
                            precision):
    """Sums over positives of `softplus(LSE_Q - s_ip + eps) - eps` and of its sigmoid; tiles
    without a same-label pair are skipped."""

    def body(j, carry):
        cols = j * block_n + jax.lax.broadcasted_iota(jnp.int32, (block_n,), 0)
        yj = _block(labels_ref, j * block_n, block_n)
        same = _masks(rows, yi, cols, yj, n, NOISE_CONTRASTIVE)[0]

        def tile(carry):
            total, weight = carry
            s = _cosine(zi, _block(z_ref, j * block_n, block_n), precision) * beta
            x = lse_q[:, None] - s + epsilon
            total += jnp.sum(jnp.where(same, jax.nn.softplus(x) - epsilon, 0.0), axis=1)
            weight += jnp.sum(jnp.where(same, jax.nn.sigmoid(x), 0.0), axis=1)
            return total, weight

        # a float sum, not jnp.any: Pallas' Triton lowering has no boolean reduction (reduce_or)
        return jax.lax.cond(jnp.sum(same.astype(jnp.float32)) > 0, tile, lambda carry: carry, carry)

    zeros = jnp.zeros(zi.shape[:1], jnp.float32)
    return jax.lax.fori_loop(0, z_ref.shape[0] // block_n, body, (zeros, zeros))


def _pair_gradient(s, first, second, count, same, denominator, epsilon, mode):
    """d loss_i / d s_ij of one tile from anchor `i`'s statistics (rows or columns broadcast)."""
    safe_count = jnp.maximum(count, 1.0)
    if mode == SUPCON_OUT:
        grad = jnp.where(denominator, jnp.exp(s - first), 0.0) - jnp.where(same, 1.0 / safe_count, 0.0)
    elif mode == SUPCON_IN:
        grad = (jnp.where(denominator, jnp.exp(s - first), 0.0)
                - jnp.where(same, jnp.exp(s - second), 0.0))
    else:
        noise = jnp.where(denominator, jnp.exp(jnp.where(denominator, s - first, 0.0)), 0.0)
        grad = (noise * (second / safe_count)
                - jnp.where(same, jax.nn.sigmoid(first - s + epsilon) / safe_count, 0.0))
    return jnp.where(count > 0, grad, 0.0)


def backward_kernel(z_ref, labels_ref, beta_ref, lse_ref, second_ref, count_ref, upstream_ref, dz_ref,
                    dbeta_ref, *, n, mode, epsilon, block_m, block_n, precision):
    start_i = pl.program_id(0) * block_m
    rows = start_i + jax.lax.broadcasted_iota(jnp.int32, (block_m,), 0)
    zi, yi, beta = _block(z_ref, start_i, block_m), _block(labels_ref, start_i, block_m), beta_ref[0]
    stats_i = [_block(ref, start_i, block_m) for ref in (lse_ref, second_ref, count_ref)]
    up_i = _block(upstream_ref, start_i, block_m)

    def body(j, carry):
        acc, dbeta = carry
        cols = j * block_n + jax.lax.broadcasted_iota(jnp.int32, (block_n,), 0)
        zj, yj = _block(z_ref, j * block_n, block_n), _block(labels_ref, j * block_n, block_n)
        stats_j = [_block(ref, j * block_n, block_n) for ref in (lse_ref, second_ref, count_ref)]
        up_j = _block(upstream_ref, j * block_n, block_n)
        cosine = _cosine(zi, zj, precision)
        s = cosine * beta
        same, denominator = _masks(rows, yi, cols, yj, n, mode)
        g_row = _pair_gradient(s, stats_i[0][:, None], stats_i[1][:, None], stats_i[2][:, None],
                               same, denominator, epsilon, mode) * up_i[:, None]
        g_col = _pair_gradient(s, stats_j[0][None, :], stats_j[1][None, :], stats_j[2][None, :],
                               same, denominator, epsilon, mode) * up_j[None, :]
        acc += jnp.dot((g_row + g_col).astype(zj.dtype), zj, precision=precision,
                       preferred_element_type=jnp.float32)
        return acc, dbeta + jnp.sum(g_row * cosine, axis=1)

    init = (jnp.zeros(zi.shape, jnp.float32), jnp.zeros((block_m,), jnp.float32))
    acc, dbeta = jax.lax.fori_loop(0, z_ref.shape[0] // block_n, body, init)
    dz_ref[...] = acc * beta
    dbeta_ref[...] = dbeta


def launch(kernel, z, inputs, outputs, *, block_m, interpret, **meta):
    """`pallas_call` of `forward_kernel` / `backward_kernel` over row blocks of `z`: every input
    whole, each output the program's rows (`outputs`: `(shape, dtype, rows_axis)` each)."""
    n_pad = z.shape[0]
    in_specs = [pl.BlockSpec(x.shape, functools.partial(_origin, len(x.shape))) for x in inputs]
    out_specs = [pl.BlockSpec(_row_block(shape, axis, block_m), functools.partial(_at_row, len(shape), axis))
                 for shape, _, axis in outputs]
    out_shape = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype, _ in outputs]
    return pl.pallas_call(functools.partial(kernel, block_m=block_m, **meta), grid=(n_pad // block_m,),
                          in_specs=in_specs, out_specs=out_specs, out_shape=out_shape,
                          interpret=interpret, compiler_params=gpu_compiler_params())(*inputs)


def gpu_compiler_params():
    """Pallas' Triton backend, named: without it JAX picks Mosaic GPU, which cannot take these
    kernels (its copies must be warpgroup-sized and its resource estimate has no custom_jvp);
    Triton also runs the tiles `triton_kernels` was tuned with (4 warps, 2 stages)."""
    from jax.experimental.pallas import triton as pallas_triton

    return pallas_triton.CompilerParams(num_warps=4, num_stages=2)


def _origin(rank, i):
    return (0,) * rank


def _row_block(shape, axis, block_m):
    return tuple(block_m if k == axis else size for k, size in enumerate(shape))


def _at_row(rank, axis, i):
    return tuple(i if k == axis else 0 for k in range(rank))
