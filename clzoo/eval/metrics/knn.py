"""`knn`: cosine-weighted kNN top-1 for every k (SINCERE app. M)."""

import numpy as np

from clzoo.eval.knn import knn_predictions
from clzoo.eval.metrics._base import Metric, MetricResult, percent, register_metric


@register_metric
class KNN(Metric):
    """Weighted kNN top-1 of the test features against the training features, one value per k.

    Scalars: `{"k1": accuracy, "k5": ..., ...}` (k larger than the training
    set is skipped). Correctness: `knn_k{k}`. Source: Feeney and Hughes,
    SINCERE, app. M (cosine-weighted vote).

    Example:

    >>> import numpy as np, clzoo
    >>> x, y = np.eye(4), np.array([0, 0, 1, 1])
    >>> context = clzoo.eval.EvalContext.create(x, y, x, y, ks=(1,))
    >>> clzoo.eval.METRICS.get("knn")().compute(context).scalars
    {'k1': 1.0}
    """

    name = "knn"
    description = "cosine-weighted kNN top-1 for each k"
    source = "SINCERE app. M; Wu et al. 2018"

    def compute(self, context):
        predictions = knn_predictions(context.train, context.train_labels, context.test,
                                      context.ks, context.num_classes)
        correct = {f"knn_k{k}": p == context.test_labels for k, p in predictions.items()}
        scalars = {f"k{k}": float(np.mean(c)) for k, c in zip(predictions, correct.values())}
        rows = [(f"weighted kNN top-1, k = {k} (cosine; SINCERE app. M)", percent(v))
                for k, v in zip(predictions, scalars.values())]
        skipped = [k for k in context.ks if k not in predictions]
        if skipped:
            rows.append((f"weighted kNN top-1, k = {', '.join(map(str, skipped))}",
                         f"skipped: only {len(context.train)} training embeddings"))
        return MetricResult(self.name, scalars, correct, rows)
