"""The papers' claims where training has finished: a resumable, convergence-aware grid -> RESULTS.md.

    python benchmarks/reproduce.py --only sincere_cifar2 supcon_cifar2   # Table 1 on CIFAR-2
    python benchmarks/reproduce.py --list             # the cells, their stages and which are finished
    python benchmarks/reproduce.py --only sincere supcon --seeds 0
    python benchmarks/reproduce.py --report-only      # RESULTS.md from the saved cells

A cell (configuration x seed) trains in *stages*: each stage is one `clzoo train` of the
configuration's recipe for a budget of epochs from its ladder (a cosine schedule ends at its
budget, so a larger budget is a new run, not a continuation). After each stage the rule of
`benchmarks/convergence.py` reads the loss curve; the cell stops at the first converged budget,
or at the last one ("not converged at cap"). A budget that left another seed of the same
configuration unconverged is skipped. Every stage writes `stage.json` last, atomically, and a
stage cut short continues with `clzoo train --resume`, so the grid runs across sittings without
redoing finished stages. The claims, the paper's figures and the statistics live in
`benchmarks/reproduce_report.py`.
"""

import argparse
import dataclasses
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reproduce_margins as margins  # noqa: E402  (benchmarks/reproduce_margins.py)
import reproduce_plots  # noqa: E402  (benchmarks/reproduce_plots.py)
import reproduce_report  # noqa: E402  (benchmarks/reproduce_report.py)
from convergence import check_convergence, rechecked  # noqa: E402  (benchmarks/convergence.py)
from data_default import default_cifar10  # noqa: E402  (benchmarks/data_default.py)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
CELLS_JSON = ROOT / "benchmarks" / "reproduce_cells.json"
# The claims drawn (loss curves and margin histograms), each to its PNG beside RESULTS.md.
PLOTS = {("sincere_cifar2", "supcon_cifar2"): ROOT / "benchmarks" / "reproduce_cifar2.png",
         ("sincere", "supcon"): ROOT / "benchmarks" / "reproduce_subset.png"}
SUBSET_MARKER = ".clzoo-subset.json"  # a dotfile: never taken for a class
FINE_METRICS = "[knn, ncc, probe, separation, few_shot, loss_gap]"
SPACES = ("projection", "encoder")
OUTPUTS_OF = "outputs_of.txt"  # in a cell folder: the stage its eval / embed outputs come from


@dataclasses.dataclass(frozen=True)
class Config:
    """One column of the grid: a recipe, its overrides and its extra evaluations.

    `data` is "fine" (10 classes) or "coarse" (CIFAR10-Coarse labels: animals vs vehicles) on
    the class-balanced subset with the `Scale`'s batch, or "cifar2" (SINCERE's cat vs dog: all
    10,000 training and 2,000 test images of those classes) with the recipe's own batch; `evals` are
    `(folder, --space, data, metrics)` runs of `clzoo eval` after the last stage; `embed` also
    writes both spaces' embeddings for the target-noise margins with intervals.
    """

    key: str
    label: str
    recipe: str
    data: str = "fine"
    overrides: tuple = ()
    evals: tuple = ()
    embed: bool = False

    @property
    def recipe_name(self):
        """The `name:` of `recipe`, which a run folder's `recipe.yaml` keeps."""
        return recipe_name(ROOT / self.recipe)


