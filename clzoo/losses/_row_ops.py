"""Row reductions of a block of logits, with hand-written gradients.

Every embedding loss reduces each anchor's row of logits `s = rows @ cols^T`
`(n, N)` (`rows` the block's anchors already divided by the temperature,
`cols` all embeddings) to a few numbers per anchor. Left to autodiff, each
elementwise step of such a reduction keeps an `(n, N)` intermediate alive
until the backward pass (about 16 of them per block in eager TensorFlow).
The three reductions here compute their gradient by hand
(`_vjp.custom_vjp`): the backward pass recomputes `s` from `rows` and `cols`
(one matmul) instead of keeping it, and builds `d/ds` from the boolean masks
and small per-row statistics in at most three `(n, N)` float32 temporaries,
contracting it straight back to `d rows = d/ds @ cols` and
`d cols = (d/ds)^T @ rows`.

A `block` is `(rows, cols, logits)`: the forward pass reads the given
`logits`, which are therefore passed as a non-differentiated input; their
whole gradient reaches `rows` and `cols` through the hand-written rule.

Each gradient is `upstream_i * d value_i / d s_ij`; derivations are in the
docstrings. Masks are boolean `(n, N)` and never differentiated. `bound` is
None or a float with `bound - 80 <= s <= bound` (see `Similarities`): one
`exp(s - bound)` then serves every sum without overflow or underflow.
"""

import math

from keras import ops

from clzoo.losses._vjp import custom_vjp

# Fill value for masked logits and the log-sum-exp of an empty row: finite,
# so that gradients stay finite, and far below any real logit.
MASKED_LOGIT = -1e9


def _column(x):
    return ops.reshape(x, (-1, 1))


def _logits(rows, cols):
    return ops.matmul(rows, ops.transpose(cols))


def _to_embeddings(grad_logits, rows, cols):
    """The chain rule through `s = rows @ cols^T`: gradients of `rows` and `cols`."""
    return (ops.matmul(grad_logits, cols),
            ops.transpose(ops.matmul(ops.transpose(rows), grad_logits)))


def _count(mask):
    """`(count, max(count, 1))` of each row of `mask`, float32 `(n, 1)`."""
    count = ops.sum(ops.cast(mask, "float32"), axis=-1, keepdims=True)
    return count, ops.maximum(count, 1.0)


def masked_logsumexp(logits, mask):
    """Row-wise log-sum-exp over `mask` `(n, 1)`; an empty row gives a very negative finite value."""
    return ops.logsumexp(ops.where(mask, logits, MASKED_LOGIT), axis=-1, keepdims=True)


def _lse_forward(s, mask, bound, nonempty):
    if bound is None:
        return masked_logsumexp(s, mask)
    total = ops.sum(ops.where(mask, ops.exp(s - bound), 0.0), axis=-1, keepdims=True)
    # log only of positive values; an empty row gets MASKED_LOGIT.
    return ops.where(nonempty, ops.log(ops.where(nonempty, total, 1.0)) + bound, MASKED_LOGIT)


def row_logsumexp(block, mask, bound=None):
    """`log sum_{j in mask_i} exp(s_ij)` per row, float32 `(n, 1)`; `MASKED_LOGIT` for an empty row.

    Gradient: `d/ds_ij = mask_ij * exp(s_ij - lse_i)` (the masked softmax),
    zero for an empty row.
    """

    def forward(rows, cols, s, m):
        nonempty = ops.any(m, axis=-1, keepdims=True)
        value = _lse_forward(s, m, bound, nonempty)
        # An empty row subtracts +1e9 in the backward pass: exp underflows to 0, no inf.
        return value, (rows, cols, m, ops.where(nonempty, value, -MASKED_LOGIT))

    def backward(residuals, upstream):
        rows, cols, m, shift = residuals
        grad = upstream * ops.exp(_logits(rows, cols) - shift)
        return _to_embeddings(ops.where(m, grad, 0.0), rows, cols)

    return custom_vjp(forward, backward, differentiable=2)(*block, mask)


def mean_gap(row, block, mask):
    """`mean_{j in mask_i} (row_i - s_ij)` per row, float32 `(n,)`; 0 for an empty row.

    Args:
        row: float32 `(n, 1)`, e.g. a `row_logsumexp` (SupCon L_out, DCL).
        block: `(rows, cols, logits)` (module docstring).
        mask: bool `(n, N)`, the terms averaged (the anchor's positives).

    Gradient: `d/d row_i = count_i / max(count_i, 1)` and
    `d/ds_ij = -mask_ij / max(count_i, 1)`.
    """

    def forward(r, rows, cols, s, m):
        count, denominator = _count(m)
        value = ops.sum(ops.where(m, r - s, 0.0), axis=-1) / ops.squeeze(denominator, axis=-1)
        return value, (rows, cols, m, count, denominator)

    def backward(residuals, upstream):
        rows, cols, m, count, denominator = residuals
        weight = _column(upstream) / denominator
        return (weight * count,) + _to_embeddings(ops.where(m, -weight, 0.0), rows, cols)

    return custom_vjp(forward, backward, differentiable=3)(row, *block, mask)


