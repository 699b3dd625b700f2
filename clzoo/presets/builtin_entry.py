"""`clzoo push RUN --builtin NAME`: a run -> a built-in preset folder and its `registry.json` entry.

The maintainers' one command for shipping a preset: the folder is built from the run's records
(`build_preset`), and the registry entry (architecture, loss, data, feature size, headline
metrics, the pin of `checksums.json`) is written from the typed run records (`read_run`, the run's
`Recipe`), not by hand.
"""

import json
import re
from pathlib import Path

from clzoo.presets.errors import PresetError

_NAME = re.compile(r"[a-z][a-z0-9_]{2,63}")  # fullmatch: no trailing newline


def check_builtin_name(name, overwrite=False, presets_folder=None):
    """Refuse (`PresetError`) a name that is not `lower_snake_case`, is retired, or (without
    `overwrite`) names a built-in preset already; no Keras needed."""
    from clzoo.presets.names import PRETRAINED, refuse_retired, registry

    folder = Path(presets_folder or PRETRAINED)
    if not _NAME.fullmatch(str(name)):
        raise PresetError(f"--builtin {name!r}: a built-in preset name is 3-64 characters of a-z, 0-9 "
                          "and _, starting with a letter (e.g. supcon_airbench_cifar10)")
    refuse_retired(name)
    if not overwrite and (name in registry(folder) or (folder / name).exists()):
        raise FileExistsError(f"--builtin {name}: a built-in preset of that name exists already; "
                              "pass --overwrite to replace it and its registry.json entry")


def run_fields(run_dir, name, earlier=None):
    """The fields of `name`'s `registry.json` entry that come from the run's records, read (and
    so checked) before anything is written: `read_run`, the typed `Recipe`, and the `clzoo eval`
    report in `eval/` when there is one (the numbers the card shows), else the run's own final
    evaluation. Fields a run does not record (`handle`, `published`, `recipe`: the recipe file in
    `recipes/`) are kept from `earlier`, the entry it replaces; a new one gets
    `hf://clzoo/<name>`, unpublished, and no recipe path.

    Raises:
        RecordError: the run's `metrics.json` (or its report's) is missing or malformed.
        RecipeError: its `recipe.yaml` does not load under today's schema.
    """
    from clzoo.presets.format import public_data_name, run_records

    earlier, run_dir = earlier or {}, Path(run_dir)
    recipe, run, report = run_records(run_dir)
    if run.label_free:  # the built-in registry records the run's own headline kNN
        from clzoo.presets.format import unlabelled_run_refusal

        raise PresetError(unlabelled_run_refusal(run_dir))
    knn, k, probe = run.knn, run.knn_k, run.probe
    if report is not None:
        knn = report.knn or knn
        probe = report.probe if report.probe is not None else probe
    if f"k{k}" not in knn:
        raise PresetError(f"{run_dir}: its kNN top-1 at the headline k={k} is not recorded")
    metrics = {f"knn_top1_k{k}": round(knn[f"k{k}"], 4)}
    if probe is not None:
        metrics["probe_top1"] = round(probe, 4)
    entry = {"handle": earlier.get("handle", f"hf://clzoo/{name}"),
             "published": bool(earlier.get("published", False)), "path": name,
             "architecture": recipe.model.encoder.name, "loss": recipe.loss.name,
             "dataset": public_data_name(recipe.data)}
    if earlier.get("recipe"):
        entry["recipe"] = earlier["recipe"]
    return {**entry, "metrics": metrics}


def registry_entry(fields, folder):
    """`run_fields` completed by the written preset `folder`: its feature size and the SHA-256
    pin of its `checksums.json`."""
    from clzoo.presets.format import sha256

    metadata = json.loads((Path(folder) / "metadata.json").read_text())
    entry = {key: value for key, value in fields.items() if key != "metrics"}
    return {**entry, "feature_dim": int(metadata["feature_dim"]), "metrics": fields["metrics"],
            "checksums_sha256": sha256(Path(folder) / "checksums.json")}


def add_builtin(run_dir, name, overwrite=False, presets_folder=None):
    """Build `run_dir` as the built-in preset `name` and pin it in `registry.json`.

    Args:
        run_dir: a finished `clzoo train` run folder (its `eval/` report, if any, goes on the card).
        name: the preset's name, `lower_snake_case`.
        overwrite: replace a built-in preset of that name and its entry. Defaults to `False`.
        presets_folder: the built-in preset folder. Defaults to clzoo's own
            (`clzoo/presets/builtin`, which `pretrained/` of a source checkout links to).

    Returns:
        `(folder, entry)`: the preset folder written and its registry entry.

    Raises:
        PresetError: a bad or retired name, or an incomplete run.
        FileExistsError: the name is taken and `overwrite` is False.
    """
    from clzoo.file_lock import output_lock
    from clzoo.files import atomic_write_text
    from clzoo.installed import writing_builtin_presets
    from clzoo.presets.format import build_preset
    from clzoo.presets.names import PRETRAINED, registry

    folder = Path(presets_folder or PRETRAINED)
    # one writer of registry.json at a time: a second push --builtin meanwhile is refused (two
    # read-modify-writes at once would drop one entry); the registry is read under the lock
    with writing_builtin_presets(), output_lock(folder / "registry.json", what="registry.json"):
        check_builtin_name(name, overwrite, folder)
        entries = registry(folder)
        fields = run_fields(run_dir, name, entries.get(name))  # every record read before any write
        written = build_preset(run_dir, folder / name, name=name, handle=fields["handle"], builtin=True)
        # the folder first, then its pin: a kill between leaves the old pin, which refuses the new
        # folder until this command runs again (never a pin of a folder that is not there)
        entries[name] = registry_entry(fields, written)
        atomic_write_text(folder / "registry.json", json.dumps(entries, indent=2) + "\n")
    return written, entries[name]
