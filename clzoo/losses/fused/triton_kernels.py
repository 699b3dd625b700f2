"""Triton kernels of the fused contrastive losses: per-anchor values and their gradient, tile by tile.

One program owns `BLOCK_M` anchors (rows of `Z`) and walks over every column
block of the same `Z`; logits `s_ij = beta * z_i . z_j` live only in registers
(online maximum, as FlashAttention), so memory is O(N) besides the inputs. The
backward pass recomputes each tile's logits. Since `Z` is both rows and
columns and every mask is symmetric, one tile gives both `g_ij` (anchor `i`'s
pair gradient) and `g_ji` (anchor `j`'s), so `dz_i = beta * sum_j (g_ij + g_ji) z_j`
costs one more product: three N x N x D products in all, the floor.

Modes (per anchor `i`; `A` every other embedding, `P` same label, `Q` other labels;
per-anchor statistics kept for the backward pass in brackets):
- `SUPCON_OUT`: `LSE_A s - mean_P s`                       [LSE_A, |P|]
- `SUPCON_IN`:  `LSE_A s - LSE_P s + log |P|`               [LSE_A, LSE_P, |P|]
- `NOISE_CONTRASTIVE` (SINCERE, epsilon-SupInfoNCE, InfoNCE with instance ids):
  `mean_P [softplus(LSE_Q s - s_ip + eps) - eps]`           [LSE_Q, sum_P sigmoid(.), |P|]
  The mean over `P` needs `LSE_Q` first: a second pass that skips tiles with no
  same-label pair (rows sorted by label make it block-diagonal).
"""

from clzoo.losses.fused.dispatch import require_triton

require_triton()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# Triton reads only constexpr globals inside kernels.
SUPCON_OUT = tl.constexpr(0)
SUPCON_IN = tl.constexpr(1)
NOISE_CONTRASTIVE = tl.constexpr(2)
# A finite start for the running maximum: exp(start - start) stays 1, never nan.
_START = tl.constexpr(-1.0e30)