_ON_FINE = (("fine", "encoder", "fine", "knn,probe,coarse_to_fine"),)
# Every configuration trains on an airbench_half `_fast` recipe: they reached a flat loss curve in
# 160 epochs on CIFAR-2 (all six cells) and for SINCERE and SupCon on the subset, where ResNet-20's
# `_small` recipes had not at 100 (`Scale.overrides` turns their test-time flip off).
_CIFAR2 = ("eval.metrics=[knn, ncc, probe, separation]",)
_FINE = (f"eval.metrics={FINE_METRICS}",)
CONFIGS = {c.key: c for c in (
    Config("sincere_cifar2", "SINCERE on CIFAR-2", "recipes/sincere/cifar10_fast.yaml",
           data="cifar2", overrides=(*_CIFAR2, "eval.baselines=[raw_pixels, random_init]"),
           embed=True),
    Config("supcon_cifar2", "SupCon on CIFAR-2", "recipes/supcon/cifar10_fast.yaml",
           data="cifar2", overrides=_CIFAR2, embed=True),
    Config("sincere", "SINCERE", "recipes/sincere/cifar10_fast.yaml",
           overrides=(*_FINE, "eval.baselines=[raw_pixels, random_init]"), embed=True),
    Config("supcon", "SupCon", "recipes/supcon/cifar10_fast.yaml", overrides=_FINE, embed=True),
    Config("supinfonce", "eps-SupInfoNCE (eps 0.25)", "recipes/supinfonce/cifar10_fast.yaml",
           overrides=_FINE, embed=True),
    Config("nscl", "NSCL", "recipes/nscl/cifar10_fast.yaml", overrides=_FINE),
    Config("dcl", "DCL", "recipes/dcl/cifar10_fast.yaml", overrides=_FINE),
    Config("spread_coarse", "L_spread on CIFAR10-Coarse", "recipes/spread/cifar10_coarse_fast.yaml",
           data="coarse", overrides=("eval.metrics=[knn]",), evals=_ON_FINE),
    Config("supcon_coarse", "SupCon on CIFAR10-Coarse", "recipes/supcon/cifar10_coarse_fast.yaml",
           data="coarse", overrides=("eval.metrics=[knn]",), evals=_ON_FINE),
    Config("soft_infonce", "soft-target InfoNCE", "recipes/soft_target/cifar10_infonce_fast.yaml",
           overrides=("eval.metrics=[knn, probe]",)),
    Config("soft_ce", "soft-target cross-entropy",
           "recipes/soft_target/cifar10_cross_entropy_fast.yaml",
           overrides=("eval.metrics=[knn, probe]",)),
)}


@dataclasses.dataclass(frozen=True)
class Scale:
    """The CPU-scale setting: the subset cells' size and batch (CIFAR-2 keeps its recipes'), and
    the ladder every cell climbs."""

    train_per_class: int = 400
    test_per_class: int = 200
    batch_size: int = 128
    # Every configuration's ladder; 320 since soft-target InfoNCE's seed 0 was still falling
    # (2.02% of its drop) at 160.
    budgets: tuple = (40, 80, 160, 320)
    max_epochs: int = None  # this sitting climbs no ladder past it (a cell there is "at cap")

    def overrides(self, config):
        # Encoders are measured bare (the paper's margins), not averaged with their mirror image.
        common = ("eval.monitor_every=0", "eval.baselines=[]", "model.test_time_flip=false")
        if config.data == "cifar2":
            return common
        return (f"training.batch_size={self.batch_size}", *common,
                "training.checkpoint_every_steps=null")

    def ladder(self):
        """The budgets this sitting may train: `budgets` up to `max_epochs`."""
        return tuple(b for b in self.budgets if self.max_epochs is None or b <= self.max_epochs)


def make_subset(source, dest, train_per_class, test_per_class):
    """Copy the first `n` files (sorted names) of every class of `source`'s train / test into `dest`.

    Idempotent: a finished subset holds a marker written last, so a copy cut short is redone.
    Raises `SystemExit` with one line when `source` is not an image folder with both splits.
    """
    source, dest = Path(source), Path(dest)
    spec = {"source": str(source.resolve()), "train_per_class": train_per_class,
            "test_per_class": test_per_class}
    marker = dest / SUBSET_MARKER
    if marker.exists() and json.loads(marker.read_text()) == spec:
        return dest
    for split in ("train", "test"):
        if not (source / split).is_dir():
            sys.exit(f"error: --data {source} has no {split}/ folder (expected CIFAR-10 as an image "
                     "folder <folder>/{train,test}/<class>/; set --data or $CLZOO_CIFAR10)")
    shutil.rmtree(dest, ignore_errors=True)
    for split, n in (("train", train_per_class), ("test", test_per_class)):
        for cls in sorted(p for p in (source / split).iterdir() if p.is_dir()
                          and not p.name.startswith(".")):
            files = sorted(f for f in cls.iterdir() if f.is_file() and not f.name.startswith("."))
            if len(files) < n:
                sys.exit(f"error: {cls} has {len(files)} images, fewer than the {n} asked for")
            (dest / split / cls.name).mkdir(parents=True)
            for f in files[:n]:
                shutil.copyfile(f, dest / split / cls.name / f.name)
    marker.write_text(json.dumps(spec))
    return dest


