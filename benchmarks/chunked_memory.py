"""Peak memory and time of one forward + backward pass of a loss, full or chunked.

Usage (one configuration per process, so peak RSS is its own):
    KERAS_BACKEND=tensorflow python benchmarks/chunked_memory.py --samples 32768 --views 2 \
        --dim 128 --chunk-size 1024 --loss SINCERELoss [--compiled]

Prints a JSON line: embeddings N = samples * views, chunk size, seconds, and
peak resident memory of the process in MiB (`resource.getrusage`), which
includes the ~0.5-1 GiB of the framework itself; `baseline_mib` is the peak
before the loss runs.
"""

import argparse
import json
import resource
import time

import keras
import numpy as np

import clzoo


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=32768)
    parser.add_argument("--views", type=int, default=2)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--chunk-size", type=int, default=None)
    parser.add_argument("--loss", default="SINCERELoss")
    parser.add_argument("--compiled", action="store_true",
                        help="trace the pass with tf.function / jax.jit, as fit's train step does")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    z = rng.normal(size=(args.samples, args.views, args.dim)).astype("float32")
    y = rng.integers(0, 100, size=args.samples).astype("int32")
    loss = clzoo.losses.ALL_OBJECTS_DICT[args.loss](chunk_size=args.chunk_size)
    backend = keras.backend.backend()
    baseline = peak_mib()
    start = time.perf_counter()
    if backend == "tensorflow":
        import tensorflow as tf

        def step(v):
            with tf.GradientTape() as tape:
                tape.watch(v)
                value = loss(y, v)
            return value, tape.gradient(value, v)

        value, grad = (tf.function(step) if args.compiled else step)(tf.constant(z))
    elif backend == "jax":
        import jax

        step = jax.value_and_grad(lambda a: loss(y, a))
        value, grad = (jax.jit(step) if args.compiled else step)(z)
    else:
        import torch

        t = torch.tensor(z, requires_grad=True)
        value = loss(torch.tensor(y), t)
        value.backward()
        grad = t.grad
    grad = np.asarray(keras.ops.convert_to_numpy(grad))
    seconds = time.perf_counter() - start
    print(json.dumps({
        "backend": backend, "loss": args.loss, "embeddings": args.samples * args.views,
        "dim": args.dim, "chunk_size": args.chunk_size,
        "compiled": args.compiled, "seconds": round(seconds, 1),
        "loss_value": float(keras.ops.convert_to_numpy(value)),
        "grad_finite": bool(np.all(np.isfinite(grad))),
        "baseline_mib": round(baseline), "peak_mib": round(peak_mib()),
    }))


if __name__ == "__main__":
    main()