@triton.jit
def _anchor_block(z_ptr, labels_ptr, beta_ptr, stride, n, d, BLOCK_M: tl.constexpr,
                  BLOCK_D: tl.constexpr):
    """This program's anchors: their indices, in-range flags, embeddings, labels, and beta."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    row_in = rows < n
    zi = tl.load(z_ptr + rows[:, None] * stride + dims[None, :],
                 mask=row_in[:, None] & (dims[None, :] < d), other=0.0)
    yi = tl.load(labels_ptr + rows, mask=row_in, other=-1)
    return rows, row_in, zi, yi, tl.load(beta_ptr)


@triton.jit
def _tile(z_ptr, labels_ptr, stride, n, d, start, zi, BLOCK_N: tl.constexpr,
          BLOCK_D: tl.constexpr, PRECISION: tl.constexpr):
    """Column block at `start`: its embeddings, labels, in-range flags and `zi @ zj^T`."""
    cols = start + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, BLOCK_D)
    col_in = cols < n
    zj = tl.load(z_ptr + cols[:, None] * stride + dims[None, :],
                 mask=col_in[:, None] & (dims[None, :] < d), other=0.0)
    yj = tl.load(labels_ptr + cols, mask=col_in, other=-1)
    cosine = tl.dot(zi, tl.trans(zj), input_precision=PRECISION)
    return cols, col_in, zj, yj, cosine


@triton.jit
def _masks(rows, row_in, yi, cols, col_in, yj, MODE: tl.constexpr):
    """(positives, denominator) of the tile: symmetric boolean (BLOCK_M, BLOCK_N)."""
    pair = row_in[:, None] & col_in[None, :]
    not_self = pair & (rows[:, None] != cols[None, :])
    same = not_self & (yi[:, None] == yj[None, :])
    if MODE == NOISE_CONTRASTIVE:
        denominator = pair & (yi[:, None] != yj[None, :])
    else:
        denominator = not_self
    return same, denominator


@triton.jit
def _online_logsumexp(s, mask, running_max, running_sum):
    masked = tl.where(mask, s, -float("inf"))
    new_max = tl.maximum(running_max, tl.max(masked, axis=1))
    running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(
        tl.exp(masked - new_max[:, None]), axis=1)
    return new_max, running_sum


@triton.jit
def _softplus(x):
    return tl.maximum(x, 0.0) + tl.log(1.0 + tl.exp(-tl.abs(x)))


@triton.jit
def _forward_kernel(z_ptr, labels_ptr, beta_ptr, loss_ptr, stats_ptr, n, d, stride, epsilon,
                    MODE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_D: tl.constexpr, PRECISION: tl.constexpr):
    rows, row_in, zi, yi, beta = _anchor_block(z_ptr, labels_ptr, beta_ptr, stride, n, d,
                                               BLOCK_M, BLOCK_D)
    max_a = tl.full([BLOCK_M], _START, tl.float32)
    sum_a = tl.zeros([BLOCK_M], tl.float32)
    max_p = tl.full([BLOCK_M], _START, tl.float32)
    sum_p = tl.zeros([BLOCK_M], tl.float32)
    positive_logits = tl.zeros([BLOCK_M], tl.float32)
    count = tl.zeros([BLOCK_M], tl.float32)
    for start in range(0, n, BLOCK_N):
        cols, col_in, zj, yj, cosine = _tile(z_ptr, labels_ptr, stride, n, d, start, zi,
                                             BLOCK_N, BLOCK_D, PRECISION)
        s = cosine * beta
        same, denominator = _masks(rows, row_in, yi, cols, col_in, yj, MODE)
        max_a, sum_a = _online_logsumexp(s, denominator, max_a, sum_a)
        if MODE == SUPCON_IN:
            max_p, sum_p = _online_logsumexp(s, same, max_p, sum_p)
        if MODE == SUPCON_OUT:
            positive_logits += tl.sum(tl.where(same, s, 0.0), axis=1)
        count += tl.sum(same.to(tl.float32), axis=1)
    lse_a = max_a + tl.log(sum_a)  # -inf for an empty denominator
    valid = count > 0
    safe_count = tl.maximum(count, 1.0)
    second = tl.zeros([BLOCK_M], tl.float32)
    if MODE == SUPCON_OUT:
        loss = lse_a - positive_logits / safe_count
    elif MODE == SUPCON_IN:
        second = max_p + tl.log(sum_p)
        loss = lse_a - second + tl.log(safe_count)
    else:
        loss, second = _noise_contrastive_pass(z_ptr, labels_ptr, stride, n, d, zi, yi, rows,
                                               row_in, beta, lse_a, epsilon, BLOCK_M, BLOCK_N,
                                               BLOCK_D, PRECISION)
        loss = loss / safe_count
    tl.store(loss_ptr + rows, tl.where(valid, loss, 0.0), mask=row_in)
    tl.store(stats_ptr + rows, lse_a, mask=row_in)
    tl.store(stats_ptr + n + rows, second, mask=row_in)
    tl.store(stats_ptr + 2 * n + rows, count, mask=row_in)


@triton.jit
def _noise_contrastive_pass(z_ptr, labels_ptr, stride, n, d, zi, yi, rows, row_in, beta, lse_q,
                            epsilon, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                            BLOCK_D: tl.constexpr, PRECISION: tl.constexpr):
    """Sum over positives of `softplus(LSE_Q - s_ip + eps) - eps` and of its sigmoid."""
    total = tl.zeros([BLOCK_M], tl.float32)
    weight = tl.zeros([BLOCK_M], tl.float32)
    for start in range(0, n, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        col_in = cols < n
        yj = tl.load(labels_ptr + cols, mask=col_in, other=-1)
        same = _masks(rows, row_in, yi, cols, col_in, yj, NOISE_CONTRASTIVE)[0]
        if tl.sum(same.to(tl.int32)) > 0:
            cosine = _tile(z_ptr, labels_ptr, stride, n, d, start, zi, BLOCK_N, BLOCK_D,
                           PRECISION)[4]
            x = lse_q[:, None] - cosine * beta + epsilon
            total += tl.sum(tl.where(same, _softplus(x) - epsilon, 0.0), axis=1)
            weight += tl.sum(tl.where(same, tl.sigmoid(x), 0.0), axis=1)
    return total, weight


@triton.jit
def _pair_gradient(s, first, second, count, same, denominator, epsilon, MODE: tl.constexpr):
    """d loss_i / d s_ij for one tile, from anchor `i`'s statistics (broadcast rows or columns)."""
    safe_count = tl.maximum(count, 1.0)
    if MODE == SUPCON_OUT:
        grad = tl.where(denominator, tl.exp(s - first), 0.0) - tl.where(same, 1.0 / safe_count, 0.0)
    elif MODE == SUPCON_IN:
        grad = (tl.where(denominator, tl.exp(s - first), 0.0)
                - tl.where(same, tl.exp(s - second), 0.0))
    else:
        noise = tl.where(denominator, tl.exp(tl.where(denominator, s - first, 0.0)), 0.0)
        grad = (noise * (second / safe_count)
                - tl.where(same, tl.sigmoid(first - s + epsilon) / safe_count, 0.0))
    return tl.where(count > 0, grad, 0.0)


