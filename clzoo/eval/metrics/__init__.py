"""The evaluation report's metrics: one module and one `Metric` class per name in `METRICS`.

Each metric's registry name is its key everywhere: `metrics.json`,
`report.md`, `clzoo eval --metrics`, the recipe's `eval.metrics` and the
model card. `METRICS.entry(name).metadata` holds its description, source
paper and whether it is a default (`DEFAULT_METRICS`).
"""

import importlib

from clzoo.eval.metrics._base import (
    METRICS,
    EvalContext,
    Metric,
    MetricResult,
    Plot,
    register_metric,
)

# Importing a module registers its metric; this order is the registry's, the
# report's and `--help`'s (an explicit list, so import sorting cannot change it).
ORDER = ("knn", "ncc", "probe", "calibration", "few_shot", "geometry", "separation", "loss_gap",
         "noisy_labels", "map", "retrieval", "sgd_probe", "coarse_to_fine")
for _module in ORDER:
    importlib.import_module(f"clzoo.eval.metrics.{_module}")

DEFAULT_METRICS = tuple(name for name in METRICS if METRICS.entry(name).metadata["default"])


def parse_metrics(spec):
    """`"knn,probe"` or a list -> tuple of registered metric names; `"all"` or None -> `DEFAULT_METRICS`.

    Raises:
        ValueError: an unknown or empty name list, naming the known metrics.

    Example:

    >>> from clzoo.eval.metrics import parse_metrics
    >>> parse_metrics("knn, probe")
    ('knn', 'probe')
    >>> parse_metrics("knn,accuracy")
    Traceback (most recent call last):
    ...
    ValueError: Unknown metrics ['accuracy'] in metrics='knn,accuracy'. Choose from: knn, ncc, ...
    """
    if spec is None or spec == "all":
        return DEFAULT_METRICS
    names = [m.strip() for m in (spec.split(",") if isinstance(spec, str) else spec) if m.strip()]
    unknown = [m for m in names if m not in METRICS]
    if unknown or not names:
        raise ValueError(f"Unknown metrics {unknown or []} in metrics={spec!r}. "
                         f"Choose from: {', '.join(METRICS)}")
    return tuple(dict.fromkeys(names))


__all__ = ["DEFAULT_METRICS", "METRICS", "EvalContext", "Metric", "MetricResult", "Plot",
           "parse_metrics", "register_metric"]
