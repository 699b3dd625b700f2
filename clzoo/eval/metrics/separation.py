"""`separation`: nearest-target / nearest-noise similarity and the per-class margin (SINCERE sec. 4.1)."""

import numpy as np

from clzoo.eval import plots
from clzoo.eval.metrics._base import Metric, MetricResult, Plot, register_metric
from clzoo.eval.separation import target_noise_separation


@register_metric
class Separation(Metric):
    """Cosine similarity of each test feature to its nearest same-class and other-class training feature.

    Scalars: `{"margin", "median_target", "median_noise", "per_class_margin":
    {class name: margin}}`; plots `separation.png` (SINCERE Fig. 2) and
    `separation_per_class.png` (app. O). Source: Feeney and Hughes,
    SINCERE, sec. 4.1 and Table 1.

    Example:

    >>> import numpy as np, clzoo
    >>> x, y = np.eye(2), np.array([0, 1])
    >>> context = clzoo.eval.EvalContext.create(x, y, x, y, class_names=["a", "b"])
    >>> clzoo.eval.METRICS.get("separation")().compute(context).scalars["per_class_margin"]
    {'a': 1.0, 'b': 1.0}
    """

    name = "separation"
    description = "nearest target / nearest noise similarity, per-class median margin"
    source = "SINCERE sec. 4.1, Table 1, Fig. 2, app. O"

    def compute(self, context):
        sep = target_noise_separation(context.train, context.train_labels, context.test,
                                      context.test_labels)
        target, noise = float(np.median(sep.target)), float(np.median(sep.noise))
        scalars = {"margin": sep.margin, "median_target": target, "median_noise": noise,
                   "per_class_margin": {context.class_name(c): v
                                        for c, v in sep.per_class_margin.items()}}
        rows = [("target-noise margin (SINCERE Table 1)", f"{sep.margin:.4f}"),
                ("median nearest-target / nearest-noise cosine", f"{target:.4f} / {noise:.4f}")]
        figures = [
            Plot("separation.png", "Target-noise separation",
                 lambda path: plots.separation_histogram(sep, path, model=context.model)),
            Plot("separation_per_class.png", "Per-class separation",
                 lambda path: plots.per_class_separation(sep, path, context.class_names,
                                                         model=context.model)),
        ]
        return MetricResult(self.name, scalars, {}, rows, figures)