@triton.jit
def _backward_kernel(z_ptr, labels_ptr, beta_ptr, stats_ptr, upstream_ptr, dz_ptr, dbeta_ptr, n,
                     d, stride, epsilon, MODE: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, PRECISION: tl.constexpr):
    rows, row_in, zi, yi, beta = _anchor_block(z_ptr, labels_ptr, beta_ptr, stride, n, d,
                                               BLOCK_M, BLOCK_D)
    first_i = tl.load(stats_ptr + rows, mask=row_in, other=0.0)
    second_i = tl.load(stats_ptr + n + rows, mask=row_in, other=0.0)
    count_i = tl.load(stats_ptr + 2 * n + rows, mask=row_in, other=0.0)
    up_i = tl.load(upstream_ptr + rows, mask=row_in, other=0.0)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    dbeta = tl.zeros([BLOCK_M], tl.float32)
    for start in range(0, n, BLOCK_N):
        cols, col_in, zj, yj, cosine = _tile(z_ptr, labels_ptr, stride, n, d, start, zi,
                                             BLOCK_N, BLOCK_D, PRECISION)
        s = cosine * beta
        same, denominator = _masks(rows, row_in, yi, cols, col_in, yj, MODE)
        first_j = tl.load(stats_ptr + cols, mask=col_in, other=0.0)
        second_j = tl.load(stats_ptr + n + cols, mask=col_in, other=0.0)
        count_j = tl.load(stats_ptr + 2 * n + cols, mask=col_in, other=0.0)
        up_j = tl.load(upstream_ptr + cols, mask=col_in, other=0.0)
        g_row = _pair_gradient(s, first_i[:, None], second_i[:, None], count_i[:, None], same,
                               denominator, epsilon, MODE) * up_i[:, None]
        g_col = _pair_gradient(s, first_j[None, :], second_j[None, :], count_j[None, :], same,
                               denominator, epsilon, MODE) * up_j[None, :]
        acc += tl.dot((g_row + g_col).to(zj.dtype), zj, input_precision=PRECISION)
        dbeta += tl.sum(g_row * cosine, axis=1)
    dims = tl.arange(0, BLOCK_D)
    tl.store(dz_ptr + rows[:, None] * stride + dims[None, :], acc * beta,
             mask=row_in[:, None] & (dims[None, :] < d))
    tl.store(dbeta_ptr + rows, dbeta, mask=row_in)
