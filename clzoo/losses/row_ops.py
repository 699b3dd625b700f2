"""Row reductions of a block of logits, with hand-written gradients.

Every embedding loss reduces each anchor's row of logits `s = rows @ cols^T`
`(n, N)` (`rows` the block's anchors already divided by the temperature,
`cols` all embeddings) to a few numbers per anchor. Left to autodiff, each
elementwise step of such a reduction keeps an `(n, N)` intermediate alive
until the backward pass (about 16 of them per block in eager TensorFlow).
The three reductions here compute their gradient by hand
(`vjp.custom_vjp`), building `d/ds` from the masks and small per-row
statistics in at most three `(n, N)` float32 temporaries. A `block` says
where `s` comes from in the backward pass:

- `(rows, cols, logits)`, recomputed (blockwise losses, `chunk_size`): the
  backward pass recomputes `s` from `rows` and `cols` (one matmul) instead of
  keeping it, and contracts `d/ds` straight back to `d rows = d/ds @ cols` and
  `d cols = (d/ds)^T @ rows`; `logits` is a non-differentiated input.
- `(None, None, logits)`, kept (the whole batch at once): the forward logits
  are the residual and the reduction returns `d/ds`; autodiff adds the `d/ds`
  of every reduction of the block and contracts once through the matmul that
  made `logits`, so a loss's forward + backward costs three `(n, N)`
  matmuls, the floor.

Each gradient is `upstream_i * d value_i / d s_ij`; derivations are in the
docstrings. Masks are `(n, N)`, never differentiated, and either boolean or
float32 weights `w_ij >= 0` (multi-label / soft positives, `label_weight`):
a boolean mask is the weight 1 on its entries, and 0 / 1 weights give
bit for bit the boolean value. `bound` is None or a float with
`bound - 80 <= s <= bound` (see `Similarities`): one `exp(s - bound)` then
serves every sum without overflow or underflow.
"""

import math

import keras
from keras import ops

from clzoo.losses import precision
from clzoo.losses.vjp import custom_vjp

# Fill value for masked logits and the log-sum-exp of an empty row: finite,
# so that gradients stay finite, and far below any real logit.
MASKED_LOGIT = -1e9


def _column(x):
    return ops.reshape(x, (-1, 1))


def _logits(rows, cols):
    return precision.matmul(rows, ops.transpose(cols))


def _to_embeddings(grad_logits, rows, cols):
    """The chain rule through `s = rows @ cols^T`: gradients of `rows` and `cols`."""
    return (precision.matmul(grad_logits, cols),
            ops.transpose(precision.matmul(ops.transpose(rows), grad_logits)))


def _reduce(block, lead, masks, value_fn, grad_fn):
    """One row reduction of `block` (module docstring) with its hand-written gradient.

    Args:
        block: `(rows, cols, logits)` (recomputed) or `(None, None, logits)` (kept).
        lead: differentiable inputs before the logits (e.g. `mean_gap`'s `row`).
        masks: non-differentiated `(n, N)` masks.
        value_fn: `value_fn(*lead, s, *masks) -> (value, saved)`, `saved` a tuple of
            the small tensors the gradient needs.
        grad_fn: `grad_fn(logits, masks, saved, upstream) -> (lead gradients, d/ds)`;
            `logits()` gives `s` (kept, or recomputed on first use).
    """
    rows, cols, s = block
    kept = rows is None
    sources = (s,) if kept else (rows, cols)  # what gives `s` back in the backward pass
    n_lead, n_sources, n_masks = len(lead), len(sources), len(masks)
    logits_at = n_lead + (0 if kept else 2)

    def forward(*inputs):
        logits, given_masks = inputs[logits_at], inputs[logits_at + 1:]
        value, saved = value_fn(*inputs[:n_lead], logits, *given_masks)
        return value, inputs[n_lead:n_lead + n_sources] + given_masks + saved

    def backward(residuals, upstream):
        sources, rest = residuals[:n_sources], residuals[n_sources:]
        logits = (lambda: sources[0]) if kept else (lambda: _logits(*sources))
        lead_grads, grad_s = grad_fn(logits, rest[:n_masks], rest[n_masks:], upstream)
        return (*lead_grads, grad_s) if kept else (*lead_grads, *_to_embeddings(grad_s, *sources))

    inputs = (s,) if kept else (rows, cols, s)
    return custom_vjp(forward, backward, n_lead + n_sources)(*lead, *inputs, *masks)


def is_weight(mask):
    """True for float weights, False for a boolean mask."""
    return keras.backend.standardize_dtype(mask.dtype) != "bool"


def present(mask):
    """Boolean `(n, N)`: the entries of `mask` that count (weight > 0)."""
    return mask > 0 if is_weight(mask) else mask


def _weighted(mask, x):
    """`mask_ij * x_ij`, exactly 0 off the mask (even where `x` is not finite)."""
    if is_weight(mask):
        return ops.where(mask > 0, mask * x, 0.0)
    return ops.where(mask, x, 0.0)


