"""Class geometry of embeddings: class centers, nearest-class-center accuracy, CDNV,
directional CDNV and the few-shot error bound built from them.

Source: Luthra, Yang & Galanti, "Self-Supervised Contrastive Learning is
Approximately Supervised Contrastive Learning", sec. 3.2, Prop. 1 and app. C
(eq. 13); CDNV from Galanti et al. 2022.
"""

import numpy as np
from scipy import optimize

from clzoo.eval import _checks
from clzoo.eval.metric import MetricResult, ReportMetric, percent, register_metric


def class_centers(embeddings, labels):
    """Mean embedding of each class present in `labels`.

    Args:
        embeddings: float `(N, D)`.
        labels: int `(N,)`.

    Returns:
        `(classes, centers)`: the sorted class ids `(C,)` and float64 `(C, D)`.
    """
    x = _checks.features(embeddings)
    y = _checks.labels(labels, x.shape[0])
    classes, index = np.unique(y, return_inverse=True)
    sums = np.zeros((len(classes), x.shape[1]))
    np.add.at(sums, index, x)
    return classes, sums / np.bincount(index)[:, None]


def nearest_class_center_predict(train_embeddings, train_labels, test_embeddings):
    """Nearest-class-center classifier (NCCC): `argmin_c ||f(x) - mu_c||_2`.

    Centers are the class means of the training embeddings (NSCL paper sec. 3.2).

    Returns:
        int64 `(M,)` predicted class ids.
    """
    classes, centers = class_centers(train_embeddings, train_labels)
    test = _checks.features(test_embeddings, "test_embeddings")
    _checks.same_dimension(centers, test)
    # ||x - mu||^2 = ||x||^2 - 2 x.mu + ||mu||^2; the first term is shared by all classes.
    distances = -2.0 * test @ centers.T + np.sum(centers**2, axis=1)[None, :]
    return classes[np.argmin(distances, axis=1)]


def nearest_class_center_accuracy(train_embeddings, train_labels, test_embeddings, test_labels):
    """Top-1 accuracy of `nearest_class_center_predict`, in [0, 1].

    Example:

    >>> import numpy as np, clzoo
    >>> train = np.array([[0.0, 1.0], [0.0, 3.0], [2.0, 0.0]])
    >>> clzoo.eval.nearest_class_center_accuracy(train, [0, 0, 1], [[0.1, 2.0], [3.0, 0.0]], [0, 1])
    1.0
    """
    predictions = nearest_class_center_predict(train_embeddings, train_labels, test_embeddings)
    y = _checks.labels(test_labels, predictions.shape[0], "test_labels")
    return float(np.mean(predictions == y))


def _pair_terms(embeddings, labels):
    """Per ordered class pair `i != j`: the ratios every variability measure averages.

    Returns `(num_classes, terms)` with `terms` float arrays over the pairs:
    `"cdnv"` `v_i / d_ij^2`, `"directional"` `u_ij^T Sigma_i u_ij / d_ij^2` and
    `"pair"` `(v_i + v_j) / d_ij^2`, where `v_i = tr(Sigma_i)` is the class's
    mean squared distance to its center and `d_ij = ||mu_i - mu_j||`.
    """
    x = _checks.features(embeddings)
    y = _checks.labels(labels, x.shape[0], min_classes=2)
    classes, centers = class_centers(x, y)
    covariances = []
    for c in classes:
        members = x[y == c] - centers[classes == c]
        covariances.append(members.T @ members / members.shape[0])
    covariances = np.stack(covariances)
    diff = centers[:, None, :] - centers[None, :, :]  # mu_i - mu_j
    squared = np.sum(diff**2, axis=-1)
    off = ~np.eye(len(centers), dtype=bool)
    if np.any(squared[off] == 0):
        raise ValueError("Two classes have identical centers; CDNV is undefined.")
    squared = np.where(off, squared, 1.0)
    u = diff / np.sqrt(squared)[..., None]
    trace = np.trace(covariances, axis1=1, axis2=2)
    terms = {
        "cdnv": (trace[:, None] / squared)[off],
        "directional": (np.einsum("ijd,ide,ije->ij", u, covariances, u) / squared)[off],
        "pair": ((trace[:, None] + trace[None, :]) / squared)[off],
    }
    return len(classes), terms


def variability(embeddings, labels):
    """`{"cdnv": ..., "directional_cdnv": ...}` from one pass over the class covariances.

    The same values as `cdnv` and `directional_cdnv` (which see), for when
    both are wanted. Raises as they do.
    """
    _, terms = _pair_terms(embeddings, labels)
    return {"cdnv": float(np.mean(terms["cdnv"])),
            "directional_cdnv": float(np.mean(terms["directional"]))}


