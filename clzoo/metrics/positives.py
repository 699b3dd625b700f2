"""How many positives the anchors of a batch have (the supervised losses' positive sets)."""

import keras
from keras import ops

from clzoo.metrics import _embeddings as E
from clzoo.metrics._ratio import RatioMetric
from clzoo.validation.labels import standardize_labels


def positives_per_anchor(y_true, y_pred, sample_weight):
    """Float32 `(N,)` positive count of each anchor and `(N,)` weights.

    Positives of an anchor: every other embedding with its label, its own
    other views included (the `P(i)` of SupCon eq. 2 and of SINCERE eq. 12).
    """
    _, _, weights, batch, views = E.flat_batch(y_pred, sample_weight)
    labels = ops.repeat(standardize_labels(y_true, batch), views, axis=0)
    same = ops.cast(ops.equal(labels[:, None], labels[None, :]), "float32")
    return ops.sum(same, axis=-1) - 1.0, weights


_LABELS = """`y_true` are class labels as the supervised losses take them: integer
    `(batch,)` / `(batch, 1)` or exactly one-hot `(batch, classes)`."""


@keras.saving.register_keras_serializable(package="clzoo")
class MeanPositives(RatioMetric):
    """Mean number of positives per anchor: other embeddings of the batch with the anchor's label.

    Counts the set `P(i)` over which SupCon (Khosla et al. 2020, supplement
    eq. 2) and SINCERE (Feeney and Hughes, eq. 12) average: with `views`
    views and `k` samples of the anchor's class in the batch it is
    `k * views - 1`. Anchors are weighted by their sample's `sample_weight`.
    A small value warns that the batch is too small for the number of
    classes. {labels}

    Args:
        name: metric name. Defaults to `"mean_positives"`.
        dtype: metric dtype.

    Raises:
        ValueError: in `update_state`, for bad labels or embeddings (as the
            losses), or a bad `sample_weight`.

    Example:

    >>> import numpy as np, clzoo
    >>> metric = clzoo.metrics.MeanPositives()
    >>> metric.update_state(np.array([0, 0, 1]), np.ones((3, 2, 4)))
    >>> round(float(metric.result()), 4)
    2.3333

    Reference:
    - [Khosla et al., Supervised Contrastive Learning, 2020](https://arxiv.org/abs/2004.11362)
    """

    def __init__(self, name="mean_positives", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def batch_sums(self, y_true, y_pred, sample_weight):
        count, weights = positives_per_anchor(y_true, y_pred, sample_weight)
        return ops.sum(weights * count), ops.sum(weights)


@keras.saving.register_keras_serializable(package="clzoo")
class AnchorsWithoutPositives(RatioMetric):
    """Share of anchors with no positive (a class seen once in a one-view batch), in [0, 1].

    Such anchors add exactly 0 to the supervised losses (see
    `LOSS_CONTRACT`), so this share is the part of the batch that teaches
    nothing. Anchors are weighted by their sample's `sample_weight`.
    {labels}

    Args:
        name: metric name. Defaults to `"anchors_without_positives"`.
        dtype: metric dtype.

    Raises:
        ValueError: as `MeanPositives`.

    Example:

    >>> import numpy as np, clzoo
    >>> metric = clzoo.metrics.AnchorsWithoutPositives()
    >>> metric.update_state(np.array([0, 0, 1, 2]), np.ones((4, 4)))
    >>> float(metric.result())
    0.5

    Reference:
    - [Khosla et al., Supervised Contrastive Learning, 2020](https://arxiv.org/abs/2004.11362)
    """

    def __init__(self, name="anchors_without_positives", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def batch_sums(self, y_true, y_pred, sample_weight):
        count, weights = positives_per_anchor(y_true, y_pred, sample_weight)
        return ops.sum(weights * ops.cast(count == 0, "float32")), ops.sum(weights)


for _metric in (MeanPositives, AnchorsWithoutPositives):
    if _metric.__doc__ is not None:  # python -OO strips docstrings
        _metric.__doc__ = _metric.__doc__.format(labels=_LABELS)
