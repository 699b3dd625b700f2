"""Anchor-by-embedding logits and the per-anchor reductions the losses are written in."""

from keras import ops

from clzoo.losses import precision
from clzoo.losses import row_ops as R

# With unit vectors every logit lies in [-1/t, 1/t], so exp(logit - 1/t) lies
# in [exp(-2/t), 1]: no overflow, and no float32 underflow while 2/t <= 80.
MAX_EXP_RANGE = 80.0


class Similarities:
    """Anchor-by-embedding logits and the per-anchor reductions every loss builds from them.

    Each reduction has a hand-written gradient (`clzoo.losses.row_ops`). With
    `keep_logits=False` (blockwise losses) a block's backward pass recomputes
    its logits and holds its masks and at most three `(n, N)` float32
    temporaries; with `keep_logits=True` (the whole batch at once) it reuses
    the forward logits, and the forward + backward pass costs three matmuls
    of the logits' shape. Two exact ways to evaluate the same
    formulas: when the logits are known to lie in `[bound - 80, bound]`
    (unit vectors, temperature >= 0.025), one `exp(logits - bound)` serves
    each sum and pair term; otherwise row maxima are subtracted
    (temperatures down to 0.01 and below, unnormalized embeddings).

    Args:
        rows: float32 `(n, D)` anchors divided by the temperature.
        cols: float32 `(N, D)` every embedding; the logits are `rows @ cols^T`.
        bound: None, or a float with `bound - 80 <= logits <= bound`.
        keep_logits: keep the logits for the backward pass (time) instead of
            recomputing them there (memory). Defaults to `False`.
    """

    def __init__(self, rows, cols, bound=None, keep_logits=False):
        self.rows, self.cols, self.bound = rows, cols, bound
        self.logits = precision.matmul(rows, ops.transpose(cols))
        self._block = (None, None, self.logits) if keep_logits else (rows, cols, self.logits)

    def logsumexp(self, mask):
        """Row-wise `log sum_{j in mask} exp(s_ij)`, `(n, 1)`; very negative when the row is empty.

        `mask` may be float32 weights `w_ij >= 0`: `log sum_j w_ij exp(s_ij)`.
        """
        return R.row_logsumexp(self._block, mask, self.bound)

    def mean_gap(self, row, positive_mask):
        """`(mean_{p in P(i)} (row_i - s_ip), has_positive)`, both `(n,)` (SupCon L_out, DCL).

        `row` is `(n, 1)`; an anchor without positives gets 0 and a zero gradient.
        `positive_mask` may be float32 weights `w_ip >= 0`: the weighted mean.
        """
        has_positive = ops.any(R.present(positive_mask), axis=-1)
        return R.mean_gap(row, self._block, positive_mask), has_positive

    def noise_contrastive(self, noise_mask, positive_mask, positive_shift=0.0,
                          noise_from_positive=False):
        """`(anchor_loss, has_positive)`, `(n,)`: the mean over positives `p` of
        `-log(exp(s_ip - shift) / (exp(s_ip - shift) + sum_{n in N(i)} exp(s_in)))`.

        The SINCERE / InfoNCE form (`positive_shift=0`) and epsilon-SupInfoNCE's
        margin (`positive_shift=epsilon`). Boolean masks must be disjoint;
        both may instead be float32 weights (`v_in` in the noise sum, `w_ip`
        in the mean over positives), which may overlap. `noise_from_positive`:
        `noise_mask` is the boolean "not the anchor" mask and the noise weights
        are `1 - w` on it, derived rather than held (`row_ops.mean_noise_contrastive`).
        """
        value = R.mean_noise_contrastive(self._block, noise_mask, positive_mask,
                                         float(positive_shift), self.bound, noise_from_positive)
        return value, ops.any(R.present(positive_mask), axis=-1)

    def decoupled(self, noise_mask, positive_mask):
        """Mean over positives of `-log(exp(s_ip) / sum_{n in N(i)} exp(s_in))` (DCL, NSCL).

        Returns `(anchor_loss, valid)`, `(n,)`; an anchor is valid when it has
        a positive and a non-empty noise set.
        """
        anchor_loss, has_positive = self.mean_gap(self.logsumexp(noise_mask), positive_mask)
        return anchor_loss, ops.logical_and(has_positive, ops.any(noise_mask, axis=-1))
