"""Multi-label SupCon / SINCERE vs single-label, on CIFAR-10 fine + coarse labels (a short CPU run).

Each training image carries two labels at once, its CIFAR-10 class (fine, 10)
and animal / vehicle (coarse, 2; Perfectly Balanced Table 2), as one multi-hot
row of 12 columns. With `label_similarity="cosine"` a pair of the same class
weighs 1, a pair of different classes with the same coarse class 1/2 and a pair
across coarse classes 0. The single-label runs see the fine ids (or the coarse
ids with `--single coarse`). After training, the encoder's features are scored
by cosine-weighted kNN (k=20, SINCERE app. M) on the test subset, against the
fine and the coarse labels.

Usage:
    KERAS_BACKEND=tensorflow python benchmarks/multi_label.py --data ../shared/data/cifar10 \
        --train-per-class 500 --test-per-class 200 --epochs 10 --seeds 0

Prints one JSON line per run and a Markdown table at the end.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import clzoo
from clzoo.data.label_sets import CIFAR10_COARSE

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data_default import CIFAR10_HELP, default_cifar10  # noqa: E402  (benchmarks/data_default.py)


def subset(split, per_class, seed):
    """The first `per_class` images of each class after a seeded shuffle."""
    order = np.random.default_rng(seed).permutation(len(split))
    keep = np.concatenate([order[split.labels[order] == c][:per_class]
                           for c in range(len(split.class_names))])
    return clzoo.data.from_arrays(split.images[keep], split.labels[keep], split.class_names)


def label_rows(class_names):
    """Multi-hot rows `(classes, classes + 2)`: fine one-hot, then coarse one-hot (vehicle, animal)."""
    coarse = np.array([CIFAR10_COARSE[name] == "animal" for name in class_names], "int64")
    rows = np.zeros((len(class_names), len(class_names) + 2), "float32")
    rows[np.arange(len(class_names)), np.arange(len(class_names))] = 1
    rows[np.arange(len(class_names)), len(class_names) + coarse] = 1
    return rows, coarse


def small_cnn():
    """A 4-block CNN (about 0.4M weights): (B, 32, 32, 3) in [0, 1] -> (B, 256)."""
    inputs = keras.Input((32, 32, 3))
    x = inputs
    for filters in (32, 64, 128, 256):
        x = keras.layers.Conv2D(filters, 3, padding="same", use_bias=False)(x)
        x = keras.layers.BatchNormalization()(x)
        x = keras.layers.ReLU()(x)
        if filters != 256:
            x = keras.layers.MaxPooling2D()(x)
    return keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(x), name="small_cnn")


def train(train_split, targets, loss, args, seed):
    """Train encoder + head with `loss` on `targets` (ids or multi-hot rows per class); return the encoder."""
    keras.utils.set_random_seed(seed)
    table = tf.constant(targets)
    data = clzoo.data.batches(train_split, "views", args.batch_size, seed, args.epochs).map(
        lambda views, labels: (views, tf.gather(table, labels)))
    model = clzoo.models.ContrastiveModel(small_cnn(), clzoo.models.ProjectionHead((256,), 64))
    model.compile(optimizer=keras.optimizers.Adam(args.lr), loss=loss)
    history = model.fit(data, epochs=args.epochs, steps_per_epoch=len(train_split) // args.batch_size,
                        verbose=0)
    return model.encoder, history.history["loss"][-1]


def knn(encoder, train_split, test_split, coarse):
    train = clzoo.eval.embed(encoder, train_split.images, verbose=False)
    test = clzoo.eval.embed(encoder, test_split.images, verbose=False)
    fine = clzoo.eval.knn_accuracy(train, train_split.labels, test, test_split.labels, ks=(20,))[20]
    coarse_acc = clzoo.eval.knn_accuracy(train, coarse[train_split.labels], test,
                                         coarse[test_split.labels], ks=(20,))[20]
    return fine, coarse_acc


def runs(args, rows):
    """(name, targets, loss) of every compared run."""
    single = np.arange(10) if args.single == "fine" else rows[:, 10:].argmax(-1)
    losses = {"SupCon": clzoo.losses.SupConLoss, "SINCERE": clzoo.losses.SINCERELoss}
    out = []
    for name in args.losses:
        cls = losses[name]
        out.append((f"{name}, single-label ({args.single})", single.astype("int32"),
                    cls(temperature=args.temperature)))
        out.append((f"{name}, multi-label (fine + coarse, cosine)", rows,
                    cls(temperature=args.temperature, label_similarity="cosine")))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=default_cifar10(), help=CIFAR10_HELP)
    parser.add_argument("--train-per-class", type=int, default=500)
    parser.add_argument("--test-per-class", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--temperature", type=float, default=0.1)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--losses", nargs="+", default=["SupCon"], choices=["SupCon", "SINCERE"])
    parser.add_argument("--single", default="fine", choices=["fine", "coarse"])
    args = parser.parse_args()
    train_split = subset(clzoo.data.load_split(args.data, "train"), args.train_per_class, 0)
    test_split = subset(clzoo.data.load_split(args.data, "test"), args.test_per_class, 1)
    rows, coarse = label_rows(train_split.class_names)
    results = []
    for name, targets, loss in runs(args, rows):
        for seed in args.seeds:
            start = time.perf_counter()
            encoder, final_loss = train(train_split, targets, loss, args, seed)
            fine, coarse_acc = knn(encoder, train_split, test_split, coarse)
            record = {"run": name, "seed": seed, "knn20_fine": fine, "knn20_coarse": coarse_acc,
                      "final_loss": final_loss, "seconds": round(time.perf_counter() - start, 1)}
            print(json.dumps(record), flush=True)
            results.append(record)
    print("\n| run | seed | kNN-20 fine | kNN-20 coarse | s |\n| --- | --- | --- | --- | --- |")
    for r in results:
        print(f"| {r['run']} | {r['seed']} | {100 * r['knn20_fine']:.2f}% | "
              f"{100 * r['knn20_coarse']:.2f}% | {r['seconds']:.0f} |")


if __name__ == "__main__":
    main()