def _plus_log_weight(mask, x, fill):
    """`x_ij + log w_ij` on the mask (`x_ij` for a boolean one), `fill` off it."""
    if not is_weight(mask):
        return ops.where(mask, x, fill)
    on = mask > 0
    return ops.where(on, x + ops.log(ops.where(on, mask, 1.0)), fill)


def _exp_weighted(mask, x):
    """`mask_ij * exp(x_ij)` as `exp(x_ij + log mask_ij)`: no overflow where `x` is large."""
    return ops.exp(_plus_log_weight(mask, x, MASKED_LOGIT))  # exp(MASKED_LOGIT) is exactly 0


def _count(mask):
    """`(count, count or 1 where 0)` of each row of `mask` (its weight sum), float32 `(n, 1)`."""
    count = ops.sum(mask if is_weight(mask) else ops.cast(mask, "float32"), axis=-1, keepdims=True)
    return count, ops.where(count > 0, count, 1.0)


def masked_logsumexp(logits, mask):
    """Row-wise `log sum_j w_ij exp(s_ij)` `(n, 1)`; an empty row gives a very negative finite value."""
    return ops.logsumexp(_plus_log_weight(mask, logits, MASKED_LOGIT), axis=-1, keepdims=True)


def _lse_forward(s, mask, bound):
    """`(row log-sum-exp (n, 1), row not empty (n, 1) bool)`; `MASKED_LOGIT` for an empty row."""
    nonempty = ops.any(present(mask), axis=-1, keepdims=True)
    if bound is None:
        return masked_logsumexp(s, mask), nonempty
    # A weight multiplies (1 * e and 0 * e are exact: 0 / 1 weights equal the boolean mask).
    exp = ops.exp(s - bound)
    total = ops.sum(mask * exp if is_weight(mask) else ops.where(mask, exp, 0.0), axis=-1,
                    keepdims=True)
    # log only of positive values; an empty row gets MASKED_LOGIT.
    return (ops.where(nonempty, ops.log(ops.where(nonempty, total, 1.0)) + bound, MASKED_LOGIT),
            nonempty)


def row_logsumexp(block, mask, bound=None):
    """`log sum_j mask_ij exp(s_ij)` per row, float32 `(n, 1)`; `MASKED_LOGIT` for an empty row.

    Gradient: `d/ds_ij = mask_ij * exp(s_ij - lse_i)` (the masked softmax),
    zero for an empty row.
    """

    def value_fn(s, m):
        value, nonempty = _lse_forward(s, m, bound)
        # An empty row subtracts +1e9 in the backward pass: exp underflows to 0, no inf.
        return value, (ops.where(nonempty, value, -MASKED_LOGIT),)

    def grad_fn(logits, masks, saved, upstream):
        return (), upstream * _exp_weighted(masks[0], logits() - saved[0])

    return _reduce(block, (), (mask,), value_fn, grad_fn)


def mean_gap(row, block, mask):
    """`sum_j w_ij (row_i - s_ij) / sum_j w_ij` per row, float32 `(n,)`; 0 for an empty row.

    Args:
        row: float32 `(n, 1)`, e.g. a `row_logsumexp` (SupCon L_out, DCL).
        block: `(rows, cols, logits)` (module docstring).
        mask: bool or float32 weights `w` `(n, N)`, the terms averaged (the
            anchor's positives).

    Gradient, with `c_i = sum_j w_ij` (`d_i = c_i`, or 1 where `c_i = 0`):
    `d/d row_i = c_i / d_i` and `d/ds_ij = -w_ij / d_i`.
    """

    def value_fn(r, s, m):
        count, denominator = _count(m)
        value = ops.sum(_weighted(m, r - s), axis=-1) / ops.squeeze(denominator, axis=-1)
        return value, (count, denominator)

    def grad_fn(logits, masks, saved, upstream):
        count, denominator = saved
        weight = _column(upstream) / denominator
        return (weight * count,), _weighted(masks[0], -weight)

    return _reduce(block, (row,), (mask,), value_fn, grad_fn)


def _noise_forward(s, noise_mask, positive_mask, shift, bound):
    """Per row: the noise log-sum-exp `L_i` `(n, 1)`, `sum_p w_ip (pair_ip + shift)` `(n,)` and
    whether the noise set is not empty `(n, 1)`.

    `pair_ij = log(exp(s_ij - shift) + exp(L_i)) - s_ij
    = softplus(L_i + shift - s_ij) - shift`: one fused op on `(n, N)`, so the
    pass holds at most two `(n, N)` temporaries. An empty noise set gives
    `L_i = MASKED_LOGIT` (softplus 0).
    """
    noise, has_noise = _lse_forward(s, noise_mask, bound)
    pairs = ops.softplus((noise + shift) - s)
    return noise, ops.sum(_weighted(positive_mask, pairs), axis=-1), has_noise


