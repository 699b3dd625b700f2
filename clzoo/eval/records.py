"""Typed records of results: `RunResult` (`read_run`, a `clzoo train` folder) and `EvalReport`
(`read_eval`, a `clzoo eval` folder; `clzoo.eval.evaluate` returns one in memory).

One set of names for every reader: `knn` (`{"k5": accuracy, ...}`), `ncc`, `probe`, `margin`, ...
The probe is `probe` everywhere it is written (a run's `metrics.json`, a report, registry.json's
`probe_top1`); a run's `metrics.json` stores the NCC accuracy as `ncc_accuracy` (`SUMMARY_KEYS`).
Both readers accept every folder written so far (`linear_probe` in earlier summaries and
reports), and name the file and key in a one-line `RecordError` when one
is missing or malformed.
"""

import dataclasses
import json
import math
from pathlib import Path

__all__ = ["EARLIER_PROBE_KEY", "REPORT_SCALARS", "SUMMARY_KEYS", "Baseline", "EvalReport", "RecordError",
           "RunResult", "read_eval", "read_run"]

SUMMARY_KEYS = {"ncc": "ncc_accuracy", "probe": "probe"}  # record name -> metrics.json key
# The probe's name in summaries written before it had one name everywhere (still read, never written).
EARLIER_PROBE_KEY = "linear_probe"


def _probe_key(data):
    """The key holding the probe in `data`: `probe`, or `linear_probe` in earlier files."""
    return EARLIER_PROBE_KEY if "probe" not in data and EARLIER_PROBE_KEY in data else "probe"


class RecordError(ValueError):
    """A run or eval folder lacks a file or key, or holds one that does not parse."""


def _number(value, where, optional=False):
    """`value` as a float; `where` names the file and key in the error."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RecordError(f"{where}: expected a number, got {value!r}")
    return float(value)


def _whole(value, where):
    """`value` as an int, or None when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{where}: expected a whole number, got {value!r}")
    return value


def _accuracies(value, where):
    """`{"k5": accuracy, ...}`, checked."""
    if not isinstance(value, dict) or not value:
        raise RecordError(f"{where}: expected {{'k5': accuracy, ...}}, got {value!r}")
    return {str(k): _number(v, f"{where}.{k}") for k, v in value.items()}


