"""The steps of one call on a lent GPU machine, each in its own process under its own timeout.

Run by `benchmarks/gpu/run.sh` (which installs the carried wheels and unpacks the data first).
Each step appends one JSON object to `OUT/results.jsonl` as it finishes (`step`, `ok`, `seconds`,
what it measured) and its output's tail to `OUT/log.txt`, so a call cut short still returns
every finished step. The steps share one deadline (`--budget` seconds): a step gets what is left
of it, at most its own limit, and is skipped (`"skipped": "out of time ..."`) when less than its
`min_start` remains.
Last, `OUT/runs.tar.gz` holds the training runs' small files (metrics, history, environment,
recipe) and `OUT/encoder-<run>.keras` each run's encoder (8 files come back, 16 MiB each).

`--dry` (the CPU, `TRITON_INTERPRET=1`, `CLZOO_PALLAS_INTERPRET=1`, TensorFlow hidden by
run.sh) runs every step at its smallest: one epoch, N = 256, a few steps.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

RECIPE = "recipes/supcon/cifar10_airbench.yaml"
SMALL_FILES = ("metrics.json", "history.jsonl", "history.csv", "environment.json", "recipe.yaml",
               "recipe.sha256", "steps.jsonl")
ENCODER_LIMIT = 16 * 2**20
ENVIRONMENT = """
import json, os, subprocess, sys
found = {"python": sys.version.split()[0], "cpus": os.cpu_count()}
for name in ("torch", "jax", "keras", "triton", "numpy"):
    try:
        found[name] = __import__(name).__version__
    except Exception as error:
        found[name] = f"not importable: {error}"
try:
    found["gpu"] = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                                   "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
except OSError:
    found["gpu"] = None
import jax
found["jax_devices"] = [str(d) for d in jax.devices()]
# the carried wheels against what the image holds (pydantic's typing-extensions, say)
check = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
found["pip_check"] = (check.stdout + check.stderr).strip()[-1500:]
print(json.dumps(found))
"""


class Step(NamedTuple):
    """One step: its limit, the least time left it starts with (else skipped), and how it runs."""

    name: str
    limit: float
    min_start: float
    command: list
    backend: str
    read: Callable


# The order they run in: what the goals need first (exactness, the JAX run's 90.9% under
# 2 minutes, the kernels against their floor), the rest as time allows.
ORDER = ("environment", "triton_check", "airbench_jax_float32", "triton_timing", "pallas_check",
         "pallas_timing", "airbench_jax_mixed_bfloat16", "fit_auto_torch", "airbench_torch",
         "fit_auto_jax", "file_stream")


def step_table(args):
    """The steps, in `ORDER`."""
    steps = {step.name: step for step in _kernel_steps(args) + _training_steps(args) + _other_steps(args)}
    return [steps[name] for name in ORDER]


def train_arguments(dry, epochs=None):
    """`clzoo train` arguments on top of the recipe: `--dry` trains one epoch of 8-image batches;
    a shortened run (`epochs`) keeps the recipe's warm-up share (23% of the run)."""
    if dry:  # the recipe's 5.52 warm-up epochs would be longer than one
        return ["--epochs", "1", "--batch-size", "8", "--set", "training.schedule.warmup_epochs=0.5"]
    if epochs:
        return ["--epochs", str(epochs), "--set", f"training.schedule.warmup_epochs={0.23 * epochs:.2f}"]
    return []


def _training_steps(args):
    py, runs = sys.executable, args.work / "runs"
    train = [py, "-m", "clzoo", "train", RECIPE, "--data", str(args.data), "-q"]

    def run(name, folder, backend, extra, limit, min_start):
        return Step(name, limit, min_start, train + ["--output", str(runs / folder)] + extra, backend,
                    run_reader(runs / folder))
    return [run("airbench_jax_float32", "jax-float32", "jax",
                ["--set", "training.precision=float32"] + train_arguments(args.dry), 170, 120),
            run("airbench_jax_mixed_bfloat16", "jax-mixed_bfloat16", "jax",
                ["--set", "training.precision=mixed_bfloat16"] + train_arguments(args.dry), 170, 120),
            run("airbench_torch", "torch-float32", "torch", train_arguments(args.dry, epochs=3), 100, 80)]


