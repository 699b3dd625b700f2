"""The quickstart recipe under each `training.precision`: kNN top-1 and images/s per backend.

Usage (from the repository root, nothing else running):

    python benchmarks/precision.py --backends tensorflow jax --runs /tmp/precision-runs

Each (backend, precision) is one `clzoo train sincere_digits` run (all 40 epochs) in its own
process, into `--runs/<backend>-<precision>`; the script reads each run's `metrics.json` and prints
one JSON line per run and a table (kNN k=5 and probe on the digits test split, training
images/s, wall seconds). On a CPU, half precision is emulated and slower: the point here is
that the result stays within a point of float32's (issue 71 item 1); speed is a GPU question.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax", "torch"])
    parser.add_argument("--precisions", nargs="+", default=["float32", "mixed_bfloat16"])
    parser.add_argument("--runs", required=True, help="folder for the run folders (outside the checkout)")
    parser.add_argument("--recipe", default="sincere_digits")
    parser.add_argument("--set", action="append", default=[], help="extra recipe overrides")
    args = parser.parse_args()
    clzoo = [sys.executable, "-m", "clzoo.cli"]
    rows = []
    for backend in args.backends:
        for precision in args.precisions:
            out = Path(args.runs) / f"{backend}-{precision}"
            command = [*clzoo, "train", args.recipe, "--output", str(out), "--quiet",
                       "--set", f"training.precision={precision}", *sum((["--set", s] for s in args.set), [])]
            done = subprocess.run(command, env={**os.environ, "KERAS_BACKEND": backend},
                                  capture_output=True, text=True)
            if done.returncode:
                print(f"{backend} {precision}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
                continue
            m = json.loads((out / "metrics.json").read_text())
            row = {"backend": backend, "precision": precision, "knn_top1": m["knn_top1"],
                   "probe_top1": m.get("probe"), "images_per_second": m["images_per_second"],
                   "wall_seconds": m["wall_seconds"], "epochs": m["epochs"]}
            print(json.dumps(row), flush=True)
            rows.append(row)
    print("\n| backend | precision | kNN top-1 | probe top-1 | images/s | wall s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        probe = "-" if r["probe_top1"] is None else f"{r['probe_top1']:.2%}"
        print(f"| {r['backend']} | {r['precision']} | {r['knn_top1']:.2%} | {probe} | "
              f"{r['images_per_second']:.0f} | {r['wall_seconds']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
