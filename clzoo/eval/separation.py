"""Target-noise separation of embeddings (SINCERE paper sec. 4.1, Table 1, Fig. 2, app. O).

`target_noise_separation` finds each test image's nearest target and nearest
noise training embedding; `margin_interval` gives a margin with its bootstrap
interval over the test images, `margin_difference` the paired difference of
two encoders' margins on the same test images (the paper's significance test,
sec. 4: 95% interval from 1,000 bootstrap resamples of the test set).
"""

import dataclasses
import warnings

import numpy as np

from clzoo.eval import _checks, plots
from clzoo.eval.bootstrap import bootstrap
from clzoo.eval.metric import MetricResult, Plot, ReportMetric, register_metric


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
        per_image_margin: float `(M,)`, `target - noise` of each test
            embedding (positive: a 1-nearest-neighbour classifier is right).
    """

    target: np.ndarray
    noise: np.ndarray
    labels: np.ndarray
    per_class_margin: dict
    margin: float

    @property
    def per_image_margin(self):
        return self.target - self.noise


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


STATISTICS = ("mean", "class_median")


def _class_median_margin(target, noise, labels, axis=-1):
    """Table 1's margin on (resampled) rows: mean over classes of median(target) - median(noise)."""
    margins = []
    with warnings.catch_warnings():  # a class absent from a resample: NaN, left out of the mean
        warnings.simplefilter("ignore", RuntimeWarning)
        for c in np.unique(labels):
            member = labels == c
            margins.append(np.nanmedian(np.where(member, target, np.nan), axis=axis)
                           - np.nanmedian(np.where(member, noise, np.nan), axis=axis))
        return np.nanmean(np.stack(margins), axis=0)


def _margin_samples(separation, statistic):
    if not isinstance(separation, Separation):
        raise ValueError("Expected a `Separation` (from `target_noise_separation`). "
                         f"Received: {type(separation).__name__}")
    if statistic not in STATISTICS:
        raise ValueError(f"`statistic` must be one of {STATISTICS}. Received: statistic={statistic!r}")
    if statistic == "mean":
        return (separation.per_image_margin,)
    return separation.target, separation.noise, separation.labels


def margin_interval(separation, statistic="mean", resamples=1000, confidence=0.95, seed=0):
    """A target-noise margin and its percentile bootstrap interval over the test images.

    `statistic="mean"`: the mean over test images of the per-image margin
    `m_i = s_target(i) - s_noise(i)`, where `s_target(i)` is the cosine
    similarity of test image `i` to its most similar training image of its
    class and `s_noise(i)` to its most similar training image of another
    class (the two values Fig. 2 of the SINCERE paper histograms).
    `statistic="class_median"`: the paper's Table 1 margin, the mean over
    classes of `median(s_target) - median(s_noise)` (equals
    `separation.margin`), recomputed on every resample of the test images.

    Args:
        separation: `Separation` of `M` test images.
        statistic: `"mean"` or `"class_median"`. Defaults to `"mean"`.
        resamples: bootstrap resamples. Defaults to `1000` (SINCERE sec. 4).
        confidence: interval mass in (0, 1). Defaults to `0.95`.
        seed: resampling seed. Defaults to `0`.

    Returns:
        `BootstrapInterval`: `estimate` is the margin on all `M` test images.

    Raises:
        ValueError: not a `Separation`, an unknown `statistic`, or a bad
            `resamples` / `confidence`.

    Example:

    >>> import numpy as np, clzoo
    >>> rng = np.random.default_rng(0)
    >>> y_train, y_test = np.arange(40) % 2, np.arange(30) % 2
    >>> train = rng.normal(size=(40, 4)) + 2 * np.eye(4)[y_train]
    >>> test = rng.normal(size=(30, 4)) + 2 * np.eye(4)[y_test]
    >>> sep = clzoo.eval.target_noise_separation(train, y_train, test, y_test)
    >>> r = clzoo.eval.margin_interval(sep)
    >>> bool(r.low < r.estimate < r.high), bool(r.estimate == sep.per_image_margin.mean())
    (True, True)

    Reference:
    - [Feeney and Hughes, SINCERE, 2023](https://arxiv.org/abs/2309.14277): sec. 4
      (bootstrap), sec. 4.1, Fig. 2 and Table 1 (margin)
    """
    samples = _margin_samples(separation, statistic)
    function = np.mean if statistic == "mean" else _class_median_margin
    return bootstrap(*samples, statistic=function, paired=True, resamples=resamples,
                     confidence=confidence, seed=seed)


def _difference(function):
    def statistic(*samples, axis=-1):
        half = len(samples) // 2
        return function(*samples[:half], axis=axis) - function(*samples[half:], axis=axis)
    return statistic


