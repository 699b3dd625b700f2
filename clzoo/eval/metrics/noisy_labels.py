"""`noisy_labels`: training samples ranked by the geometric noisy-label heuristic (Perfectly Balanced)."""

from clzoo.eval.metrics._base import Metric, MetricResult, register_metric
from clzoo.eval.noisy_labels import rank_suspected_mislabeled

LISTED = 20  # indices kept in metrics.json; the report shows the first 10


@register_metric
class NoisyLabels(Metric):
    """The training samples whose features agree least with their label, and the label suggested.

    Scalars: `{"most_suspicious_train_indices", "their_labels",
    "suggested_labels"}`, 20 each, most suspicious first. Source: Chen et
    al. 2022 (Perfectly Balanced), app. E.3.2.

    Example:

    >>> import numpy as np, clzoo
    >>> x = np.array([[1.0, 0.0], [0.9, 0.1], [1.0, 0.1], [0.0, 1.0], [0.1, 1.0]])
    >>> y = np.array([0, 0, 1, 1, 1])
    >>> context = clzoo.eval.EvalContext.create(x, y, x, y)
    >>> clzoo.eval.METRICS.get("noisy_labels")().compute(context).scalars["most_suspicious_train_indices"][0]
    2
    """

    name = "noisy_labels"
    description = "training samples ranked by the geometric noisy-label heuristic"
    source = "Perfectly Balanced app. E.3.2"

    def compute(self, context):
        ranking = rank_suspected_mislabeled(context.train, context.train_labels)
        top = ranking.order[:LISTED]
        scalars = {"most_suspicious_train_indices": top.tolist(),
                   "their_labels": context.train_labels[top].tolist(),
                   "suggested_labels": ranking.suggested_labels[top].tolist()}
        listing = ", ".join(
            f"{i}: {context.class_name(a)} -> {context.class_name(b)}"
            for i, a, b in zip(top[:10], scalars["their_labels"], scalars["suggested_labels"]))
        return MetricResult(self.name, scalars, {}, [
            (("most suspicious training labels, index: label -> nearest-center label "
             "(Perfectly Balanced app. E.3.2)"), listing)])
