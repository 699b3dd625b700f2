"""Every measurement of the papers on one encoder and dataset: `metrics.json`, `report.md`, PNG plots.

`evaluate_embeddings` works on features already computed; `evaluate`
embeds a dataset's train and test splits with a frozen encoder first. Which
metric comes from which paper is stated in each function's docstring and in
the written report.
"""

import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from clzoo.data.cache import atomic_write_text
from clzoo.eval import plots
from clzoo.eval.bootstrap import bootstrap_accuracy_difference
from clzoo.eval.calibration import reliability
from clzoo.eval.few_shot import few_shot_errors
from clzoo.eval.geometry import few_shot_error_bound, nearest_class_center_predict, variability
from clzoo.eval.knn import knn_predictions
from clzoo.eval.linear_probe import logistic_regression_probe, sgd_linear_probe
from clzoo.eval.loss_gap import dcl_nscl_gap
from clzoo.eval.noisy_labels import rank_suspected_mislabeled
from clzoo.eval.separation import target_noise_separation
from clzoo.eval.transfer import coarse_labels, coarse_to_fine_transfer

METRICS = ("knn", "ncc", "probe", "calibration", "few_shot", "geometry", "separation",
           "loss_gap", "noisy_labels", "map", "sgd_probe", "coarse_to_fine")
# The SINCERE app. J probe retrains through the encoder for 100 epochs per
# learning rate (hours on a CPU), and coarse-to-fine only means something for an
# encoder trained on coarse labels: both are asked for by name.
DEFAULT_METRICS = tuple(m for m in METRICS if m not in ("sgd_probe", "coarse_to_fine"))


@dataclasses.dataclass
class EvaluationResult:
    """What `evaluate` / `evaluate_embeddings` return.

    Attributes:
        metrics: JSON-ready dict, the content of `metrics.json`.
        correct: `{name: bool (M,)}` per-test-example correctness of each
            classifier (`knn_k20`, `ncc`, `probe`, ...), for `compare`.
        files: paths written (empty without `output_dir`).
    """

    metrics: dict
    correct: dict
    files: list = dataclasses.field(default_factory=list)


def parse_metrics(spec):
    """`"knn,probe"` or a list -> validated tuple of metric names; `"all"` or None -> defaults."""
    if spec is None or spec == "all":
        return DEFAULT_METRICS
    names = [m.strip() for m in (spec.split(",") if isinstance(spec, str) else spec) if m.strip()]
    unknown = [m for m in names if m not in METRICS]
    if unknown or not names:
        raise ValueError(f"Unknown metrics {unknown or spec!r}. Choose from: {', '.join(METRICS)}")
    return tuple(names)


