"""Does streaming from files starve the training step? The same run held in memory and streamed.

Writes CIFAR-10 images (`--per-class` of each class from an image folder, `$CLZOO_CIFAR10` or
`../shared/data/cifar10`) upsampled to 256-px JPEGs, then trains `recipes/supcon/cifar10_small.yaml`
at 32 px (`image_size: 32`, one epoch, no report) twice per backend: `data_loading: memory` and
`stream`; each run in its own process. Prints training images/s (`metrics.json`) and their ratio.

    python benchmarks/stream_speed.py --per-class 300 --backends tensorflow jax
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "recipes" / "supcon" / "cifar10_small.yaml"
SETTINGS = ["image_size=32", "training.epochs=1", "training.schedule.warmup_epochs=0",
            "training.checkpoint_every_steps=null", "eval.monitor_every=0", "eval.report=false"]


def upsampled_folder(source, root, per_class, side=256):
    """`per_class` images of each class of `source`/{train,test} as `side`-px JPEGs under `root`."""
    from PIL import Image

    for split in ("train", "test"):
        for folder in sorted((Path(source) / split).iterdir()):
            out = Path(root) / split / folder.name
            out.mkdir(parents=True, exist_ok=True)
            for path in sorted(folder.iterdir())[:per_class if split == "train" else per_class // 5]:
                with Image.open(path) as image:
                    image.convert("RGB").resize((side, side), Image.Resampling.BICUBIC).save(
                        out / f"{path.stem}.jpg", quality=90)
    return root


def images_per_second(folder, loading, backend, work):
    output = work / f"run-{backend}-{loading}"
    shutil.rmtree(output, ignore_errors=True)
    command = [sys.executable, "-m", "clzoo", "train", str(RECIPE), "--data", str(folder),
               "--output", str(output), *[a for s in SETTINGS + [f"data_loading={loading}"]
                                           for a in ("--set", s)]]
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3",
           "CLZOO_CACHE": str(work / "cache")}
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode:
        sys.exit(result.stdout[-2000:] + result.stderr[-2000:])
    return json.loads((output / "metrics.json").read_text())["images_per_second"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=os.environ.get("CLZOO_CIFAR10",
                                                           str(ROOT.parent / "shared" / "data" / "cifar10")))
    parser.add_argument("--per-class", type=int, default=300)
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax", "torch"])
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="clzoo-stream-speed-"))
    folder = upsampled_folder(args.source, work / "cifar10_256px", args.per_class)
    rows = []
    for backend in args.backends:
        rates = {loading: images_per_second(folder, loading, backend, work)
                 for loading in ("memory", "stream")}
        rows.append({"backend": backend, **rates, "ratio": rates["stream"] / rates["memory"]})
        print(json.dumps(rows[-1]), flush=True)
    print(f"\n{10 * args.per_class} CIFAR-10 images as 256-px JPEGs, trained at 32 px\n")
    print("| backend | in memory, images/s | streamed, images/s | streamed / in memory |")
    print("| --- | --- | --- | --- |")
    for row in rows:
        print(f"| {row['backend']} | {row['memory']:.0f} | {row['stream']:.0f} | {row['ratio']:.2f} |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
