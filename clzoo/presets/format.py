"""The preset folder: Keras config + weights, preprocessing, provenance, metrics, SHA-256 of every file.

Layout (all written atomically):

    config.json          Keras config of the encoder (no code, no pickle)
    model.weights.h5     its weights
    preprocessing.json   input size, value range, mean / std (applied inside the model)
    metadata.json        loss, recipe, clzoo commit and versions, evaluation metrics
    README.md            Hugging Face model card (see `card.py`)
    checksums.json       SHA-256 of each file above
"""

import contextlib
import datetime
import hashlib
import json
import subprocess
from pathlib import Path

import keras

from clzoo.files import atomic_write, atomic_write_text, replace_folder
from clzoo.presets.errors import PresetError
from clzoo.presets.json_files import MAX_BYTES, MAX_JSON_DEPTH, read_json  # noqa: F401  (re-exported)
from clzoo.version import __version__

PRESET_FILES = ("config.json", "model.weights.h5", "preprocessing.json", "metadata.json", "README.md")
CHECKSUMS = "checksums.json"


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _commit():
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _preprocessing(encoder):
    info = {"image_size": list(encoder.input_shape[1:3]), "channels": int(encoder.input_shape[3]),
            "value_range": [0.0, 1.0], "dtype": "float32",
            "note": "normalization by mean/std happens inside the model"}
    for layer in encoder.layers:
        if isinstance(layer, keras.layers.Normalization):
            info["mean"] = [float(v) for v in keras.ops.convert_to_numpy(layer.mean).reshape(-1)]
            info["std"] = [float(v) ** 0.5 for v in keras.ops.convert_to_numpy(layer.variance).reshape(-1)]
            break
    return info


def training_compute(run, recipe, result, cores=None):
    """What a run cost: images and views seen, fit wall time, CPU-hours (when the core count is known).

    Args:
        run: the run folder (`Path`).
        recipe: its `clzoo.train.recipe.Recipe`.
        result: its `clzoo.eval.records.RunResult`.
        cores: defaults to the run's `environment.json` `cpu_count` (runs before it was
            recorded give None, and no CPU-hours).
    """
    from clzoo.train.builders import views_from_config

    environment = run / "environment.json"
    if cores is None and environment.is_file():
        cores = json.loads(environment.read_text()).get("cpu_count")
    views = views_from_config(recipe.views).views  # the view recipe's own default when unset
    images = int(result.steps or 0) * recipe.training.batch_size
    seconds = float(result.summary.get("fit_seconds", 0.0))
    compute = {"images_seen": images, "views_seen": images * views, "fit_seconds": round(seconds, 1),
               "devices": result.summary.get("devices"), "cores": cores}
    if cores:
        compute["cpu_hours"] = round(seconds * cores / 3600, 2)
    return compute


def training_curve(run, recipe, result, test_images=None):
    """The run's per-epoch history: `{"monitor": ..., "rows": [{epoch, images_seen, loss, knn_top1_k20?,
    <part>_top1?}]}`.

    `knn_top1_k20` is the online monitor's weighted kNN (`eval.monitor_memory`
    training images as memory, `eval.monitor_queries` test images), every
    `eval.monitor_every` epochs.
    """
    path = run / "history.jsonl"
    batch, train_images = recipe.training.batch_size, result.summary.get("train_images")
    per_epoch = int(train_images or 0) // batch * batch
    rows = []
    for line in (path.read_text().splitlines() if path.is_file() else []):
        row = json.loads(line)
        out = {"epoch": row["epoch"], "images_seen": row["epoch"] * per_epoch,
               "loss": round(row["loss"], 4)}
        if "knn_top1_k20" in row:
            out["knn_top1_k20"] = row["knn_top1_k20"]
        # a model part's own top-1 over the epoch's training views (model.online_probe)
        out.update({key: value for key, value in row.items() if key.endswith("_top1")})
        if "partial_epoch_steps" in row:  # cut short by a signal: fewer images, a partial mean
            out["partial_epoch_steps"] = int(row["partial_epoch_steps"])
            out["images_seen"] = (row["epoch"] - 1) * per_epoch + out["partial_epoch_steps"] * batch
        rows.append(out)
    monitor = {k: getattr(recipe.eval, k) for k in ("monitor_every", "monitor_memory", "monitor_queries")}
    # The monitor takes at most this many images: a smaller split gives all of its images.
    for key, available in (("monitor_memory", train_images),
                           ("monitor_queries", test_images)):
        if isinstance(monitor[key], int) and isinstance(available, int):
            monitor[key] = min(monitor[key], available)
    return {"monitor": monitor, "rows": rows}