def evaluate_embeddings(train_embeddings, train_labels, test_embeddings, test_labels,
                        metrics=DEFAULT_METRICS, class_names=None, output_dir=None,
                        ks=(1, 5, 20, 200), shots=(10, 100), title="clzoo evaluation",
                        verbose=True, encoder=None, images=None, probe_epochs=100, info=None):
    """Compute the requested metrics on frozen features; write the report when `output_dir` is given.

    Args:
        train_embeddings, test_embeddings: float `(N, D)`, `(M, D)` raw encoder
            features (cosine metrics normalize them; CDNV and probes use them as is).
        train_labels, test_labels: int `(N,)`, `(M,)`.
        metrics: names from `METRICS`. Defaults to `DEFAULT_METRICS`.
        class_names: list of names, index = label.
        output_dir: folder for `metrics.json`, `report.md` and PNGs, or None.
        ks: kNN neighbourhood sizes. Defaults to `(1, 5, 20, 200)`.
        shots: m for the m-shot errors and bound; classes with fewer
            training samples than m skip that m.
        title: report heading.
        verbose: print progress lines.
        encoder, images: the frozen encoder and `(train_images, test_images)`,
            needed only by `"sgd_probe"`.
        probe_epochs: epochs of `"sgd_probe"`. Defaults to `100` (app. J).
        info: extra JSON-ready facts stored in the metrics (data, model path).

    Returns:
        `EvaluationResult`.
    """
    metrics = parse_metrics(metrics)
    train = np.asarray(train_embeddings, dtype=np.float32)
    test = np.asarray(test_embeddings, dtype=np.float32)
    y_train = np.asarray(train_labels).astype(np.int64).reshape(-1)
    y_test = np.asarray(test_labels).astype(np.int64).reshape(-1)
    num_classes = int(max(y_train.max(), y_test.max())) + 1
    out = {"title": title, **(info or {}), "samples": {"train": int(len(y_train)), "test": int(len(y_test))},
           "feature_dim": int(train.shape[1]), "classes": num_classes, "metrics": list(metrics)}
    correct, timings, extras = {}, {}, {}

    def step(name, fn):
        if name not in metrics:
            return
        if verbose:
            print(f"[clzoo eval] {name} ...", flush=True)
        started = time.perf_counter()
        fn()
        timings[name] = round(time.perf_counter() - started, 2)

    def knn():
        predictions = knn_predictions(train, y_train, test, ks, num_classes)
        out["knn"] = {f"k{k}": float(np.mean(p == y_test)) for k, p in predictions.items()}
        correct.update({f"knn_k{k}": p == y_test for k, p in predictions.items()})

    def ncc():
        predicted = nearest_class_center_predict(train, y_train, test)
        out["ncc_accuracy"] = float(np.mean(predicted == y_test))
        correct["ncc"] = predicted == y_test

    def probe():
        result = logistic_regression_probe(train, y_train, test, y_test)
        out["linear_probe"] = {"accuracy": result.accuracy, **result.details}
        correct["probe"] = result.predictions == y_test
        extras["probe"] = result

    def calibration():
        if "probe" not in extras:
            extras["probe"] = logistic_regression_probe(train, y_train, test, y_test)
        rel = reliability(extras["probe"].probabilities, y_test)
        out["calibration"] = {"ece": rel.ece, "bins": len(rel.count),
                              "of": "softmax of the logistic-regression probe"}
        extras["reliability"] = rel

    def few_shot():
        counts = np.bincount(y_train)
        counts = counts[counts > 0]
        table = {}
        for m in shots:
            if m > counts.min():
                continue
            row = {f"{k}_error": v["error"] for k, v in few_shot_errors(
                train, y_train, test, y_test, shots=int(m)).items()}
            if m >= 6:
                row["ncc_error_bound_test"] = few_shot_error_bound(test, y_test, int(m))
            table[str(m)] = row
        out["few_shot"] = table

    def geometry():
        out["geometry"] = {split: variability(x, y)
                           for split, x, y in (("train", train, y_train), ("test", test, y_test))}

    def separation():
        sep = target_noise_separation(train, y_train, test, y_test)
        out["separation"] = {
            "margin": sep.margin, "median_target": float(np.median(sep.target)),
            "median_noise": float(np.median(sep.noise)),
            "per_class_margin": {_name(c, class_names): v for c, v in sep.per_class_margin.items()},
        }
        extras["separation"] = sep

    def loss_gap():
        out["loss_gap"] = {**dcl_nscl_gap(test, y_test), "on": "test embeddings, one view"}

    def noisy_labels():
        ranking = rank_suspected_mislabeled(train, y_train)
        out["noisy_labels"] = {"most_suspicious_train_indices": ranking.order[:20].tolist(),
                               "their_labels": y_train[ranking.order[:20]].tolist(),
                               "suggested_labels": ranking.suggested_labels[ranking.order[:20]].tolist()}

    def sgd_probe():
        if encoder is None or images is None:
            raise ValueError("The 'sgd_probe' metric needs the encoder and images (use `evaluate`).")
        result = sgd_linear_probe(encoder, images[0], y_train, images[1], y_test,
                                  epochs=probe_epochs, verbose=1 if verbose else 0)
        out["sgd_linear_probe"] = {"accuracy": result.accuracy, **result.details}
        correct["sgd_probe"] = result.predictions == y_test

    def coarse_to_fine():
        if class_names is None:
            raise ValueError("The 'coarse_to_fine' metric needs the class names (CIFAR-10's).")
        coarse, names = coarse_labels(np.arange(len(class_names)), class_names)
        out["coarse_to_fine"] = {**coarse_to_fine_transfer(train, y_train, test, y_test, coarse),
                                 "coarse_classes": names}

    # Each step is named after its metric; "map" is drawn by `write_report`.
    for fn in (coarse_to_fine, knn, ncc, probe, calibration, few_shot, geometry, separation,
               loss_gap, noisy_labels, sgd_probe):
        step(fn.__name__, fn)
    out["seconds"] = timings
    result = EvaluationResult(out, correct)
    if output_dir is not None:
        result.files = write_report(result, output_dir, extras, test, y_test, class_names,
                                    draw_map="map" in metrics)
    return result


