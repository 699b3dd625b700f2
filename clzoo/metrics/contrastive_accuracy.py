"""Contrastive top-1: is an anchor's nearest other embedding one of its own views?"""

import keras
from keras import ops

from clzoo.metrics import _embeddings as E
from clzoo.metrics._ratio import RatioMetric, need_views


@keras.saving.register_keras_serializable(package="clzoo")
class ContrastiveAccuracy(RatioMetric):
    """Share of anchors whose most cosine-similar other embedding is a view of the same sample.

    Every one of the `batch * views` embeddings is an anchor; its candidates
    are all other embeddings of the batch. This is the instance-discrimination
    top-1 of SimCLR's contrastive accuracy (Chen et al. 2020; the keras.io
    SimCLR example's "contrastive accuracy"), here over every view. Ties go
    to the first embedding in batch order. Anchors are weighted by their
    sample's `sample_weight`; `y_true` is ignored. Range [0, 1].

    Args:
        name: metric name. Defaults to `"contrastive_accuracy"`.
        dtype: metric dtype.

    Raises:
        ValueError: in `update_state`, for fewer than 2 views, `y_pred` not
            of rank 3, or a bad `sample_weight`.

    Example:

    >>> import numpy as np, clzoo
    >>> z = np.array([[[1.0, 0.0], [0.9, 0.1]], [[0.0, 1.0], [0.1, 0.9]]])
    >>> metric = clzoo.metrics.ContrastiveAccuracy()
    >>> metric.update_state(None, z)
    >>> float(metric.result())
    1.0

    Reference:
    - [Chen et al., A Simple Framework for Contrastive Learning of Visual
      Representations (SimCLR), 2020](https://arxiv.org/abs/2002.05709)
    """

    def __init__(self, name="contrastive_accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def batch_sums(self, y_true, y_pred, sample_weight):
        z, sample_ids, weights, _, views = E.flat_batch(y_pred, sample_weight)
        need_views(views, "ContrastiveAccuracy")
        similarity = ops.matmul(z, ops.transpose(z))
        n = ops.shape(similarity)[0]
        similarity = ops.where(ops.eye(n, dtype="bool"), -3.0, similarity)  # cosines lie in [-1, 1]
        nearest = ops.argmax(similarity, axis=-1)
        hit = ops.cast(ops.equal(ops.take(sample_ids, nearest), sample_ids), "float32")
        return ops.sum(weights * hit), ops.sum(weights)
