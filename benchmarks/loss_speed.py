"""Forward + backward time of the clzoo losses on the current Keras backend.

Usage:
    KERAS_BACKEND=tensorflow python benchmarks/loss_speed.py [--batch 256 1024] [--views 2] [--xla]

Prints one Markdown row per (loss, batch): milliseconds per forward+backward
pass (median of `--repeats`, after a warm-up call that compiles), beside the
matmul floor timed in the same run and compiled the same way: three
`(N, D) x (D, N)` products (`N = batch * views`), the one forward and two backward
products no exact loss over all pairs can skip. `--xla` compiles TensorFlow with XLA
(`jit_compile=True`, as `fit(jit_compile=True)` does); JAX always runs under `jax.jit`.
"""

import argparse
import statistics
import time

import keras
import numpy as np

import clzoo


def _timed_grad(loss, y, z, xla=False):
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        v = tf.Variable(z)

        @tf.function(jit_compile=xla)
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


def matmul_floor_step(n, dim, xla=False):
    """A step (no arguments) of three `(n, dim) x (dim, n)` fp32 products, compiled as the losses
    are here and each summed so none is dead code: `3 * 2 * n**2 * dim` FLOPs. Also used by
    `chunked_memory.py`."""
    rng = np.random.default_rng(1)
    a, b = (rng.normal(size=(n, dim)).astype("float32") for _ in range(2))
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        a, b = tf.Variable(a), tf.Variable(b)
        step = tf.function(lambda: sum(tf.reduce_sum(tf.matmul(x, y, transpose_b=True))
                                       for x, y in ((a, b), (b, a), (a, a))), jit_compile=xla)
        return lambda: step().numpy()
    if keras.backend.backend() == "jax":
        import jax
        import jax.numpy as jnp

        step = jax.jit(lambda x, y: sum(jnp.sum(p @ q.T) for p, q in ((x, y), (y, x), (x, x))))
        return lambda: step(a, b).block_until_ready()
    import torch

    a, b = torch.tensor(a), torch.tensor(b)
    return lambda: sum(float((p @ q.T).sum()) for p, q in ((a, b), (b, a), (a, a)))


def _median_ms(step, repeats):
    step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--views", type=int, default=2)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--xla", action="store_true", help="TensorFlow: jit_compile=True")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"backend={keras.backend.backend()} views={args.views} dim={args.dim} xla={args.xla}")
    print("| loss | batch | N | ms / forward+backward | floor ms (3 matmuls) | x floor |\n"
          "| --- | --- | --- | --- | --- | --- |")
    for batch in args.batch:
        n = batch * args.views
        floor = _median_ms(matmul_floor_step(n, args.dim, args.xla), args.repeats)
        for name, loss in [("SINCERELoss", clzoo.losses.SINCERELoss()),
                           ("SupConLoss", clzoo.losses.SupConLoss())]:
            z = rng.normal(size=(batch, args.views, args.dim)).astype("float32")
            y = rng.integers(0, 10, size=batch).astype("int32")
            ms = _median_ms(_timed_grad(loss, y, z, args.xla), args.repeats)
            print(f"| {name} | {batch} | {n} | {ms:.1f} | {floor:.1f} | {ms / floor:.2f} |", flush=True)

if __name__ == "__main__":
    main()
