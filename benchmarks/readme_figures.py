"""Measure the figures in README.md and write them there: the only source of those numbers.

    python benchmarks/readme_figures.py               # 3 seeds of the quickstart recipe (~25 min)
    python benchmarks/readme_figures.py --check       # exit 1 if README's table differs from the JSON

Runs `clzoo train recipes/sincere_digits.yaml --set seed=S` as a user would
(the installed `clzoo` command), reads each run's `metrics.json`, and writes
`benchmarks/readme_figures.json` (every seed, the mean, the command and the
machine) and the table between the `readme-figures` markers in README.md.

The figures are checked by drift, not by a fingerprint of the code: CI's own quickstart run
(`.ci/run` step 1, seed 0) must print a trained-encoder kNN inside [lowest seed - 1 point,
highest seed + 1 point] (`drift`), else it fails naming this script. The figures move with the
machine as well as the code (seed 0 gave 99.72% here and 98.89% on another 2-core machine), so the
band is the seeds' spread plus a point. `tests/test_readme_figures.py` fails when the README table
differs from the JSON.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECIPE = "recipes/sincere_digits.yaml"
FIGURES = ROOT / "benchmarks" / "readme_figures.json"
README = ROOT / "README.md"
START, END = "<!-- readme-figures:start -->", "<!-- readme-figures:end -->"
DRIFT_POINTS = 1.0  # percentage points either side of the seeds' range that CI's run may fall


def drift_band(figures):
    """(low, high) in percent: the trained encoder's kNN over the seeds, widened by DRIFT_POINTS."""
    knn = figures["summary"]["trained"]["knn"]
    return 100 * knn["min"] - DRIFT_POINTS, 100 * knn["max"] + DRIFT_POINTS


def drift(knn_percent, k, figures):
    """The problem with a quickstart run's trained-encoder kNN (percent, at `k`) against the
    figures, or None when it lies inside `drift_band`."""
    want_k = figures["rows"][0]["knn_k"]
    if k != want_k:
        return f"the quickstart printed kNN at k={k}, the README's figures are at k={want_k}"
    low, high = drift_band(figures)
    if low <= knn_percent <= high:
        return None
    return (f"the quickstart's kNN {knn_percent:.2f}% is outside the README figures' range "
            f"{low:.2f}% - {high:.2f}% (seeds' lowest - 1 point, highest + 1 point): the code moved "
            "the result; re-measure with python benchmarks/readme_figures.py")


def _backend():
    """The backend the `clzoo` runs load, as the command reads it (no Keras import)."""
    from clzoo.console import keras_backend_name  # noqa: PLC0415

    return keras_backend_name()


def run_seed(seed, folder):
    """One `clzoo train` of the quickstart recipe; its metrics and wall seconds."""
    out = Path(folder) / f"seed{seed}"
    command = ["clzoo", "train", RECIPE, "--set", f"seed={seed}", "--output", str(out)]
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    from clzoo.eval.records import read_run  # noqa: PLC0415 (--check imports no Keras)

    run = read_run(out)
    k = f"k{run.knn_k}"
    row = {"seed": seed, "wall_seconds": round(wall, 1), "knn_k": run.knn_k,
           "trained": {"knn": run.knn_top1, "probe": run.probe}}
    for name, baseline in run.baselines.items():
        row[name] = {"knn": baseline.knn[k], "probe": baseline.probe}
    return row


def summarize(rows):
    """Mean, min and max over seeds of every (model, metric) pair."""
    out = {}
    for model in ("trained", "raw_pixels", "random_init"):
        for metric in ("knn", "probe"):
            values = [r[model][metric] for r in rows if r.get(model, {}).get(metric) is not None]
            if values:
                out.setdefault(model, {})[metric] = {
                    "mean": sum(values) / len(values), "min": min(values), "max": max(values)}
    walls = [r["wall_seconds"] for r in rows]
    out["wall_seconds"] = {"mean": sum(walls) / len(walls), "max": max(walls)}
    return out


def _cell(stat):
    if stat is None:
        return "-"
    if stat["min"] == stat["max"]:
        return f"{stat['mean']:.2%}"
    return f"{stat['mean']:.2%} ({stat['min']:.2%} - {stat['max']:.2%})"


def render(figures):
    """The README table from `readme_figures.json`."""
    summary, seeds = figures["summary"], [r["seed"] for r in figures["rows"]]
    k = figures["rows"][0]["knn_k"]
    names = {"trained": "SINCERE-trained ResNet-20 (the quickstart)",
             "raw_pixels": "raw pixels (no encoder)", "random_init": "same ResNet-20, untrained"}
    lines = [f"Digits test split (360 images); mean over seeds {', '.join(map(str, seeds))} "
             "(lowest - highest):", "",
             f"| features | weighted kNN top-1 (k={k}) | linear probe top-1 |", "| --- | --- | --- |"]
    for model, name in names.items():
        stats = summary.get(model, {})
        lines.append(f"| {name} | {_cell(stats.get('knn'))} | {_cell(stats.get('probe'))} |")
    wall = summary["wall_seconds"]
    lines += ["", f"`{figures['command']}`: {wall['mean']:.0f} s per run on average (longest "
              f"{wall['max']:.0f} s) on {figures['machine']}, on the {figures['backend']} backend, "
              f"measured {figures['date']} by `python benchmarks/readme_figures.py`. Each backend "
              "draws its own random numbers (initial weights, views), so a run on another backend "
              "gives other figures than these."]
    return "\n".join(lines)


def write_readme(figures, readme=README):
    text = readme.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{START}\n{render(figures)}\n{END}{tail}")


def load_figures():
    """`benchmarks/readme_figures.json`: the seeds' rows and their summary."""
    return json.loads(FIGURES.read_text())


def check():
    """Problems that make the README's figures stale (empty when they are current)."""
    figures = load_figures()
    problems = []
    text = README.read_text()
    if f"{START}\n{render(figures)}\n{END}" not in text:
        problems.append("README.md's figures differ from benchmarks/readme_figures.json")
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        for problem in problems:
            print(f"stale: {problem}; run python benchmarks/readme_figures.py", file=sys.stderr)
        return 1 if problems else 0
    if shutil.which("clzoo") is None:
        sys.exit("error: the clzoo command is not installed (pip install .)")
    folder = tempfile.mkdtemp(prefix="clzoo-readme-")
    rows = []
    for seed in args.seeds:
        rows.append(run_seed(seed, folder))
        print(json.dumps(rows[-1]), flush=True)
    figures = {"command": f"clzoo train {RECIPE}",
               "date": time.strftime("%Y-%m-%d"),
               "machine": f"{os.cpu_count()} CPU cores ({platform.processor() or platform.machine()})",
               "backend": _backend(),
               "rows": rows, "summary": summarize(rows)}
    FIGURES.write_text(json.dumps(figures, indent=2) + "\n")
    write_readme(figures)
    shutil.rmtree(folder, ignore_errors=True)
    print(render(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
