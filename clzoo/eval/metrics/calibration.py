"""`calibration`: expected calibration error of the probe's softmax, with its reliability diagram."""

from clzoo.eval import plots
from clzoo.eval.calibration import reliability
from clzoo.eval.metrics._base import Metric, MetricResult, Plot, register_metric
from clzoo.eval.metrics.probe import cached_probe

BINS = 15  # Guo et al. 2017's choice


@register_metric
class Calibration(Metric):
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
