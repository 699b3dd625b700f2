"""The metric interface: `METRICS` registry, `Metric`, `EvalContext`, `MetricResult`, `Plot`."""

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np

from clzoo.eval import _checks
from clzoo.eval.plots import class_name
from clzoo.registry import Registry

METRICS = Registry("metric")


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
    """What `Metric.compute` returns.

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
    """

    train: np.ndarray
    train_labels: np.ndarray
    test: np.ndarray
    test_labels: np.ndarray
    num_classes: int
    class_names: list = None
    ks: tuple = (1, 5, 20, 200)
    shots: tuple = (10, 100)
    encoder: object = None
    images: tuple = None
    probe_epochs: int = 100
    verbose: bool = True
    model: str = "encoder"
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


class Metric:
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
    """Class decorator: add a `Metric` subclass to `METRICS` with its attributes as metadata."""
    METRICS.register(cls.name, cls, description=cls.description, source=cls.source,
                     default=cls.default)
    return cls


def percent(value):
    """`0.9512` -> `"95.12%"`."""
    return f"{value:.2%}"