def public_data_name(spec):
    """The name a preset gives its data: a folder path becomes its folder name (the
    training machine's paths stay out of the card), `tfds:` names and label sets are kept.

    Example:

    >>> from clzoo.presets.format import public_data_name
    >>> public_data_name("/home/me/data/cifar10@cifar2"), public_data_name("tfds:cifar10")
    ('cifar10@cifar2', 'tfds:cifar10')
    """
    base, at, label_set = str(spec).partition("@")
    if base.startswith("tfds:") or base == "digits":
        return str(spec)
    base = base.removeprefix("folder:").rstrip("/\\").replace("\\", "/").split("/")[-1]
    return base + at + label_set


def _without_machine_paths(value, replacements):
    """`value` (nested dicts / lists / strings) with each `(old, new)` text replaced, longest first."""
    if isinstance(value, dict):
        return {k: _without_machine_paths(v, replacements) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_machine_paths(v, replacements) for v in value]
    if isinstance(value, str):
        for old, new in replacements:
            value = value.replace(old, new)
    return value


def data_provenance(spec, train_images=None):
    """`{"source", "train_images", "file_types"}` of a recipe's data: for an image folder the
    image file types of its `train/` split (e.g. `[".jpg"]`: JPEG re-encodings), read now."""
    base = str(spec).partition("@")[0].removeprefix("folder:")
    source = "tfds" if base.startswith("tfds:") else ("digits" if base == "digits" else "image folder")
    out = {"source": source, "train_images": train_images}
    folder = Path(base) / "train"
    if source == "image folder" and folder.is_dir():
        types = {f.suffix.lower() for c in folder.iterdir() if c.is_dir() for f in c.iterdir()}
        out["file_types"] = sorted(types)
    return out


def _machine_paths(run, data, metrics):
    """`(path, public text)` pairs: the run folder, the data folder, the evaluated model files."""
    pairs = [(str(run.resolve()), "<run>"), (str(run), "<run>")]
    data = str(data or "")
    if data:
        base = data.partition("@")[0]
        pairs += [(str(Path(base).resolve()), public_data_name(base)), (base, public_data_name(base))]
    model = (metrics.get("eval") or {}).get("model")
    if isinstance(model, str) and model:
        pairs.append((model, Path(model).name))
    # only texts that are paths (a separator in them): "a" would also match inside "airbench"
    paths = {p for p in pairs if "/" in p[0] or "\\" in p[0]}
    return sorted(paths, key=lambda p: -len(p[0]))


