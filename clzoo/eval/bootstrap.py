"""Bootstrap confidence interval of the accuracy difference of two models (SINCERE paper sec. 4)."""

import dataclasses

import numpy as np


@dataclasses.dataclass
class BootstrapInterval:
    """Accuracy difference `A - B` on one test set and its percentile bootstrap interval.

    Attributes:
        difference: observed accuracy of A minus accuracy of B.
        low, high: bounds of the `confidence` interval.
        confidence: e.g. 0.95.
        significant: True when the interval excludes 0.
    """

    difference: float
    low: float
    high: float
    confidence: float
    significant: bool


def bootstrap_accuracy_difference(correct_a, correct_b, resamples=1000, confidence=0.95, seed=0):
    """Percentile bootstrap interval of `accuracy(A) - accuracy(B)` over the same test set.

    Test examples are resampled with replacement `resamples` times (1,000 as
    in the SINCERE paper) and both models are scored on each resample, so the
    pairing of their predictions is kept.

    Args:
        correct_a, correct_b: bool `(M,)`, whether each model got each test
            example right (or int predictions: pass `pred == labels`).
        resamples: Defaults to `1000`.
        confidence: interval mass in (0, 1). Defaults to `0.95`.
        seed: resampling seed.

    Returns:
        `BootstrapInterval`.

    Example:

    >>> import numpy as np, clzoo
    >>> same = np.array([True, False, True])
    >>> r = clzoo.eval.bootstrap_accuracy_difference(same, same)
    >>> (r.low, r.high, r.significant)
    (0.0, 0.0, False)
    """
    a = np.asarray(correct_a).reshape(-1)
    b = np.asarray(correct_b).reshape(-1)
    if a.shape != b.shape or a.size == 0:
        raise ValueError(
            "`correct_a` and `correct_b` must be non-empty and score the same test examples. "
            f"Received: {a.shape} and {b.shape}"
        )
    if a.dtype != bool or b.dtype != bool:
        raise ValueError("`correct_a` and `correct_b` must be boolean (prediction == label).")
    if not 0 < confidence < 1:
        raise ValueError(f"`confidence` must be in (0, 1). Received: confidence={confidence!r}")
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < 1:
        raise ValueError(f"`resamples` must be a positive integer. Received: resamples={resamples!r}")
    diff = a.astype(np.float64) - b.astype(np.float64)
    rng = np.random.default_rng(seed)
    stats = np.array([diff[rng.integers(0, diff.size, diff.size)].mean() for _ in range(resamples)])
    tail = (1 - confidence) / 2
    low, high = np.quantile(stats, [tail, 1 - tail])
    low, high = float(low), float(high)
    return BootstrapInterval(float(diff.mean()), low, high, confidence, not low <= 0.0 <= high)


def bootstrap_accuracy(correct, resamples=1000, confidence=0.95, seed=0):
    """Accuracy of one model with its percentile bootstrap interval over the test examples.

    Returns:
        `BootstrapInterval` whose `difference` is the accuracy itself and
        `significant` says whether the interval excludes 0.

    Example:

    >>> import numpy as np, clzoo
    >>> r = clzoo.eval.bootstrap_accuracy(np.array([True] * 90 + [False] * 10))
    >>> round(r.difference, 2), r.low < 0.9 < r.high
    (0.9, True)
    """
    correct = np.asarray(correct).reshape(-1)
    return bootstrap_accuracy_difference(correct, np.zeros_like(correct, dtype=bool), resamples,
                                         confidence, seed)
