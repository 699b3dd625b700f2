"""Peak memory and step time of `fit` with and without GradCache (`encoder_chunk_size`).

One configuration (one process, so peak RSS is its own):
    KERAS_BACKEND=tensorflow python benchmarks/grad_cache_memory.py --samples 2048 --chunk 256

trains ResNet-20 (`clzoo.models.cifar_resnet`) + a 128-d projection head with
SupCon (temperature 0.1, SGD) for `--steps` steps on random 32x32 images,
`--samples` samples x 2 views per batch (so 2048 samples = 4,096 images), and
prints a JSON line: the first step's seconds (tracing included), the mean of
the later steps, and the process's peak resident memory in MiB
(`resource.getrusage`, which includes the ~1 GiB of the framework itself;
`baseline_mib` is the peak before `fit`).

A sweep runs the unchunked step and `--chunk` one after the other, each in a
fresh process (never two at once), `--repeats` times, and prints a Markdown
table with the slowdown against the unchunked step:
    python benchmarks/grad_cache_memory.py --sweep --samples 2048 --chunk 256 --steps 3 --repeats 2

A child whose resident memory passes `--max-rss-gib` is killed and reported as
such, so a sweep cannot take a shared machine's memory.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=2048, help="samples per batch (x 2 views)")
    parser.add_argument("--chunk", type=int, default=None, help="encoder_chunk_size (images)")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--sweep", action="store_true", help="no chunk, then --chunk, in turn")
    parser.add_argument("--repeats", type=int, default=1, help="sweep: runs of each configuration")
    parser.add_argument("--backend", default="tensorflow", choices=["tensorflow", "jax", "torch"])
    parser.add_argument("--max-rss-gib", type=float, default=14.0,
                        help="sweep: kill a configuration whose resident memory exceeds this")
    return parser


class _StepTimes:
    """Seconds of each training batch (a Keras callback built lazily, after the backend is set)."""

    def __new__(cls):
        import keras

        class Times(keras.callbacks.Callback):
            def __init__(self):
                super().__init__()
                self.seconds = []

            def on_train_batch_begin(self, batch, logs=None):
                self.start = time.perf_counter()

            def on_train_batch_end(self, batch, logs=None):
                self.seconds.append(time.perf_counter() - self.start)

        return Times()


def run_one(args):
    import keras
    import tensorflow as tf

    import clzoo

    rng = np.random.default_rng(0)
    x = rng.random((args.samples, 2, 32, 32, 3), dtype="float32")
    y = rng.integers(0, 10, size=args.samples).astype("int32")
    data = tf.data.Dataset.from_tensors((x, y)).repeat()
    model = clzoo.models.ContrastiveModel(
        clzoo.models.cifar_resnet("resnet20"), clzoo.models.ProjectionHead(output_dim=128),
        encoder_chunk_size=args.chunk)
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9),
                  loss=clzoo.losses.SupConLoss(temperature=0.1))
    times = _StepTimes()
    baseline = peak_mib()
    history = model.fit(data, epochs=1, steps_per_epoch=args.steps, callbacks=[times], verbose=0)
    later = times.seconds[1:] or times.seconds
    print(json.dumps({
        "backend": keras.backend.backend(), "images": 2 * args.samples, "chunk": args.chunk,
        "steps": args.steps, "first_step_s": round(times.seconds[0], 1),
        "step_s": round(statistics.mean(later), 1), "loss": history.history["loss"][-1],
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


def _child(args, chunk):
    """Run one configuration in its own process; return its JSON record (or why it has none)."""
    command = [sys.executable, os.path.abspath(__file__), "--samples", str(args.samples),
               "--steps", str(args.steps), "--backend", args.backend]
    command += [] if chunk is None else ["--chunk", str(chunk)]
    env = dict(os.environ, KERAS_BACKEND=args.backend, TF_CPP_MIN_LOG_LEVEL="3")
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True)
    killed = False
    while child.poll() is None:
        if _rss_mib(child.pid) > args.max_rss_gib * 1024:
            child.kill()
            killed = True
        time.sleep(0.2)
    out = child.stdout.read().strip().splitlines()
    record = {"backend": args.backend, "images": 2 * args.samples, "chunk": chunk}
    if killed:
        return dict(record, error=f"killed above {args.max_rss_gib} GiB")
    if child.returncode or not out:
        return dict(record, error=f"exit status {child.returncode}")
    return json.loads(out[-1])


def sweep(args):
    runs = {None: [], args.chunk: []}
    for _ in range(args.repeats):
        for chunk in runs:
            record = _child(args, chunk)
            print(json.dumps(record), flush=True)
            if "error" not in record:
                runs[chunk].append(record)
    if not all(runs.values()):
        print("\nno table: a configuration failed in every repeat")
        return
    base = statistics.mean(r["step_s"] for r in runs[None])
    print(f"\n{args.backend}, {2 * args.samples} images of 32x32 (ResNet-20, SupCon), "
          f"mean over {args.repeats} run(s) of steps 2..{args.steps}")
    print("\n| encoder_chunk_size | peak RSS MiB | s / step | time vs. unchunked |")
    print("| --- | --- | --- | --- |")
    for chunk, records in runs.items():
        peak = max(r["peak_mib"] for r in records)
        step = statistics.mean(r["step_s"] for r in records)
        print(f"| {chunk or 'none'} | {peak:,} | {step:.1f} | x{step / base:.2f} |")


def main():
    args = _parser().parse_args()
    if args.sweep:
        if args.chunk is None:
            raise SystemExit("--sweep compares the unchunked step with --chunk M: pass --chunk")
        sweep(args)
    else:
        run_one(args)


if __name__ == "__main__":
    main()