def _name(c, class_names):
    return class_names[c] if class_names is not None and c < len(class_names) else str(c)


def evaluate(encoder, data, metrics=DEFAULT_METRICS, output_dir=None, verbose=True,
             train=None, **kwargs):
    """Embed `data`'s train and test splits with a frozen `encoder`, then `evaluate_embeddings`.

    Args:
        encoder: `keras.Model`, float images in [0, 1] -> features `(B, D)`.
        data: dataset spec for `clzoo.data.load_split` ("digits", a folder, "tfds:name").
        train: an already loaded training `Split`, to avoid reading it again.
        metrics, output_dir, verbose, **kwargs: as `evaluate_embeddings`.

    Returns:
        `EvaluationResult`.
    """
    from clzoo.data import load_split
    from clzoo.eval.embed import embed

    metrics = parse_metrics(metrics)
    train = train if train is not None else load_split(data, "train")
    test = load_split(data, "test")
    size = encoder.input_shape[1]
    train_x = embed(encoder, train.images, size=size, normalize=False, verbose=verbose)
    test_x = embed(encoder, test.images, size=size, normalize=False, verbose=verbose)
    kwargs.setdefault("title", f"clzoo evaluation on {data}")
    kwargs["info"] = {"data": str(data), **kwargs.get("info", {})}
    result = evaluate_embeddings(train_x, train.labels, test_x, test.labels, metrics,
                                 class_names=train.class_names, output_dir=output_dir,
                                 verbose=verbose, encoder=encoder,
                                 images=(train.images, test.images), **kwargs)
    return result


def _fmt(value):
    return f"{value:.2%}" if isinstance(value, float) and 0 <= value <= 1 else f"{value:.4g}"


