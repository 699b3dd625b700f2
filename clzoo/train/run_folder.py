"""A run folder: where each file of a run lives, whether it may start or resume, its metadata."""

import contextlib
import hashlib
import itertools
import json
from pathlib import Path

import yaml

from clzoo.file_lock import output_lock
from clzoo.files import SYSTEM_FILES, atomic_write_text, write_json
from clzoo.train import run_lock
from clzoo.train.config_diff import differences, short
from clzoo.train.recipe_yaml import dump_yaml

# Every name a run writes at the top of its folder; anything else there is the user's.
RUN_FILES = frozenset({"recipe.yaml", "recipe.sha256", "environment.json", "checkpoint.keras",
                       "history.csv", "history.jsonl", "steps.jsonl", "tensorboard", "encoder.keras",
                       "eval", "metrics.json", run_lock.LOCK_NAME,
                       ".eval.lock"})  # the eval report's writer lock (clzoo.file_lock), held by the run


def _ours(name):
    """A run's file, or the temporary file of one (`.<name>.XXXXXXXX.tmp...`, `atomic_write`)."""
    return name in RUN_FILES or any(name.startswith(f".{known}.") and ".tmp" in name
                                    for known in RUN_FILES)


def _with_defaults(saved):
    """A saved recipe as this version validates it (new keys at their defaults), else as saved."""
    from clzoo.train.recipe import RecipeError, validate_recipe

    try:
        return validate_recipe(saved, stored=True).to_dict()
    except RecipeError:
        return saved


