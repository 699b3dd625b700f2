"""Row reductions of a block of logits, with hand-written gradients.

Every embedding loss reduces each anchor's row of logits `s` `(n, N)` to a
few numbers per anchor. Left to autodiff, each elementwise step of such a
reduction keeps an `(n, N)` intermediate alive until the backward pass (about
16 of them per block in eager TensorFlow). The three reductions here compute
the gradient with respect to `s` by hand (`_vjp.custom_vjp`) from `s`, the
boolean masks and small per-row statistics: a forward + backward pass holds
the logits, the masks and at most three `(n, N)` float temporaries at once.

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


def row_logsumexp(logits, mask, bound=None):
    """`log sum_{j in mask_i} exp(s_ij)` per row, float32 `(n, 1)`; `MASKED_LOGIT` for an empty row.

    Gradient: `d/ds_ij = mask_ij * exp(s_ij - lse_i)` (the masked softmax),
    zero for an empty row.
    """

    def forward(s, m):
        nonempty = ops.any(m, axis=-1, keepdims=True)
        value = _lse_forward(s, m, bound, nonempty)
        # An empty row subtracts +1e9 in the backward pass: exp underflows to 0, no inf.
        return value, (s, m, ops.where(nonempty, value, -MASKED_LOGIT))

    def backward(residuals, upstream):
        s, m, shift = residuals
        return (ops.where(m, upstream * ops.exp(s - shift), 0.0),)

    return custom_vjp(forward, backward)(logits, mask)


def mean_gap(row, logits, mask):
    """`mean_{j in mask_i} (row_i - s_ij)` per row, float32 `(n,)`; 0 for an empty row.

    Args:
        row: float32 `(n, 1)`, e.g. a `row_logsumexp` (SupCon L_out, DCL).
        logits: float32 `(n, N)`.
        mask: bool `(n, N)`, the terms averaged (the anchor's positives).

    Gradient: `d/d row_i = count_i / max(count_i, 1)` and
    `d/ds_ij = -mask_ij / max(count_i, 1)`.
    """

    def forward(r, s, m):
        count, denominator = _count(m)
        value = ops.sum(ops.where(m, r - s, 0.0), axis=-1) / ops.squeeze(denominator, axis=-1)
        return value, (m, count, denominator)

    def backward(residuals, upstream):
        m, count, denominator = residuals
        weight = _column(upstream) / denominator
        return weight * count, ops.where(m, -weight, 0.0)

    return custom_vjp(forward, backward, differentiable=2)(row, logits, mask)


def _noise_statistic(s, noise_mask, bound):
    """Per row: `sum_{n in N(i)} exp(s_in - bound)` `(n, 1)` with a bound, else the noise log-sum-exp."""
    if bound is None:
        return masked_logsumexp(s, noise_mask)
    return ops.sum(ops.where(noise_mask, ops.exp(s - bound), 0.0), axis=-1, keepdims=True)


def _noise_contrastive_pairs(s, noise, shift, bound):
    """`(n, N)` pair terms `log(exp(s_ij - shift) + sum_{n in N(i)} exp(s_in)) - s_ij`."""
    if bound is None:
        # log(exp(s - eps) + exp(L)) - s == softplus(L - s + eps) - eps: one fused op.
        return ops.softplus(noise - s + shift) - shift
    exp_s = ops.exp(s - bound)
    positive = exp_s if shift == 0 else exp_s * math.exp(-shift)
    return ops.log(positive + noise) - (s - bound)


def _noise_contrastive_grad(s, weight, noise, noise_mask, positive_mask, shift, bound, has_noise):
    """`d/ds` of `sum_{p in P(i)} weight_i * pair_ip`, built in at most three `(n, N)` temporaries.

    With `sigma_ip = S_i / (exp(s_ip - shift) + S_i)` (`S_i` the noise sum):
    `d/ds_ip = -weight_i * sigma_ip` for a positive and, with
    `D_i = weight_i * sum_p sigma_ip`, `d/ds_in = D_i * exp(s_in) / S_i` for
    a noise embedding. Needs disjoint masks (no positive is its own noise).
    """
    if bound is None:
        negative = ops.where(positive_mask, -weight * ops.sigmoid(noise - s + shift), 0.0)
        safe_lse = ops.where(has_noise, noise, -MASKED_LOGIT)
        scale = -ops.sum(negative, axis=-1, keepdims=True)
        return ops.where(noise_mask, scale * ops.exp(s - safe_lse), negative)
    exp_s = ops.exp(s - bound)
    positive = exp_s if shift == 0 else exp_s * math.exp(-shift)
    negative = ops.where(positive_mask, (-weight * noise) / (positive + noise), 0.0)
    del positive
    scale = -ops.sum(negative, axis=-1, keepdims=True) / ops.where(has_noise, noise, 1.0)
    return ops.where(noise_mask, exp_s * scale, negative)


def mean_noise_contrastive(logits, noise_mask, positive_mask, shift=0.0, bound=None):
    """`mean_{p in P(i)} -log(exp(s_ip - shift) / (exp(s_ip - shift) + sum_{n in N(i)} exp(s_in)))`.

    The SINCERE / InfoNCE pair term (`shift=0`) and epsilon-SupInfoNCE's
    margin (`shift=epsilon`), averaged over each anchor's positives.

    Args:
        logits: float32 `(n, N)`.
        noise_mask: bool `(n, N)`, the noise set `N(i)`.
        positive_mask: bool `(n, N)`, the positives `P(i)`, disjoint from
            `noise_mask`.
        shift: Python float, subtracted from the positive's own logit in the
            denominator.
        bound: None or the logits' upper bound (module docstring).

    Returns:
        float32 `(n,)`, 0 for an anchor without positives (zero gradient).
    """

    def forward(s, noise_mask, positive_mask):
        _, denominator = _count(positive_mask)
        noise = _noise_statistic(s, noise_mask, bound)
        pairs = _noise_contrastive_pairs(s, noise, shift, bound)
        value = ops.sum(ops.where(positive_mask, pairs, 0.0), axis=-1) / ops.squeeze(denominator, -1)
        has_noise = ops.any(noise_mask, axis=-1, keepdims=True)
        return value, (s, noise_mask, positive_mask, denominator, noise, has_noise)

    def backward(residuals, upstream):
        s, noise_mask, positive_mask, denominator, noise, has_noise = residuals
        weight = _column(upstream) / denominator
        return (_noise_contrastive_grad(s, weight, noise, noise_mask, positive_mask, shift, bound,
                                        has_noise),)

    return custom_vjp(forward, backward)(logits, noise_mask, positive_mask)
