"""The DCL - NSCL loss gap on a dataset and its Theorem 1 bound (NSCL paper sec. 3.1, 4.2)."""

import math

import numpy as np

from clzoo.eval import _checks
from clzoo.eval.metric import MetricResult, ReportMetric, register_metric


def dcl_nscl_gap(embeddings, labels, temperature=1.0, block_size=1024):
    """Global DCL and NSCL losses of a dataset's embeddings, their gap and its Theorem 1 bound.

    Implements eq. 1 of Luthra, Yang & Galanti over the whole dataset:

        DCL = -1/(K^2 N) sum_{l1,l2} sum_i log( exp(s(z_i^l1, z_i^l2))
                                  / sum_{l3} sum_{j != i} exp(s(z_i^l1, z_j^l3)) )

    with `s = cos / temperature`; NSCL replaces `j != i` by `y_j != y_i`.
    Theorem 1 (stated for `temperature = 1`; cosines lie in [-1, 1], so
    with a temperature `e^2` becomes `e^(2 / temperature)`):

        0 <= DCL - NSCL <= log(1 + n_max e^2 / (N - n_max)) <= n_max e^2 / (N - n_max)

    where `n_max` is the size of the largest class. Computed in blocks of
    `block_size` anchors (float64 sums), so memory is `block_size x N K`.

    Args:
        embeddings: float `(N, D)` (one view) or `(N, K, D)` (K views).
        labels: int `(N,)`, at least two classes.
        temperature: positive float. Defaults to `1.0` (the theorem's).
        block_size: anchors per block.

    Returns:
        dict with `dcl`, `nscl`, `gap` (= dcl - nscl), `bound` (the log form),
        `bound_linear`, `n_max`, `samples`, `views`.

    Example:

    >>> import numpy as np, clzoo
    >>> z = np.random.default_rng(0).normal(size=(40, 2, 8))
    >>> r = clzoo.eval.dcl_nscl_gap(z, np.arange(40) % 10)
    >>> 0 <= r["gap"] <= r["bound"]
    True
    """
    z = np.asarray(embeddings, dtype=np.float64)
    if z.ndim == 2:
        z = z[:, None, :]
    if z.ndim != 3:
        raise ValueError(f"`embeddings` must have shape (N, D) or (N, K, D). Received: shape={z.shape}")
    n, views, dim = z.shape
    flat = _checks.features(z.reshape(n * views, dim), normalize=True)
    y = _checks.labels(labels, n, min_classes=2)
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"`temperature` must be a positive number. Received: temperature={temperature!r}")
    sample = np.repeat(np.arange(n), views)
    label = np.repeat(y, views)
    dcl = nscl = 0.0
    for start in range(0, n * views, block_size):
        rows = slice(start, start + block_size)
        logits = flat[rows] @ flat.T / temperature
        # Numerators: the anchor's own K views (l2 runs over all of them, the anchor included).
        own = sample[rows, None] == sample[None, :]
        numerator = np.where(own, logits, 0.0).sum(axis=1) / views
        shift = logits.max(axis=1, keepdims=True)
        weights = np.exp(logits - shift)
        log_dcl = np.log(np.where(own, 0.0, weights).sum(axis=1)) + shift[:, 0]
        other = label[rows, None] != label[None, :]
        log_nscl = np.log(np.where(other, weights, 0.0).sum(axis=1)) + shift[:, 0]
        dcl += np.sum(log_dcl - numerator)
        nscl += np.sum(log_nscl - numerator)
    n_max = int(np.bincount(y).max())
    ratio = n_max * math.exp(2.0 / temperature) / (n - n_max)
    dcl, nscl = dcl / (n * views), nscl / (n * views)
    return {"dcl": float(dcl), "nscl": float(nscl), "gap": float(dcl - nscl),
            "bound": math.log1p(ratio), "bound_linear": ratio, "n_max": n_max,
            "samples": n, "views": views, "temperature": float(temperature)}


@register_metric
class LossGapReport(ReportMetric):
    """DCL - NSCL on the test features (one view, temperature 1) and its Theorem 1 bound.

    Scalars: the dict of `clzoo.eval.dcl_nscl_gap` plus `"on"`. Source:
    Luthra, Yang & Galanti, sec. 3.1 (Thm. 1) and 4.2.

    Example:

    >>> import numpy as np, clzoo
    >>> x = np.random.default_rng(0).normal(size=(20, 4))
    >>> y = np.arange(20) % 2
    >>> context = clzoo.eval.EvalContext.create(x, y, x, y)
    >>> g = clzoo.eval.METRICS.get("loss_gap")().compute(context).scalars
    >>> 0 <= g["gap"] <= g["bound"]
    True
    """

    name = "loss_gap"
    description = "global DCL and NSCL losses, gap and Theorem 1 bound"
    source = "NSCL paper sec. 3.1, Thm. 1"

    def compute(self, context):
        gap = dcl_nscl_gap(context.test, context.test_labels)
        return MetricResult(self.name, {**gap, "on": "test embeddings, one view"}, {}, [
            ("DCL - NSCL gap on test set, t = 1 (NSCL Thm. 1)",
             (f"{gap['gap']:.4f} (bound {gap['bound']:.4f}; DCL {gap['dcl']:.4f}, "
             f"NSCL {gap['nscl']:.4f})"))])