def build_preset(run_dir, out_dir, name=None, license="apache-2.0", cores=None,
                 test_time_flip=False, eval_dir=None, handle=None, builtin=False):
    """Turn a `clzoo train` run folder into a preset folder.

    Reads `encoder.keras`, `recipe.yaml`, `metrics.json` and, when present,
    `eval/metrics.json` (the `clzoo eval` report) from `run_dir`. Paths of the
    machine that trained it (the run folder, the data folder, the evaluated
    model file) are left out of the metadata and card: the data is named by
    `public_data_name`, the run folder is `<run>`.

    Args:
        run_dir: run folder.
        out_dir: preset folder to write, built beside it and swapped in as a whole
            (`clzoo.files.replace_folder`: never a mix of two presets).
        name: preset name in the card and metadata. Defaults to the run folder's name.
        license: SPDX-style license id for the card. Defaults to `"apache-2.0"`.
        cores: CPU cores the run trained on, for the card's CPU-hours. Defaults to
            the run's recorded `cpu_count` (None for runs that did not record it).
        test_time_flip: ship `clzoo.models.flip_averaged(encoder)` (features averaged
            over the image and its mirror image) instead of the bare encoder.
            Defaults to `False`.
        eval_dir: the `clzoo eval` report whose metrics the card shows. Defaults to
            `<run>/eval`; with `test_time_flip`, pass the report of the wrapped
            encoder (`clzoo eval` of a first build of this preset).
        handle: `"hf://owner/repo"` the preset will be pushed to; the card's
            usage example loads it from there. Defaults to `None` (a placeholder).
        builtin: `out_dir` is in clzoo's built-in preset folder (`pretrained/` of a source
            checkout), written on purpose; every other folder of an installed package is
            refused (`clzoo.installed`). Defaults to `False`.

    Returns:
        `Path` of `out_dir`.

    Raises:
        PresetError: when the run lacks `encoder.keras`, `recipe.yaml` or `metrics.json`, one of
            them does not read as its typed record (`load_recipe`, `read_run`, `read_eval`), or
            the run trained an auxiliary cross-entropy head and `name` does not say so (`aux_ce`).
    """

    run = Path(run_dir)
    for needed in ("encoder.keras", "recipe.yaml", "metrics.json"):
        if not (run / needed).is_file():
            raise PresetError(f"{run} is not a complete clzoo run: {needed} is missing.")
    recipe, result, report = _preset_records(run, eval_dir)  # before the model: refused at once
    # a run whose recipe sets model.test_time saved the test-time averaged encoder itself
    # (clzoo.train.runner), and measured its metrics on it
    shipped_by_run = recipe.model.test_time is not None
    if test_time_flip and shipped_by_run:
        raise PresetError(f"{run}'s encoder.keras already averages its test-time views "
                          "(model.test_time in its recipe): build it without test_time_flip")
    from clzoo.saving import load_model

    encoder = load_model(run / "encoder.keras")
    encoder = getattr(encoder, "encoder", encoder)
    if test_time_flip:
        from clzoo.models import flip_averaged

        encoder = flip_averaged(encoder, name=f"{encoder.name}_flip_averaged")
    metrics = {"train": result.to_summary(), **({"eval": report.metrics} if report else {})}
    name = name or run.name
    _name_says_auxiliary(name, recipe.model.auxiliary and recipe.model.auxiliary.weight)
    stored = recipe.to_dict()
    metadata = {
        "name": name, "created": datetime.date.today().isoformat(),
        "clzoo_version": __version__, "keras_version": keras.__version__,
        "commit": _commit(), "loss": stored["loss"], "architecture": recipe.model.encoder.name,
        "dataset": recipe.data, "recipe": stored, "metrics": metrics,
        "feature_dim": int(encoder.output_shape[-1]),
        "test_time_flip": bool(test_time_flip) or shipped_by_run,
        "test_time_translate": recipe.model.test_time.translate if shipped_by_run else 0,
        "test_time_measured": shipped_by_run,
        "compute": training_compute(run, recipe, result, cores),
        "data_provenance": data_provenance(recipe.data, result.summary.get("train_images")),
        "curve": training_curve(run, recipe, result, (report.metrics if report else {})
                                .get("samples", {}).get("test")),
    }
    metadata = _without_machine_paths(metadata, _machine_paths(run, recipe.data, metrics))
    from clzoo.installed import writing_builtin_presets

    with writing_builtin_presets() if builtin else contextlib.nullcontext():
        return replace_folder(out_dir, lambda staging: _write_preset(staging, encoder, metadata,
                                                                     license, handle))


def run_records(run_dir, eval_dir=None):
    """The typed records of a finished `clzoo train` run: `(Recipe, RunResult, EvalReport or None)`.

    Args:
        run_dir: the run folder (`recipe.yaml`, `metrics.json`, `history.jsonl`).
        eval_dir: its `clzoo eval` report. Defaults to `<run_dir>/eval`; None is returned for the
            report where that folder has no `metrics.json`.

    Raises:
        clzoo.train.RecipeError: `recipe.yaml` does not load under today's schema.
        clzoo.eval.records.RecordError: `metrics.json` (or the report's) is missing or malformed.
    """
    from clzoo.eval.records import read_eval, read_run
    from clzoo.train.recipe import load_recipe

    run = Path(run_dir)
    report_dir = Path(eval_dir) if eval_dir is not None else run / "eval"
    recipe, result = load_recipe(run / "recipe.yaml", stored=True), read_run(run)
    return recipe, result, read_eval(report_dir) if (report_dir / "metrics.json").is_file() else None


def _preset_records(run, eval_dir):
    """`run_records`, its errors as one `PresetError` naming the run."""
    from clzoo.eval.records import RecordError
    from clzoo.train.recipe import RecipeError

    try:
        records = run_records(run, eval_dir)
    except (RecipeError, RecordError) as error:
        raise PresetError(f"{run} cannot become a preset: {error}") from None
    if records[1].label_free and records[2] is None:
        raise PresetError(unlabelled_run_refusal(run))
    return records


def unlabelled_run_refusal(run):
    """The one line for publishing a run trained on an unlabelled folder without a labelled report."""
    return (f"{run} trained on an unlabelled folder: a preset's card gives kNN and probe figures, "
            f"and it has none. Evaluate it on a labelled folder first: clzoo eval {run} --data "
            f"FOLDER --output {Path(run) / 'eval'}")