def _subset_name(scale):
    return f"cifar10_{scale.train_per_class}x{scale.test_per_class}"


def _data_spec(config, subset, source, kind=None):
    kind = kind or config.data
    if kind == "cifar2":
        return f"{source}@cifar2"
    return f"{subset}@cifar10_coarse" if kind == "coarse" else str(subset)


def _clzoo(args, log):
    """Run `clzoo <args>` with its output in `log`; raise with the log's tail when it fails."""
    with open(log, "a") as out:
        out.write(f"$ clzoo {' '.join(args)}\n")
        out.flush()
        code = subprocess.call(["clzoo", *args], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    if code:
        tail = Path(log).read_text().splitlines()[-5:]
        raise RuntimeError(f"clzoo {args[0]} failed (exit {code}); end of {log}:\n" + "\n".join(tail))


def train_command(config, seed, scale, data, run, epochs):
    """The `clzoo train` arguments of one stage (also printed in RESULTS.md); `data` is a spec."""
    sets = {}  # one --set per key; the configuration's value wins over the scale's
    for item in (f"seed={seed}", f"training.epochs={epochs}", *scale.overrides(config),
                 *config.overrides):
        sets[item.split("=", 1)[0]] = item
    args = ["train", config.recipe, "--data", data, "--output", str(run), "--quiet"]
    for item in sets.values():
        args += ["--set", item]
    return args


def _atomic_json(path, value):
    reproduce_report.atomic_write(path, json.dumps(value, indent=1))


def run_stage(config, seed, scale, data, folder, epochs):
    """Train (or resume, or read) one budget of a cell; return its `stage.json` record."""
    stage = Path(folder) / f"e{epochs}"
    done = stage / "stage.json"
    if done.exists():
        return _saved(done)
    stage.mkdir(parents=True, exist_ok=True)
    run = stage / "run"
    if not (run / "metrics.json").exists():
        resume = (run / "checkpoint.keras").exists()
        _clzoo(["train", "--resume", str(run), "--quiet"] if resume
               else train_command(config, seed, scale, data, run, epochs), stage / "log.txt")
    losses = _losses(run)
    status = check_convergence(losses)
    record = {"epochs": epochs, "converged": status.converged, "window_share": status.ratio,
              "losses": losses, "wall_seconds": round(_json(run / "metrics.json")["wall_seconds"], 1)}
    _atomic_json(done, record)
    return record


def _failed_elsewhere(folder, epochs):
    """A sibling seed of the same configuration finished `epochs` without converging."""
    stem = Path(folder).name.rsplit("_seed", 1)[0]
    for sibling in Path(folder).parent.glob(f"{stem}_seed*/e{epochs}/stage.json"):
        if sibling.parent.parent != Path(folder) and not _saved(sibling)["converged"]:
            return True
    return False


def run_stages(config, seed, scale, data, folder):
    """Climb the budget ladder until a stage converges or the cap; return the stages run."""
    ladder, stages = scale.ladder(), []
    for epochs in ladder:
        if epochs != ladder[-1] and _failed_elsewhere(folder, epochs) and not (
                Path(folder) / f"e{epochs}" / "run").exists():
            continue
        stages.append(run_stage(config, seed, scale, data, folder, epochs))
        if stages[-1]["converged"]:
            break
    return stages


def run_cell(config, seed, scale, paths, folder):
    """Train and evaluate one cell unless `cell.json` says it is finished; return its numbers.

    `paths` is `(subset folder, full CIFAR-10 source folder)`. Raises `RuntimeError` before any
    work when `folder` holds stages of another recipe than the configuration's.
    """
    folder = Path(folder)
    _check_recipe(config, folder)
    done = folder / "cell.json"
    if done.exists():
        cell = _saved(done)
        if cell["converged"] or cell["epochs"] >= scale.ladder()[-1]:
            return _completed(config, cell, paths, folder)  # a cell at a sitting's cap climbs on
    folder.mkdir(parents=True, exist_ok=True)
    stages = run_stages(config, seed, scale, _data_spec(config, *paths), folder)
    final = stages[-1]
    run = folder / f"e{final['epochs']}" / "run"
    _evaluate(config, folder, run, paths)
    numbers = collect(folder, run, config)
    numbers.update(config=config.key, recipe=recipe_name(run / "recipe.yaml"), seed=seed,
                   epochs=final["epochs"],
                   converged=final["converged"], window_share=final["window_share"],
                   loss_curve=final["losses"], budgets=[s["epochs"] for s in stages],
                   wall_seconds=round(sum(s["wall_seconds"] for s in stages), 1))
    _atomic_json(done, numbers)
    return numbers


def _completed(config, cell, paths, folder):
    """A finished cell with any evaluation its configuration asks for now and it lacks measured.

    (Embeddings were added to the subset's SINCERE, SupCon and eps-SupInfoNCE cells after
    some had trained.) Outputs of another stage than the cell's last (`outputs_of.txt`) are
    measured again; a cell whose run folder is gone is returned as saved.
    """
    run = folder / f"e{cell['epochs']}" / "run"
    current = _measured_stage(folder) == run.parent.name
    if run.exists() and not (current and all(path.exists() for path in _outputs(config, folder))):
        _evaluate(config, folder, run, paths)
        cell = {**cell, **collect(folder, run, config)}
        _atomic_json(folder / "cell.json", cell)
    return cell


def _outputs(config, folder):
    return ([folder / name / "metrics.json" for name, *_ in config.evals]
            + [folder / f"{space}.npz" for space in SPACES if config.embed])


def _measured_stage(folder):
    """The stage (`"e160"`) the cell's eval / embed outputs were measured on, or None."""
    marker = Path(folder) / OUTPUTS_OF
    return marker.read_text() if marker.exists() else None


def _check_recipe(config, folder):
    want = config.recipe_name
    for saved in sorted(Path(folder).glob("e*/run/recipe.yaml")):
        if (got := recipe_name(saved)) != want:
            raise RuntimeError(f"{folder} holds a stage trained with recipe {got} ({saved}); "
                               f"{config.key} now trains with {want}: move that folder or pass "
                               "another --runs")


def _evaluate(config, folder, run, paths):
    """The configuration's `clzoo eval` / `clzoo embed` outputs of `run`, the cell's last stage.

    Outputs of an earlier last stage (`outputs_of.txt` names it; a cell that climbed the ladder
    in another sitting) are measured again.
    """
    log = folder / "log.txt"
    if _measured_stage(folder) != run.parent.name:
        for name, *_ in config.evals:
            shutil.rmtree(folder / name, ignore_errors=True)
        for space in SPACES:
            (folder / f"{space}.npz").unlink(missing_ok=True)
        reproduce_report.atomic_write(folder / OUTPUTS_OF, run.parent.name)
    for name, space, kind, metrics in config.evals:
        if not (folder / name / "metrics.json").exists():
            _clzoo(["eval", str(run), "--data", _data_spec(config, *paths, kind), "--space", space,
                    "--metrics", metrics, "--output", str(folder / name), "--overwrite"], log)
    for space in SPACES if config.embed else ():
        if not (folder / f"{space}.npz").exists():
            _clzoo(["embed", str(run), "--data", _data_spec(config, *paths), "--split", "both",
                    "--space", space, "--output", str(folder / f"{space}.npz")], log)


def recipe_name(path):
    """A recipe YAML's `name:` (a run folder's `recipe.yaml` keeps the recipe it trained with)."""
    path = Path(path)
    return (yaml.safe_load(path.read_text()) or {}).get("name") if path.exists() else None


def _finished(folder):
    """A finished cell's numbers, with the recipe its last stage trained with.

    The recipe is read from the run when `cell.json` predates the field.
    """
    cell = _json(Path(folder) / "cell.json")
    if cell.get("recipe") is None:
        cell["recipe"] = recipe_name(Path(folder) / f"e{cell.get('epochs')}" / "run" / "recipe.yaml")
    return cell


def _losses(run):
    from clzoo.eval.records import read_run  # noqa: PLC0415 (--list reads no run)

    return list(read_run(run).loss_curve)


def collect(folder, run, config):
    """The numbers every claim reads, from a finished cell's run, eval folders and embeddings."""
    from clzoo.eval.records import read_eval, read_run  # noqa: PLC0415

    record, report = read_run(run), read_eval(run / "eval")
    out = {"final_loss": record.loss_curve[-1], "knn_k20": report.knn["k20"]}
    for key in ("classifier_top1", "classifier_ece"):
        if getattr(record, key) is not None:
            out[key] = getattr(record, key)
    for name, baseline in record.baselines.items():
        out[f"{name}_knn_k20"], out[f"{name}_probe"] = baseline.knn["k20"], baseline.probe
    if report.probe is not None:
        out["probe"] = report.probe
    if report.ncc is not None:
        out["ncc"] = report.ncc
    out.update(_report_extras(report))
    if (folder / "fine").exists():
        fine = read_eval(folder / "fine")
        out["fine_knn_k20"], out["fine_probe"] = fine.knn["k20"], fine.probe
        out["within_coarse"] = fine.within_coarse
    for space in SPACES:
        if (folder / f"{space}.npz").exists():
            out.update(margins.cell_margins(margins.separation_of(folder / f"{space}.npz"), space))
    return out


def _report_extras(report):
    """Separation, few-shot and loss-gap numbers of a `clzoo eval` report (`EvalReport`)."""
    out = {}
    if report.margin is not None:
        out["margin_encoder"] = report.margin
    for m, row in report.few_shot.items():
        out[f"few_shot_{m}_ncc"], out[f"few_shot_{m}_linear"] = row["ncc_error"], row["linear_error"]
    if report.loss_gap is not None:
        out["loss_gap"], out["loss_gap_bound"] = report.loss_gap, report.loss_gap_bound
    return out


def _json(path):
    return json.loads(Path(path).read_text())


def _saved(path):
    """A saved `stage.json` / `cell.json`, its convergence re-read from its curve by today's rule."""
    return rechecked(_json(path))


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=default_cifar10(),
                        help="CIFAR-10 as an image folder <folder>/{train,test}/<class>/ "
                             "(default $CLZOO_CIFAR10)")
    parser.add_argument("--runs", default=str(ROOT / "runs" / "reproduce"),
                        help="where the cells' run folders go (default runs/reproduce)")
    parser.add_argument("--only", nargs="+", choices=sorted(CONFIGS), help="these configurations")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--list", action="store_true", help="list the cells and exit")
    parser.add_argument("--report-only", action="store_true", help="write RESULTS.md, train nothing")
    for field in dataclasses.fields(Scale):
        if field.name not in ("budgets", "max_epochs"):
            parser.add_argument(f"--{field.name.replace('_', '-')}", type=int, default=field.default)
    parser.add_argument("--budgets", type=int, nargs="+", default=list(Scale.budgets),
                        help="the ladder of epochs every cell climbs (default 40 80 160 320)")
    parser.add_argument("--max-epochs", type=int, default=None,
                        help="climb no ladder past this budget in this sitting (default: no cap)")
    args = parser.parse_args(argv)
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(Scale)}
    for name, value in values.items():
        if value is not None and min(value if isinstance(value, list) else [value]) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive integers. Received: {value}")
    if values["budgets"] != sorted(set(values["budgets"])):
        parser.error(f"--budgets must be increasing. Received: {values['budgets']}")
    scale = Scale(**{**values, "budgets": tuple(values["budgets"])})
    if not scale.ladder():
        parser.error(f"--max-epochs {scale.max_epochs} is below the first budget "
                     f"({scale.budgets[0]} epochs)")
    return args, scale


