"""Forward + backward time of the clzoo losses on the current Keras backend.

Usage:
    KERAS_BACKEND=tensorflow python benchmarks/loss_speed.py [--batch 256 1024] [--views 2] [--dim 128]

Prints one Markdown row per (loss, batch): milliseconds per forward+backward
pass (median of `--repeats`, after a warm-up call that compiles).
"""

import argparse
import statistics
import time

import keras
import numpy as np

import clzoo


def _timed_grad(loss, y, z):
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        v = tf.Variable(z)

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                out = loss(y, v)
            return tape.gradient(out, v)

        return lambda: step().numpy()
    if backend == "jax":
        import jax

        grad = jax.jit(jax.grad(lambda a: loss(y, a)))
        return lambda: grad(z).block_until_ready()
    import torch

    t = torch.tensor(z, requires_grad=True)

    def step():
        t.grad = None
        loss(torch.tensor(y), t).backward()
        return t.grad

    return step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--views", type=int, default=2)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"backend={keras.backend.backend()} views={args.views} dim={args.dim}")
    print("| loss | batch | ms / forward+backward |\n| --- | --- | --- |")
    for name, loss in [("SINCERELoss", clzoo.losses.SINCERELoss()),
                       ("SupConLoss", clzoo.losses.SupConLoss())]:
        for batch in args.batch:
            z = rng.normal(size=(batch, args.views, args.dim)).astype("float32")
            y = rng.integers(0, 10, size=batch).astype("int32")
            step = _timed_grad(loss, y, z)
            step()
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                step()
                times.append(time.perf_counter() - start)
            print(f"| {name} | {batch} | {1000 * statistics.median(times):.1f} |")


if __name__ == "__main__":
    main()