def write_report(result, output_dir, extras=None, test=None, y_test=None, class_names=None,
                 draw_map=True):
    """Write `metrics.json`, `report.md` and the plots of `result` into `output_dir`."""
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    extras = extras or {}
    m = result.metrics
    files = []
    lines = [f"# {m['title']}", "",
             f"{m['samples']['train']} training and {m['samples']['test']} test images, "
             f"{m['classes']} classes, {m['feature_dim']}-dimensional encoder features.", ""]
    rows = []
    for k, v in m.get("knn", {}).items():
        rows.append((f"weighted kNN top-1, {k} (cosine; SINCERE app. M)", _fmt(v)))
    if "ncc_accuracy" in m:
        rows.append(("nearest-class-center top-1 (NSCL sec. 3.2)", _fmt(m["ncc_accuracy"])))
    if "linear_probe" in m:
        rows.append(("linear probe top-1 (logistic regression, L-BFGS)", _fmt(m["linear_probe"]["accuracy"])))
    if "sgd_linear_probe" in m:
        p = m["sgd_linear_probe"]
        rows.append((f"linear probe top-1 (SINCERE app. J, lr {p['learning_rate']})", _fmt(p["accuracy"])))
    if "coarse_to_fine" in m:
        c = m["coarse_to_fine"]
        rows.append(("coarse-to-fine: fine-label probe top-1 (Perfectly Balanced Table 2)",
                     _fmt(c["fine_accuracy"])))
        rows.append(("coarse-to-fine: fine top-1 within the true coarse class", _fmt(c["within_coarse_accuracy"])))
    if "calibration" in m:
        rows.append(("expected calibration error of the probe (15 bins)", f"{m['calibration']['ece']:.4f}"))
    if "separation" in m:
        s = m["separation"]
        rows.append(("target-noise margin (SINCERE Table 1)", f"{s['margin']:.4f}"))
        rows.append(("median nearest-target / nearest-noise cosine",
                     f"{s['median_target']:.4f} / {s['median_noise']:.4f}"))
    for split, g in m.get("geometry", {}).items():
        rows.append((f"CDNV / directional CDNV, {split} (NSCL sec. 3.2)",
                     f"{g['cdnv']:.4g} / {g['directional_cdnv']:.4g}"))
    for shots, row in m.get("few_shot", {}).items():
        parts = [f"{k.replace('_error', '')} {v:.2%}" for k, v in row.items() if k.endswith("_error")]
        bound = f"; Prop. 1 bound {row['ncc_error_bound_test']:.3g}" if "ncc_error_bound_test" in row else ""
        rows.append((f"{shots}-shot error, mean of 5 draws (NSCL sec. 4.1)", ", ".join(parts) + bound))
    if "loss_gap" in m:
        g = m["loss_gap"]
        rows.append(("DCL - NSCL gap on test set, t = 1 (NSCL Thm. 1)",
                     f"{g['gap']:.4f} (bound {g['bound']:.4f}; DCL {g['dcl']:.4f}, NSCL {g['nscl']:.4f})"))
    lines += ["| metric | value |", "| --- | --- |"] + [f"| {a} | {b} |" for a, b in rows] + [""]
    if "noisy_labels" in m:
        n = m["noisy_labels"]
        lines += ["Most suspicious training labels (Perfectly Balanced app. E.3.2), index: label -> "
                  "nearest-center label: " + ", ".join(
                      f"{i}: {_name(a, class_names)} -> {_name(b, class_names)}"
                      for i, a, b in zip(n["most_suspicious_train_indices"][:10], n["their_labels"],
                                         n["suggested_labels"])), ""]
    if "separation" in extras:
        files.append(plots.separation_histogram(extras["separation"], output / "separation.png"))
        files.append(plots.per_class_separation(extras["separation"], output / "separation_per_class.png",
                                                class_names))
        lines += ["![Target-noise separation](separation.png)", "",
                  "![Per-class separation](separation_per_class.png)", ""]
    if "reliability" in extras:
        files.append(plots.reliability_diagram(extras["reliability"], output / "reliability.png"))
        lines += ["![Reliability diagram](reliability.png)", ""]
    if draw_map and test is not None:
        files.append(plots.embedding_map(test, y_test, output / "embedding_map.png", class_names))
        lines += ["![t-SNE map of test embeddings](embedding_map.png)", ""]
    lines += ["Seconds per metric: " + ", ".join(f"{k} {v}" for k, v in m.get("seconds", {}).items()), ""]
    atomic_write_text(output / "report.md", "\n".join(lines))
    atomic_write_text(output / "metrics.json", json.dumps(m, indent=2) + "\n")
    return [output / "metrics.json", output / "report.md"] + files


def compare_results(a, b, names=("A", "B"), resamples=1000, seed=0):
    """Bootstrap intervals of `a - b` for every classifier both results scored.

    Args:
        a, b: `EvaluationResult`s on the same test set.

    Returns:
        dict `{classifier: {names[0]: acc, names[1]: acc, "difference", "low", "high", "significant"}}`.
    """
    table = {}
    for key in [k for k in a.correct if k in b.correct]:  # kNN by k, then the others
        interval = bootstrap_accuracy_difference(a.correct[key], b.correct[key], resamples, seed=seed)
        table[key] = {names[0]: float(np.mean(a.correct[key])), names[1]: float(np.mean(b.correct[key])),
                      "difference": interval.difference, "low": interval.low, "high": interval.high,
                      "significant": interval.significant}
    return table