def _noise_forward(s, noise_mask, positive_mask, shift, bound):
    """Per row: the noise log-sum-exp `L_i` `(n, 1)` and `sum_{p in P(i)} (pair_ip + shift)` `(n,)`.

    `pair_ij = log(exp(s_ij - shift) + exp(L_i)) - s_ij
    = softplus(L_i + shift - s_ij) - shift`: one fused op on `(n, N)`, so the
    pass holds at most two `(n, N)` temporaries. An empty noise set gives
    `L_i = MASKED_LOGIT` (softplus 0).
    """
    if bound is None:
        noise = masked_logsumexp(s, noise_mask)
    else:
        noise = _lse_forward(s, noise_mask, bound, ops.any(noise_mask, axis=-1, keepdims=True))
    pairs = ops.softplus((noise + shift) - s)
    return noise, ops.sum(ops.where(positive_mask, pairs, 0.0), axis=-1)


def _noise_contrastive_grad(rows, cols, weight, noise, noise_mask, positive_mask, shift, bound,
                            has_noise):
    """`d/ds` of `sum_{p in P(i)} weight_i * pair_ip`, in at most three `(n, N)` temporaries.

    With `sigma_ip = exp(L_i) / (exp(s_ip - shift) + exp(L_i))` (`L_i` the
    noise log-sum-exp): `d/ds_ip = -weight_i * sigma_ip` for a positive and,
    with `D_i = weight_i * sum_p sigma_ip`, `d/ds_in = D_i * exp(s_in - L_i)`
    for a noise embedding. Needs disjoint masks (no positive is its own noise).
    """
    if bound is None:
        s = _logits(rows, cols)
        negative = ops.where(positive_mask, -weight * ops.sigmoid((noise + shift) - s), 0.0)
        safe_lse = ops.where(has_noise, noise, -MASKED_LOGIT)
        scale = -ops.sum(negative, axis=-1, keepdims=True)
        return ops.where(noise_mask, scale * ops.exp(s - safe_lse), negative)
    # One exponential serves both terms: exp(s - bound), and the noise sum S_i = exp(L_i - bound).
    total = ops.exp(noise - bound)
    exp_s = ops.exp(_logits(rows, cols) - bound)
    positive = exp_s if shift == 0 else exp_s * math.exp(-shift)
    negative = ops.where(positive_mask, (-weight * total) / (positive + total), 0.0)
    del positive
    exp_s = exp_s * (-ops.sum(negative, axis=-1, keepdims=True) / ops.where(has_noise, total, 1.0))
    return ops.where(noise_mask, exp_s, negative)


def mean_noise_contrastive(block, noise_mask, positive_mask, shift=0.0, bound=None):
    """`mean_{p in P(i)} -log(exp(s_ip - shift) / (exp(s_ip - shift) + sum_{n in N(i)} exp(s_in)))`.

    The SINCERE / InfoNCE pair term (`shift=0`) and epsilon-SupInfoNCE's
    margin (`shift=epsilon`), averaged over each anchor's positives.

    Args:
        block: `(rows, cols, logits)` (module docstring).
        noise_mask: bool `(n, N)`, the noise set `N(i)`.
        positive_mask: bool `(n, N)`, the positives `P(i)`, disjoint from
            `noise_mask`.
        shift: Python float, subtracted from the positive's own logit in the
            denominator.
        bound: None or the logits' upper bound (module docstring).

    Returns:
        float32 `(n,)`, 0 for an anchor without positives (zero gradient).
    """

    def forward(rows, cols, s, noise_mask, positive_mask):
        count, denominator = _count(positive_mask)
        noise, total = _noise_forward(s, noise_mask, positive_mask, shift, bound)
        # The shift is added inside the softplus and taken back once per positive.
        value = (total - shift * ops.squeeze(count, -1)) / ops.squeeze(denominator, -1)
        has_noise = ops.any(noise_mask, axis=-1, keepdims=True)
        return value, (rows, cols, noise_mask, positive_mask, denominator, noise, has_noise)

    def backward(residuals, upstream):
        rows, cols, noise_mask, positive_mask, denominator, noise, has_noise = residuals
        weight = _column(upstream) / denominator
        grad = _noise_contrastive_grad(rows, cols, weight, noise, noise_mask, positive_mask, shift,
                                       bound, has_noise)
        return _to_embeddings(grad, rows, cols)

    return custom_vjp(forward, backward, differentiable=2)(*block, noise_mask, positive_mask)