def _load_json(path):
    """The JSON object in `path`, or a `RecordError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise RecordError(f"{path}: missing (not a finished run or report folder?)")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RecordError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


@dataclasses.dataclass(frozen=True)
class Baseline:
    """One baseline row of a run (`raw_pixels`, `random_init`): kNN per k and probe top-1.

    Example:

    >>> from clzoo.eval.records import Baseline
    >>> Baseline.from_dict({"knn": {"k5": 0.9}, "probe": 0.8}).probe
    0.8
    """

    knn: dict
    probe: float | None = None

    @classmethod
    def from_dict(cls, data, where="baseline"):
        if not isinstance(data, dict):
            raise RecordError(f"{where}: expected an object, got {data!r}")
        return cls(knn=_accuracies(data.get("knn"), f"{where}.knn"),
                   probe=_number(data.get(key := _probe_key(data)), f"{where}.{key}", optional=True))

    def to_dict(self):
        """The form stored in `metrics.json` (probe under `probe`, omitted when None)."""
        return {"knn": dict(self.knn), **({"probe": self.probe} if self.probe is not None else {})}


@dataclasses.dataclass(frozen=True)
class RunResult:
    """A finished `clzoo train` run: the summary in `metrics.json` and the loss curve.

    Attributes:
        knn: kNN top-1 per k of the trained encoder, `{"k1": accuracy, ...}` (empty for a run on
            an unlabelled folder).
        knn_k: the headline k; `knn_top1` is `knn[f"k{knn_k}"]` (None without labels).
        knn_top1: the headline kNN top-1 (None without labels).
        ncc, probe: nearest-class-centre and linear-probe top-1, None when not measured.
        baselines: `{name: Baseline}` (`raw_pixels`, `random_init`), empty when not measured.
        final_loss: the last epoch's training loss (None for a run with no epoch).
        loss_curve: the training loss per epoch, from `history.jsonl` (empty when absent).
        wall_seconds, images_per_second: wall time and training throughput.
        steps: optimizer steps of the run (None in summaries without it).
        classifier_top1, classifier_ece: the classifier's own test top-1 and ECE (task
            `soft_target` only; None otherwise).
        label_free: a run on an unlabelled folder: `{"alignment", "uniformity",
            "effective_rank", "images", "features"}` (`clzoo.eval.label_free`); else empty.
        label_free_baselines: `{name: that dict}` of its baselines (`random_init`).
        summary: every key of `metrics.json` as stored (steps, backend, versions, ...).
        path: the run folder, or None for a record built in memory.

    Example:

    >>> from clzoo.eval.records import RunResult
    >>> run = RunResult.from_summary({"knn_top1": 0.9, "knn_top1_k": 5,
    ...                               "knn_top1_by_k": {"k5": 0.9}, "probe": 0.8})
    >>> run.probe, run.ncc, run.to_summary()["probe"]
    (0.8, None, 0.8)
    """

    knn: dict
    knn_k: int
    knn_top1: float
    ncc: float | None = None
    probe: float | None = None
    baselines: dict = dataclasses.field(default_factory=dict)
    final_loss: float | None = None
    loss_curve: tuple = ()
    wall_seconds: float | None = None
    images_per_second: float | None = None
    steps: int | None = None
    classifier_top1: float | None = None
    classifier_ece: float | None = None
    summary: dict = dataclasses.field(default_factory=dict, repr=False)
    path: Path | None = None
    label_free: dict = dataclasses.field(default_factory=dict)
    label_free_baselines: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_summary(cls, summary, path=None, loss_curve=(), where="metrics.json"):
        """The record of a `metrics.json` dict (`where` names it in errors)."""
        if "label_free" in summary and "knn_top1" not in summary:  # an unlabelled folder's run
            return cls._label_free(summary, path, loss_curve, where)
        for key in ("knn_top1", "knn_top1_k", "knn_top1_by_k"):
            if key not in summary:
                raise RecordError(f"{where}: no {key!r} key")
        knn_k = summary["knn_top1_k"]
        if isinstance(knn_k, bool) or not isinstance(knn_k, int):
            raise RecordError(f"{where}: 'knn_top1_k' must be an integer, got {knn_k!r}")
        baselines = summary.get("baselines") or {}
        if not isinstance(baselines, dict):
            raise RecordError(f"{where}: 'baselines' must be an object, got {baselines!r}")
        keys = {**SUMMARY_KEYS, "probe": _probe_key(summary)}
        optional = {name: _number(summary.get(key), f"{where}: {key!r}", optional=True)
                    for name, key in keys.items()}
        return cls(
            knn=_accuracies(summary["knn_top1_by_k"], f"{where}: 'knn_top1_by_k'"), knn_k=knn_k,
            knn_top1=_number(summary["knn_top1"], f"{where}: 'knn_top1'"), **optional,
            baselines={name: Baseline.from_dict(row, f"{where}: 'baselines.{name}'")
                       for name, row in baselines.items()},
            **{key: _number(summary.get(key), f"{where}: {key!r}", optional=True)
               for key in ("classifier_top1", "classifier_ece")},
            **_training_facts(summary, path, loss_curve, where))

    @classmethod
    def _label_free(cls, summary, path, loss_curve, where):
        """The record of an unlabelled run: no kNN, its label-free figures (checked as numbers)."""
        def figures(row, at):
            if not isinstance(row, dict):
                raise RecordError(f"{at}: expected an object, got {row!r}")
            figures = {key: _number(row.get(key), f"{at}.{key}")
                       for key in ("alignment", "uniformity", "effective_rank")}
            whole = {key: _whole(row.get(key), f"{at}.{key}") for key in ("images", "features")}
            if whole["images"] is None:
                raise RecordError(f"{at}: no 'images' key")
            return {**figures, **{key: value for key, value in whole.items() if value is not None}}

        others = summary.get("label_free_baselines") or {}
        if not isinstance(others, dict):
            raise RecordError(f"{where}: 'label_free_baselines' must be an object, got {others!r}")
        return cls(knn={}, knn_k=None, knn_top1=None,
                   label_free=figures(summary["label_free"], f"{where}: 'label_free'"),
                   label_free_baselines={name: figures(row, f"{where}: 'label_free_baselines.{name}'")
                                         for name, row in others.items()},
                   **_training_facts(summary, path, loss_curve, where))

    def to_summary(self):
        """The `metrics.json` dict of this record, in the stored names (`from_summary`'s inverse)."""
        out = dict(self.summary)
        if self.knn_top1 is not None:  # None: a run on an unlabelled folder (its summary as read)
            out.update(knn_top1=self.knn_top1, knn_top1_k=self.knn_k, knn_top1_by_k=dict(self.knn))
        out.pop(EARLIER_PROBE_KEY, None)
        for name, key in SUMMARY_KEYS.items():
            value = getattr(self, name)
            if value is None:
                out.pop(key, None)
            else:
                out[key] = value
        if self.baselines:
            out["baselines"] = {name: row.to_dict() for name, row in self.baselines.items()}
        for key, value in (("final_train_loss", self.final_loss),
                           ("wall_seconds", self.wall_seconds),
                           ("images_per_second", self.images_per_second)):
            if value is not None or key in out:
                out[key] = value
        return out


def _training_facts(summary, path, loss_curve, where):
    """The `RunResult` fields every run has, labelled or not: its loss, speed, steps, summary, path."""
    return dict(
        final_loss=_number(summary.get("final_train_loss"), f"{where}: 'final_train_loss'",
                           optional=True),
        loss_curve=tuple(loss_curve),
        wall_seconds=_number(summary.get("wall_seconds"), f"{where}: 'wall_seconds'", optional=True),
        images_per_second=_number(summary.get("images_per_second"), f"{where}: 'images_per_second'",
                                  optional=True),
        steps=_whole(summary.get("steps"), f"{where}: 'steps'"),
        summary=dict(summary), path=None if path is None else Path(path))


def _loss_curve(path):
    """Training loss per epoch from `history.jsonl`; () when the file is absent."""
    if not path.is_file():
        return ()
    curve = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise RecordError(f"{path}: line {number} is not valid JSON ({error})") from None
        loss = row.get("loss") if isinstance(row, dict) else None
        curve.append(math.nan if loss is None else _number(loss, f"{path}: line {number} 'loss'"))
    return tuple(curve)


def read_run(path):
    """The `RunResult` of a finished `clzoo train` folder (`metrics.json`, `history.jsonl`).

    Raises:
        RecordError: a file or key is missing or malformed; the message names it.

    Example:

    >>> import json, tempfile, pathlib
    >>> from clzoo.eval.records import read_run
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "metrics.json").write_text(json.dumps(
    ...     {"knn_top1": 0.9, "knn_top1_k": 5, "knn_top1_by_k": {"k5": 0.9}}))
    >>> read_run(folder).knn_top1
    0.9
    """
    folder = Path(path)
    summary = _load_json(folder / "metrics.json")
    return RunResult.from_summary(summary, path=folder, where=str(folder / "metrics.json"),
                                  loss_curve=_loss_curve(folder / "history.jsonl"))


# Where reports written before the metric names settled keep a value (field -> path): the
# built-in ResNet-20 presets' reports store `ncc_accuracy` (a number) and `linear_probe`.
EARLIER_SCALARS = {"ncc": ("ncc_accuracy",), "probe": ("linear_probe", "accuracy")}
# EvalReport field -> the path of its value in a report's `metrics.json` (one name per quantity).
REPORT_SCALARS = {
    "ncc": ("ncc", "accuracy"), "probe": ("probe", "accuracy"), "sgd_probe": ("sgd_probe", "accuracy"),
    "margin": ("separation", "margin"), "cdnv": ("geometry", "test", "cdnv"),
    "directional_cdnv": ("geometry", "test", "directional_cdnv"), "ece": ("calibration", "ece"),
    "loss_gap": ("loss_gap", "gap"), "loss_gap_bound": ("loss_gap", "bound"),
    "within_coarse": ("coarse_to_fine", "within_coarse_accuracy"),
}


def _scalar(metrics, keys, where):
    """The number at `metrics[k0][k1]...`: None when its metric was not run, or when a report
    written by an earlier version lacks the key; a `RecordError` when it is not a number."""
    value = metrics
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    if keys[-1] == "accuracy" and metrics.get(keys[0]) is not None and value is None:
        raise RecordError(f"{where}: {keys[0]!r} has no 'accuracy' ({metrics[keys[0]]!r})")
    return _number(value, f"{where}: {'.'.join(keys)!r}", optional=True)


@dataclasses.dataclass(frozen=True)
class EvalReport:
    """An evaluation report (`metrics.json` under the metric names), from disk or from `evaluate`.

    Attributes:
        knn: kNN top-1 per k, `{"k1": accuracy, ...}`; empty when `knn` was not run.
        ncc, probe, sgd_probe: top-1 accuracies, None when not run.
        margin: the target-noise margin (`separation`), None when not run.
        cdnv, directional_cdnv: the test split's CDNV and directional CDNV (`geometry`).
        ece: the probe's expected calibration error (`calibration`).
        loss_gap, loss_gap_bound: the DCL - NSCL gap on the test split and its bound (`loss_gap`).
        within_coarse: fine-label accuracy within the true coarse class (`coarse_to_fine`).
        few_shot: `{m: {"ncc_error": ..., "linear_error": ..., ...}}` per shot count (`few_shot`).
        timings: `{step: wall seconds, ..., "total": sum}`; empty when not recorded.
        metrics: every entry of the report as stored, e.g. `metrics["separation"]["per_class_margin"]`.
        path: the report folder, or None.

    Example:

    >>> from clzoo.eval.records import EvalReport
    >>> EvalReport.from_metrics({"knn": {"k1": 0.5}, "probe": {"accuracy": 0.7}}).probe
    0.7
    """

    knn: dict
    ncc: float | None = None
    probe: float | None = None
    sgd_probe: float | None = None
    margin: float | None = None
    cdnv: float | None = None
    directional_cdnv: float | None = None
    ece: float | None = None
    loss_gap: float | None = None
    loss_gap_bound: float | None = None
    within_coarse: float | None = None
    few_shot: dict = dataclasses.field(default_factory=dict)
    # wall times, the stored dict and the folder are not what a report measured: not in ==
    timings: dict = dataclasses.field(default_factory=dict, compare=False)
    metrics: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)
    path: Path | None = dataclasses.field(default=None, compare=False)

    @classmethod
    def from_metrics(cls, metrics, path=None, where="metrics.json", **extra):
        """The record of a report's `metrics.json` dict (`where` names it in errors).

        `extra` fills the fields a subclass adds (`EvaluationResult`'s in-memory ones).
        """
        knn = _accuracies(metrics["knn"], f"{where}: 'knn'") if "knn" in metrics else {}
        scalars = {name: _scalar(metrics, keys, where) for name, keys in REPORT_SCALARS.items()}
        for name, keys in EARLIER_SCALARS.items():
            if scalars[name] is None:
                scalars[name] = _scalar(metrics, keys, where)
        few_shot = metrics.get("few_shot") or {}
        if not isinstance(few_shot, dict) or not all(isinstance(r, dict) for r in few_shot.values()):
            raise RecordError(f"{where}: 'few_shot' must map shot counts to objects, got {few_shot!r}")
        few_shot = {m: {k: _number(v, f"{where}: 'few_shot.{m}.{k}'", optional=True)
                        for k, v in row.items()} for m, row in few_shot.items()}
        timings = metrics.get("timings") or {}
        if not isinstance(timings, dict):
            raise RecordError(f"{where}: 'timings' must be an object, got {timings!r}")
        return cls(knn=knn, **scalars, few_shot=few_shot, timings=dict(timings), metrics=dict(metrics),
                   path=None if path is None else Path(path), **extra)


def read_eval(path):
    """The `EvalReport` of a `clzoo eval` output folder (or of a run folder's `eval/`).

    Raises:
        RecordError: `metrics.json` is missing or malformed; the message names it.

    Example:

    >>> import json, tempfile, pathlib
    >>> from clzoo.eval.records import read_eval
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "metrics.json").write_text(json.dumps({"ncc": {"accuracy": 0.6}}))
    >>> read_eval(folder).ncc
    0.6
    """
    folder = Path(path)
    run_folder = (folder / "recipe.yaml").is_file() or not (folder / "metrics.json").is_file()
    if run_folder and (folder / "eval" / "metrics.json").is_file():
        folder = folder / "eval"
    elif (folder / "recipe.yaml").is_file():
        raise RecordError(f"{folder} is a run folder without eval/metrics.json (its metrics.json is "
                          f"the run summary: read_run); clzoo eval {folder} --data ... writes a report")
    return EvalReport.from_metrics(_load_json(folder / "metrics.json"), path=folder,
                                   where=str(folder / "metrics.json"))