def cdnv(embeddings, labels):
    """Class-distance-normalized variance `Avg_{i != j} sigma_i^2 / ||mu_i - mu_j||^2`.

    `sigma_i^2` is the mean squared distance of class `i`'s embeddings to
    their center `mu_i` (NSCL paper sec. 3.2; Galanti et al. 2022). Averaged
    over ordered pairs this equals the symmetric form
    `(sigma_i^2 + sigma_j^2) / (2 ||mu_i - mu_j||^2)`. 0 when every class has
    collapsed to its center; lower is more clustered.

    Args:
        embeddings: float `(N, D)` (use them as the metric's user does: the
            papers use unnormalized encoder features).
        labels: int `(N,)` with at least two classes.

    Returns:
        float.

    Raises:
        ValueError: fewer than two classes, or two identical class centers.

    Example:

    >>> import numpy as np, clzoo
    >>> x = np.array([[-1.0, 0], [1, 0], [9, 0], [11, 0]])
    >>> clzoo.eval.cdnv(x, [0, 0, 1, 1])  # variance 1, center distance 10
    0.01
    """
    return variability(embeddings, labels)["cdnv"]


def directional_cdnv(embeddings, labels):
    """Directional CDNV `Avg_{i != j} Var_i[<f(x) - mu_i, u_ij>] / ||mu_i - mu_j||^2`.

    `u_ij` is the unit vector from `mu_j` to `mu_i`: only the variation along
    the line between the two centers counts (NSCL paper sec. 3.2, Fig. 2).
    Never larger than `cdnv`.

    Example:

    >>> import numpy as np, clzoo
    >>> x = np.array([[10.0, -1], [10, 1], [0, -1], [0, 1]])  # spread across the center line
    >>> clzoo.eval.directional_cdnv(x, [0, 0, 1, 1])
    0.0
    """
    return variability(embeddings, labels)["directional_cdnv"]


def few_shot_error_bound(embeddings, labels, shots):
    """Upper bound on the m-shot nearest-class-center (and linear-probe) error.

    The NSCL paper's eq. 13 (app. C, the general form of Prop. 1), minimized
    over its free parameter `a >= 5` (the optimum that Cor. 1 writes in
    closed form):

        (C - 1) * inf_a [ (1/2 - 2/a - 2^(3/2)/(a m))^-2 V~
                          + a/4 (2/sqrt(m) V^s + 2/sqrt(m) V + V/m) ]

    with, over ordered class pairs, `V~` the directional CDNV, `V` the mean of
    `(v_i + v_j) / ||mu_i - mu_j||^2` (`v` the trace of a class covariance)
    and `V^s` the mean of its square root, as in the proof. Classes play the
    role of the distributions `D_i`, as the paper does on train and test sets.
    The bound can exceed 1 (it is then vacuous).

    Args:
        embeddings: float `(N, D)`.
        labels: int `(N,)`, at least two classes.
        shots: labelled samples per class `m`, at least 6 (eq. 13's range).

    Returns:
        float.
    """
    if isinstance(shots, bool) or not isinstance(shots, (int, np.integer)) or shots < 6:
        raise ValueError(f"`shots` must be an integer >= 6 (eq. 13's range). Received: shots={shots!r}")
    num_classes, terms = _pair_terms(embeddings, labels)
    v_dir = np.mean(terms["directional"])
    v, v_s = np.mean(terms["pair"]), np.mean(np.sqrt(terms["pair"]))
    m = float(shots)
    rest = (2 / np.sqrt(m)) * v_s + (2 / np.sqrt(m)) * v + v / m

    def bound(a):
        tau = 0.5 - 2 / a - 2**1.5 / (a * m)
        return tau**-2 * v_dir + a / 4 * rest

    # tau > 0 needs a > 4 + 2^(5/2)/m; eq. 13 asks a >= 5 as well.
    low = max(5.0, 4 + 2**2.5 / m + 1e-9)
    if rest == 0:
        best = 4 * v_dir  # the a -> infinity limit (Cor. 1)
    else:
        result = optimize.minimize_scalar(lambda t: bound(low + np.exp(t)),
                                          bounds=(-20, 20), method="bounded")
        best = min(float(result.fun), bound(low))
    return float((num_classes - 1) * best)


@register_metric
class NCCReport(ReportMetric):
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


@register_metric
class GeometryReport(ReportMetric):
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
