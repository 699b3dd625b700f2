"""Input checks shared by the evaluation functions: clear errors instead of NaNs."""

import numpy as np


def features(x, name="embeddings", normalize=False, dtype=np.float64):
    """`(N, D)` array of `dtype`, finite, optionally L2-normalized."""
    x = np.asarray(x, dtype=dtype)
    if x.ndim != 2:
        raise ValueError(f"`{name}` must have shape (N, D). Received: shape={x.shape}")
    if x.shape[0] == 0:
        raise ValueError(f"`{name}` is empty.")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"`{name}` contains NaN or inf.")
    return unit_rows(x) if normalize else x


def unit_rows(x):
    """Rows of float `(N, D)` `x` scaled to unit L2 norm, exact at any scale its dtype holds.

    A row whose squares would underflow or overflow (float32 rows of 1e-30 or
    1e30) is divided by its largest |entry| first; other rows take the plain
    `x / ||x||`. An all-zero row stays zero.
    """
    info = np.finfo(x.dtype)
    largest = np.max(np.abs(x), axis=1, keepdims=True)
    in_range = ((largest >= np.sqrt(info.tiny) * 2.0 ** (info.nmant // 2 + 2))
                & (largest <= 0.5 * np.sqrt(info.max / max(x.shape[1], 1))))
    x = x / np.where(in_range | (largest == 0), 1, largest).astype(x.dtype)
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norm > 0, norm, 1)


def labels(y, n, name="labels", min_classes=1):
    """int64 `(n,)` labels; one per embedding and at least `min_classes` distinct values."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or not (np.issubdtype(y.dtype, np.integer) or np.issubdtype(y.dtype, np.bool_)):
        raise ValueError(
            f"`{name}` must be integer class ids of shape (N,). "
            f"Received: dtype={y.dtype}, shape={y.shape}"
        )
    if y.shape[0] != n:
        raise ValueError(f"`{name}` must have one label per embedding ({n}). Received: {y.shape[0]}")
    if np.any(y < 0):
        raise ValueError(f"`{name}` must be non-negative class ids. Received: min={y.min()}")
    if len(np.unique(y)) < min_classes:
        raise ValueError(
            f"`{name}` must contain at least {min_classes} classes. "
            f"Received: {len(np.unique(y))}"
        )
    return y.astype(np.int64)


def same_dimension(a, b, names=("train_embeddings", "test_embeddings")):
    if a.shape[1] != b.shape[1]:
        raise ValueError(
            f"`{names[0]}` and `{names[1]}` must have the same dimension. "
            f"Received: {a.shape[1]} and {b.shape[1]}"
        )


def train_test(train_embeddings, train_labels, test_embeddings, test_labels, normalize=False,
               dtype=np.float64):
    """Checked `(train, y_train, test, y_test)`: same dimension, at least two training classes."""
    train = features(train_embeddings, "train_embeddings", normalize, dtype)
    test = features(test_embeddings, "test_embeddings", normalize, dtype)
    same_dimension(train, test)
    y_train = labels(train_labels, train.shape[0], "train_labels", min_classes=2)
    y_test = labels(test_labels, test.shape[0], "test_labels")
    return train, y_train, test, y_test
