"""The fused per-anchor loss on JAX: a custom VJP over the Pallas kernels (`pallas_kernels`).

The JAX twin of `clzoo.losses.fused.function.anchor_loss`, with the same arguments and results.
It is checked in Pallas' interpret mode (`CLZOO_PALLAS_INTERPRET=1`, the CPU) against the float64
references; it has not yet run on a GPU, so `kernel="auto"` does not take it (only `"fused"`).
"""

import functools

import jax
import jax.numpy as jnp

from clzoo.losses.fused import pallas_kernels as P
from clzoo.losses.fused.dispatch import check_embeddings, pallas_interpreting

MODES = {"supcon_out": P.SUPCON_OUT, "supcon_in": P.SUPCON_IN,
         "noise_contrastive": P.NOISE_CONTRASTIVE}
BLOCK = 64  # rows and columns per tile


def anchor_loss(z, labels, inverse_temperature, mode, epsilon=0.0):
    """Per-anchor loss `(loss (N,), valid (N,))` of `z (N, D)` against itself, in O(N) memory.

    Args and results as `clzoo.losses.fused.function.anchor_loss` (float32 or bfloat16 `z`,
    float32 products at `jax.lax.Precision.HIGHEST`); `ValueError` for what it does not take.
    """
    check_embeddings(tuple(z.shape), jnp.dtype(z.dtype).name, mode, MODES)
    n, d = z.shape
    ids = _dense_ids(labels)
    beta = jnp.asarray(inverse_temperature, jnp.float32).reshape(1)
    order = jnp.argsort(ids, stable=True) if mode == "noise_contrastive" else None
    if order is not None:  # sorted rows: the positives' pass skips the tiles without a pair
        z, ids = z[order], ids[order]
    rows, dims = -(-n // BLOCK) * BLOCK, max(16, 1 << (d - 1).bit_length())
    z = jnp.pad(z, ((0, rows - n), (0, dims - d)))
    ids = jnp.pad(ids, (0, rows - n), constant_values=-1)
    loss, valid = _fused(z, ids, beta, n, MODES[mode], float(epsilon), pallas_interpreting())
    loss, valid = loss[:n], valid[:n]
    if order is None:
        return loss, valid
    inverse = jnp.zeros_like(order).at[order].set(jnp.arange(n, dtype=order.dtype))
    return loss[inverse], valid[inverse]


def _dense_ids(labels):
    """Label ids as dense int32 ranks (jit-friendly): casting int64 ids would merge ids that
    differ by a multiple of 2^32 (under `jax_enable_x64`), as `torch.unique` avoids on torch."""
    labels = jnp.asarray(labels)
    order = jnp.argsort(labels, stable=True)
    ranked = labels[order]
    steps = jnp.cumsum((ranked[1:] != ranked[:-1]).astype(jnp.int32))
    dense = jnp.concatenate([jnp.zeros((1,), jnp.int32), steps])
    return jnp.zeros(labels.shape, jnp.int32).at[order].set(dense)


def _meta(z, n, mode, epsilon, interpret):
    precision = jax.lax.Precision.HIGHEST if z.dtype == jnp.float32 else jax.lax.Precision.DEFAULT
    return {"n": n, "mode": mode, "epsilon": epsilon, "block_m": BLOCK, "block_n": BLOCK,
            "precision": precision, "interpret": interpret}


def _forward(z, labels, beta, n, mode, epsilon, interpret):
    rows = z.shape[0]
    loss, *stats = P.launch(P.forward_kernel, z, [z, labels, beta], [((rows,), jnp.float32, 0)] * 4,
                            **_meta(z, n, mode, epsilon, interpret))
    return loss, stats[2] > 0, tuple(stats)  # stats: log-sum-exp, second statistic, positives


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5, 6))
def _fused(z, labels, beta, n, mode, epsilon, interpret):
    return _forward(z, labels, beta, n, mode, epsilon, interpret)[:2]


def _fused_forward(z, labels, beta, n, mode, epsilon, interpret):
    loss, valid, stats = _forward(z, labels, beta, n, mode, epsilon, interpret)
    return (loss, valid), (z, labels, beta, stats)


def _fused_backward(n, mode, epsilon, interpret, residuals, cotangents):
    z, labels, beta, stats = residuals
    upstream = cotangents[0].astype(jnp.float32)
    dz, dbeta = P.launch(P.backward_kernel, z, [z, labels, beta, *stats, upstream],
                         [(z.shape, jnp.float32, 0), ((z.shape[0],), jnp.float32, 0)],
                         **_meta(z, n, mode, epsilon, interpret))
    return dz.astype(z.dtype), None, jnp.sum(dbeta).reshape(1)


_fused.defvjp(_fused_forward, _fused_backward)
