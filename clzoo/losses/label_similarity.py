"""Multi-label and soft-label positives, as a pair weight in [0, 1] (label similarity).

With `label_similarity` set, SupCon and SINCERE accept `y_true` rows of shape
`(batch, classes)` that are multi-hot (several labels per sample) or soft
(MixUp / CutMix / label smoothing), and weigh the pair of samples `i, j` by

- `"cosine"`: `w_ij = <y_i, y_j> / (||y_i|| ||y_j||)`;
- `"jaccard"`: `w_ij = <y_i, y_j> / (||y_i||^2 + ||y_j||^2 - <y_i, y_j>)`, the
  Jaccard index `|A n B| / |A u B|` for multi-hot rows (the Tanimoto
  coefficient for soft rows).

Both are exactly 1 for equal one-hot rows and 0 for different ones, so the
weighted losses reduce to the hard-label ones. A sample's own other views
always have weight 1 (the same sample), the anchor itself 0. An all-zero
row is refused (`ValueError`): its similarity would be 0 / 0. Weights
within 1e-6 of 1 are taken as exactly 1 (float32 rounding of identical rows).
"""

import numpy as np
from keras import ops

from clzoo.losses import precision
from clzoo.validation import checks as K

SIMILARITIES = ("cosine", "jaccard")


def validate_label_similarity(value):
    """Return `value` (None, "cosine" or "jaccard"), else a `ValueError` naming `label_similarity`."""
    if value is not None and value not in SIMILARITIES:
        raise ValueError(f"`label_similarity` must be None (hard labels), 'cosine' or 'jaccard'. "
                         f"Received: label_similarity={value!r}")
    return value


def is_label_matrix(y_true):
    """True for a rank-2 `y_true` with more than one column (multi-hot, soft or one-hot rows)."""
    if y_true is None:
        return False
    if not hasattr(y_true, "shape"):
        y_true = np.asarray(y_true)
    return K.rank_of(y_true) == 2 and y_true.shape[-1] is not None and y_true.shape[-1] > 1


def standardize_label_rows(y_true, similarity):
    """Validate label rows and return float32 rows prepared for `pair_similarity`.

    Each row is divided by its largest entry, so the similarities are exact
    at any scale float32 holds (squares of 1e-30 would underflow, of 1e30
    overflow). `"cosine"`: the unit rows `(batch, classes)`; `"jaccard"`:
    `(batch, classes + 1)`, the scaled row and its scale (Jaccard is not
    scale-invariant row by row).

    Raises:
        ValueError: naming `y_true`, for a non-numeric dtype, NaN / inf or
            negative entries, or an all-zero row (a sample without any label
            would have no positive and no similarity to any sample).
    """
    y_true = K.as_array_or_tensor(y_true, "y_true")
    rows = ops.cast(ops.convert_to_tensor(y_true), "float32")
    scale = ops.max(rows, axis=-1, keepdims=True)
    row_ok = ops.logical_and(ops.all(ops.logical_and(ops.isfinite(rows), rows >= 0), axis=-1),
                             scale[:, 0] > 0)

    def detail(ok_np, y_np):
        bad = int(np.argmin(ok_np))
        return f". Received: y_true.shape={y_np.shape}, row {bad} = {y_np[bad][:8].tolist()}"

    rows = K.require(ops.all(row_ok), "`y_true` label rows (batch, classes) for `label_similarity` "
                     "must be finite, non-negative and not all zero (multi-hot or soft labels, at "
                     "least one label per sample)", (row_ok, rows), detail, gate=rows)
    scale = ops.where(scale > 0, scale, 1.0)
    rows = rows / scale  # largest entry 1: squares and sums stay in range
    if similarity == "cosine":
        return rows / ops.sqrt(ops.sum(ops.square(rows), axis=-1, keepdims=True))
    return ops.concatenate([rows, scale], axis=-1)


def pair_similarity(rows, cols, similarity):
    """Label similarity `(n, N)` in [0, 1] between prepared rows `(n, C)` and columns `(N, C)`."""
    if similarity == "cosine":
        weight = precision.matmul(rows, ops.transpose(cols))
    else:
        weight = _jaccard(rows, cols)
    # Identical rows give 1 up to float32 rounding; snap it, so that such a pair is a full positive
    # and leaves no `1 - w` sliver in SINCERE's noise sum.
    return ops.where(weight > 1.0 - _SNAP, 1.0, ops.maximum(weight, 0.0))


def _jaccard(rows, cols):
    """`<a, b> / (|a|^2 + |b|^2 - <a, b>)` of the original rows `a = s_a u_a`, `b = s_b u_b`, from
    the scaled rows `u` and scales `s`: numerator and denominator are divided by
    `max(s_a, s_b)^2`, so only ratios <= 1 of the scales are formed."""
    u, s_rows = rows[:, :-1], rows[:, -1:]
    v, s_cols = cols[:, :-1], ops.transpose(cols[:, -1:])
    top = ops.maximum(s_rows, s_cols)
    p, q = s_rows / top, s_cols / top
    dot = p * q * precision.matmul(u, ops.transpose(v))
    union = (p * p * ops.sum(ops.square(u), axis=-1)[:, None]
             + q * q * ops.sum(ops.square(v), axis=-1)[None, :] - dot)
    return dot / ops.where(union > 0, union, 1.0)


# Float32 rounding of an identical pair of label rows stays far below this.
_SNAP = 1e-6