def _kernel_steps(args):
    py, dry, out = sys.executable, args.dry, args.out
    sizes = ["--sizes", "256"] if dry else ["--sizes", "16384", "65536"]
    return [
        Step("triton_check", 60, 30, [py, "tests/losses/fused_check.py", "--device", "cpu" if dry else "cuda"]
             + (["--family", "supcon_out"] if dry else []), "torch", check_lines),
        Step("pallas_check", 60, 30, [py, "benchmarks/pallas_kernel.py", "--check"]
             + (["--interpret"] if dry else []), "jax", check_lines),
        Step("triton_timing", 80, 40, [py, "benchmarks/fused_kernel.py", "--json",
                                       str(out / "fused_triton.json"), "--budget", "55", "--max-chunked",
                                       "65536"] + sizes
             + (["--device", "cpu", "--dtypes", "float32"] if dry else []), "torch",
             timing_reader(out / "fused_triton.json")),
        Step("pallas_timing", 80, 40, [py, "benchmarks/pallas_kernel.py", "--json",
                                       str(out / "fused_pallas.json"), "--budget", "55"] + sizes
             + (["--interpret"] if dry else []), "jax",
             timing_reader(out / "fused_pallas.json"))]


def _other_steps(args):
    py, dry = sys.executable, args.dry
    fit = ["--steps", "3", "--batch", "128"] if dry else ["--steps", "20", "--batch", "4096"]
    stream = (["--folder", str(args.data), "--load-size", "32", "--view-size", "32", "--batch", "16",
               "--batches", "2"] if dry else ["--images", "4096", "--batch", "256", "--batches", "12"])
    return [Step("environment", 60, 15, [py, "-c", ENVIRONMENT], "jax", last_json),
            Step("fit_auto_torch", 50, 25, [py, "benchmarks/gpu/fit_auto.py"] + fit, "torch", last_json),
            Step("fit_auto_jax", 50, 25, [py, "benchmarks/gpu/fit_auto.py"] + fit, "jax", last_json),
            Step("file_stream", 60, 40, [py, "benchmarks/file_stream.py"] + stream, "jax", json_rows)]


def last_json(stdout):
    """The last line of the output, a JSON object."""
    return json.loads(stdout.strip().splitlines()[-1])


def json_rows(stdout):
    """Every line of the output that is a JSON object, as `rows`."""
    return {"rows": [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]}


def check_lines(stdout):
    """An exactness check's JSON lines: how many passed, and the largest error of each kind."""
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    worst = {}
    for line in lines:
        for key, value in line.items():
            if isinstance(value, float):
                worst[key] = max(worst.get(key, 0.0), value)
    return {"cases": len(lines), "passed": sum(bool(line.get("ok")) for line in lines), "max_errors": worst}


def timing_reader(path):
    """The rows of a kernel benchmark's JSON, each with its multiple of the same size's floor."""
    def read(stdout):
        data = json.loads(Path(path).read_text())
        floors = {(r["n"], r["dtype"]): r["ms"] for r in data["rows"]
                  if r["row"].startswith("floor") and "ms" in r}
        for row in data["rows"]:
            if "ms" in row and (row["n"], row["dtype"]) in floors:
                row["x_floor"] = row["ms"] / floors[(row["n"], row["dtype"])]
        return data
    return read


def run_reader(folder):
    """A training run's kNN, epochs, seconds and images/s, from its run folder."""
    def read(stdout):
        metrics = json.loads((folder / "metrics.json").read_text())
        history = [json.loads(line) for line in (folder / "history.jsonl").read_text().splitlines() if line]
        epochs = metrics.get("epochs") or len(history)
        return {"knn_top1": metrics.get("knn_top1"), "epochs": epochs,
                "fit_seconds": metrics.get("fit_seconds"), "wall_seconds": metrics.get("wall_seconds"),
                "seconds_per_epoch": metrics["fit_seconds"] / epochs if metrics.get("fit_seconds") else None,
                "images_per_second": history[-1].get("images_per_second") if history else None,
                "precision": json.loads((folder / "environment.json").read_text()).get("precision")}
    return read


