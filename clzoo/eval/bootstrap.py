"""Bootstrap confidence intervals of per-example statistics (SINCERE paper sec. 4), via scipy.

`bootstrap` takes any statistic of one or more per-example arrays (accuracy,
margins, losses); `bootstrap_accuracy` and `bootstrap_accuracy_difference`
are its two common uses on `prediction == label` arrays.
"""

import dataclasses
import inspect

import numpy as np
from scipy import stats

METHODS = ("percentile", "basic", "BCa")
# Fewest resamples for an interval: at 100 the 2.5% tail of a 95% interval holds 2.5 of them (at 1 the
# interval is one point); Efron and Tibshirani (1993) advise about 1,000 for percentile intervals.
MIN_RESAMPLES = 100


@dataclasses.dataclass(init=False)
class BootstrapInterval:
    """A statistic on the full sample and its bootstrap confidence interval.

    Attributes:
        estimate: the statistic on the full sample: the accuracy for
            `bootstrap_accuracy`, accuracy of A minus accuracy of B for
            `bootstrap_accuracy_difference` (also readable, and accepted by
            the constructor, as `difference`, its name before).
        low, high: bounds of the `confidence` interval.
        confidence: e.g. 0.95.
        significant: True when the interval excludes 0.
    """

    estimate: float
    low: float
    high: float
    confidence: float
    significant: bool

    def __init__(self, *args, **kwargs):
        if "difference" in kwargs:  # the field's old name: code written for it still constructs
            if args or "estimate" in kwargs:
                raise TypeError("BootstrapInterval takes `estimate` or its old name `difference`, "
                                "not both")
            kwargs["estimate"] = kwargs.pop("difference")
        try:
            fields = _FIELDS.bind(*args, **kwargs).arguments
        except TypeError as error:  # a missing or unknown field, named as the generated __init__ would
            raise TypeError(f"BootstrapInterval: {error}") from None
        for name, value in fields.items():
            setattr(self, name, value)

    @property
    def difference(self):
        """`estimate` under the name that reads well for a difference of two accuracies."""
        return self.estimate


_FIELDS = inspect.Signature([inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                              for f in dataclasses.fields(BootstrapInterval)])


def check_resamples(resamples):
    """Refuse a resample count that cannot give an interval (`MIN_RESAMPLES` or more)."""
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) \
            or resamples < MIN_RESAMPLES:
        raise ValueError(f"`resamples` must be a whole number >= {MIN_RESAMPLES} (fewer leave the "
                         f"interval's tails a resample or two). Received: resamples={resamples!r}")


def _samples(samples, paired):
    if not samples:
        raise ValueError("`bootstrap` needs at least one sample array.")
    arrays = []
    for i, sample in enumerate(samples):
        x = np.asarray(sample)
        if x.ndim != 1 or x.size == 0:
            raise ValueError(f"Sample {i} must be a non-empty 1-D array. Received: shape={x.shape}")
        x = x.astype(np.float64)
        if not np.all(np.isfinite(x)):
            raise ValueError(f"Sample {i} contains NaN or inf.")
        arrays.append(x)
    if paired and len({x.size for x in arrays}) > 1:
        raise ValueError("`paired=True` needs samples of equal length (one value per example). "
                         f"Received: lengths {[x.size for x in arrays]}")
    return arrays


