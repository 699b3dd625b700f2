"""Forward + backward time of the clzoo losses on the current Keras backend.

Usage:
    KERAS_BACKEND=tensorflow python benchmarks/loss_speed.py [--batch 256 1024] [--views 2] [--xla]

Prints one Markdown row per (loss, batch): milliseconds per forward+backward
pass (median of `--repeats`, after a warm-up call that compiles), beside the
matmul floor timed in the same run and compiled the same way: three
`(N, D) x (D, N)` products (`N = batch * views`), the one forward and two backward
products no exact loss over all pairs can skip. `--xla` compiles TensorFlow with XLA
(`jit_compile=True`, as `fit(jit_compile=True)` does); JAX always runs under `jax.jit`.

`--chunk-sizes 512 1024` adds rows of the chunked losses (`chunk_size`). `--textbook` adds a
yardstick row: SupCon L_out written as the formula (`textbook_supcon`: full logits, masked
log-softmax, mean over positives), compiled the same way, i.e. what the backend's compiler makes
of the plain N x N computation.
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


def textbook_supcon(y, z, temperature=0.1):
    """SupCon L_out (Khosla et al. 2020, eq. 2) as the formula reads: no chunking, no custom
    gradient, no kept logits. `y`: `(B,)` int labels; `z`: `(B, V, D)` float32 views (each
    normalized here). Returns the float32 scalar mean over the `B * V` anchors, equal to
    `clzoo.losses.SupConLoss(temperature)` (`tests/test_loss_speed.py`)."""
    ops = keras.ops
    batch, views = ops.shape(z)[0], ops.shape(z)[1]
    flat = ops.reshape(z, (batch * views, -1))
    flat = flat / ops.norm(flat, axis=1, keepdims=True)
    labels = ops.repeat(ops.convert_to_tensor(y), views)  # flat rows are sample-major
    n = batch * views
    not_self = ops.logical_not(ops.cast(ops.eye(n), "bool"))
    logits = ops.where(not_self, ops.matmul(flat, ops.transpose(flat)) / temperature, -1e9)
    log_p = logits - ops.logsumexp(logits, axis=1, keepdims=True)
    positive = ops.logical_and(ops.equal(labels[:, None], labels[None, :]), not_self)
    mean_log_p = ops.sum(ops.where(positive, log_p, 0.0), axis=1) / ops.sum(
        ops.cast(positive, "float32"), axis=1)
    return -ops.mean(mean_log_p)


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
    parser.add_argument("--chunk-sizes", type=int, nargs="*", default=[],
                        help="also time the chunked losses at these chunk sizes")
    parser.add_argument("--textbook", action="store_true",
                        help="also time SupCon written as the formula (a yardstick)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"backend={keras.backend.backend()} views={args.views} dim={args.dim} xla={args.xla}")
    print("| loss | chunk | batch | N | ms / forward+backward | floor ms (3 matmuls) | x floor |\n"
          "| --- | --- | --- | --- | --- | --- | --- |")
    for batch in args.batch:
        n = batch * args.views
        floor = _median_ms(matmul_floor_step(n, args.dim, args.xla), args.repeats)
        for name, chunk, loss in _candidates(args.chunk_sizes, args.textbook):
            z = rng.normal(size=(batch, args.views, args.dim)).astype("float32")
            y = rng.integers(0, 10, size=batch).astype("int32")
            ms = _median_ms(_timed_grad(loss, y, z, args.xla), args.repeats)
            print(f"| {name} | {chunk or '-'} | {batch} | {n} | {ms:.1f} | {floor:.1f} | "
                  f"{ms / floor:.2f} |", flush=True)


def _candidates(chunk_sizes, textbook):
    """(name, chunk size, loss(y, z)) of every row to time."""
    rows = [(name, chunk, getattr(clzoo.losses, name)(chunk_size=chunk))
            for chunk in [None, *chunk_sizes] for name in ("SINCERELoss", "SupConLoss")]
    return rows + ([("SupCon, textbook formula", None, textbook_supcon)] if textbook else [])


if __name__ == "__main__":
    main()
