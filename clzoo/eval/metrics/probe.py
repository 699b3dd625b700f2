"""`probe`: logistic-regression (L-BFGS) linear probe on frozen features (SimCLR's protocol)."""

from clzoo.eval.linear_probe import logistic_regression_probe
from clzoo.eval.metrics._base import Metric, MetricResult, percent, register_metric


def cached_probe(context):
    """The context's logistic-regression `ProbeResult`, fitted once (shared with `calibration`)."""
    return context.cached("probe", lambda: logistic_regression_probe(
        context.train, context.train_labels, context.test, context.test_labels))


@register_metric
class Probe(Metric):
    """Top-1 of multinomial logistic regression (L-BFGS, standardized features) on frozen features.

    Scalars: `{"accuracy", "protocol", "C"}`. Correctness: `probe`.
    Source: Chen et al. 2020 (SimCLR), linear evaluation on fixed features.

    Example:

    >>> import numpy as np, clzoo
    >>> x, y = np.array([[0.0, 1], [0, 2], [1, 0], [2, 0]]), np.array([0, 0, 1, 1])
    >>> context = clzoo.eval.EvalContext.create(x, y, x, y)
    >>> clzoo.eval.METRICS.get("probe")().compute(context).scalars["accuracy"]
    1.0
    """

    name = "probe"
    description = "logistic regression (L-BFGS) on frozen features"
    source = "SimCLR (Chen et al. 2020) linear evaluation"

    def compute(self, context):
        result = cached_probe(context)
        return MetricResult(self.name, {"accuracy": result.accuracy, **result.details},
                            {"probe": result.predictions == context.test_labels},
                            [("linear probe top-1 (logistic regression, L-BFGS)",
                              percent(result.accuracy))])
