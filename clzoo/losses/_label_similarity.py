"""Private: multi-label and soft-label positives, as a pair weight in [0, 1] (label similarity).

With `label_similarity` set, SupCon and SINCERE accept `y_true` rows of shape
`(batch, classes)` that are multi-hot (several labels per sample) or soft
(MixUp / CutMix / label smoothing), and weigh the pair of samples `i, j` by

- `"cosine"`: `w_ij = <y_i, y_j> / (||y_i|| ||y_j||)`;
- `"jaccard"`: `w_ij = <y_i, y_j> / (||y_i||^2 + ||y_j||^2 - <y_i, y_j>)`, the
  Jaccard index `|A n B| / |A u B|` for multi-hot rows (the Tanimoto
  coefficient for soft rows).

Both are exactly 1 for equal one-hot rows and 0 for different ones, so the
weighted losses reduce to the hard-label ones. A sample's own other views
always have weight 1 (the same sample), the anchor itself 0, and an all-zero
row has weight 0 with every other sample (0 / 0 is taken as 0). Weights
within 1e-6 of 1 are taken as exactly 1 (float32 rounding of identical rows).
"""

import numpy as np
from keras import ops

from clzoo.losses import _checks as K

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
    """Validate label rows and return float32 `(batch, classes)` prepared for `pair_similarity`.

    For `"cosine"` the rows come back L2-normalized (an all-zero row stays
    zero); for `"jaccard"` as given.

    Raises:
        ValueError: naming `y_true`, for a non-numeric dtype, NaN / inf or
            negative entries.
    """
    y_true = K.as_array_or_tensor(y_true, "y_true")
    rows = ops.cast(ops.convert_to_tensor(y_true), "float32")
    ok = ops.logical_and(ops.isfinite(rows), rows >= 0)

    def detail(ok_np, y_np):
        bad = int(np.argmin(ok_np.all(axis=-1)))
        return f". Received: y_true.shape={y_np.shape}, row {bad} = {y_np[bad][:8].tolist()}"

    rows = K.require(ops.all(ok), "`y_true` label rows (batch, classes) for `label_similarity` must "
                     "be finite and non-negative (multi-hot or soft labels)", (ok, rows), detail,
                     gate=rows)
    if similarity == "cosine":
        norm = ops.sqrt(ops.sum(ops.square(rows), axis=-1, keepdims=True))
        rows = rows / ops.where(norm > 0, norm, 1.0)
    return rows


def pair_similarity(rows, cols, similarity):
    """Label similarity `(n, N)` in [0, 1] between prepared rows `(n, C)` and columns `(N, C)`."""
    dot = ops.matmul(rows, ops.transpose(cols))
    if similarity == "cosine":
        weight = dot
    else:
        union = (ops.sum(ops.square(rows), axis=-1)[:, None]
                 + ops.sum(ops.square(cols), axis=-1)[None, :] - dot)
        weight = dot / ops.where(union > 0, union, 1.0)
    # Identical rows give 1 up to float32 rounding; snap it, so that such a pair is a full positive
    # and leaves no `1 - w` sliver in SINCERE's noise sum.
    return ops.where(weight > 1.0 - _SNAP, 1.0, ops.maximum(weight, 0.0))


# Float32 rounding of an identical pair of label rows stays far below this.
_SNAP = 1e-6
