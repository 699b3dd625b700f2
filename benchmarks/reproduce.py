"""The papers' claims at CPU scale: a resumable grid of (recipe x loss x seed) -> benchmarks/RESULTS.md.

    python benchmarks/reproduce.py                    # every cell not yet finished, then RESULTS.md
    python benchmarks/reproduce.py --list             # the cells and which are finished
    python benchmarks/reproduce.py --only sincere supcon --seeds 0
    python benchmarks/reproduce.py --report-only      # RESULTS.md from the finished cells

Each cell is one `clzoo train` of a `recipes/*_small.yaml` recipe, as a user would run it (the
installed `clzoo` command), on a fixed class-balanced subset of the CIFAR-10 image folder, then
the `clzoo eval` reports its claims need (projection space, fine labels). A finished cell
writes `cell.json` last, atomically; the next invocation skips it, and a cell interrupted in
training continues with `clzoo train --resume`. So the grid can be run across several sittings.
The claims, the paper's figures and the statistics live in `benchmarks/reproduce_report.py`.
"""

import argparse
import dataclasses
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reproduce_report  # noqa: E402  (benchmarks/reproduce_report.py)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
CELLS_JSON = ROOT / "benchmarks" / "reproduce_cells.json"
SUBSET_MARKER = ".clzoo-subset.json"  # a dotfile: never taken for a class
FINE_METRICS = "[knn, ncc, probe, separation, few_shot, loss_gap]"


@dataclasses.dataclass(frozen=True)
class Config:
    """One column of the grid: a recipe, its overrides and the extra evaluations it needs.

    `data` is "fine" (10 classes) or "coarse" (CIFAR10-Coarse labels: animals vs vehicles);
    `evals` are `(folder, --space, data, metrics)` runs of `clzoo eval` after training.
    """

    key: str
    label: str
    recipe: str
    data: str = "fine"
    overrides: tuple = ()
    evals: tuple = ()


_PROJECTION = (("projection", "projection", "fine", "knn,separation"),)
_ON_FINE = (("fine", "encoder", "fine", "knn,probe,coarse_to_fine"),)
CONFIGS = {c.key: c for c in (
    Config("sincere", "SINCERE", "recipes/sincere/cifar10_small.yaml",
           overrides=(f"eval.metrics={FINE_METRICS}", "eval.baselines=[raw_pixels, random_init]"),
           evals=_PROJECTION),
    Config("supcon", "SupCon", "recipes/supcon/cifar10_small.yaml",
           overrides=(f"eval.metrics={FINE_METRICS}",), evals=_PROJECTION),
    Config("supinfonce", "eps-SupInfoNCE (eps 0.25)", "recipes/supinfonce/cifar10_small.yaml",
           overrides=(f"eval.metrics={FINE_METRICS}",), evals=_PROJECTION),
    Config("nscl", "NSCL", "recipes/nscl/cifar10_small.yaml",
           overrides=(f"eval.metrics={FINE_METRICS}",)),
    Config("dcl", "DCL", "recipes/dcl/cifar10_small.yaml",
           overrides=(f"eval.metrics={FINE_METRICS}",)),
    Config("spread_coarse", "L_spread on CIFAR10-Coarse", "recipes/spread/cifar10_coarse_small.yaml",
           data="coarse", overrides=("eval.metrics=[knn]",), evals=_ON_FINE),
    Config("supcon_coarse", "SupCon on CIFAR10-Coarse", "recipes/supcon/cifar10_small.yaml",
           data="coarse", overrides=("eval.metrics=[knn]", "loss.temperature=0.5"),  # PB app. E.2
           evals=_ON_FINE),
    Config("soft_infonce", "soft-target InfoNCE", "recipes/soft_target/cifar10_infonce_small.yaml",
           overrides=("eval.metrics=[knn, probe]",)),
    Config("soft_ce", "soft-target cross-entropy",
           "recipes/soft_target/cifar10_cross_entropy_small.yaml",
           overrides=("eval.metrics=[knn, probe]",)),
)}


