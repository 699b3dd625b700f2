"""Retrieval accuracy of frozen embeddings: precision@k, recall@k, R-precision and MAP@R.

Every embedding is a query against all the others (leave-one-out), ranked by
cosine similarity, as in Musgrave, Belongie & Lim 2020, "A Metric Learning
Reality Check" (sec. 3.2), and pytorch-metric-learning's `AccuracyCalculator`
with query and reference from the same source.
"""

import numpy as np

from clzoo.eval import _checks
from clzoo.eval.knn import nearest
from clzoo.eval.metric import MetricResult, ReportMetric, percent, register_metric


def _neighbours(x, rows, depth):
    """Indices `(len(rows), depth)` of the nearest other rows of `x` by cosine, nearest first.

    Ties in similarity go to the lower index.
    """
    sims = x[rows] @ x.T
    sims[np.arange(len(rows)), rows] = -np.inf  # a query never retrieves itself
    return nearest(sims, depth)[0]


def retrieval_metrics(embeddings, labels, ks=(1, 5, 20), block_size=512):
    """Leave-one-out retrieval accuracy: each embedding queries all the others by cosine similarity.

    For a query of class `c`, the relevant items are the other embeddings of
    class `c`; `R` is their number. With `rel(i)` = 1 when the i-th nearest
    neighbour is relevant:

    - precision@k = (1/k) sum_{i<=k} rel(i), the fraction of relevant items
      among the k nearest (precision@1 is `AccuracyCalculator`'s `precision_at_1`);
    - recall@k = 1 when at least one of the k nearest is relevant (the Recall@K
      of metric-learning papers, Oh Song et al. 2016); equal to precision@1 at k = 1;
    - R-precision = (1/R) sum_{i<=R} rel(i) (Musgrave et al. 2020, sec. 3.2);
    - MAP@R = (1/R) sum_{i<=R} P(i) rel(i), with P(i) the precision at i
      (Musgrave et al. 2020, eq. 1; `AccuracyCalculator`'s `mean_average_precision_at_r`).

    Each is averaged over the queries (a global mean, `avg_of_avgs=False`).
    Queries whose class has no other member have no relevant item and are
    left out (`"queries"` counts those kept).

    Args:
        embeddings: float `(N, D)` features; L2-normalized here.
        labels: int `(N,)` class ids.
        ks: the k of precision@k and recall@k; a k of `N` or more is skipped.
            Defaults to `(1, 5, 20)`.
        block_size: queries per block; memory is `block_size x N` floats.

    Returns:
        dict `{"precision_at_k": {k: float}, "recall_at_k": {k: float},
        "r_precision": float, "map_at_r": float, "queries": int}`, values in [0, 1].

    Raises:
        ValueError: mis-shaped or non-finite embeddings, labels not one per
            embedding, a k below 1, or no class with two members.

    Example:

    >>> import numpy as np, clzoo
    >>> x = np.array([[1.0, 0], [0.9, 0.1], [0.0, 1], [0.1, 0.9]])
    >>> m = clzoo.eval.retrieval_metrics(x, [0, 0, 1, 1], ks=(1, 2))
    >>> m["precision_at_k"], m["recall_at_k"], m["map_at_r"]
    ({1: 1.0, 2: 0.5}, {1: 1.0, 2: 1.0}, 1.0)
    """
    x = _checks.features(embeddings, "embeddings", normalize=True, dtype=np.float32)
    y = _checks.labels(labels, x.shape[0], "labels")
    if any(isinstance(k, bool) or int(k) != k or k < 1 for k in ks):
        raise ValueError(f"`ks` must be positive integers. Received: ks={ks!r}")
    ks = tuple(int(k) for k in ks if k < x.shape[0])
    relevant = np.bincount(y)[y] - 1  # R of each query
    queries = np.flatnonzero(relevant > 0)
    if queries.size == 0:
        raise ValueError("Retrieval needs a class with at least two embeddings; every class has one.")
    depth = int(max(ks + (int(relevant.max()),)))
    sums = {"precision": np.zeros(len(ks)), "recall": np.zeros(len(ks)), "r_precision": 0.0,
            "map_at_r": 0.0}
    for start in range(0, queries.size, block_size):
        rows = queries[start:start + block_size]
        rel = y[_neighbours(x, rows, depth)] == y[rows, None]  # (b, depth) bool
        r = relevant[rows][:, None]
        within_r = rel & (np.arange(depth)[None, :] < r)
        precision_at_i = np.cumsum(rel, axis=1) / np.arange(1, depth + 1)
        sums["r_precision"] += float(np.sum(within_r.sum(axis=1) / r[:, 0]))
        sums["map_at_r"] += float(np.sum((precision_at_i * within_r).sum(axis=1) / r[:, 0]))
        for j, k in enumerate(ks):
            sums["precision"][j] += rel[:, :k].mean(axis=1).sum()
            sums["recall"][j] += rel[:, :k].any(axis=1).sum()
    n = queries.size
    return {"precision_at_k": {k: float(sums["precision"][j] / n) for j, k in enumerate(ks)},
            "recall_at_k": {k: float(sums["recall"][j] / n) for j, k in enumerate(ks)},
            "r_precision": sums["r_precision"] / n, "map_at_r": sums["map_at_r"] / n,
            "queries": int(n)}


@register_metric
class RetrievalReport(ReportMetric):
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