def _group(config, scale):
    return "cifar2" if config.data == "cifar2" else (
        f"{scale.train_per_class}x{scale.test_per_class}_b{scale.batch_size}")


def cells(args, scale):
    """`[(config, seed, folder)]` in run order: seed-major, so every claim gets seed 0 first."""
    keys = args.only or list(CONFIGS)
    return [(CONFIGS[k], s, Path(args.runs) / _group(CONFIGS[k], scale) / f"{k}_seed{s}")
            for s in args.seeds for k in keys]


def results_text(saved):
    """RESULTS.md for the saved grid (`{"scale", "cells", "pairs", "plots"}`)."""
    scale = Scale(**{**saved["scale"], "budgets": tuple(saved["scale"]["budgets"])})
    subset = Path("runs/reproduce/data") / _subset_name(scale)
    source = Path("../shared/data/cifar10")
    commands = {k: shlex.join(train_command(c, "S", scale, _data_spec(c, subset, source),
                                            f"runs/{k}_seedS/eE/run", "E"))
                for k, c in CONFIGS.items()}
    return reproduce_report.render(saved, scale, {k: c.label for k, c in CONFIGS.items()}, commands)


def check():
    """Problems that make RESULTS.md differ from reproduce_cells.json (empty when current)."""
    text = results_text(json.loads(CELLS_JSON.read_text()))
    return [] if RESULTS.read_text() == text else ["RESULTS.md differs from reproduce_cells.json"]


