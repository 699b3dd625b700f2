"""The report metrics' interface: the `METRICS` registry, `ReportMetric`, `EvalContext`, `MetricResult`,
`Plot` and `parse_metrics`.

Each report metric lives beside the function it measures with (`KNNReport` in `eval/knn.py`, `ProbeReport`
in `eval/linear_probe.py`, ...) and registers itself with `register_metric`. Its registry name
is its key everywhere: `metrics.json`, `report.md`, `clzoo eval --metrics`, the recipe's
`eval.metrics` and the model card. These are report metrics of frozen features; the Keras
metrics watched during `fit` are `clzoo.metrics` (`keras.metrics.Metric` subclasses).
"""

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np

from clzoo.data.checks import DEFAULT_KS
from clzoo.eval import _checks
from clzoo.eval.plots import class_name
from clzoo.registry import Registry

# The registry's, the report's and `--help`'s order (fixed here, so import order cannot change it).
ORDER = ("knn", "ncc", "probe", "calibration", "few_shot", "geometry", "separation", "loss_gap",
         "noisy_labels", "map", "retrieval", "sgd_probe", "coarse_to_fine")
METRICS = Registry("metric", order=ORDER)


@dataclasses.dataclass
class Plot:
    """One figure of a metric: `draw(path)` writes a PNG at `path` and returns it.

    Attributes:
        filename: file name inside the report folder, e.g. `"separation.png"`.
        caption: alt text / caption in `report.md`.
        draw: callable `(path) -> path`.
    """

    filename: str
    caption: str
    draw: Callable

    def write(self, folder):
        """Draw into `folder / filename`; returns the path."""
        return self.draw(Path(folder) / self.filename)


@dataclasses.dataclass
class MetricResult:
    """What `ReportMetric.compute` returns.

    Attributes:
        name: the metric's registry name; its key in `metrics.json`.
        scalars: JSON-ready dict (numbers, strings, lists, nested dicts).
        correct: `{classifier: bool (M,)}` per-test-example correctness, for
            the metrics that classify (`knn_k20`, `ncc`, `probe`, `sgd_probe`).
        rows: `[(label, formatted value)]` lines of the report table.
        plots: `Plot`s, drawn when the report is written.
        seconds: wall time of `compute`, filled in by `evaluate_embeddings`.
    """

    name: str
    scalars: dict
    correct: dict = dataclasses.field(default_factory=dict)
    rows: list = dataclasses.field(default_factory=list)
    plots: list = dataclasses.field(default_factory=list)
    seconds: float = None


@dataclasses.dataclass
class EvalContext:
    """Everything a metric may read: frozen features, labels and the evaluation settings.

    Build it with `EvalContext.create`, which checks the arrays. Metrics share
    costly intermediate results through `cached` (the logistic-regression
    probe serves `probe` and `calibration`).

    Attributes:
        train, test: float32 `(N, D)`, `(M, D)` raw encoder features.
        train_labels, test_labels: int64 `(N,)`, `(M,)`.
        num_classes: `max(label) + 1` over both splits.
        class_names: names by label id, or None.
        ks: kNN neighbourhood sizes.
        shots: m of the m-shot errors.
        encoder: the frozen `keras.Model` (for `sgd_probe`), or None.
        images: `(train_images, test_images)` uint8, or None.
        probe_epochs: epochs of `sgd_probe`.
        verbose: progress output.
        model: short name of the model / preset, for plot titles.
        train_paths: the file of each training row (an image folder), or None.
    """

    train: np.ndarray
    train_labels: np.ndarray
    test: np.ndarray
    test_labels: np.ndarray
    num_classes: int
    class_names: list = None
    ks: tuple = DEFAULT_KS
    shots: tuple = (10, 100)
    encoder: object = None
    images: tuple = None
    probe_epochs: int = 100
    verbose: bool = True
    model: str = "encoder"
    train_paths: list = None
    cache: dict = dataclasses.field(default_factory=dict, repr=False)

    @classmethod
    def create(cls, train_embeddings, train_labels, test_embeddings, test_labels, **settings):
        """Checked context from features `(N, D)`, `(M, D)` and int labels `(N,)`, `(M,)`.

        Raises:
            ValueError: non-finite or mis-shaped features, a label count that
                differs from the feature count, fewer than two training classes.
        """
        train, y_train, test, y_test = _checks.train_test(
            train_embeddings, train_labels, test_embeddings, test_labels, dtype=np.float32)
        num_classes = int(max(y_train.max(), y_test.max())) + 1
        for name in ("ks", "shots"):
            if name in settings:
                settings[name] = tuple(int(v) for v in settings[name])
        return cls(train, y_train, test, y_test, num_classes, **settings)

    def class_name(self, label):
        """The name of class id `label` (its id as a string without names)."""
        return class_name(label, self.class_names)

    def cached(self, key, compute):
        """`compute()` once per context; later calls with `key` return the same object."""
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]


class ReportMetric:
    """Base class of the report's measurements; subclasses set the class attributes.

    Attributes:
        name: registry name, also the key in `metrics.json` and `--metrics`.
        description: one line for `--help` and the registry.
        source: the paper and section it comes from.
        default: computed when no metric list is given.
    """

    name = ""
    description = ""
    source = ""
    default = True

    def check(self, context):
        """Raise `ValueError` before any metric runs when `context` lacks what `compute` needs."""

    def compute(self, context):
        """Measure on `context` (`EvalContext`); returns a `MetricResult`."""
        raise NotImplementedError(f"{type(self).__name__} must implement compute().")


def register_metric(cls):
    """Class decorator: add a `ReportMetric` subclass to `METRICS` with its attributes as metadata."""
    METRICS.register(cls.name, cls, description=cls.description, source=cls.source,
                     default=cls.default)
    return cls


def percent(value):
    """`0.9512` -> `"95.12%"`."""
    return f"{value:.2%}"


def default_metrics():
    """The names computed when no metric list is given (each `ReportMetric.default`), in `ORDER`."""
    return tuple(name for name in METRICS if METRICS.entry(name).metadata["default"])


def parse_metrics(spec):
    """`"knn,probe"` or a list -> tuple of registered metric names; `"all"` or None -> the defaults.

    Raises:
        ValueError: an unknown or empty name list, naming the known metrics.

    Example:

    >>> from clzoo.eval.metric import parse_metrics
    >>> parse_metrics("knn, probe")
    ('knn', 'probe')
    >>> parse_metrics("knn,accuracy")
    Traceback (most recent call last):
    ...
    ValueError: Unknown metrics ['accuracy'] in metrics='knn,accuracy'. Choose from: knn, ncc, ...
    """
    if spec is None or spec == "all":
        return default_metrics()
    names = [m.strip() for m in (spec.split(",") if isinstance(spec, str) else spec) if m.strip()]
    unknown = [m for m in names if m not in METRICS]
    if unknown or not names:
        raise ValueError(f"Unknown metrics {unknown or []} in metrics={spec!r}. "
                         f"Choose from: {', '.join(METRICS)}")
    return tuple(dict.fromkeys(names))
