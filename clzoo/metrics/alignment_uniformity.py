"""Alignment and uniformity of Wang and Isola 2020, as `keras.metrics.Metric`s."""

import keras
from keras import ops

from clzoo.metrics import _embeddings as E
from clzoo.metrics._ratio import RatioMetric, need_views


@keras.saving.register_keras_serializable(package="clzoo")
class Alignment(RatioMetric):
    """`L_align` with alpha = 2: the mean squared distance between two views of a sample (lower: better).

    Formula (Wang and Isola 2020, sec. 4.1, alpha = 2), on L2-normalized
    embeddings:

    ```
    L_align = E_{(x, y) ~ p_pos} ||f(x) - f(y)||^2
    ```

    Positive pairs are the pairs of views `(v, w)`, `v < w`, of each sample of
    `y_pred` `(batch, views, dim)`, each pair weighted by its sample's
    `sample_weight`. Over an epoch the metric is the mean over every pair
    seen. Range [0, 4]; `y_true` is ignored.

    Args:
        name: metric name. Defaults to `"alignment"`.
        dtype: metric dtype.

    Raises:
        ValueError: in `update_state`, for `y_pred` with fewer than 2 views
            or not of rank 2 / 3, or a bad `sample_weight`.

    Example:

    >>> import numpy as np, clzoo
    >>> metric = clzoo.metrics.Alignment()
    >>> metric.update_state(None, np.array([[[1.0, 0.0], [0.0, 1.0]]]))
    >>> round(float(metric.result()), 4)
    2.0

    In training: `model.compile(loss=..., metrics=[clzoo.metrics.Alignment()])`.

    Reference:
    - [Wang and Isola, Understanding Contrastive Representation Learning
      through Alignment and Uniformity on the Hypersphere, ICML 2020, sec. 4.1](https://arxiv.org/abs/2005.10242)
    """

    def __init__(self, name="alignment", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def batch_sums(self, y_true, y_pred, sample_weight):
        z, _, weights, batch, views = E.flat_batch(y_pred, sample_weight)
        need_views(views, "Alignment")
        z = ops.reshape(z, (-1, views, z.shape[-1]))
        distances = E.squared_distances(z)  # (batch, views, views)
        upper = ops.triu(ops.ones((views, views), "float32"), k=1)
        per_sample = ops.sum(distances * upper, axis=(1, 2))
        weight = ops.reshape(weights, (-1, views))[:, 0]
        pairs = views * (views - 1) / 2
        return ops.sum(weight * per_sample), pairs * ops.sum(weight)


@keras.saving.register_keras_serializable(package="clzoo")
class Uniformity(RatioMetric):
    """`L_uniform` with t = 2: log of the mean Gaussian potential between samples (lower: more uniform).

    Formula (Wang and Isola 2020, sec. 4.1, t = 2), on L2-normalized
    embeddings:

    ```
    L_uniform = log E_{x, y ~ p_data} exp(-2 ||f(x) - f(y)||^2)
    ```

    Pairs are the embeddings of two different samples of the batch (any
    views), each pair weighted by the product of its samples'
    `sample_weight`. Over an epoch the expectation pools every pair seen
    (the log is taken at `result()`), which for one batch is the paper's
    per-batch estimate. Range [-8, 0]; `y_true` is ignored.

    Args:
        name: metric name. Defaults to `"uniformity"`.
        dtype: metric dtype.

    Raises:
        ValueError: in `update_state`, for `y_pred` not of rank 2 / 3 or a
            bad `sample_weight`.

    Example:

    >>> import numpy as np, clzoo
    >>> metric = clzoo.metrics.Uniformity()
    >>> metric.update_state(None, np.array([[1.0, 0.0], [-1.0, 0.0]]))
    >>> round(float(metric.result()), 4)
    -8.0

    Reference:
    - [Wang and Isola, ICML 2020, sec. 4.1](https://arxiv.org/abs/2005.10242)
    """

    def __init__(self, name="uniformity", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def batch_sums(self, y_true, y_pred, sample_weight):
        z, sample_ids, weights, _, _ = E.flat_batch(y_pred, sample_weight)
        different = ops.not_equal(sample_ids[:, None], sample_ids[None, :])
        pair_weight = ops.where(different, weights[:, None] * weights[None, :], 0.0)
        potential = ops.exp(-2.0 * E.squared_distances(z))
        return ops.sum(pair_weight * potential), ops.sum(pair_weight)

    def result(self):
        total, count = self.sums()
        mean = total / ops.where(count > 0, count, 1.0)
        return ops.where(count > 0, ops.log(ops.maximum(mean, 1e-30)), 0.0)
