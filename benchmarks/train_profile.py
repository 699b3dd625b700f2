"""Where the CPU time of a `clzoo train` step goes: view pipeline, encoder, head + loss, optimizer.

For each recipe (TensorFlow backend, the recipe's model, loss and optimizer from
`clzoo.train.builders`, one batch of the recipe's real views):

- `view pipeline`: `clzoo.data.batches` alone, batches per second;
- `encoder fwd+bwd`: the encoder's forward and backward pass on the batch's views
  (gradients of a random projection of the features w.r.t. the encoder weights);
- `head + loss fwd+bwd`: the projection head and the loss on fixed features;
- `optimizer`: `apply_gradients` of fixed gradients;
- `whole step`: `model.fit` on the repeated batch, as `clzoo train` compiles it.

Each part runs in its own `tf.function`, best of `--rounds` rounds of `--steps`
calls. Achieved GFLOP/s = the encoder's forward FLOPs (2 x multiply-adds of
every convolution and dense layer, counted from the layer shapes) x 3 (forward +
backward) / time, against the machine's fp32 matmul peak measured in the same run
(`tf.matmul` of two 2048 x 2048 float32 matrices). The pipeline feeds the step
from tf.data threads while it runs, so its share is what it would cost if serial.

Usage (from the repository root, on an otherwise idle machine):

    python benchmarks/train_profile.py recipes/supcon/cifar10_fast.yaml recipes/sincere/cifar10_small.yaml
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data_default import CIFAR10_HELP, default_cifar10  # noqa: E402  (benchmarks/data_default.py)


def matmul_peak(n=2048, rounds=5):
    """Best fp32 GFLOP/s of an n x n x n `tf.matmul`."""
    import tensorflow as tf

    a = tf.random.normal((n, n))
    b = tf.random.normal((n, n))
    run = tf.function(lambda: tf.reduce_sum(tf.matmul(a, b)))
    run()
    best = min(_seconds(run, 3) for _ in range(rounds)) / 3
    return 2 * n ** 3 / best / 1e9


def encoder_flops(encoder):
    """Forward FLOPs per image: 2 x multiply-adds of the Conv2D and Dense layers."""
    import keras

    total = 0
    for layer in encoder._flatten_layers(include_self=False, recursive=True):
        if isinstance(layer, keras.layers.Conv2D):
            _, h, w, c_out = layer.output.shape
            kh, kw = layer.kernel_size
            total += 2 * h * w * c_out * kh * kw * layer.input.shape[-1] // layer.groups
        elif isinstance(layer, keras.layers.Dense):
            total += 2 * layer.input.shape[-1] * layer.units
    return total


def _seconds(fn, steps):
    start = time.perf_counter()
    for _ in range(steps):
        result = fn()
    np.asarray(result)  # wait for the last call
    return time.perf_counter() - start


def _best(fn, steps, rounds):
    fn()  # trace and warm up
    return min(_seconds(fn, steps) for _ in range(rounds)) / steps


def _batch(recipe, split, views):
    from clzoo.data import batches

    stream = batches(split, "views", batch_size=recipe.training.batch_size, seed=recipe.seed,
                     epochs=1, views=views)
    return stream, next(iter(stream))


def _parts(recipe, split, steps, rounds):
    """Seconds per batch of each part, and the model."""
    import tensorflow as tf

    from clzoo.train.builders import build_loss, build_optimizer, views_from_config
    from clzoo.train.tasks import build_model

    views = views_from_config(recipe.views)
    model = build_model(recipe, views)
    model.compile(optimizer=build_optimizer(recipe, 100), loss=build_loss(recipe))
    batches, (x, y) = _batch(recipe, split, views)
    model.build(x.shape)
    folded = tf.reshape(x, (-1, *x.shape[2:]))
    encoder, head, loss = model.encoder, model.projection_head, model.loss
    direction = tf.random.normal(encoder.output_shape[1:])
    features = encoder(folded, training=False)
    enc_vars, head_vars = encoder.trainable_variables, head.trainable_variables

    @tf.function
    def encoder_step():
        with tf.GradientTape() as tape:
            value = tf.reduce_sum(encoder(folded, training=True) * direction)
        return tape.gradient(value, enc_vars)[0][0, 0, 0, 0]

    @tf.function
    def head_loss_step():
        with tf.GradientTape() as tape:
            z = tf.reshape(head(features, training=True), (x.shape[0], x.shape[1], -1))
            value = tf.reduce_mean(loss(y, z))
        return tape.gradient(value, head_vars)[0][0, 0]

    grads = [tf.zeros_like(v) for v in model.trainable_variables]
    optimizer_step = tf.function(lambda: model.optimizer.apply_gradients(
        zip(grads, model.trainable_variables)))
    iterator = iter(batches.repeat())
    times = {
        "view pipeline": _best(lambda: next(iterator)[1], steps, rounds),
        "encoder fwd+bwd": _best(encoder_step, steps, rounds),
        "head + loss fwd+bwd": _best(head_loss_step, steps, rounds),
        "optimizer": _best(lambda: (optimizer_step(), model.optimizer.iterations)[1], steps, rounds),
    }
    repeated = tf.data.Dataset.from_tensors((x, y)).repeat()
    model.fit(repeated, steps_per_epoch=2, verbose=0, shuffle=False)
    times["whole step"] = min(_fit_seconds(model, repeated, steps) for _ in range(rounds)) / steps
    return times, model, folded.shape[0]


def _fit_seconds(model, data, steps):
    start = time.perf_counter()
    model.fit(data, steps_per_epoch=steps, verbose=0, shuffle=False)
    return time.perf_counter() - start


def profile(path, split, steps, rounds, peak):
    from clzoo.train import load_recipe

    recipe = load_recipe(path)
    times, model, images = _parts(recipe, split, steps, rounds)
    flops = encoder_flops(model.encoder) * 3 * images  # forward + backward, per batch
    parts = ("encoder fwd+bwd", "head + loss fwd+bwd", "optimizer", "view pipeline")
    serial = sum(times[p] for p in parts)
    rows = [f"| `{path}` ({recipe.model.encoder.name}, {images // recipe.training.batch_size} "
            f"view(s), batch {recipe.training.batch_size}) | | | |"]
    for part in (*parts, "whole step"):
        share = f"{times[part] / serial:.0%}" if part in parts else "-"
        rows.append(f"| {part} | {1000 * times[part]:.1f} | {share} | "
                    f"{recipe.training.batch_size / times[part]:,.0f} |")
    gflops = flops / times["encoder fwd+bwd"] / 1e9
    step_gflops = flops / times["whole step"] / 1e9
    summary = (f"{path}: encoder {flops / images / 3 / 1e6:.0f} MFLOP forward per view; "
               f"encoder fwd+bwd {gflops:.0f} GFLOP/s ({gflops / peak:.0%} of the {peak:.0f} "
               f"GFLOP/s matmul peak); whole step {step_gflops:.0f} GFLOP/s "
               f"({step_gflops / peak:.0%}), {recipe.training.batch_size / times['whole step']:,.0f}"
               " images/s")
    return rows, summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipes", nargs="+")
    parser.add_argument("--data", default=default_cifar10(), help=CIFAR10_HELP)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    from clzoo.console import quiet_tensorflow

    quiet_tensorflow()
    from clzoo.data import load_split

    split = load_split(args.data, "train")
    peak = matmul_peak()
    print(f"fp32 matmul peak (2048^3, tf.matmul): {peak:.0f} GFLOP/s\n")
    print("| part | ms per batch | share of the serial sum | images/s alone |")
    print("| --- | --- | --- | --- |")
    summaries = []
    for path in args.recipes:
        rows, summary = profile(path, split, args.steps, args.rounds, peak)
        print("\n".join(rows), flush=True)
        summaries.append(summary)
    print("\n" + "\n".join(summaries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
