"""Weighted k-nearest-neighbour classification on frozen embeddings."""

import numpy as np

from clzoo.data.checks import DEFAULT_KS
from clzoo.eval import _checks
from clzoo.eval.metric import MetricResult, ReportMetric, percent, register_metric


def knn_predict(train_embeddings, train_labels, test_embeddings, k=20,
                num_classes=None, weighting="cosine", temperature=0.07,
                block_size=1024):
    """Predict labels by a similarity-weighted vote of the `k` nearest training embeddings.

    Neighbours are the `k` training embeddings of highest cosine similarity.
    Each votes for its class with weight `s` (its cosine similarity,
    `weighting="cosine"`, the SINCERE paper's app. M) or `exp(s / temperature)`
    (`weighting="exp"`, Wu et al. 2018 eq. 7). Test embeddings are handled in
    blocks of `block_size` rows, so memory is `block_size x N_train`.

    Args:
        train_embeddings: float array `(N, D)`; L2-normalized here.
        train_labels: int array `(N,)`, values in `[0, num_classes)`.
        test_embeddings: float array `(M, D)`.
        k: neighbours per test point, `1 <= k <= N`. Defaults to `20`.
        num_classes: number of classes. Defaults to `max(train_labels) + 1`.
        weighting: `"cosine"` or `"exp"`. Defaults to `"cosine"`.
        temperature: for `weighting="exp"`. Defaults to `0.07` (Wu et al.).
        block_size: test rows per block. Defaults to `1024`.

    Returns:
        int array `(M,)` of predicted labels (ties go to the lower label).

    Raises:
        ValueError: for mismatched shapes, `k` out of range or an unknown
            `weighting`.

    Example:

    >>> import numpy as np, clzoo
    >>> train = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    >>> clzoo.eval.knn_predict(train, np.array([0, 0, 1]), np.array([[0.1, 1.0]]), k=1)
    array([1])

    Reference:
    - Feeney and Hughes, SINCERE, app. M; [Wu et al. 2018](https://arxiv.org/abs/1805.01978)
    """
    train, labels, test, num_classes = _validate(
        train_embeddings, train_labels, test_embeddings, (k,), num_classes, weighting)
    return _predict_many(train, labels, test, (k,), num_classes, weighting, temperature,
                         block_size)[k]


def nearest(sims, depth):
    """The `depth` highest similarities of each row of `sims` `(B, N)`, highest first.

    The one neighbour search of kNN (`knn_predictions`) and retrieval
    (`clzoo.eval.retrieval_metrics`): `argpartition` then a sort of the `depth`
    kept, so a block costs O(N + depth log depth) per row. Among the kept,
    equal similarities go to the lower column index.

    Returns:
        `(indices, similarities)`: int `(B, depth)` columns of `sims` and their
        values `(B, depth)`.
    """
    top = np.argpartition(-sims, depth - 1, axis=1)[:, :depth]
    top_sims = np.take_along_axis(sims, top, axis=1)
    order = np.lexsort((top, -top_sims), axis=1)
    return np.take_along_axis(top, order, axis=1), np.take_along_axis(top_sims, order, axis=1)


def _predict_many(train, labels, test, ks, num_classes, weighting, temperature, block_size):
    """Predictions for several `k` from one nearest-neighbour search per block."""
    k_max = max(ks)
    predictions = {k: np.empty(test.shape[0], dtype=np.int64) for k in ks}
    for start in range(0, test.shape[0], block_size):
        sims = test[start:start + block_size] @ train.T
        top, top_sims = nearest(sims, k_max)
        weights = top_sims if weighting == "cosine" else np.exp(top_sims / temperature)
        rows = np.arange(sims.shape[0])[:, None]
        for k in ks:
            votes = np.zeros((sims.shape[0], num_classes), dtype=np.float64)
            np.add.at(votes, (rows, labels[top[:, :k]]), weights[:, :k])
            predictions[k][start:start + block_size] = votes.argmax(axis=1)
    return predictions


def knn_predictions(train_embeddings, train_labels, test_embeddings, ks=DEFAULT_KS,
                    num_classes=None, weighting="cosine", temperature=0.07, block_size=1024):
    """Weighted-kNN predictions for several `k` from one nearest-neighbour search.

    Arguments as in `knn_predict`, with `ks` a sequence of neighbourhood
    sizes; values of `k` larger than the training set are skipped.

    Returns:
        dict `{k: int array (M,)}` of predicted labels.

    Example:

    >>> import numpy as np, clzoo
    >>> train = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    >>> p = clzoo.eval.knn_predictions(train, np.array([0, 0, 1]), np.array([[0.1, 1.0]]), ks=(1, 3, 9))
    >>> {k: v.tolist() for k, v in p.items()}
    {1: [1], 3: [1]}
    """
    ks = tuple(int(k) for k in ks if k <= np.asarray(train_embeddings).shape[0])
    if not ks:
        return {}
    train, labels, test, num_classes = _validate(
        train_embeddings, train_labels, test_embeddings, ks, num_classes, weighting)
    return _predict_many(train, labels, test, ks, num_classes, weighting, temperature, block_size)


def knn_accuracy(train_embeddings, train_labels, test_embeddings, test_labels,
                 ks=DEFAULT_KS, num_classes=None, weighting="cosine",
                 temperature=0.07, block_size=1024):
    """Top-1 accuracy of the weighted kNN vote for each `k` in `ks`.

    One nearest-neighbour search serves every `k`; values of `k` larger than
    the training set are skipped. Arguments as in `knn_predict`, plus
    `test_labels`, int `(M,)`.

    Returns:
        dict `{k: accuracy in [0, 1]}`.
    """
    test_labels = np.asarray(test_labels).reshape(-1)
    n_test = np.asarray(test_embeddings).shape[0]
    if test_labels.shape[0] != n_test:
        raise ValueError(
            f"`test_labels` must have one label per test embedding ({n_test}). "
            f"Received: {test_labels.shape[0]} labels"
        )
    predictions = knn_predictions(train_embeddings, train_labels, test_embeddings, ks,
                                  num_classes, weighting, temperature, block_size)
    return {k: float(np.mean(p == test_labels)) for k, p in predictions.items()}


def _validate(train_embeddings, train_labels, test_embeddings, ks, num_classes, weighting):
    train = _checks.features(train_embeddings, "train_embeddings", normalize=True, dtype=np.float32)
    test = _checks.features(test_embeddings, "test_embeddings", normalize=True, dtype=np.float32)
    labels = np.asarray(train_labels).astype(np.int64).reshape(-1)
    if labels.shape[0] != train.shape[0]:
        raise ValueError(
            f"`train_labels` must have one label per training embedding ({train.shape[0]}). "
            f"Received: {labels.shape[0]} labels"
        )
    _checks.same_dimension(train, test)
    for k in ks:
        if not 1 <= k <= train.shape[0]:
            raise ValueError(f"`k` must be in [1, {train.shape[0]}]. Received: k={k!r}")
    if weighting not in ("cosine", "exp"):
        raise ValueError(f"`weighting` must be 'cosine' or 'exp'. Received: weighting={weighting!r}")
    return train, labels, test, int(num_classes or labels.max() + 1)


@register_metric
class KNNReport(ReportMetric):
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