class RunFolder:
    """Paths and guards of one `clzoo train` output folder.

    A run is *finished* once `metrics.json` exists (written last; deleting the
    checkpoint afterwards does not make it resumable), *started* once
    `checkpoint.keras` exists. Every file is written atomically; one process
    writes at a time (`owned`).
    """

    def __init__(self, path):
        self.path = Path(path)

    def __truediv__(self, name):
        return self.path / name

    @property
    def checkpoint(self):
        return self.path / "checkpoint.keras"

    @property
    def metrics(self):
        return self.path / "metrics.json"

    def state(self):
        """`"finished"`, `"started"` or `"new"`."""
        if self.metrics.is_file():
            return "finished"
        return "started" if self.checkpoint.is_file() else "new"

    def guard(self, recipe, resume):
        """Check that the run may start (or resume) here; returns `state()`.

        Raises:
            FileExistsError: the folder holds a run and `resume` is False, or
                holds files that no clzoo run wrote (they are never replaced).
            ValueError: resuming with a recipe other than the saved one.
        """
        state = self.state()
        foreign = self._foreign()
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise FileExistsError(f"{self.path} holds files that are not a clzoo run's ({shown}); "
                                  "clzoo train writes only into a new or empty folder or its own "
                                  "run: choose another --output")
        if state != "new" and not resume:
            raise FileExistsError(
                f"{self.path} already holds a run (checkpoint.keras); pass --resume to continue "
                "it or choose another --output.")
        if resume and (state != "new" or (self.path / "recipe.sha256").is_file()):
            self._check_saved_recipe(recipe)
        return state

    def _foreign(self):
        """Sorted names in a folder that holds no run and that a run would not have written."""
        if not self.path.is_dir() or self._is_run():
            return []
        # Without a run's stamp, a recipe.yaml is the user's (a run writes its stamp first).
        return sorted(p.name for p in self.path.iterdir() if p.name not in SYSTEM_FILES
                      and (not _ours(p.name) or p.name == "recipe.yaml"))

    def _is_run(self):
        """A run wrote here: its stamp, or (folders from before the stamp) its checkpoint or metrics."""
        return any((self.path / name).is_file()
                   for name in ("recipe.sha256", "checkpoint.keras", "metrics.json"))

    def _check_saved_recipe(self, recipe):
        """Resuming: `recipe.yaml` still holds the recipe the run started with, and `recipe` is it."""
        saved, stamp = self.path / "recipe.yaml", self.path / "recipe.sha256"
        if not saved.is_file():
            if stamp.is_file() and stamp.read_text().split()[:1] != [fingerprint(recipe.to_dict())]:
                raise ValueError(f"Cannot resume {self.path}: recipe.yaml is missing and the recipe "
                                 "given is not the one the run started with (recipe.sha256). "
                                 "Restore recipe.yaml, or train a new run.")
            return
        old = yaml.safe_load(saved.read_text()) or {}
        if stamp.is_file() and stamp.read_text().split()[:1] != [fingerprint(old)]:
            raise ValueError(f"Cannot resume {self.path}: its recipe.yaml was edited after the run "
                             "started (recipe.sha256 holds the fingerprint of the recipe it started "
                             "with). A run keeps its recipe: restore the file, or train a new run.")
        new = recipe.to_dict()
        old = _with_defaults(old)  # keys added to the schema since the run started
        changed = [k for k in sorted(set(old) | set(new))
                   if old.get(k) != new.get(k) and k not in SWITCHABLE_ON_RESUME]
        if changed:
            shown = "; ".join(f"{path}: {short(a)} -> {short(b)}" for path, a, b in itertools.islice(
                differences({k: old.get(k) for k in changed}, {k: new.get(k) for k in changed}), 4))
            raise ValueError(f"Cannot resume {self.path}: the recipe differs from the one it "
                             f"started with in {changed} ({shown}). Resume with the saved recipe.yaml.")

    def prepare(self, recipe, environment, resuming=False):
        """Create the folder, drop temporary files of a killed writer, write the metadata.

        A new run writes `recipe.yaml` and its fingerprint `recipe.sha256` (checked
        on resume); a resumed run keeps both and rewrites `environment.json` only.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        for stale in self.path.glob(".*.tmp*"):
            if _ours(stale.name) and stale.is_file():
                stale.unlink()
        if not resuming or not (self.path / "recipe.yaml").is_file():
            text = dump_yaml(recipe.to_dict())  # strings stay strings: `name: 1e-3` resumes
            # The stamp first: it marks the folder as a run's before recipe.yaml is written.
            atomic_write_text(self.path / "recipe.sha256",
                              f"{fingerprint(yaml.safe_load(text))}  resolved recipe.yaml\n")
            atomic_write_text(self.path / "recipe.yaml", text)
        write_json(self.path / "environment.json", environment)

    @contextlib.contextmanager
    def owned(self, enabled=True):
        """Context manager: this process is the folder's one writer (`run_lock.owned`), and of
        its `eval` report, so a `clzoo eval` of the run meanwhile is refused rather than taking
        the report's lock from the run's own final evaluation."""
        with (run_lock.owned(self.path, keep_if=(self.path / "recipe.sha256").is_file,
                             enabled=enabled),
              output_lock(self.path / "eval") if enabled else contextlib.nullcontext()):
            yield

    def write_metrics(self, metrics):
        write_json(self.metrics, metrics)

    def read_metrics(self):
        return json.loads(self.metrics.read_text())

    def truncate_csv(self, epochs):
        """Drop `history.csv` rows of epochs past the checkpoint's `epochs` (numbered from 1): the CSV
        is rebuilt from `history.jsonl` (already truncated, and what it mirrors), so a damaged CSV
        row cannot stop a resume; without the JSON lines, its rows are cut, a damaged one named."""
        path, history = self.path / "history.csv", self.path / "history.jsonl"
        if history.exists():
            from clzoo.train.history import write_history_csv

            write_history_csv(path, history)
            return
        if not path.exists():
            return
        lines = path.read_text().splitlines()
        rows = [line for line in lines[1:] if line]
        bad = next((row for row in rows if not row.split(",")[0].strip().isdigit()), None)
        if bad is not None:
            raise ValueError(f"{path} is damaged (a row that is not an epoch's: {bad[:60]!r}); "
                             "delete that row, or the file, and resume again")
        shift = 1 if rows and rows[0].split(",")[0] == "0" else 0  # written 0-based until 2026-11-27
        rows = [f"{int(row.split(',')[0]) + shift},{row.partition(',')[2]}" for row in rows]
        kept = lines[:1] + [row for row in rows if int(row.split(",")[0]) <= epochs]
        atomic_write_text(path, "".join(line + "\n" for line in kept))


# Keys a resumed run may change: where the images live gives the same batches (clzoo.data.streams);
# the description is text for people (`clzoo list recipes`), read by nothing that trains.
SWITCHABLE_ON_RESUME = ("data_loading", "description")


def fingerprint(recipe):
    """SHA-256 of a recipe dict as canonical JSON: comments and key order do not change it."""
    text = json.dumps(recipe, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()