def _name_says_auxiliary(name, weight):
    """A preset whose encoder a cross-entropy head also trained is named for it (issue 42)."""
    if weight and "aux_ce" not in name:
        raise PresetError(f"the run trained an auxiliary cross-entropy head (model.auxiliary."
                          f"weight = {weight:g}): the preset's name must "
                          f"say so, e.g. {name}_aux_ce (got {name!r})")


def _write_preset(out, encoder, metadata, license, handle):
    """The preset's files in `out` (a staging folder, swapped in as a whole by `replace_folder`)."""
    from clzoo.presets.card import model_card

    atomic_write_text(out / "config.json", json.dumps(keras.saving.serialize_keras_object(encoder),
                                                      indent=1) + "\n")
    atomic_write(out / "model.weights.h5", lambda tmp: encoder.save_weights(tmp), suffix=".weights.h5")
    atomic_write_text(out / "preprocessing.json", json.dumps(_preprocessing(encoder), indent=2) + "\n")
    atomic_write_text(out / "metadata.json", json.dumps(metadata, indent=2) + "\n")
    atomic_write_text(out / "README.md", model_card(metadata, license=license, handle=handle))
    checksums = {f: sha256(out / f) for f in PRESET_FILES}
    atomic_write_text(out / CHECKSUMS, json.dumps(checksums, indent=2) + "\n")


_SHA256_CHARS = frozenset("0123456789abcdef")


def _inside(path, root):
    try:
        path.resolve(strict=True).relative_to(Path(root).resolve())
        return True
    except (OSError, ValueError, RuntimeError):  # dangling link, outside, symlink loop
        return False


def _check_file(folder, name, links_within):
    """The preset file `name`: a regular file (or a link resolving inside `links_within`) under its cap."""
    path = folder / name
    if path.is_symlink() and (links_within is None or not _inside(path, links_within)):
        raise PresetError(f"Preset file {name} in {folder} is a symbolic link"
                          + ("" if links_within is None else " leading outside the download cache")
                          + "; refusing to follow it.")
    if not path.is_file():
        raise PresetError(f"Preset file {name} is missing from {folder}.")
    size = path.stat().st_size
    if size > MAX_BYTES[name]:
        raise PresetError(f"{path} is {size} bytes, more than the {MAX_BYTES[name]} allowed.")
    return path


def _checked_listing(listing, checksums):
    """`checksums.json` may name only the preset's own files, each with a SHA-256 hex digest."""
    for name, digest in checksums.items():
        if name not in PRESET_FILES:
            raise PresetError(
                f"{listing} names {name!r}, which is not a preset file (expected only "
                f"{', '.join(PRESET_FILES)}; no paths, '..', absolute names or extra files).")
        if not (isinstance(digest, str) and len(digest) == 64 and set(digest) <= _SHA256_CHARS):
            raise PresetError(f"{listing} gives {name} a checksum that is not a SHA-256 hex digest: "
                              f"{str(digest)[:80]!r}")
    for required in PRESET_FILES:
        if required not in checksums:
            raise PresetError(f"{listing} lists no checksum for {required}.")


def verify_preset(folder, expected_checksums_sha256=None, links_within=None):
    """Check that every preset file is present and matches `checksums.json`.

    `checksums.json` must be a JSON object naming exactly the preset files
    (`PRESET_FILES`), never a path, `..`, an absolute name or another file;
    every file must be a regular file under its size cap (`MAX_BYTES`).

    Args:
        folder: preset folder.
        expected_checksums_sha256: SHA-256 that `checksums.json` itself must
            have (built-in presets pin it in the registry).
        links_within: None (no symbolic links at all), or a folder that
            links may resolve into (the Hugging Face cache of the repo, whose
            snapshot files are links to its blobs).

    Raises:
        PresetError: naming the missing, unexpected, oversized, linked,
            malformed or modified file.
    """
    folder = Path(folder)
    listing = folder / CHECKSUMS
    if not listing.exists() and not listing.is_symlink():
        raise PresetError(f"{folder} is not a clzoo preset: {CHECKSUMS} is missing.")
    _check_file(folder, CHECKSUMS, links_within)  # no foreign link, under its cap before hashing
    if expected_checksums_sha256 and sha256(listing) != expected_checksums_sha256:
        raise PresetError(f"{listing} does not match the registry's pinned SHA-256.")
    checksums = read_json(listing)
    _checked_listing(listing, checksums)
    for name, expected in checksums.items():
        if sha256(_check_file(folder, name, links_within)) != expected:
            raise PresetError(
                f"Preset file {name} in {folder} does not match its SHA-256 "
                "(modified, truncated or corrupted); refusing to load it."
            )
    return checksums
