"""Every requested report metric (`clzoo.eval.METRICS`) on one encoder and dataset: `metrics.json`,
`report.md`, plots.

`evaluate_embeddings` works on features already computed; `evaluate` embeds
the train and test images with a frozen encoder first. Each metric's
registry name is its key in `metrics.json`; its source paper is in its
class docstring, the registry metadata and the written report.
"""

import dataclasses
import json
from pathlib import Path

from threadpoolctl import threadpool_limits

from clzoo.data.checks import dropped_ks_note, knn_ks
from clzoo.eval.metric import METRICS, EvalContext, parse_metrics
from clzoo.eval.records import EvalReport
from clzoo.eval.report_folder import REPORT_FILES, check_report_folder, report_files, swappable
from clzoo.eval.steps import StepTimer
from clzoo.files import atomic_write_text, replace_folder

BLAS_THREADS = 1  # threads of NumPy / SciPy / scikit-learn while the metrics run

__all__ = ["METRICS", "EvaluationResult", "draw_plots",
           "evaluate", "evaluate_embeddings", "model_label", "parse_metrics", "write_report"]


@dataclasses.dataclass(frozen=True)
class EvaluationResult(EvalReport):
    """What `evaluate` / `evaluate_embeddings` return: the `EvalReport` that `read_eval` reads back
    from the written folder, plus what only exists in memory. `knn`, `ncc`, `probe`, `sgd_probe`,
    `margin`, `cdnv`, `directional_cdnv`, `ece`, `loss_gap`, `loss_gap_bound`, `within_coarse`,
    `few_shot` and `timings` are as in `clzoo.eval.records.EvalReport` (None / empty when not
    computed).

    Attributes:
        metrics: JSON-ready dict, the content of `metrics.json`: `title`, the
            `info` facts (`model`, `data`, ...), `samples`, `feature_dim`,
            `classes`, `metrics` (names computed), one entry per metric under
            its registry name, `timings` `{step: wall seconds, ..., "total": sum}`
            (loading, embedding, each metric, plots; see `evaluate_embeddings`),
            `seconds`, the metrics' entries of `timings` (kept for older readers), and,
            once written, `files`: the names the report wrote (its manifest, what the next
            report into that folder may replace).
        correct: `{classifier: bool (M,)}` per-test-example correctness
            (`knn_k20`, `ncc`, `probe`, `sgd_probe`), for `compare_results`.
        results: `{name: MetricResult}` with each metric's rows and plots.
        files: paths written (empty without `output_dir`).
    """

    correct: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)
    results: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)
    files: list = dataclasses.field(default_factory=list, compare=False)


def model_label(model):
    """Short name of a model for titles: a preset name, or the last two parts of a path.

    Example:

    >>> from clzoo.eval.report import model_label
    >>> model_label("/tmp/runs/supcon/encoder.keras"), model_label("sincere_airbench_cifar10")
    ('supcon/encoder.keras', 'sincere_airbench_cifar10')
    """
    text = str(model)
    if text.startswith("hf://") or "/" not in text:
        return text
    return "/".join(Path(text).parts[-2:])


def _run_metrics(names, context, timer):
    """`{name: MetricResult}` in registry order, each timed by `timer`, after every `check` passed."""
    metrics = {name: METRICS.get(name)() for name in METRICS if name in names}
    for metric in metrics.values():  # fail before the slow metrics run
        metric.check(context)
    results = {}
    # One BLAS / OpenMP thread: on a shared or busy CPU, OpenBLAS' spinning worker threads made
    # scikit-learn's L-BFGS fits 20-200x slower (the probe: 138 s -> 7 s; benchmarks/README.md).
    with threadpool_limits(limits=BLAS_THREADS):
        for name, metric in metrics.items():
            with timer.step(name):
                result = metric.compute(context)
            result.seconds = timer.seconds[name]
            results[name] = result
    return results


def _timer(timings, verbose, steps):
    """The `StepTimer` of an evaluation: `timings` itself, or a new one holding its seconds."""
    if isinstance(timings, StepTimer):
        if timings.total is None:
            timings.total = len(timings.seconds) + steps
        return timings
    timer = StepTimer(verbose=verbose, total=len(timings or {}) + steps)
    timer.add(dict(timings or {}))
    return timer