def _run_grid(grid, scale, paths):
    """Run every cell; a failed cell is reported in one line and the others still run."""
    failed = 0
    for i, (config, seed, folder) in enumerate(grid, 1):
        print(f"[{i}/{len(grid)}] {config.key} seed {seed} ...", flush=True)
        try:
            numbers = run_cell(config, seed, scale, paths, folder)
        except RuntimeError as error:
            failed += 1
            print(f"error: {error}", file=sys.stderr, flush=True)
            continue
        brief = {k: v for k, v in numbers.items() if k not in ("loss_curve",)}
        print(f"    {json.dumps(brief)}", flush=True)
    return failed


def _pairs(grid):
    """Paired margin differences per claim and seed, for every claim whose two cells are embedded."""
    folders = {(c.key, s): f for c, s, f in grid if (f / "cell.json").exists()}
    out = {}
    for claim in reproduce_report.CLAIMS:
        for (key, seed), folder in folders.items():
            if key == claim.a and (claim.b, seed) in folders:
                diff = margins.paired_margins(folder, folders[(claim.b, seed)])
                if diff:
                    out.setdefault(f"{claim.a}-{claim.b}", {})[str(seed)] = diff
    return out


def _list(grid, scale):
    for config, seed, folder in grid:
        state = "done" if (folder / "cell.json").exists() else "todo"
        try:
            _check_recipe(config, folder)
        except RuntimeError:
            state = "stale"  # stages of another recipe: run_cell refuses the folder
        stages = [f"e{e}:" + ("converged" if _saved(p)["converged"] else "not converged")
                  if (p := folder / f"e{e}" / "stage.json").exists() else f"e{e}:-"
                  for e in scale.ladder()]
        print(f"{state}  {config.key:15s} seed {seed}  {' '.join(stages)}  {folder}")


