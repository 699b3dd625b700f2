"""The device stream against tf.data: images/s of the stream alone and of whole training steps.

Usage (from the repository root, nothing else running):

    python benchmarks/device_stream.py --data ../shared/data/cifar10 \
        --recipe recipes/supcon/cifar10_airbench.yaml --json benchmarks/device_stream.json

One worker process per Keras backend (tensorflow, jax, torch; `KERAS_BACKEND` is fixed per
process), one after the other. Each loads the CIFAR-10 training split and, for each
pipeline (`tf_data`: `clzoo.data.batches`; `device`: `clzoo.data.device_batches`):

- `stream_images_per_s`: batches of the recipe's views drawn alone (`--stream-batches` after
  2 of warm-up; each device batch is waited for);
- `fit_images_per_s`: `model.fit` of the recipe's model, optimizer and loss, built as
  `clzoo train` builds them, over `--fit-steps` steps after 2 of warm-up, timed from one
  batch end to the next (data included: the time a run sees).

Prints one JSON line per (backend, pipeline) and a table; `--json` writes them, replacing the
rows of the same recipe in that file and keeping the others.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from data_default import CIFAR10_HELP, default_cifar10  # noqa: E402  (benchmarks/data_default.py)

WARMUP = 2


def _arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=default_cifar10(), help=CIFAR10_HELP)
    parser.add_argument("--recipe", default=str(ROOT / "recipes/supcon/cifar10_airbench.yaml"))
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax", "torch"])
    parser.add_argument("--pipelines", nargs="+", default=["tf_data", "device"])
    parser.add_argument("--stream-batches", type=int, default=10)
    parser.add_argument("--fit-steps", type=int, default=5)
    parser.add_argument("--busy", type=int, default=0,
                        help="processes spinning beside each worker (a machine shared with other work)")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    return parser.parse_args()


def _stream(pipeline, split, recipe, views, start=0):
    from clzoo.train.tasks import ContrastiveTask

    return ContrastiveTask().batches(split, recipe, views, start, pipeline)


def _wait(x):
    import keras

    keras.ops.convert_to_numpy(x[:1, 0, :1, :1])  # the whole batch is computed before this returns


def _stream_rate(pipeline, split, recipe, views, count):
    iterator = iter(_stream(pipeline, split, recipe, views))
    for _ in range(WARMUP):
        _wait(next(iterator)[0])
    start = time.perf_counter()
    for _ in range(count):
        _wait(next(iterator)[0])
    return count * recipe.training.batch_size / (time.perf_counter() - start)


def _fit_rate(pipeline, split, recipe, views, steps):
    import keras

    from clzoo.models import adapt_whitening
    from clzoo.train.builders import build_loss, build_optimizer
    from clzoo.train.tasks import ContrastiveTask

    task = ContrastiveTask()
    model = task.build_model(recipe, views, len(split.class_names))
    adapt_whitening(task.encoder(model), split.images, seed=recipe.seed)
    model.compile(optimizer=build_optimizer(recipe, len(split) // recipe.training.batch_size),
                  loss=build_loss(recipe))
    ends = []
    timer = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda *_, **__: ends.append(time.perf_counter()))
    total = WARMUP + steps
    # ContrastiveModel.fit takes either stream as it is (the device one as its generator)
    model.fit(_stream(pipeline, split, recipe, views).take(total), epochs=1,
              steps_per_epoch=total, verbose=0, callbacks=[timer])
    return steps * recipe.training.batch_size / (ends[-1] - ends[WARMUP - 1])


def worker(args):
    import keras

    from clzoo.data import load_split
    from clzoo.data.device_stream import tensorflow_installed
    from clzoo.train import load_recipe
    from clzoo.train.builders import views_from_config

    recipe = load_recipe(args.recipe, [f"data={args.data}"])
    views = views_from_config(recipe.views)
    split = load_split(args.data, "train")
    for pipeline in args.pipelines:
        if pipeline == "tf_data" and not tensorflow_installed():
            continue
        row = {"backend": keras.backend.backend(), "pipeline": pipeline,
               "busy": args.busy,
               "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
               "recipe": Path(args.recipe).name, "batch_size": recipe.training.batch_size,
               "views": views.views,
               "stream_images_per_s": round(_stream_rate(pipeline, split, recipe, views,
                                                         args.stream_batches), 1),
               "fit_images_per_s": round(_fit_rate(pipeline, split, recipe, views, args.fit_steps), 1),
               "cpu_count": os.cpu_count()}
        print("ROW " + json.dumps(row), flush=True)


def main():
    args = _arguments()
    if args.worker:
        return worker(args)
    rows = []
    for backend in args.backends:
        command = [sys.executable, __file__, "--worker", backend, "--data", args.data, "--recipe",
                   args.recipe, "--stream-batches", str(args.stream_batches), "--fit-steps",
                   str(args.fit_steps), "--busy", str(args.busy), "--pipelines", *args.pipelines]
        env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
        try:
            result = subprocess.run(command, env=env, capture_output=True, text=True)
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.wait()
        found = [json.loads(line[4:]) for line in result.stdout.splitlines() if line.startswith("ROW ")]
        if result.returncode or not found:
            print(f"{backend}: failed\n{result.stderr[-2000:]}", file=sys.stderr)
        for row in found:
            print(json.dumps(row), flush=True)
        rows += found
    print("\n| backend | pipeline | stream alone, images/s | fit, images/s |\n| --- | --- | --- | --- |")
    for row in rows:
        print(f"| {row['backend']} | {row['pipeline']} | {row['stream_images_per_s']:,.0f} | "
              f"{row['fit_images_per_s']:,.0f} |")
    if args.json:  # rows of other recipes already there are kept
        path = Path(args.json)
        kept = [row for row in (json.loads(path.read_text()) if path.exists() else [])
                if row["recipe"] != Path(args.recipe).name]
        path.write_text(json.dumps(kept + rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
