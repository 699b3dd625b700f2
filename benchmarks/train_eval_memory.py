"""Peak memory of the whole `clzoo train` command, end-of-run evaluation included, on a streamed folder.

Usage:
    python benchmarks/train_eval_memory.py --root /tmp/evalmem --label after

Builds two image folders of 320x320 JPEGs (10 classes, train/ and test/ 5:1):
1,000 and 10,000 images (the larger 2.9 GiB decoded), then runs `clzoo train` on
each as a subprocess with `CLZOO_MEMORY_BUDGET=800MB` (so training streams the
images from their files) and a tiny recipe (resnet8, 1 epoch, 32 px views), with
the recipe's default evaluation and baselines. The peak resident memory of the
process tree (the sum of every process's VmRSS, polled from /proc every 0.1 s,
and the main process's own VmHWM) is printed as a table and added to
`benchmarks/train_eval_memory.json` under `--label` (issue 84 item 4: the
10,000-image run must peak within 0.6 GB of the 1,000-image one).

With `--source tfds` each folder is first prepared as a tfds dataset in ArrayRecord files
(`tests/data/tfds_builders.py`: the JPEGs kept as they are, never downloaded), and `clzoo train`
reads `tfds:clzoo_test_folder` from it (`TFDS_DATA_DIR`), streamed (issue 84: a prepared
dataset 10x larger adds <= 0.6 GB of peak RSS at the same budget).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SIDE, CLASSES = 320, 10
RECIPE = """name: evalmem
model:
  encoder: {name: resnet8}
  embedding_dim: 32
loss: {name: SINCERELoss, temperature: 0.1}
views: {size: 32}
training: {epochs: 1, batch_size: 256, learning_rate: 0.05}
"""


def write_folder(root, count, seed=0):
    """`count` class-coloured 320 px JPEGs with blocky noise (compressible, not trivial)."""
    from PIL import Image

    if (root / "done").exists():
        return root
    rng = np.random.default_rng(seed)
    colours = rng.integers(0, 256, (CLASSES, 3))
    for i in range(count):
        label = i % CLASSES
        split = "test" if (i // CLASSES) % 6 == 5 else "train"  # 5:1 in every class
        blocks = rng.integers(-60, 60, (SIDE // 16, SIDE // 16, 3))
        pixels = np.clip(colours[label] + np.kron(blocks, np.ones((16, 16, 1))), 0, 255)
        folder = root / split / str(label)
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels.astype(np.uint8)).save(folder / f"{i}.jpg", quality=85)
    (root / "done").write_text("")
    return root


def tree_rss(root_pid):
    """(sum of VmRSS over `root_pid` and its descendants, root's VmHWM), bytes."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry))
            except (OSError, IndexError):
                continue
    total, hwm, todo = 0, 0, [root_pid]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            status = Path(f"/proc/{pid}/status").read_text().splitlines()
        except OSError:
            continue
        for line in status:
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
            if pid == root_pid and line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
    return total, hwm


def as_tfds(folder, data_dir):
    """`tfds:NAME` of `folder` prepared in ArrayRecord files under `data_dir` (once)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.data.tfds_builders import NAME, prepare

    if not (data_dir / "done").exists():
        prepare(folder, data_dir, "array_record", shape=(SIDE, SIDE, 3))
        (data_dir / "done").write_text("")
    return f"tfds:{NAME}"


def run_train(data, recipe, output, backend, data_dir=None):
    """Run `clzoo train` once; returns (peak tree RSS, peak VmHWM, seconds, exit code, log tail)."""
    env = {**os.environ, "CLZOO_MEMORY_BUDGET": "800MB", "KERAS_BACKEND": backend}
    if data_dir is not None:
        env["TFDS_DATA_DIR"] = str(data_dir)
    clzoo = Path(sys.executable).with_name("clzoo")
    command = [str(clzoo), "train", str(recipe), "--data", str(data), "--output", str(output)]
    log = open(output.with_suffix(".log"), "w")
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    peak = hwm = 0
    while process.poll() is None:
        rss, root_hwm = tree_rss(process.pid)
        peak, hwm = max(peak, rss), max(hwm, root_hwm)
        time.sleep(0.1)
    log.close()
    tail = output.with_suffix(".log").read_text().splitlines()[-8:]
    return peak, hwm, time.perf_counter() - started, process.returncode, tail, command


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default="/tmp/evalmem")
    parser.add_argument("--label", default="after")
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--source", choices=("folder", "tfds"), default="folder")
    args = parser.parse_args()
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    recipe = root / "evalmem.yaml"
    recipe.write_text(RECIPE)
    rows = []
    for count in (int(n) for n in args.sizes.split(",")):
        data, data_dir = write_folder(root / f"jpeg{count}", count), None
        if args.source == "tfds":
            data_dir = root / f"tfds{count}"
            data = as_tfds(data, data_dir)
        output = root / f"run-{args.label}-{count}"
        shutil.rmtree(output, ignore_errors=True)  # this script's own folder from an earlier measure
        peak, hwm, seconds, code, tail, command = run_train(data, recipe, output, args.backend,
                                                            data_dir)
        rows.append({"images": count, "peak_tree_rss_mb": round(peak / 1e6), "peak_hwm_mb": round(hwm / 1e6),
                     "seconds": round(seconds), "exit": code,
                     "command": (f"TFDS_DATA_DIR={data_dir} " if data_dir else "")
                     + "CLZOO_MEMORY_BUDGET=800MB " + " ".join(command)})
        if code:
            print("\n".join(tail), file=sys.stderr)
    print(f"| {args.label} | images | peak RSS (tree) MB | VmHWM MB | seconds | exit |")
    for row in rows:
        print(f"| | {row['images']:,} | {row['peak_tree_rss_mb']:,} | {row['peak_hwm_mb']:,} "
              f"| {row['seconds']} | {row['exit']} |")
    if len(rows) == 2:
        print(f"growth: {rows[1]['peak_tree_rss_mb'] - rows[0]['peak_tree_rss_mb']:,} MB")
    path = Path(__file__).with_name("train_eval_memory.json")
    results = json.loads(path.read_text()) if path.exists() else {}
    results[args.label] = rows
    path.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