def evaluate_embeddings(train_embeddings, train_labels, test_embeddings, test_labels,
                        metrics=None, class_names=None, output_dir=None,
                        ks=None, shots=(10, 100), title=None, verbose=True,
                        encoder=None, images=None, probe_epochs=100, info=None, timings=None,
                        train_paths=None):
    """Compute the requested metrics on frozen features; write the report when `output_dir` is given.

    Args:
        train_embeddings, test_embeddings: float `(N, D)`, `(M, D)` raw encoder
            features (cosine metrics normalize them; CDNV and probes use them as is).
        train_labels, test_labels: int `(N,)`, `(M,)`.
        metrics: registry names (`clzoo.eval.METRICS`), a comma-separated
            string, or `"all"`. Defaults to (None) `clzoo.eval.DEFAULT_METRICS`.
        class_names: list of names, index = label.
        output_dir: folder for `metrics.json`, `report.md` and PNGs, or None. It is
            replaced as a whole (an earlier report's files go, the plots included);
            a folder holding anything else is refused before any metric runs.
        ks: kNN neighbourhood sizes, each at most the number of training
            embeddings. Defaults to (None) `(1, 5, 20, 200)`, less the sizes
            above that number (a note names them; the report marks them skipped).
        shots: m for the m-shot errors and bound; an m larger than the
            smallest training class is skipped. Defaults to `(10, 100)`.
        title: report heading. Defaults to one naming `info["model"]` and `info["data"]`.
        verbose: print a `[clzoo eval] name ...` line per metric.
        encoder, images: the frozen encoder and `(train_images, test_images)`,
            needed only by `"sgd_probe"`.
        probe_epochs: epochs of `"sgd_probe"`. Defaults to `100` (SINCERE app. J).
        info: JSON-ready facts stored in `metrics.json` (`model`: the model
            or preset name used in titles; `data`; ...).
        timings: wall seconds of steps that ran before, `{step: seconds}`
            (e.g. `{"load_model": 2.1}`), or the `clzoo.eval.steps.StepTimer`
            that timed them; they come first in `metrics["timings"]`.
        train_paths: the file of each training row (an image folder's `Split.paths`), or None;
            `"noisy_labels"` names the files.

    Returns:
        `EvaluationResult`; `metrics["timings"]` holds the wall seconds of
        every step (earlier steps, each metric, `plots` when writing) and
        their `total`.

    Raises:
        ValueError: an unknown metric, bad features or labels, a k in `ks`
            above the number of training embeddings, or a metric
            whose needs are not met (`sgd_probe` without encoder), before any
            metric runs.
        FileExistsError: `output_dir` holds files no earlier report wrote.

    Example:

    >>> import numpy as np, clzoo
    >>> x = np.random.default_rng(0).normal(size=(40, 8)) + np.repeat(np.eye(8)[:2] * 5, 20, 0)
    >>> y = np.repeat([0, 1], 20)
    >>> r = clzoo.eval.evaluate_embeddings(x, y, x, y, "knn,ncc", ks=(1,), verbose=False)
    >>> r.knn, r.ncc, r.probe, sorted(r.correct)
    ({'k1': 1.0}, 1.0, None, ['knn_k1', 'ncc'])
    """
    names = parse_metrics(metrics)
    if output_dir is not None:
        check_report_folder(output_dir)
    info = dict(info or {})
    timer = _timer(timings, verbose, len(names) + (output_dir is not None))
    context = EvalContext.create(
        train_embeddings, train_labels, test_embeddings, test_labels, class_names=class_names,
        shots=shots, encoder=encoder, images=images, probe_epochs=probe_epochs,
        verbose=verbose, model=model_label(info.get("model", "encoder")), train_paths=train_paths)
    context.ks = _checked_ks(ks, len(context.train), verbose)
    results = _run_metrics(names, context, timer)
    title = title or (f"clzoo evaluation of {context.model}"
                      + (f" on {info['data']}" if "data" in info else ""))
    out = {"title": title, **info,
           "samples": {"train": len(context.train), "test": len(context.test)},
           "feature_dim": int(context.train.shape[1]), "classes": context.num_classes,
           "metrics": list(results)}
    out.update({name: result.scalars for name, result in results.items()})
    out["seconds"] = {name: result.seconds for name, result in results.items()}
    correct = {key: value for result in results.values() for key, value in result.correct.items()}
    if output_dir is None:
        out["timings"] = _total(timer)
        return EvaluationResult.from_metrics(out, correct=correct, results=results)
    return _save(out, results, correct, timer, Path(output_dir))


