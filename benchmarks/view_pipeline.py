"""Is the tf.data view pipeline fast enough to keep the trainer busy?

Usage:
    python benchmarks/view_pipeline.py --data ../shared/data/cifar10 --batch-size 128 \
        --recipes supcon simclr stacked_randaugment asymmetric

For each view recipe: images/s of `clzoo.data.batches` alone (2 views per
image, decoded CIFAR-10 from the image folder's cache, 40 batches after 5 of
warm-up), and images/s of the trainer (`train_on_batch` of the
`sincere_cifar10_small` model, ResNet-20 + SINCERE, on one fixed batch, 10 steps
after 3 of warm-up), then their ratio. Also the seconds from `batches(...)` to its first
batch: the recipe's first pipeline in the process (`first_batch_s`), and a second one resumed at
step 5 in the same process (`rebuilt_first_batch_s`; a resumed `clzoo train` is a new process and
pays `first_batch_s`).
Prints one JSON line per recipe.
"""

import argparse
import functools
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data_default import CIFAR10_HELP, default_cifar10  # noqa: E402  (benchmarks/data_default.py)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=default_cifar10(), help=CIFAR10_HELP)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--recipes", nargs="+",
                        default=["supcon", "simclr", "stacked_randaugment", "asymmetric"])
    parser.add_argument("--batches", type=int, default=40)
    args = parser.parse_args()

    import keras

    import clzoo
    from clzoo.data import batches, load_split, view_recipe
    from clzoo.train import build_model, load_recipe

    split = load_split(args.data, "train")
    config = load_recipe("recipes/sincere/cifar10_small.yaml", [])
    trainer_rate = None
    for name in args.recipes:
        views = view_recipe(name, size=32, views=2)
        epochs = -(-(5 + args.batches) // (len(split) // args.batch_size))  # enough batches
        pipeline = functools.partial(batches, split, "views", args.batch_size, seed=0,
                                     epochs=epochs, views=views)
        start = time.perf_counter()
        dataset = iter(pipeline())
        batch = next(dataset)
        first_batch = time.perf_counter() - start
        for _ in range(4):
            batch = next(dataset)
        start = time.perf_counter()
        for _ in range(args.batches):
            next(dataset)
        pipeline_rate = args.batches * args.batch_size / (time.perf_counter() - start)
        del dataset  # its prefetching stops before the second pipeline is timed
        start = time.perf_counter()
        next(iter(pipeline(start_step=5)))
        rebuilt = time.perf_counter() - start
        if trainer_rate is None:  # the model's cost does not depend on the views
            model = build_model(config, views)
            model.compile(optimizer=keras.optimizers.AdamW(1e-3), loss=clzoo.losses.SINCERELoss())
            x, y = batch
            for _ in range(3):
                model.train_on_batch(x, y)
            start = time.perf_counter()
            for _ in range(10):
                model.train_on_batch(x, y)
            trainer_rate = 10 * args.batch_size / (time.perf_counter() - start)
        print(json.dumps({"recipe": name, "pipeline_images_per_s": round(pipeline_rate),
                          "trainer_images_per_s": round(trainer_rate),
                          "ratio": round(pipeline_rate / trainer_rate, 2),
                          "first_batch_s": round(first_batch, 2),
                          "rebuilt_first_batch_s": round(rebuilt, 2),
                          "backend": keras.backend.backend(), "cpus": os.cpu_count()}), flush=True)


if __name__ == "__main__":
    main()
