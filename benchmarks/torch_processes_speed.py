"""Training speed of `clzoo train` on torch: one process against two `torchrun` processes (gloo).

Usage:
    python benchmarks/torch_processes_speed.py --epochs 1 [--recipe sincere_digits]

Runs, one after the other (alone on the machine: a timing beside another job means nothing),

    KERAS_BACKEND=torch clzoo train RECIPE --set training.epochs=E --output RUN1
    KERAS_BACKEND=torch torchrun --standalone --nproc-per-node 2 --no-python \\
        clzoo train RECIPE --strategy multi_worker --set training.epochs=E --output RUN2

each from an empty folder, and prints (and writes to `torch_processes_speed.json`) the images/s
that each run's `metrics.json` records (training steps only: the global batch's images over the
steps' seconds), the final training loss and the wall seconds of the whole command. On a CPU the
two processes share its cores, so no speed-up is expected here: the figure shows what the
gradient averaging and the all-gather cost; the GPU row waits for a GPU. `CLZOO_TORCH_THREADS`
is 1 per process in the two-process run and the core count in the one-process run, so both use
every core.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(command, env, output):
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    metrics = json.loads((output / "metrics.json").read_text())
    return {"images_per_second": round(metrics["images_per_second"], 1),
            "final_loss": metrics.get("final_train_loss", metrics.get("train_loss")),
            "wall_s": round(seconds, 1), "command": " ".join(command)}


def arguments(description):
    """`--recipe` and `--epochs` of the torch-process benchmarks, parsed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--recipe", default="sincere_digits")
    parser.add_argument("--epochs", type=int, default=1)
    return parser.parse_args()


def two_processes(command):
    """`command` (a `clzoo train ...` list) as two gloo processes under torchrun, multi_worker."""
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    return [torchrun, "--standalone", "--nproc-per-node", "2", "--no-python", *command,
            "--strategy", "multi_worker"]


def main():
    args = arguments(__doc__.splitlines()[0])
    clzoo = str(Path(sys.executable).with_name("clzoo"))
    cores = os.cpu_count() or 1
    root = Path(tempfile.mkdtemp(prefix="clzoo-torch-speed-"))
    env = {**os.environ, "KERAS_BACKEND": "torch"}
    common = ["train", args.recipe, "--set", f"training.epochs={args.epochs}"]
    rows = {}
    try:
        rows["1 process"] = run([clzoo, *common, "--output", str(root / "one")],
                                {**env, "CLZOO_TORCH_THREADS": str(cores)}, root / "one")
        rows["2 processes"] = run(two_processes([clzoo, *common]) + ["--output", str(root / "two")],
                                  {**env, "CLZOO_TORCH_THREADS": str(max(1, cores // 2))},
                                  root / "two")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{args.recipe}, {args.epochs} epoch(s), {cores} cores")
    print("| run | images/s | final training loss | wall s |")
    print("| --- | --- | --- | --- |")
    for name, row in rows.items():
        print(f"| {name} | {row['images_per_second']} | {row['final_loss']} | {row['wall_s']} |")
    record = {"recipe": args.recipe, "epochs": args.epochs, "cores": cores, "runs": rows}
    Path(__file__).with_name("torch_processes_speed.json").write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