def _checked_ks(ks, train_count, verbose):
    """`ks` when each fits the training set; for the defaults (None) every default size, those
    above the training set named once here (`KNNReport` marks them skipped)."""
    kept, dropped = knn_ks(ks, train_count)
    if dropped and verbose:
        print(dropped_ks_note(dropped, train_count), flush=True)
    return kept + dropped


def _total(timer):
    return {**timer.seconds, "total": round(sum(timer.seconds.values()), 2)}


def _save(out, results, correct, timer, folder):
    """Write the report as a set: built in a staging folder and swapped in whole (the earlier
    report's files that this one does not write go with it), or, where the folder cannot be
    swapped (`report_folder.swappable`), its files replaced one by one in place."""
    folder = folder.resolve() if folder.is_symlink() else folder  # stage beside the real folder
    built = {}

    def build(target):
        with timer.step("plots"):
            plots = draw_plots(results, target)
        out["timings"] = _total(timer)
        out["files"] = [*REPORT_FILES, *(p.name for p in plots)]
        built["report"] = EvaluationResult.from_metrics(out, path=folder, correct=correct,
                                                        results=results)
        write_report(built["report"], target, plots=plots)

    if swappable(folder):
        replace_folder(folder, build, owned=report_files(folder))
    else:
        stale = report_files(folder)
        build(folder)
        for name in stale - set(out["files"]):
            (folder / name).unlink(missing_ok=True)
    return dataclasses.replace(built["report"], files=[folder / name for name in out["files"]])


def evaluate(encoder, data, metrics=None, output_dir=None, verbose=True,
             train=None, class_names=None, **kwargs):
    """Embed the train and test images with a frozen `encoder`, then `evaluate_embeddings`.

    Args:
        encoder: `keras.Model`, float images in [0, 1] `(B, H, W, 3)` ->
            features `(B, D)` (for the projection space, pass
            `clzoo.eval.projection_encoder(model)`).
        data: one of
            - a dataset spec for `clzoo.data.load_split` (`"digits"`, a
              folder, `"tfds:name"`), or the `clzoo.data.sources.DataSource`
              resolved from one: its train and test splits;
            - `(train, test)`: two `clzoo.data.Split`s, or two `(images,
              labels)` pairs (uint8 `(N, H, W, 3)`, int `(N,)`; the
              `keras.datasets` `load_data()` form);
            - one `Split` or `(images, labels)`: the test set, with `train`.
            Split array data with `clzoo.eval.train_test_split`.
        train: the training `Split` (or `(images, labels)`); with a spec, an
            already loaded train split that is then not read again.
        class_names: names by label id for array data (a `Split` has its own).
        metrics, output_dir, verbose, **kwargs: as `evaluate_embeddings`
            (`timings` included); loading the data (`load_data`) and
            embedding each split (`embed_train`, `embed_test`) are timed too.
            `plan=True` (with `verbose`) prints what will run and a rough
            time estimate once the data is loaded (`clzoo.eval.plan`).

    Returns:
        `EvaluationResult`; the same numbers whichever form `data` takes.

    Raises:
        ValueError: an unrecognised `data` form, a test set without `train`,
            and as `evaluate_embeddings` (a k in `ks` above the training images:
            before any embedding).

    Example:

    >>> import numpy as np, keras, clzoo
    >>> inputs = keras.Input((8, 8, 3))
    >>> encoder = keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(inputs))
    >>> images = np.arange(0, 240, 6, dtype=np.uint8)[:, None, None, None]  # 40 distinct
    >>> images = np.broadcast_to(images, (40, 8, 8, 3))
    >>> train, test = clzoo.eval.train_test_split(images, np.arange(40) // 20, test_size=0.5)
    >>> clzoo.eval.evaluate(encoder, (train, test), "ncc", verbose=False).ncc
    1.0
    """
    from clzoo.data.sources import DataSource
    from clzoo.eval.embed import embed
    from clzoo.eval.splits import data_line, data_loading, resolve_data

    names = parse_metrics(metrics)
    if output_dir is not None:
        check_report_folder(output_dir)
    plan = kwargs.pop("plan", False)
    timer = _timer(kwargs.pop("timings", None), verbose, 3 + len(names) + (output_dir is not None))
    with timer.step("load_data", str(data) if isinstance(data, (str, Path, DataSource)) else ""):
        train, test, description = resolve_data(data, train, class_names)
    if kwargs.get("ks") is not None:  # an explicit k too large for the training set: before embedding
        knn_ks(kwargs["ks"], len(train))
    size = encoder.input_shape[1]
    if plan and verbose:
        from clzoo.eval.plan import eval_plan, forward_rate

        rate = forward_rate(encoder, train.images, size=size, verbose=True)
        print(eval_plan(names, len(train), len(test), rate,
                        probe_epochs=kwargs.get("probe_epochs", 100)), flush=True)
        print(data_line(train, test), flush=True)
    features = []
    for name, split in (("embed_train", train), ("embed_test", test)):
        with timer.step(name, f"{len(split)} images"):
            features.append(embed(encoder, split.images, size=size, normalize=False, verbose=verbose))
    kwargs["info"] = {"data": description, "data_loading": {"train": data_loading(train),
                                                            "test": data_loading(test)},
                      **(kwargs.get("info") or {})}
    return evaluate_embeddings(features[0], train.labels, features[1], test.labels, names,
                               class_names=train.class_names, output_dir=output_dir,
                               verbose=verbose, encoder=encoder,
                               images=(train.images, test.images), timings=timer,
                               train_paths=train.paths, **kwargs)