def margin_difference(separation_a, separation_b, statistic="mean", resamples=1000,
                      confidence=0.95, seed=0):
    """Margin of encoder A minus margin of encoder B on the same test images, paired bootstrap interval.

    Each resample draws the same test images for both encoders, so what the
    two share (hard images, classes) cancels, as in the SINCERE paper's
    comparisons (sec. 4: 95% interval of the difference from 1,000
    resamples of the test set; Table 1: "SINCERE significantly increases
    the size of the margin"). With `statistic="mean"` the estimate is the
    mean over test images of `m_A(i) - m_B(i)`; with `"class_median"` the
    difference of the Table 1 margins. See `margin_interval` for `m(i)`.

    Args:
        separation_a, separation_b: `Separation` of the same `M` test
            images in the same order (their labels must be equal).
        statistic: `"mean"` or `"class_median"`. Defaults to `"mean"`.
        resamples: Defaults to `1000`.
        confidence: interval mass in (0, 1). Defaults to `0.95`.
        seed: resampling seed. Defaults to `0`.

    Returns:
        `BootstrapInterval` of A - B (`significant`: the interval excludes 0).

    Raises:
        ValueError: not `Separation`s, different test images (lengths or
            labels), an unknown `statistic`, or a bad `resamples` / `confidence`.

    Example:

    >>> import numpy as np, clzoo
    >>> rng = np.random.default_rng(0)
    >>> y_train, y_test = np.arange(40) % 2, np.arange(30) % 2
    >>> train = rng.normal(size=(40, 4)) + 2 * np.eye(4)[y_train]
    >>> test = rng.normal(size=(30, 4)) + 2 * np.eye(4)[y_test]
    >>> a = clzoo.eval.target_noise_separation(train, y_train, test, y_test)
    >>> b = clzoo.eval.target_noise_separation(train[:, 1:], y_train, test[:, 1:], y_test)
    >>> r = clzoo.eval.margin_difference(a, b)  # A sees the class direction, B does not
    >>> bool(r.estimate > 0), r.significant
    (True, True)

    Reference:
    - [Feeney and Hughes, SINCERE, 2023](https://arxiv.org/abs/2309.14277), sec. 4 and Table 1
    """
    a = _margin_samples(separation_a, statistic)
    b = _margin_samples(separation_b, statistic)
    la, lb = np.asarray(separation_a.labels), np.asarray(separation_b.labels)
    if la.shape != lb.shape or not np.array_equal(la, lb):
        raise ValueError("`separation_a` and `separation_b` must score the same test images in the same "
                         f"order (equal labels). Received: {la.shape[0]} and {lb.shape[0]} test images"
                         + ("" if la.shape != lb.shape else ", labels differ"))
    function = np.mean if statistic == "mean" else _class_median_margin
    return bootstrap(*a, *b, statistic=_difference(function), paired=True, resamples=resamples,
                     confidence=confidence, seed=seed)


@register_metric
class SeparationReport(ReportMetric):
    """Cosine similarity of each test feature to its nearest same-class and other-class training feature.

    Scalars: `{"margin", "median_target", "median_noise", "per_class_margin":
    {class name: margin}}`; plots `separation.png` (SINCERE Fig. 2) and
    `separation_per_class.png` (app. O). Source: Feeney and Hughes,
    SINCERE, sec. 4.1 and Table 1.

    Example:

    >>> import numpy as np, clzoo
    >>> x, y = np.eye(2), np.array([0, 1])
    >>> context = clzoo.eval.EvalContext.create(x, y, x, y, class_names=["a", "b"])
    >>> clzoo.eval.METRICS.get("separation")().compute(context).scalars["per_class_margin"]
    {'a': 1.0, 'b': 1.0}
    """

    name = "separation"
    description = "nearest target / nearest noise similarity, per-class median margin"
    source = "SINCERE sec. 4.1, Table 1, Fig. 2, app. O"

    def compute(self, context):
        sep = target_noise_separation(context.train, context.train_labels, context.test,
                                      context.test_labels)
        target, noise = float(np.median(sep.target)), float(np.median(sep.noise))
        scalars = {"margin": sep.margin, "median_target": target, "median_noise": noise,
                   "per_class_margin": {context.class_name(c): v
                                        for c, v in sep.per_class_margin.items()}}
        rows = [("target-noise margin (SINCERE Table 1)", f"{sep.margin:.4f}"),
                ("median nearest-target / nearest-noise cosine", f"{target:.4f} / {noise:.4f}")]
        figures = [
            Plot("separation.png", "Target-noise separation",
                 lambda path: plots.separation_histogram(sep, path, model=context.model)),
            Plot("separation_per_class.png", "Per-class separation",
                 lambda path: plots.per_class_separation(sep, path, context.class_names,
                                                         model=context.model)),
        ]
        return MetricResult(self.name, scalars, {}, rows, figures)
