"""Target-noise separation of embeddings (SINCERE paper sec. 4.1, Table 1, Fig. 2, app. O)."""

import dataclasses

import numpy as np

from clzoo.eval import _checks


@dataclasses.dataclass
class Separation:
    """Nearest-target and nearest-noise similarities of each test embedding.

    Attributes:
        target: float `(M,)`, cosine similarity of each test embedding to its
            most similar training embedding of the same class (target).
        noise: float `(M,)`, the same for training embeddings of other
            classes (noise).
        labels: int `(M,)` test labels.
        per_class_margin: `{class: median(target) - median(noise)}` over the
            test embeddings of that class.
        margin: mean of the per-class margins (Table 1); higher is better.
    """

    target: np.ndarray
    noise: np.ndarray
    labels: np.ndarray
    per_class_margin: dict
    margin: float


def target_noise_separation(train_embeddings, train_labels, test_embeddings, test_labels,
                            block_size=1024):
    """Cosine similarity of each test embedding to its nearest target and nearest noise training embedding.

    For a test embedding of class `c`, the target is the most similar
    training embedding of class `c` and the noise the most similar training
    embedding of any other class. Per class, the margin is the median target
    similarity minus the median noise similarity; `margin` averages it over
    the classes of the test set (Feeney and Hughes, SINCERE, sec. 4.1 and
    Table 1). Computed in blocks of `block_size` test rows, so memory is
    `block_size x N_train`.

    Args:
        train_embeddings: float `(N, D)`; L2-normalized here.
        train_labels: int `(N,)`; every test class must occur, with at
            least one other class.
        test_embeddings: float `(M, D)`.
        test_labels: int `(M,)`.
        block_size: test rows per block. Defaults to `1024`.

    Returns:
        `Separation`.

    Example:

    >>> import numpy as np, clzoo
    >>> train = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> s = clzoo.eval.target_noise_separation(train, [0, 1], [[1.0, 0.0], [0.0, 1.0]], [0, 1])
    >>> s.margin
    1.0
    """
    # float32 throughout: the similarity blocks dominate time and memory.
    train, y_train, test, y_test = _checks.train_test(
        train_embeddings, train_labels, test_embeddings, test_labels, normalize=True,
        dtype=np.float32)
    missing = np.setdiff1d(y_test, y_train)
    if missing.size:
        raise ValueError(f"Test classes {missing.tolist()} have no training embeddings (no target).")
    target = np.empty(test.shape[0])
    noise = np.empty(test.shape[0])
    for start in range(0, test.shape[0], block_size):
        stop = start + block_size
        sims = test[start:stop] @ train.T
        same = y_test[start:stop, None] == y_train[None, :]
        target[start:stop] = np.where(same, sims, -np.inf).max(axis=1)
        noise[start:stop] = np.where(same, -np.inf, sims).max(axis=1)
    per_class = {int(c): float(np.median(target[y_test == c]) - np.median(noise[y_test == c]))
                 for c in np.unique(y_test)}
    return Separation(target, noise, y_test, per_class, float(np.mean(list(per_class.values()))))