def _report_lines(evaluation):
    """The Markdown of `report.md`: heading, one table row per metric line, plots, seconds."""
    m = evaluation.metrics
    facts = [f"{key}: `{m[key]}`" for key in ("model", "data", "space") if key in m]
    lines = [f"# {m['title']}", "", *([", ".join(facts), ""] if facts else []),
             (f"{m['samples']['train']} training and {m['samples']['test']} test images, "
             f"{m['classes']} classes, {m['feature_dim']}-dimensional features."), "",
             "| metric | measurement | value |", "| --- | --- | --- |"]
    for name, result in evaluation.results.items():
        lines += [f"| `{name}` | {label} | {value} |" for label, value in result.rows]
    lines.append("")
    for result in evaluation.results.values():
        for plot in result.plots:
            lines += [f"![{plot.caption}]({plot.filename})", ""]
    timings = m["timings"]
    lines += ["Wall time per step (loading, embedding, each metric, plots):", "",
              "| step | seconds |", "| --- | --- |"]
    lines += [f"| `{name}` | {seconds} |" for name, seconds in timings.items() if name != "total"]
    return lines + [f"| total | {timings['total']} |", ""]


def draw_plots(results, output_dir):
    """Draw the plots of `results` (`{name: MetricResult}`, an evaluation's `results`) into
    `output_dir`; returns their paths."""
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    return [plot.write(output) for result in results.values() for plot in result.plots]


def write_report(evaluation, output_dir, plots=None):
    """Write `metrics.json`, `report.md` and every metric's plots of `evaluation` into `output_dir`.

    Args:
        evaluation: `EvaluationResult`.
        output_dir: folder, created if needed.
        plots: paths of plots `draw_plots` drew already; None draws them here.

    Returns:
        list of paths: `metrics.json`, `report.md`, then the PNGs.
    """
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    files = draw_plots(evaluation.results, output) if plots is None else list(plots)
    atomic_write_text(output / "report.md", "\n".join(_report_lines(evaluation)))
    atomic_write_text(output / "metrics.json", json.dumps(evaluation.metrics, indent=2) + "\n")
    return [output / "metrics.json", output / "report.md"] + files