def _noise_contrastive_grad(s, weight, noise, noise_mask, positive_mask, shift, bound, has_noise):
    """`d/ds` of `sum_p weight_i w_ip pair_ip`, in at most three `(n, N)` temporaries.

    With `sigma_ip = exp(L_i) / (exp(s_ip - shift) + exp(L_i))` (`L_i` the
    noise log-sum-exp, noise weights `v`): the positive `p` contributes
    `-weight_i * w_ip * sigma_ip` and, with `D_i = weight_i * sum_p w_ip
    sigma_ip`, every noise entry `D_i * v_in * exp(s_in - L_i)`. Boolean masks
    are disjoint (no positive is its own noise) and select one of the two;
    weights may overlap (SINCERE's multi-label form) and the two add.
    """
    if bound is None or is_weight(noise_mask):
        negative = _weighted(positive_mask, -weight * ops.sigmoid((noise + shift) - s))
        scale = -ops.sum(negative, axis=-1, keepdims=True)
        noise_part = scale * _exp_weighted(noise_mask, s - ops.where(has_noise, noise, -MASKED_LOGIT))
        if is_weight(noise_mask):
            return negative + noise_part
        return ops.where(noise_mask, noise_part, negative)
    # One exponential serves both terms: exp(s - bound), and the noise sum S_i = exp(L_i - bound).
    total = ops.exp(noise - bound)
    exp_s = ops.exp(s - bound)
    positive = exp_s if shift == 0 else exp_s * math.exp(-shift)
    negative = _weighted(positive_mask, (-weight * total) / (positive + total))
    del positive
    exp_s = exp_s * (-ops.sum(negative, axis=-1, keepdims=True) / ops.where(has_noise, total, 1.0))
    return ops.where(noise_mask, exp_s, negative)


def _complement_noise(not_self, positive_weight):
    """Noise weights `v_in = 1 - w_in` off the anchor (SINCERE's multi-label form), derived on use."""
    return ops.where(not_self, 1.0 - positive_weight, 0.0)


def mean_noise_contrastive(block, noise_mask, positive_mask, shift=0.0, bound=None,
                           noise_from_positive=False):
    """Per row `sum_p w_ip l_ip / sum_p w_ip`, float32 `(n,)`, with the pair term
    `l_ip = -log(exp(s_ip - shift) / (exp(s_ip - shift) + sum_n v_in exp(s_in)))`.

    The SINCERE / InfoNCE pair term (`shift=0`) and epsilon-SupInfoNCE's
    margin (`shift=epsilon`), averaged over each anchor's positives; with
    boolean masks `w` and `v` are the indicators of `P(i)` and `N(i)`.

    Args:
        block: `(rows, cols, logits)` (module docstring).
        noise_mask: bool or float32 weights `v` `(n, N)`, the noise set.
        positive_mask: bool or float32 weights `w` `(n, N)`, the positives;
            boolean masks must be disjoint from a boolean `noise_mask`.
        shift: Python float, subtracted from the positive's own logit in the
            denominator.
        bound: None or the logits' upper bound (module docstring).
        noise_from_positive: `noise_mask` is then the boolean "not the anchor"
            mask and the noise weights are `v = 1 - w` on it, derived in the
            forward and backward passes instead of held as a float32 `(n, N)`
            input (SINCERE's multi-label form).

    Returns:
        float32 `(n,)`, 0 for an anchor without positives (zero gradient).
    """
    if noise_from_positive and (is_weight(noise_mask) or not is_weight(positive_mask)):
        raise ValueError("`noise_from_positive` takes a boolean `noise_mask` and weights.")
    if not noise_from_positive and is_weight(noise_mask) != is_weight(positive_mask):
        raise ValueError("`noise_mask` and `positive_mask` must both be boolean or both weights.")

    def noise_of(noise_mask, positive_mask):
        return _complement_noise(noise_mask, positive_mask) if noise_from_positive else noise_mask

    def value_fn(s, noise_mask, positive_mask):
        noise_mask = noise_of(noise_mask, positive_mask)
        count, denominator = _count(positive_mask)
        noise, total, has_noise = _noise_forward(s, noise_mask, positive_mask, shift, bound)
        # The shift is added inside the softplus and taken back once per positive.
        value = (total - shift * ops.squeeze(count, -1)) / ops.squeeze(denominator, -1)
        return value, (denominator, noise, has_noise)

    def grad_fn(logits, masks, saved, upstream):
        denominator, noise, has_noise = saved
        weight = _column(upstream) / denominator
        noise_mask = noise_of(*masks)
        return (), _noise_contrastive_grad(logits(), weight, noise, noise_mask, masks[1], shift,
                                           bound, has_noise)

    return _reduce(block, (), (noise_mask, positive_mask), value_fn, grad_fn)
