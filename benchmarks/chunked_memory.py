"""Peak memory and time of one forward + backward pass of a loss, full or chunked.

One configuration (one process, so peak RSS is its own):
    KERAS_BACKEND=tensorflow python benchmarks/chunked_memory.py --samples 32768 --views 2 \\
        --dim 128 --chunk-size 1024 --loss SINCERELoss [--compiled]

prints a JSON line: embeddings N = samples * views, chunk size, seconds of
the pass (the first call, so tracing / compiling included for `--compiled`),
and peak resident memory of the process in MiB (`resource.getrusage`), which
includes the ~0.5-1 GiB of the framework itself; `baseline_mib` is the peak
before the loss runs. `floor_seconds` is the matmul floor of the pass:
`3 * 2 * N^2 * dim` FLOPs (one forward and two backward products) at this
backend's fp32 matmul rate, measured after the pass in the same process
(`matmul_gflops`); `x_floor` is the pass's time over it.

A sweep runs every configuration one after the other, each in its own
process (never two at once), and prints a Markdown table:
    python benchmarks/chunked_memory.py --sweep --samples 32768 --chunk-sizes 256 512 1024 2048 \\
        --backends tensorflow jax --losses SINCERELoss SupConLoss

`--label-similarity cosine` (or `jaccard`) draws multi-hot label rows
instead (100 classes, each sample in each class with probability 2%, one
label at least) and passes `label_similarity` to the loss (SupCon, SINCERE):
the float32 pair-weight form of the blocks.

A child whose resident memory passes `--max-rss-gib` is killed and reported
as such, so a sweep cannot take a shared machine's memory.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=32768)
    parser.add_argument("--views", type=int, default=2)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--chunk-size", type=int, default=None)
    parser.add_argument("--loss", default="SINCERELoss")
    parser.add_argument("--compiled", action="store_true",
                        help="trace the pass with tf.function / jax.jit, as fit's train step does")
    parser.add_argument("--sweep", action="store_true", help="run every configuration below")
    parser.add_argument("--chunk-sizes", nargs="+", default=["256", "512", "1024", "2048"],
                        help="sweep: chunk sizes, 'none' for the unchunked loss")
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax"])
    parser.add_argument("--modes", nargs="+", default=["eager", "compiled"])
    parser.add_argument("--losses", nargs="+", default=["SINCERELoss"])
    parser.add_argument("--label-similarity", default=None, choices=["cosine", "jaccard"],
                        help="multi-hot label rows and this label_similarity (SupCon, SINCERE)")
    parser.add_argument("--max-rss-gib", type=float, default=8.0,
                        help="sweep: kill a configuration whose resident memory exceeds this")
    return parser


def _pass(loss, y, z, compiled):
    """One forward + backward pass; returns `(value, gradient)` as NumPy."""
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        def step(v):
            with tf.GradientTape() as tape:
                tape.watch(v)
                value = loss(y, v)
            return value, tape.gradient(value, v)

        value, grad = (tf.function(step) if compiled else step)(tf.constant(z))
    elif backend == "jax":
        import jax

        step = jax.value_and_grad(lambda a: loss(y, a))
        value, grad = (jax.jit(step) if compiled else step)(z)
    else:
        import torch

        t = torch.tensor(z, requires_grad=True)
        value = loss(torch.tensor(y), t)
        value.backward()
        grad = t.grad
    return float(keras.ops.convert_to_numpy(value)), np.asarray(keras.ops.convert_to_numpy(grad))


def matmul_gflops(dim, n=8192, repeats=5):
    """This backend's fp32 matmul rate, GFLOP/s: the best of `repeats` compiled steps of three
    `(n, dim) x (dim, n)` products (the shape of the loss's own; `loss_speed.matmul_floor_step`)."""
    from loss_speed import matmul_floor_step  # benchmarks/loss_speed.py (a sibling, on sys.path)

    step = matmul_floor_step(n, dim)
    step()
    best = min(_seconds(step) for _ in range(repeats))
    return 3 * 2 * n * n * dim / best / 1e9


def _seconds(step):
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def run_one(args):
    import keras

    import clzoo

    rng = np.random.default_rng(0)
    z = rng.normal(size=(args.samples, args.views, args.dim)).astype("float32")
    y = rng.integers(0, 100, size=args.samples).astype("int32")
    extra = {}
    if args.label_similarity:
        rows = rng.random((args.samples, 100)) < 0.02
        rows[np.arange(args.samples), y] = True
        y, extra = rows.astype("float32"), {"label_similarity": args.label_similarity}
    loss = clzoo.losses.ALL_OBJECTS_DICT[args.loss](chunk_size=args.chunk_size, **extra)
    baseline = peak_mib()
    start = time.perf_counter()
    value, grad = _pass(loss, y, z, args.compiled)
    seconds = time.perf_counter() - start
    n = args.samples * args.views
    floor = 3 * 2 * n * n * args.dim / (matmul_gflops(args.dim) * 1e9)  # after: its peak RSS is small
    print(json.dumps({
        "backend": keras.backend.backend(), "loss": args.loss,
        "embeddings": args.samples * args.views, "dim": args.dim, "chunk_size": args.chunk_size,
        "label_similarity": args.label_similarity,
        "compiled": args.compiled, "seconds": round(seconds, 1), "loss_value": value,
        "floor_seconds": round(floor, 2), "x_floor": round(seconds / floor, 2),
        "grad_finite": bool(np.all(np.isfinite(grad))),
        "baseline_mib": round(baseline), "peak_mib": round(peak_mib()),
    }), flush=True)


def _rss_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _child(args, backend, mode, loss, chunk):
    """Run one configuration in its own process; return its JSON record (or why it has none)."""
    command = [sys.executable, os.path.abspath(__file__), "--samples", str(args.samples),
               "--views", str(args.views), "--dim", str(args.dim), "--loss", loss]
    command += [] if chunk is None else ["--chunk-size", str(chunk)]
    command += ["--compiled"] if mode == "compiled" else []
    if args.label_similarity:
        command += ["--label-similarity", args.label_similarity]
    env = dict(os.environ, KERAS_BACKEND=backend)
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True)
    killed = False
    while child.poll() is None:
        if _rss_mib(child.pid) > args.max_rss_gib * 1024:
            child.kill()
            killed = True
        time.sleep(0.2)
    out = child.stdout.read().strip().splitlines()
    record = {"backend": backend, "loss": loss, "chunk_size": chunk, "compiled": mode == "compiled"}
    if killed:
        return dict(record, error=f"killed above {args.max_rss_gib} GiB")
    if child.returncode or not out:
        return dict(record, error=f"exit status {child.returncode}")
    return json.loads(out[-1])


def sweep(args):
    rows = []
    for loss in args.losses:
        for backend in args.backends:
            for mode in args.modes:
                for text in args.chunk_sizes:
                    chunk = None if text.lower() == "none" else int(text)
                    record = _child(args, backend, mode, loss, chunk)
                    print(json.dumps(record), flush=True)
                    rows.append(record)
    print(f"\nlabel_similarity: {args.label_similarity}")
    print("\n| loss | backend | mode | chunk_size | seconds | x floor | peak RSS MiB | loss value |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        mode = "compiled" if r["compiled"] else "eager"
        figures = (f"{r['error']} | | | " if "error" in r else
                   f"{r['seconds']} | {r['x_floor']} | {r['peak_mib']} | {r['loss_value']:.4f}")
        print(f"| {r['loss']} | {r['backend']} | {mode} | {r['chunk_size']} | {figures} |")


def main():
    args = _parser().parse_args()
    if args.sweep:
        sweep(args)
    else:
        run_one(args)


if __name__ == "__main__":
    main()
