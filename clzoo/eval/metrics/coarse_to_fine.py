"""`coarse_to_fine`: fine-label probe over a coarse-trained encoder (Perfectly Balanced sec. 5.2)."""

import numpy as np

from clzoo.eval.metrics._base import Metric, MetricResult, percent, register_metric
from clzoo.eval.transfer import coarse_labels, coarse_to_fine_transfer


@register_metric
class CoarseToFine(Metric):
    """Logistic-regression probe on the fine (CIFAR-10) labels, scored overall and within the coarse class.

    The labels of the context are the fine ones; `class_names` map them to
    coarse classes through `clzoo.data.label_sets.CIFAR10_COARSE`. Scalars:
    `{"fine_accuracy", "within_coarse_accuracy", "coarse_accuracy",
    "coarse_classes"}`. Not a default metric: it means something only for an
    encoder trained on coarse labels. Source: Chen et al. 2022 (Perfectly
    Balanced), sec. 5.2, Table 2.

    Example:

    >>> import numpy as np, clzoo
    >>> x, y = np.eye(2), np.array([0, 1])
    >>> clzoo.eval.METRICS.get("coarse_to_fine")().check(clzoo.eval.EvalContext.create(x, y, x, y))
    Traceback (most recent call last):
    ...
    ValueError: The 'coarse_to_fine' metric needs the class names (CIFAR-10's).
    """

    name = "coarse_to_fine"
    description = "fine-label probe over a coarse-trained encoder"
    source = "Perfectly Balanced sec. 5.2, Table 2"
    default = False

    def check(self, context):
        _coarse_of_each_class(context)

    def compute(self, context):
        coarse, names = _coarse_of_each_class(context)
        scores = coarse_to_fine_transfer(context.train, context.train_labels, context.test,
                                         context.test_labels, coarse)
        return MetricResult(self.name, {**scores, "coarse_classes": names}, {}, [
            ("coarse-to-fine: fine-label probe top-1 (Perfectly Balanced Table 2)",
             percent(scores["fine_accuracy"])),
            ("coarse-to-fine: fine top-1 within the true coarse class",
             percent(scores["within_coarse_accuracy"]))])


def _coarse_of_each_class(context):
    """`(coarse label of each fine class id, coarse names)`; raises without (CIFAR-10) class names."""
    if context.class_names is None:
        raise ValueError("The 'coarse_to_fine' metric needs the class names (CIFAR-10's).")
    return coarse_labels(np.arange(len(context.class_names)), context.class_names)
