"""clzoo's SupCon and SINCERE against the PyTorch reference implementations, side by side.

The references are not part of clzoo: fetch them yourself and point this
script at the checkouts (nothing of theirs is copied here):

    git clone https://github.com/HobbitLong/SupContrast   /tmp/SupContrast      # SupCon (losses.py)
    git clone https://github.com/tufts-ml/SupContrast     /tmp/SINCERE-official # SINCERE (revised_losses.py)
    python benchmarks/compare_references.py --supcontrast /tmp/SupContrast \
        --sincere /tmp/SINCERE-official --sizes 1024 4096 16384 65536

Each (implementation, loss, N) runs in a fresh process, so its peak resident
memory is its own. N is the number of embeddings (N / 2 samples x 2 views) of
dimension 128 with 10 classes; time is one forward + backward pass, the median
of several after a warm-up call that compiles (XLA on TensorFlow, `jax.jit` on
JAX, eager PyTorch for the references, as they are used). clzoo runs the loss
as a Keras `fit` runs it (compiled); at N = 65,536 it uses `chunk_size`.
"""

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import time

DIM, CLASSES, VIEWS = 128, 10, 2


def _peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _inputs(n):
    import numpy as np

    rng = np.random.default_rng(0)
    z = rng.normal(size=(n // VIEWS, VIEWS, DIM)).astype("float32")
    z /= np.linalg.norm(z, axis=-1, keepdims=True)
    y = rng.integers(0, CLASSES, size=n // VIEWS).astype("int64")
    return z, y


def _load(path, module):
    spec = importlib.util.spec_from_file_location(f"reference_{module}", os.path.join(path, module))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _worker(args):
    z, y = _inputs(args.n)
    baseline = _peak_mib()
    if args.impl.startswith("clzoo"):
        os.environ["KERAS_BACKEND"] = args.impl.split("-")[1]
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
        import clzoo

        cls = clzoo.losses.SupConLoss if args.loss == "SupCon" else clzoo.losses.SINCERELoss
        loss = cls(temperature=0.07, chunk_size=args.chunk_size)
        if args.impl == "clzoo-tensorflow":
            import tensorflow as tf

            var = tf.Variable(z)
            yt = tf.constant(y.astype("int32"))

            @tf.function(jit_compile=args.chunk_size is None)
            def step():
                with tf.GradientTape() as tape:
                    value = loss(yt, var)
                return value, tape.gradient(value, var)

            run = lambda: [t.numpy() for t in step()]  # noqa: E731
        else:
            import jax

            fn = jax.jit(jax.value_and_grad(lambda a: loss(y.astype("int32"), a)))
            run = lambda: jax.block_until_ready(fn(z))  # noqa: E731
    else:
        import torch

        torch.set_num_threads(os.cpu_count())
        if args.impl == "supcontrast-torch":
            ref = _load(args.path, "losses.py").SupConLoss(temperature=0.07, base_temperature=0.07)
        else:
            ref = _load(args.path, "revised_losses.py").MultiviewSINCERELoss(temperature=0.07)
        zt, yt = torch.tensor(z), torch.tensor(y)

        def run():
            leaf = zt.clone().requires_grad_(True)
            value = ref(leaf, yt)
            value.backward()
            return value.item(), leaf.grad

    start = time.perf_counter()
    run()  # warm-up / compile
    compile_s = time.perf_counter() - start
    repeats = 10 if args.n <= 4096 else (2 if args.n <= 16384 else 1)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    print(json.dumps({"impl": args.impl, "loss": args.loss, "n": args.n,
                      "chunk_size": args.chunk_size, "ms": 1000 * statistics.median(times),
                      "first_call_s": round(compile_s, 2), "peak_mib": round(_peak_mib()),
                      "baseline_mib": round(baseline)}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--supcontrast", help="checkout of HobbitLong/SupContrast")
    parser.add_argument("--sincere", help="checkout of tufts-ml/SupContrast (SINCERE code)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096, 16384, 65536])
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax"])
    parser.add_argument("--chunk-size", type=int, default=256,
                        help="clzoo chunk size at N > 16384 (full matrix below)")
    parser.add_argument("--reference-max-n", type=int, default=16384,
                        help="largest N for the references (N x N float32 matrices, many of them)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--impl", help=argparse.SUPPRESS)
    parser.add_argument("--loss", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        args.chunk_size = args.chunk_size or None
        return _worker(args)

    rows = []
    for n in args.sizes:
        for loss, ref_impl, ref_path in (("SupCon", "supcontrast-torch", args.supcontrast),
                                         ("SINCERE", "sincere-torch", args.sincere)):
            jobs = [(f"clzoo-{b}", None, args.chunk_size if n > 16384 else 0)
                    for b in args.backends]
            if ref_path and n <= args.reference_max_n:
                jobs.append((ref_impl, ref_path, 0))
            for impl, path, chunk in jobs:
                cmd = [sys.executable, __file__, "--worker", "--impl", impl, "--loss", loss,
                       "--n", str(n), "--chunk-size", str(chunk)]
                if path:
                    cmd += ["--path", path]
                env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
                out = subprocess.run(cmd, capture_output=True, text=True, env=env)
                line = [x for x in out.stdout.splitlines() if x.startswith("{")]
                row = json.loads(line[-1]) if line else {
                    "impl": impl, "loss": loss, "n": n, "error": out.stderr.strip()[-300:]}
                rows.append(row)
                print(json.dumps(row), flush=True)
    print("\n| N | loss | implementation | chunk | ms fwd+bwd | peak RSS MiB |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if "error" in r:
            print(f"| {r['n']} | {r['loss']} | {r['impl']} | - | failed | - |")
        else:
            print(f"| {r['n']} | {r['loss']} | {r['impl']} | {r['chunk_size'] or '-'} | "
                  f"{r['ms']:.1f} | {r['peak_mib']} |")


if __name__ == "__main__":
    main()
