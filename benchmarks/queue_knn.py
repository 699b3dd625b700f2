"""kNN top-1 at batch 32 with and without the labelled memory queue + momentum encoder.

Trains `recipes/supcon/cifar10_queue_small.yaml` twice on the same stratified CIFAR-10 subset,
same seed, epochs and batches: once as written (queue + momentum encoder), once with
`model.queue_size=null model.momentum=null`; then the cosine-weighted kNN top-1 of the encoder
features on a stratified test subset (training subset as memory). Prints one JSON line per run.

    KERAS_BACKEND=tensorflow nice -n 19 python benchmarks/queue_knn.py \
        --data ../shared/data/cifar10 --train-per-class 300 --test-per-class 100 --epochs 3
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data_default import CIFAR10_HELP, default_cifar10  # noqa: E402  (benchmarks/data_default.py)


def _subset(split, per_class):
    from clzoo.data import from_arrays

    keep = np.concatenate([np.flatnonzero(split.labels == c)[:per_class]
                           for c in range(len(split.class_names))])
    return from_arrays(split.images[keep], split.labels[keep], split.class_names)


def run(args, overrides, train, test):
    import keras

    from clzoo.data import batches
    from clzoo.eval.embed import embed
    from clzoo.eval.knn import knn_accuracy
    from clzoo.train import load_recipe
    from clzoo.train.builders import build_loss, build_optimizer, views_from_config
    from clzoo.train.tasks import build_model

    recipe = load_recipe(args.recipe, [f"training.epochs={args.epochs}", *overrides])
    keras.utils.set_random_seed(recipe.seed)
    views = views_from_config(recipe.views)
    steps = len(train.labels) // recipe.training.batch_size
    model = build_model(recipe, views)
    model.compile(optimizer=build_optimizer(recipe, steps), loss=build_loss(recipe))
    data = batches(train, "views", recipe.training.batch_size, recipe.seed, args.epochs, views=views)
    start = time.perf_counter()
    history = model.fit(data, epochs=args.epochs, steps_per_epoch=steps, verbose=0)
    seconds = time.perf_counter() - start
    memory = embed(model.encoder, train.images, verbose=False)
    queries = embed(model.encoder, test.images, verbose=False)
    knn = knn_accuracy(memory, train.labels, queries, test.labels, ks=(1, 20, 200))
    return {"queue_size": recipe.model.queue.size, "momentum": recipe.model.queue.momentum,
            "batch_size": recipe.training.batch_size, "epochs": args.epochs, "steps": steps * args.epochs,
            "final_loss": history.history["loss"][-1], "train_seconds": round(seconds, 1),
            "knn_top1": {str(k): round(v, 4) for k, v in knn.items()}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=default_cifar10(), help=CIFAR10_HELP)
    parser.add_argument("--recipe", default="recipes/supcon/cifar10_queue_small.yaml")
    parser.add_argument("--train-per-class", type=int, default=300)
    parser.add_argument("--test-per-class", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    from clzoo.data import load_split

    train = _subset(load_split(args.data, "train"), args.train_per_class)
    test = _subset(load_split(args.data, "test"), args.test_per_class)
    for overrides in ([], ["model.queue_size=null", "model.momentum=null"]):
        print(json.dumps(run(args, overrides, train, test)), flush=True)


if __name__ == "__main__":
    main()