@dataclasses.dataclass(frozen=True)
class Scale:
    """The CPU-scale budget every cell shares (the recipes' own values otherwise)."""

    train_per_class: int = 400
    test_per_class: int = 200
    epochs: int = 8
    batch_size: int = 128

    def overrides(self):
        return (f"training.epochs={self.epochs}", f"training.batch_size={self.batch_size}",
                "eval.monitor_every=0", "eval.baselines=[]", "training.checkpoint_every_steps=null")


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
                     "folder, e.g. ../shared/data/cifar10)")
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


def _data_spec(subset, kind):
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


def train_command(config, seed, scale, subset, run):
    """The `clzoo train` arguments of one cell (also printed in RESULTS.md)."""
    sets = {}  # one --set per key; the configuration's value wins over the scale's
    for item in (f"seed={seed}", *scale.overrides(), *config.overrides):
        sets[item.split("=", 1)[0]] = item
    args = ["train", config.recipe, "--data", _data_spec(subset, config.data), "--output", str(run),
            "--quiet"]
    for item in sets.values():
        args += ["--set", item]
    return args


def run_cell(config, seed, scale, subset, folder):
    """Train and evaluate one cell unless `cell.json` says it is finished; return its numbers."""
    folder = Path(folder)
    done = folder / "cell.json"
    if done.exists():
        return json.loads(done.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    run, log = folder / "run", folder / "log.txt"
    started = time.perf_counter()
    if not (run / "metrics.json").exists():
        resume = (run / "checkpoint.keras").exists()
        _clzoo(["train", "--resume", str(run), "--quiet"] if resume
               else train_command(config, seed, scale, subset, run), log)
    for name, space, kind, metrics in config.evals:
        if not (folder / name / "metrics.json").exists():
            _clzoo(["eval", str(run), "--data", _data_spec(subset, kind), "--space", space,
                    "--metrics", metrics, "--output", str(folder / name), "--overwrite"], log)
    numbers = collect(folder, config)
    numbers.update(config=config.key, seed=seed, wall_seconds=round(time.perf_counter() - started, 1))
    tmp = done.with_suffix(".tmp")
    tmp.write_text(json.dumps(numbers, indent=1))
    os.replace(tmp, done)
    return numbers


def _final_loss(run):
    rows = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines() if line]
    return rows[-1]["loss"]


def collect(folder, config):
    """The numbers every claim reads, from a finished cell's run and eval folders."""
    run = folder / "run"
    report, summary = _json(run / "eval" / "metrics.json"), _json(run / "metrics.json")
    out = {"final_loss": _final_loss(run), "knn_k20": report["knn"]["k20"]}
    for key in ("classifier_top1", "classifier_ece"):
        if key in summary:
            out[key] = summary[key]
    for name, values in summary.get("baselines", {}).items():
        out[f"{name}_knn_k20"], out[f"{name}_probe"] = values["knn"]["k20"], values.get("linear_probe")
    if "probe" in report:
        out["probe"] = report["probe"]["accuracy"]
    if "ncc" in report:
        out["ncc"] = report["ncc"]["accuracy"]
    if "separation" in report:
        out["margin_encoder"] = report["separation"]["margin"]
    if "few_shot" in report:
        for m, row in report["few_shot"].items():
            out[f"few_shot_{m}_ncc"], out[f"few_shot_{m}_linear"] = row["ncc_error"], row["linear_error"]
    if "loss_gap" in report:
        out["loss_gap"], out["loss_gap_bound"] = report["loss_gap"]["gap"], report["loss_gap"]["bound"]
    if (folder / "projection").exists():
        out["margin_projection"] = _json(folder / "projection" / "metrics.json")["separation"]["margin"]
    if (folder / "fine").exists():
        fine = _json(folder / "fine" / "metrics.json")
        out["fine_knn_k20"], out["fine_probe"] = fine["knn"]["k20"], fine["probe"]["accuracy"]
        out["within_coarse"] = fine["coarse_to_fine"]["within_coarse_accuracy"]
    return out