def run_step(step, deadline, out, scale=1.0):
    """Run one step in its own process group; its result (a dict) with `ok` and `seconds`."""
    left = deadline - time.monotonic()
    if left < step.min_start * scale:
        return {"step": step.name, "ok": False, "skipped": f"out of time ({left:.0f} s left)"}
    env = {**os.environ, "KERAS_BACKEND": step.backend, "PYTHONUNBUFFERED": "1"}
    start, limit = time.monotonic(), min(step.limit * scale, left)
    # its own group in this session: a call cut short takes it along (a new session would outlive it)
    process = subprocess.Popen(step.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               errors="replace", env=env, process_group=0)
    RUNNING[:] = [process]
    try:
        output, _ = process.communicate(timeout=limit)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill(process)
        output, _ = process.communicate()
        timed_out = True
    RUNNING.clear()
    result = {"step": step.name, "seconds": round(time.monotonic() - start, 1),
              "returncode": process.returncode}
    if timed_out:
        result["timed_out_after_s"] = round(limit)
    with open(out / "log.txt", "a") as log:
        log.write(f"===== {step.name}: {' '.join(step.command)[:500]}\n"
                  + "\n".join(output.splitlines()[-150:]) + "\n")
    try:
        result.update(step.read(output))
        result["ok"] = process.returncode == 0 and not timed_out
    except Exception as error:  # noqa: BLE001  (a step that failed leaves nothing to read)
        result.update(ok=False, unread=f"{type(error).__name__}: {str(error)[:300]}")
    return result


RUNNING = []  # the step's process, for the SIGTERM handler


def _kill(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _stop(signum, frame):
    """SIGTERM (the call's limit): take the running step's processes along, then exit."""
    for process in RUNNING:
        _kill(process)
    sys.exit(128 + signum)


def collect(runs, out):
    """The runs' small files as `OUT/runs.tar.gz`, and each encoder under 16 MiB beside it as
    `OUT/encoder-<run>.keras` (the device tool returns 8 files of at most 16 MiB): put one back as
    `<run>/encoder.keras` and the folder evaluates here like any run (`clzoo eval <run>`)."""
    files = sorted(p for p in runs.glob("*/*") if p.name in SMALL_FILES)
    with tarfile.open(out / "runs.tar.gz", "w:gz") as archive:
        for path in files:
            archive.add(path, arcname=str(path.relative_to(runs)))
    kept = [str(p.relative_to(runs)) for p in files]
    for encoder in sorted(runs.glob("*/encoder.keras")):
        if encoder.stat().st_size < ENCODER_LIMIT:
            shutil.copyfile(encoder, out / f"encoder-{encoder.parent.name}.keras")
            kept.append(f"encoder-{encoder.parent.name}.keras")
    return kept


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="CIFAR-10, an image folder (train/, test/)")
    parser.add_argument("--work", type=Path, required=True, help="a scratch folder (run folders)")
    parser.add_argument("--out", type=Path, required=True, help="where results come back ($OUT)")
    parser.add_argument("--budget", type=float, help="seconds for all steps together (520; --dry: 1,500)")
    parser.add_argument("--only", nargs="+", help="run only these steps")
    parser.add_argument("--dry", action="store_true", help="the smallest run of every step (the CPU)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _stop)
    deadline = time.monotonic() + (args.budget or (1500.0 if args.dry else 520.0))
    steps = [step for step in step_table(args) if not args.only or step.name in args.only]
    with open(args.out / "results.jsonl", "a") as results:
        for step in steps:
            # --dry: the CPU's interpreters, maybe beside other work
            result = run_step(step, deadline, args.out, scale=3.0 if args.dry else 1.0)
            results.write(json.dumps(result) + "\n")
            results.flush()
            print(json.dumps({k: result.get(k) for k in ("step", "ok", "seconds", "skipped")}), flush=True)
        kept = collect(args.work / "runs", args.out)
        results.write(json.dumps({"step": "collect", "ok": True, "files": kept}) + "\n")


if __name__ == "__main__":
    main()
