"""Private: the multi-view batch as the metrics see it (flat unit vectors, sample ids, weights)."""

from keras import ops

from clzoo.validation.inputs import standardize_embeddings
from clzoo.validation.sample_weights import standardize_sample_weight


def flat_batch(y_pred, sample_weight=None):
    """Unit embeddings `(N, dim)` float32 (N = batch * views), sample id and weight per embedding.

    Args:
        y_pred: embeddings `(batch, views, dim)` or `(batch, dim)`.
        sample_weight: None, a scalar, `(batch,)` or `(batch, 1)`, finite and
            non-negative.

    Returns:
        `(z, sample_ids, weights, batch, views)`; `weights` is float32 `(N,)`.

    Raises:
        ValueError: as the losses, naming `y_pred` or `sample_weight`.
    """
    z, batch, views = standardize_embeddings(y_pred, normalize=True)
    n = ops.shape(z)[0]
    sample_ids = ops.repeat(ops.arange(batch, dtype="int32"), views, axis=0)
    weight = standardize_sample_weight(sample_weight, batch)
    if weight is None:
        weights = ops.ones((n,), "float32")
    else:
        weight = ops.cast(weight, "float32")
        if len(weight.shape) == 0:
            weights = ops.full((n,), weight)
        else:
            weights = ops.repeat(ops.reshape(weight, (-1,)), views, axis=0)
    return z, sample_ids, weights, batch, views


def squared_distances(z):
    """`(..., N, N)` squared distances of unit vectors `(..., N, dim)`: `2 - 2 cos`, clipped at 0."""
    return ops.maximum(2.0 - 2.0 * ops.matmul(z, ops.swapaxes(z, -1, -2)), 0.0)
