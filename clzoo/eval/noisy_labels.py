"""Suspected mislabeled samples from embedding geometry (Perfectly Balanced, app. E.3.2)."""

import dataclasses
from pathlib import Path

import numpy as np

from clzoo.eval import _checks
from clzoo.eval.metric import MetricResult, ReportMetric, register_metric


@dataclasses.dataclass
class NoisyLabelRanking:
    """Result of `rank_suspected_mislabeled`.

    Attributes:
        scores: float `(N,)`, cosine similarity to the center of the other
            same-class samples minus the mean cosine similarity to samples of
            other classes; low means suspicious.
        order: int `(N,)`, sample indices from most to least suspicious.
        suspected: int indices of the `fraction` most suspicious samples
            (empty when `fraction` is None).
        suggested_labels: int `(N,)`, the class whose center is most similar
            (the paper's correction for suspected samples).
    """

    scores: np.ndarray
    order: np.ndarray
    suspected: np.ndarray
    suggested_labels: np.ndarray


def rank_suspected_mislabeled(embeddings, labels, fraction=None):
    """Rank samples by how little their embedding agrees with their label.

    For each sample: the cosine similarity of its embedding to the center of
    all *other* samples of its class, minus its average cosine similarity to
    the samples of every other class (Chen et al. 2022, app. E.3.2). A
    mislabeled sample looks like a tiny stratum far from its nominal class,
    so its score is small. Given the noise level `fraction`, the lowest
    `fraction` of samples are marked; the paper relabels them with the class
    of the nearest center (`suggested_labels`).

    Args:
        embeddings: float `(N, D)`.
        labels: int `(N,)`, at least two classes.
        fraction: expected noise level in [0, 1], or None to only rank.

    Returns:
        `NoisyLabelRanking`.

    Example:

    >>> import numpy as np, clzoo
    >>> x = np.array([[1.0, 0.0], [0.9, 0.1], [1.0, 0.1], [0.0, 1.0], [0.1, 1.0]])
    >>> r = clzoo.eval.rank_suspected_mislabeled(x, [0, 0, 1, 1, 1], fraction=0.2)
    >>> r.suspected.tolist(), int(r.suggested_labels[2])
    ([2], 0)
    """
    x = _checks.features(embeddings, normalize=True)
    y = _checks.labels(labels, x.shape[0], min_classes=2)
    if fraction is not None and not 0 <= fraction <= 1:
        raise ValueError(f"`fraction` must be in [0, 1] or None. Received: fraction={fraction!r}")
    classes, index = np.unique(y, return_inverse=True)
    sums = np.zeros((len(classes), x.shape[1]))
    np.add.at(sums, index, x)
    counts = np.bincount(index).astype(np.float64)
    # Center of the other members of the sample's class (itself left out).
    others = (sums[index] - x) / np.maximum(counts[index] - 1, 1)[:, None]
    norms = np.linalg.norm(others, axis=1)
    own = np.where(norms > 0, np.sum(x * others, axis=1) / np.maximum(norms, 1e-12), 0.0)
    # Mean cosine similarity to other-class samples = x . (sum of other-class embeddings) / count.
    total = sums.sum(axis=0)
    other_mean = (x @ total - np.sum(x * sums[index], axis=1)) / (len(y) - counts[index])
    scores = own - other_mean
    order = np.argsort(scores, kind="stable")
    suspected = order[:round(fraction * len(y))] if fraction is not None else order[:0]
    centers = sums / counts[:, None]
    centers = _checks.unit_rows(centers)
    suggested = classes[np.argmax(x @ centers.T, axis=1)]
    return NoisyLabelRanking(scores, order, np.sort(suspected), suggested)


LISTED = 20  # indices kept in metrics.json; the report shows the first 10


@register_metric
class NoisyLabelsReport(ReportMetric):
    """The training samples whose features agree least with their label, and the label suggested.

    Scalars: `{"most_suspicious_train_indices", "their_labels",
    "suggested_labels"}` (and `"most_suspicious_train_paths"` for an image
    folder), up to 20 each, most suspicious first, of the samples whose nearest
    class center is another class's. Source: Chen et al. 2022 (Perfectly
    Balanced), app. E.3.2.

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
        # a suspect's nearest center is another class's; low scorers nearest their own are not
        order = ranking.order
        disagree = order[ranking.suggested_labels[order] != context.train_labels[order]]
        top = disagree[:LISTED]
        scalars = {"most_suspicious_train_indices": top.tolist(),
                   "their_labels": context.train_labels[top].tolist(),
                   "suggested_labels": ranking.suggested_labels[top].tolist()}
        paths = context.train_paths
        if paths is not None:
            scalars["most_suspicious_train_paths"] = [str(paths[i]) for i in top]
        listing = ", ".join(
            f"{_where(i, paths)}: {context.class_name(a)} -> {context.class_name(b)}"
            for i, a, b in zip(top[:10], scalars["their_labels"], scalars["suggested_labels"]))
        return MetricResult(self.name, scalars, {}, [
            (("most suspicious training labels (nearest center another class's), file or index: "
              "label -> nearest-center label (Perfectly Balanced app. E.3.2)"), listing or "none")])


def _where(index, paths):
    """A training row as its file (class folder / name) when the data is a folder, else its index."""
    if paths is None:
        return str(index)
    path = Path(paths[index])
    return f"{path.parent.name}/{path.name}"