def main(argv=None):
    args, scale = _parse(argv)
    grid = cells(args, scale)
    if args.list:
        _list(grid, scale)
        return 0
    failed = 0
    if not args.report_only:
        if shutil.which("clzoo") is None:
            sys.exit("error: the clzoo command is not installed (pip install .)")
        subset = Path(args.runs) / "data" / _subset_name(scale)
        if any(config.data != "cifar2" for config, _, _ in grid):
            make_subset(args.data, subset, scale.train_per_class, scale.test_per_class)
        failed = _run_grid(grid, scale, (subset, Path(args.data).resolve()))
    finished = [_finished(f) for _, _, f in grid if (f / "cell.json").exists()]
    recipes = {key: c.recipe_name for key, c in CONFIGS.items()}
    saved = reproduce_report.merge(_json(CELLS_JSON) if CELLS_JSON.exists() else None, finished,
                                   _pairs(grid), dataclasses.asdict(scale), recipes)
    for (key_a, key_b), path in PLOTS.items():
        if reproduce_plots.plot_claim(grid, key_a, key_b, path):
            saved.setdefault("plots", {})[f"{key_a}-{key_b}"] = path.name
    reproduce_report.write(saved, CELLS_JSON, RESULTS, results_text)
    print(f"wrote {RESULTS.relative_to(ROOT)} from {len(saved['cells'])} cells "
          f"({len(finished)} finished in {args.runs})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
