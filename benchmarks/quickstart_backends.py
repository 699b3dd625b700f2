"""The quickstart's wall time on JAX and torch, alone and beside a busy process (issue 85 item 1).

Usage:
    python benchmarks/quickstart_backends.py [--epochs 10] [--backends jax torch]

Runs `KERAS_BACKEND=B clzoo train sincere_digits --set training.epochs=E --output RUN` per
backend, from an empty folder, first alone, then with one process spinning on a core (a loaded
2-core machine: what issue 85 saw), and prints the wall seconds of the whole command (start-up,
training, the end-of-run evaluation and baselines) and the training images/s the run recorded.
Torch's thread count is clzoo's own choice (no `CLZOO_TORCH_THREADS`, no `OMP_NUM_THREADS`): under
load a torch run lowers its threads and says so. Run it alone on the machine.
"""

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_processes_speed import run  # noqa: E402  (one clzoo run, timed)


def _spin():
    while True:
        pass


def run_once(backend, epochs, root):
    env = {k: v for k, v in os.environ.items() if k not in ("CLZOO_TORCH_THREADS", "OMP_NUM_THREADS")}
    env["KERAS_BACKEND"] = backend
    output = root / f"{backend}-{time.time_ns()}"
    command = [str(Path(sys.executable).with_name("clzoo")), "train", "sincere_digits",
               "--set", f"training.epochs={epochs}", "--output", str(output)]
    timed = run(command, env, output)  # wall seconds and the run's recorded images/s
    threads = json.loads((output / "environment.json").read_text()).get("torch_threads")
    return {"wall_s": timed["wall_s"], "images_per_second": timed["images_per_second"],
            "torch_threads": threads and threads.get("threads")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--backends", nargs="+", default=["jax", "torch"])
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="clzoo-quickstart-"))
    rows = []
    try:
        for load in ("alone", "one core busy"):
            spinner = None
            if load != "alone":
                spinner = multiprocessing.Process(target=_spin, daemon=True)
                spinner.start()
            try:
                for backend in args.backends:
                    rows.append({"load": load, "backend": backend, **run_once(backend, args.epochs, root)})
            finally:
                if spinner is not None:
                    spinner.terminate()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"sincere_digits, {args.epochs} epochs, {os.cpu_count()} cores")
    print("| load | backend | wall s | images/s | torch threads |")
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        print(f"| {row['load']} | {row['backend']} | {row['wall_s']} | {row['images_per_second']} "
              f"| {row['torch_threads'] or ''} |")
    Path(__file__).with_name("quickstart_backends.json").write_text(
        json.dumps({"epochs": args.epochs, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