def _json(path):
    return json.loads(Path(path).read_text())


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "cifar10"),
                        help="CIFAR-10 as an image folder (default ../shared/data/cifar10)")
    parser.add_argument("--runs", default=str(ROOT / "runs" / "reproduce"),
                        help="where the cells' run folders go (default runs/reproduce)")
    parser.add_argument("--only", nargs="+", choices=sorted(CONFIGS), help="these configurations")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--list", action="store_true", help="list the cells and exit")
    parser.add_argument("--report-only", action="store_true", help="write RESULTS.md, train nothing")
    for field in dataclasses.fields(Scale):
        parser.add_argument(f"--{field.name.replace('_', '-')}", type=int, default=field.default)
    args = parser.parse_args(argv)
    scale = Scale(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Scale)})
    for field in dataclasses.fields(Scale):
        if getattr(scale, field.name) < 1:
            parser.error(f"--{field.name.replace('_', '-')} must be a positive integer. "
                         f"Received: {getattr(scale, field.name)}")
    return args, scale


def cells(args, scale):
    """`[(config, seed, folder)]` in run order: seed-major, so every claim gets seed 0 first."""
    tag = f"{scale.train_per_class}x{scale.test_per_class}_e{scale.epochs}_b{scale.batch_size}"
    keys = args.only or list(CONFIGS)
    return [(CONFIGS[k], s, Path(args.runs) / tag / f"{k}_seed{s}") for s in args.seeds for k in keys]


def results_text(cells, scale):
    """RESULTS.md for `cells` (the numbers of finished cells) at `scale`."""
    subset = Path("runs/reproduce/data") / _subset_name(scale)
    commands = {k: shlex.join(train_command(c, "S", scale, subset, f"runs/{k}_seedS"))
                for k, c in CONFIGS.items()}
    return reproduce_report.render(cells, scale, {k: c.label for k, c in CONFIGS.items()}, commands)


def check():
    """Problems that make RESULTS.md differ from reproduce_cells.json (empty when current)."""
    saved = json.loads(CELLS_JSON.read_text())
    text = results_text(saved["cells"], Scale(**saved["scale"]))
    return [] if RESULTS.read_text() == text else ["RESULTS.md differs from reproduce_cells.json"]


def _run_grid(grid, scale, subset):
    """Run every cell; a failed cell is reported in one line and the others still run."""
    failed = 0
    for i, (config, seed, folder) in enumerate(grid, 1):
        print(f"[{i}/{len(grid)}] {config.key} seed {seed} ...", flush=True)
        try:
            numbers = run_cell(config, seed, scale, subset, folder)
        except RuntimeError as error:
            failed += 1
            print(f"error: {error}", file=sys.stderr, flush=True)
            continue
        print(f"    {json.dumps(numbers)}", flush=True)
    return failed


def main(argv=None):
    args, scale = _parse(argv)
    grid = cells(args, scale)
    if args.list:
        for config, seed, folder in grid:
            state = "done" if (folder / "cell.json").exists() else "todo"
            print(f"{state}  {config.key:14s} seed {seed}  {folder}")
        return 0
    if not args.report_only:
        if shutil.which("clzoo") is None:
            sys.exit("error: the clzoo command is not installed (pip install .)")
        subset = make_subset(args.data, Path(args.runs) / "data" / _subset_name(scale),
                             scale.train_per_class, scale.test_per_class)
        failed = _run_grid(grid, scale, subset)
    finished = [json.loads((f / "cell.json").read_text()) for _, _, f in grid
                if (f / "cell.json").exists()]
    reproduce_report.write(finished, scale, CELLS_JSON, RESULTS, results_text)
    print(f"wrote {RESULTS.relative_to(ROOT)} from {len(finished)} finished cells")
    return 1 if not args.report_only and failed else 0


if __name__ == "__main__":
    sys.exit(main())
