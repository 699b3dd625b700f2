"""`ncc`: nearest-class-center top-1 (NSCL paper sec. 3.2)."""

import numpy as np

from clzoo.eval.geometry import nearest_class_center_predict
from clzoo.eval.metrics._base import Metric, MetricResult, percent, register_metric


@register_metric
class NCC(Metric):
    """Top-1 of the nearest-class-center classifier; centers are the training class means.

    Scalars: `{"accuracy": top-1 in [0, 1]}`. Correctness: `ncc`.
    Source: Luthra, Yang & Galanti, sec. 3.2.

    Example:

    >>> import numpy as np, clzoo
    >>> x, y = np.array([[0.0, 1], [0, 2], [2, 0], [3, 0]]), np.array([0, 0, 1, 1])
    >>> context = clzoo.eval.EvalContext.create(x, y, x, y)
    >>> clzoo.eval.METRICS.get("ncc")().compute(context).scalars
    {'accuracy': 1.0}
    """

    name = "ncc"
    description = "nearest-class-center top-1"
    source = "NSCL paper (Luthra, Yang & Galanti) sec. 3.2"

    def compute(self, context):
        correct = nearest_class_center_predict(context.train, context.train_labels,
                                               context.test) == context.test_labels
        accuracy = float(np.mean(correct))
        return MetricResult(self.name, {"accuracy": accuracy}, {"ncc": correct},
                            [("nearest-class-center top-1 (NSCL sec. 3.2)", percent(accuracy))])
