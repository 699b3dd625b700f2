"""Coarse-to-fine transfer (Perfectly Balanced, Chen et al. 2022, sec. 5.2 and Table 2).

A model is trained on coarse labels `y` (e.g. CIFAR10-Coarse: animals vs
vehicles); its representation is frozen and a linear model is trained on the
fine labels `z` (the ten CIFAR-10 classes). Embeddings that keep the strata
inside each coarse class apart transfer better.
"""

import numpy as np

from clzoo.data.label_sets import CIFAR10_COARSE
from clzoo.eval import _checks
from clzoo.eval.linear_probe import logistic_regression_probe
from clzoo.eval.metric import MetricResult, ReportMetric, percent, register_metric


def coarse_labels(fine_labels, class_names, mapping=None):
    """Map fine labels to coarse ones.

    Args:
        fine_labels: int `(N,)`, indices into `class_names`.
        class_names: fine class names, index = label.
        mapping: `{fine name: coarse name}`. Defaults to `CIFAR10_COARSE`.

    Returns:
        `(coarse_labels int (N,), coarse_names)`; coarse classes sorted by name.

    Example:

    >>> from clzoo.eval.transfer import coarse_labels
    >>> coarse_labels([0, 3, 8], ["airplane", "automobile", "bird", "cat", "deer",
    ...                          "dog", "frog", "horse", "ship", "truck"])
    (array([1, 0, 1]), ['animal', 'vehicle'])
    """
    mapping = CIFAR10_COARSE if mapping is None else mapping
    missing = [name for name in class_names if name not in mapping]
    if missing:
        raise ValueError(f"`mapping` has no coarse class for {missing}.")
    coarse_names = sorted({mapping[name] for name in class_names})
    lookup = np.array([coarse_names.index(mapping[name]) for name in class_names])
    fine = np.asarray(fine_labels).reshape(-1)
    fine = _checks.labels(fine, fine.shape[0], "fine_labels")
    if fine.max() >= len(class_names):
        raise ValueError(f"`fine_labels` go up to {fine.max()} but there are {len(class_names)} class names.")
    return lookup[fine], coarse_names


def coarse_to_fine_transfer(train_embeddings, fine_train_labels, test_embeddings, fine_test_labels,
                            coarse_of_fine):
    """Linear probe on fine labels over a representation trained on coarse labels.

    Args:
        train_embeddings, test_embeddings: float `(N, D)`, `(M, D)`, frozen
            features of the coarse-trained encoder.
        fine_train_labels, fine_test_labels: int fine labels.
        coarse_of_fine: int array, `coarse_of_fine[fine] = coarse`.

    Returns:
        dict: `fine_accuracy` (the paper's Table 2 number), `within_coarse_accuracy`
        (fine accuracy of the probe restricted to the classes of the true
        coarse class: how well strata inside a coarse class are kept apart)
        and `coarse_accuracy` (coarse class of the fine prediction).

    Example:

    >>> import numpy as np
    >>> from clzoo.eval.transfer import coarse_to_fine_transfer
    >>> x = np.array([[1.0, 0, 0], [1, 0.1, 0], [0, 1, 0], [0, 1, 0.1], [0, 0, 1], [0.1, 0, 1]])
    >>> r = coarse_to_fine_transfer(x, [0, 0, 1, 1, 2, 2], x, [0, 0, 1, 1, 2, 2], [0, 0, 1])
    >>> r["fine_accuracy"], r["coarse_accuracy"]
    (1.0, 1.0)
    """
    result = logistic_regression_probe(train_embeddings, fine_train_labels, test_embeddings,
                                       fine_test_labels)
    fine_test = np.asarray(fine_test_labels).reshape(-1)
    coarse = np.asarray(coarse_of_fine).reshape(-1)
    if coarse.shape[0] < result.probabilities.shape[1]:
        raise ValueError(
            f"`coarse_of_fine` must give a coarse class for each of the "
            f"{result.probabilities.shape[1]} fine classes. Received: {coarse.shape[0]}"
        )
    probabilities = result.probabilities
    same_coarse = coarse[None, :probabilities.shape[1]] == coarse[fine_test][:, None]
    within = np.argmax(np.where(same_coarse, probabilities, -1.0), axis=1)
    return {"fine_accuracy": result.accuracy,
            "within_coarse_accuracy": float(np.mean(within == fine_test)),
            "coarse_accuracy": float(np.mean(coarse[result.predictions] == coarse[fine_test]))}


@register_metric
class CoarseToFineReport(ReportMetric):
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
