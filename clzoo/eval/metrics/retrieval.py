"""`retrieval`: leave-one-out precision@k, recall@k, R-precision and MAP@R of the test features."""

from clzoo.eval.metrics._base import Metric, MetricResult, percent, register_metric
from clzoo.eval.retrieval import retrieval_metrics


@register_metric
class Retrieval(Metric):
    """Retrieval accuracy of the test features, each test feature a query against the other ones.

    Cosine similarity ranks the neighbours; relevant means the same class.
    Scalars: `{"precision_at_k": {"k1": ...}, "recall_at_k": {...},
    "r_precision", "map_at_r", "queries", "on"}` for every k of `context.ks`
    (the kNN k values). Source: Musgrave, Belongie & Lim 2020 (sec. 3.2, MAP@R
    eq. 1), as pytorch-metric-learning's `AccuracyCalculator` defines them;
    recall@k as Oh Song et al. 2016. See `clzoo.eval.retrieval_metrics`.

    Example:

    >>> import numpy as np, clzoo
    >>> x, y = np.array([[1.0, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]]), np.array([0, 0, 1, 1])
    >>> context = clzoo.eval.EvalContext.create(x, y, x, y, ks=(1,))
    >>> result = clzoo.eval.METRICS.get("retrieval")().compute(context)
    >>> result.scalars["map_at_r"], result.scalars["precision_at_k"]
    (1.0, {'k1': 1.0})
    """

    name = "retrieval"
    description = "leave-one-out precision@k, recall@k, R-precision and MAP@R of the test features"
    source = "Musgrave et al. 2020 (MAP@R); pytorch-metric-learning AccuracyCalculator"

    def compute(self, context):
        m = retrieval_metrics(context.test, context.test_labels, ks=context.ks)
        scalars = {"precision_at_k": {f"k{k}": v for k, v in m["precision_at_k"].items()},
                   "recall_at_k": {f"k{k}": v for k, v in m["recall_at_k"].items()},
                   "r_precision": m["r_precision"], "map_at_r": m["map_at_r"],
                   "queries": m["queries"], "on": "test embeddings, leave-one-out, cosine"}
        rows = [("MAP@R / R-precision (test, leave-one-out; Musgrave et al. 2020)",
                 f"{percent(m['map_at_r'])} / {percent(m['r_precision'])}")]
        rows += [(f"precision@{k} / recall@{k} (test, leave-one-out)",
                  f"{percent(p)} / {percent(m['recall_at_k'][k])}")
                 for k, p in m["precision_at_k"].items()]
        return MetricResult(self.name, scalars, {}, rows)
