"""Expected calibration error and reliability diagrams of a classifier's softmax.

Used by the SupCon supplement (sec. 8, Table 2) and the soft-target InfoNCE
paper (Hugger & Uhlmann, sec. 4.2, Fig. 4). Equal-width confidence bins, as
in Guo et al. 2017 (15 bins).
"""

import dataclasses

import numpy as np

from clzoo.eval import plots
from clzoo.eval.linear_probe import cached_probe
from clzoo.eval.metric import MetricResult, Plot, ReportMetric, register_metric


@dataclasses.dataclass
class Reliability:
    """Per-bin statistics of a reliability diagram.

    Attributes:
        edges: `(bins + 1,)` bin edges on [0, 1].
        confidence: `(bins,)` mean top-1 probability in each bin (NaN if empty).
        accuracy: `(bins,)` accuracy in each bin (NaN if empty).
        count: `(bins,)` samples per bin.
        ece: expected calibration error, `sum_b |B_b|/n |acc_b - conf_b|`.
    """

    edges: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    count: np.ndarray
    ece: float


def _check(probabilities, labels):
    p = np.asarray(probabilities, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"`probabilities` must have shape (N, classes). Received: shape={p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0) or not np.allclose(p.sum(1), 1.0, atol=1e-3):
        raise ValueError("`probabilities` must be finite, non-negative and rows must sum to 1 "
                         "(apply a softmax to logits first).")
    y = np.asarray(labels).reshape(-1)
    if y.shape[0] != p.shape[0]:
        raise ValueError(f"`labels` must have one label per row ({p.shape[0]}). Received: {y.shape[0]}")
    return p, y.astype(np.int64)


def reliability(probabilities, labels, bins=15):
    """Bin predictions by top-1 confidence and compare confidence with accuracy.

    Args:
        probabilities: float `(N, classes)`, rows summing to 1.
        labels: int `(N,)`.
        bins: equal-width confidence bins on [0, 1]. Defaults to `15`.

    Returns:
        `Reliability`.
    """
    p, y = _check(probabilities, labels)
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise ValueError(f"`bins` must be a positive integer. Received: bins={bins!r}")
    confidence = p.max(axis=1)
    correct = (p.argmax(axis=1) == y).astype(np.float64)
    edges = np.linspace(0.0, 1.0, bins + 1)
    # Bins are (lo, hi]; confidence is at least 1/classes > 0.
    index = np.clip(np.searchsorted(edges, confidence, side="left") - 1, 0, bins - 1)
    count = np.bincount(index, minlength=bins)
    with np.errstate(invalid="ignore"):
        mean_conf = np.bincount(index, confidence, bins) / count
        mean_acc = np.bincount(index, correct, bins) / count
    filled = count > 0
    ece = float(np.sum(count[filled] / len(y) * np.abs(mean_acc[filled] - mean_conf[filled])))
    return Reliability(edges, mean_conf, mean_acc, count, ece)


def expected_calibration_error(probabilities, labels, bins=15):
    """Expected calibration error of top-1 predictions, in [0, 1]; 0 is perfectly calibrated.

    `sum_b |B_b| / n * |accuracy(B_b) - confidence(B_b)|` over equal-width
    confidence bins (Guo et al. 2017, eq. 3; SupCon supp. sec. 8).

    Args:
        probabilities: float `(N, classes)`, rows summing to 1 (a softmax).
        labels: int `(N,)`.
        bins: Defaults to `15`.

    Raises:
        ValueError: rows not summing to 1, negative or non-finite values,
            label count mismatch, `bins < 1`.

    Example:

    >>> import numpy as np, clzoo
    >>> p = np.array([[0.9, 0.1], [0.9, 0.1]])
    >>> round(clzoo.eval.expected_calibration_error(p, [0, 1]), 3)  # 90% sure, 50% right
    0.4
    """
    return reliability(probabilities, labels, bins).ece


BINS = 15  # Guo et al. 2017's choice


@register_metric
class CalibrationReport(ReportMetric):
    """ECE (15 equal-width bins) of the logistic-regression probe, and a reliability diagram.

    Scalars: `{"ece", "bins", "of"}`; plot `reliability.png`. Source: SupCon
    supplement sec. 8 (Table 2); Guo et al. 2017.

    Example:

    >>> import numpy as np, clzoo
    >>> x, y = np.array([[0.0, 1], [0, 2], [1, 0], [2, 0]]), np.array([0, 0, 1, 1])
    >>> context = clzoo.eval.EvalContext.create(x, y, x, y)
    >>> result = clzoo.eval.METRICS.get("calibration")().compute(context)
    >>> 0 <= result.scalars["ece"] <= 1, [p.filename for p in result.plots]
    (True, ['reliability.png'])
    """

    name = "calibration"
    description = "expected calibration error of the probe, reliability diagram"
    source = "SupCon supp. sec. 8; Guo et al. 2017"

    def compute(self, context):
        rel = reliability(cached_probe(context).probabilities, context.test_labels, bins=BINS)
        scalars = {"ece": rel.ece, "bins": BINS, "of": "softmax of the logistic-regression probe"}
        plot = Plot("reliability.png", "Reliability diagram of the probe",
                    lambda path: plots.reliability_diagram(rel, path, model=context.model))
        return MetricResult(self.name, scalars, {},
                            [(f"expected calibration error of the probe ({BINS} bins)",
                              f"{rel.ece:.4f}")], [plot])
