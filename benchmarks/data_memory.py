"""Peak memory of `clzoo train` on an image folder held in memory and streamed from its files.

Writes two folders of 320 x 320 JPEGs (`--images`, and a tenth of it), then trains
`recipes/supcon/cifar10_small.yaml` at 32-px views for one epoch on each (each run in its own
process, peak RSS from `getrusage`), held in memory (`data_loading: memory`) and streamed
(`data_loading: auto` under a `CLZOO_MEMORY_BUDGET` of a quarter of the large folder's decoded size),
each with an empty decode cache (`CLZOO_CACHE`).

    python benchmarks/data_memory.py --images 3000

Prints one JSON line per run and a Markdown table: peak RSS, decoded training split, and the peak
over the decoded size past the small run's (the bytes each decoded byte costs).
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "recipes" / "supcon" / "cifar10_small.yaml"
SETTINGS = ["views.size=32", "training.epochs=1", "training.schedule.warmup_epochs=0",
            "training.checkpoint_every_steps=null", "eval.monitor_every=0",
            "eval.metrics=[knn]", "eval.baselines=[]"]


def write_folder(root, images, side=320, classes=10, seed=0):
    """`images` JPEGs of `side` px in `classes` classes (and a test split of a tenth)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    for split, count in (("train", images), ("test", max(classes, images // 10))):
        for i in range(count):
            folder = Path(root) / split / f"c{i % classes}"
            folder.mkdir(parents=True, exist_ok=True)
            coarse = rng.integers(0, 256, (side // 16, side // 16, 3), dtype=np.uint8)
            Image.fromarray(coarse).resize((side, side)).save(folder / f"{i}.jpg", quality=90)
    return root


def peak_rss(folder, loading, budget, output):
    """Peak RSS (bytes) of one `clzoo train` in a child process."""
    command = [sys.executable, "-m", "clzoo", "train", str(RECIPE), "--data", str(folder),
               "--output", str(output), *[a for s in SETTINGS + [f"data_loading={loading}"]
                                           for a in ("--set", s)]]
    shutil.rmtree(output, ignore_errors=True)
    cache = Path(tempfile.mkdtemp(prefix="clzoo-cache-"))  # a first run: decoded, not read from a cache
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CLZOO_MEMORY_BUDGET": str(budget),
           "CLZOO_CACHE": str(cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    shutil.rmtree(cache, ignore_errors=True)
    if result.returncode:
        sys.exit(result.stdout[-2000:] + result.stderr[-2000:])
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if after <= before:
        print("note: a run's peak did not exceed an earlier child's; run each size alone",
              file=sys.stderr)
    return after * 1024


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=3000)
    parser.add_argument("--only", help="one run: LOADING:IMAGES (used by the parent)")
    parser.add_argument("--work", help="where the folders are written (default: a temp folder)")
    args = parser.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="clzoo-memory-"))
    large, small = args.images, args.images // 10
    decoded = {n: n * 320 * 320 * 3 for n in (large, small)}
    budget = decoded[large] // 4
    if args.only:
        loading, count = args.only.split(":")
        count = int(count)
        folder = work / f"jpeg{count}"
        if not folder.is_dir():
            write_folder(folder, count)
        peak = peak_rss(folder, loading, budget, work / f"run-{loading}-{count}")
        print(json.dumps({"loading": loading, "images": count, "decoded_bytes": decoded[count],
                          "budget": budget, "peak_rss": peak}))
        return
    rows = []
    for loading in ("memory", "auto"):
        for count in (small, large):  # each in a fresh process: ru_maxrss is a high-water mark
            out = subprocess.run([sys.executable, __file__, "--images", str(args.images), "--work",
                                  str(work), "--only", f"{loading}:{count}"],
                                 capture_output=True, text=True)
            if out.returncode:
                sys.exit(out.stdout[-2000:] + out.stderr[-2000:])
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), flush=True)
    print(f"\nbudget {budget / 2**30:.2f} GiB (a quarter of the large split's decoded size)\n")
    print("| data_loading | images | decoded GiB | peak RSS GiB | extra peak per decoded byte |")
    print("| --- | --- | --- | --- | --- |")
    for pair in (rows[:2], rows[2:]):
        low, high = pair
        ratio = (high["peak_rss"] - low["peak_rss"]) / (high["decoded_bytes"] - low["decoded_bytes"])
        for row in pair:
            share = f"{ratio:.2f}" if row is high else "-"
            print(f"| {row['loading']} | {row['images']} | {row['decoded_bytes'] / 2**30:.2f} | "
                  f"{row['peak_rss'] / 2**30:.2f} | {share} |")


if __name__ == "__main__":
    main()
