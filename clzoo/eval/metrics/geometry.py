"""`geometry`: CDNV and directional CDNV of the train and test features (NSCL paper sec. 3.2)."""

from clzoo.eval.geometry import variability
from clzoo.eval.metrics._base import Metric, MetricResult, register_metric


@register_metric
class Geometry(Metric):
    """Class-distance-normalized variance and its directional form, per split.

    Scalars: `{"train": {"cdnv", "directional_cdnv"}, "test": {...}}`; lower
    is more clustered. Source: Luthra, Yang & Galanti, sec. 3.2; Galanti et al. 2022.

    Example:

    >>> import numpy as np, clzoo
    >>> x, y = np.array([[-1.0, 0], [1, 0], [9, 0], [11, 0]]), np.array([0, 0, 1, 1])
    >>> context = clzoo.eval.EvalContext.create(x, y, x, y)
    >>> clzoo.eval.METRICS.get("geometry")().compute(context).scalars["test"]["cdnv"]
    0.01
    """

    name = "geometry"
    description = "CDNV and directional CDNV, train and test"
    source = "NSCL paper sec. 3.2; Galanti et al. 2022"

    def compute(self, context):
        scalars = {"train": variability(context.train, context.train_labels),
                   "test": variability(context.test, context.test_labels)}
        rows = [(f"CDNV / directional CDNV, {split} (NSCL sec. 3.2)",
                 f"{g['cdnv']:.4g} / {g['directional_cdnv']:.4g}") for split, g in scalars.items()]
        return MetricResult(self.name, scalars, {}, rows)