def bootstrap(*samples, statistic=np.mean, paired=False, resamples=1000, confidence=0.95,
              method="percentile", seed=0):
    """Bootstrap confidence interval of `statistic(*samples)`, with `scipy.stats.bootstrap`.

    Examples are resampled with replacement `resamples` times (1,000 as in
    the SINCERE paper); with `paired=True` the same indices are drawn for
    every sample, as needed when the samples score the same test examples.

    Args:
        *samples: one or more 1-D arrays `(M,)` of per-example values (bool,
            int or float; e.g. `prediction == label`, a margin per example).
        statistic: callable `(*samples, axis=-1) -> value`; it must accept
            `axis` (numpy reductions do). Defaults to `np.mean`.
        paired: resample the samples' examples together. Defaults to `False`.
        resamples: number of resamples, at least `MIN_RESAMPLES` (100). Defaults to `1000`.
        confidence: interval mass in (0, 1). Defaults to `0.95`.
        method: `"percentile"` (the SINCERE paper's), `"basic"` or `"BCa"`.
        seed: resampling seed. Defaults to `0`.

    Returns:
        `BootstrapInterval` (`estimate` = the statistic on all examples).

    Raises:
        ValueError: empty, non-1-D or non-finite samples, unequal lengths with
            `paired=True`, `confidence` outside (0, 1), `resamples < 100` or an
            unknown `method`.

    Example:

    >>> import numpy as np, clzoo
    >>> margins = np.linspace(0.0, 0.2, 101)
    >>> r = clzoo.eval.bootstrap(margins, statistic=np.median)
    >>> round(r.estimate, 3), r.low < 0.1 < r.high, r.significant
    (0.1, True, True)

    Reference:
    - Feeney and Hughes, SINCERE, sec. 4; Efron and Tibshirani 1993
    """
    arrays = _samples(samples, paired)
    if not 0 < confidence < 1:
        raise ValueError(f"`confidence` must be in (0, 1). Received: confidence={confidence!r}")
    check_resamples(resamples)
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}. Received: method={method!r}")
    estimate = float(statistic(*arrays, axis=-1))
    result = stats.bootstrap(arrays, statistic, n_resamples=int(resamples), paired=paired,
                             vectorized=True, confidence_level=confidence, method=method,
                             rng=np.random.default_rng(seed))
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return BootstrapInterval(estimate, low, high, confidence, not low <= 0.0 <= high)


def _correct(x, name):
    x = np.asarray(x).reshape(-1)
    if x.dtype != bool:
        raise ValueError(f"`{name}` must be boolean (prediction == label). Received: dtype={x.dtype}")
    return x


def _mean_difference(a, b, axis=-1):
    return np.mean(a, axis=axis) - np.mean(b, axis=axis)


def bootstrap_accuracy_difference(correct_a, correct_b, resamples=1000, confidence=0.95, seed=0):
    """Percentile bootstrap interval of `accuracy(A) - accuracy(B)` over the same test set.

    A paired `bootstrap`: each resample scores both models on the same test
    examples, so the pairing of their predictions is kept (SINCERE sec. 4).

    Args:
        correct_a, correct_b: bool `(M,)`, whether each model got each test
            example right (pass `pred == labels`).
        resamples: at least `MIN_RESAMPLES` (100). Defaults to `1000`.
        confidence: interval mass in (0, 1). Defaults to `0.95`.
        seed: resampling seed.

    Returns:
        `BootstrapInterval`.

    Raises:
        ValueError: non-boolean inputs, different lengths, empty arrays.

    Example:

    >>> import numpy as np, clzoo
    >>> same = np.array([True, False, True])
    >>> r = clzoo.eval.bootstrap_accuracy_difference(same, same)
    >>> (r.low, r.high, r.significant)
    (0.0, 0.0, False)
    """
    a, b = _correct(correct_a, "correct_a"), _correct(correct_b, "correct_b")
    if a.shape != b.shape or a.size == 0:
        raise ValueError(
            "`correct_a` and `correct_b` must be non-empty and score the same test examples. "
            f"Received: {a.shape} and {b.shape}"
        )
    return bootstrap(a, b, statistic=_mean_difference, paired=True, resamples=resamples,
                     confidence=confidence, seed=seed)


def bootstrap_accuracy(correct, resamples=1000, confidence=0.95, seed=0):
    """Accuracy of one model with its percentile bootstrap interval over the test examples.

    Returns:
        `BootstrapInterval` whose `estimate` is the accuracy itself and
        `significant` says whether the interval excludes 0.

    Example:

    >>> import numpy as np, clzoo
    >>> r = clzoo.eval.bootstrap_accuracy(np.array([True] * 90 + [False] * 10))
    >>> round(r.estimate, 2), r.low < 0.9 < r.high
    (0.9, True)
    """
    return bootstrap(_correct(correct, "correct"), resamples=resamples, confidence=confidence,
                     seed=seed)
