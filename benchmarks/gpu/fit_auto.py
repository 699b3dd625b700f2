"""`kernel="auto"` inside `fit`: which path a covered loss takes on this backend and device, and its pace.

A projection head (Dense 512 -> 256 -> 128, unit length) trains on fixed random features in 100
classes with `SupConLoss(kernel=...)` for `--steps` steps of `--batch` embeddings, once per kernel
(`auto`, then `xla`), from the same initial weights and batches. Prints one JSON object: the path
`auto` takes (`fused`, or the dispatcher's reason for `keras.ops`), its warnings about the path, ms per
step after the first (compiling) step, and the first and last losses of each kernel (equal first
losses: `auto` computes the same loss).

    KERAS_BACKEND=torch python benchmarks/gpu/fit_auto.py --steps 20 --batch 4096
"""

import argparse
import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
if os.environ.get("KERAS_BACKEND") == "torch":
    import triton  # noqa: F401  (before anything can import TensorFlow)


def head(seed):
    import keras

    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((512,)), keras.layers.Dense(256, activation="relu"),
                             keras.layers.Dense(128), keras.layers.UnitNormalization()])


def step_timer():
    """A Keras callback holding each training batch's wall-clock seconds and loss."""
    import keras

    class StepTimes(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seconds, self.losses = [], []

        def on_train_batch_begin(self, batch, logs=None):
            self._start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.seconds.append(time.perf_counter() - self._start)
            self.losses.append(float(logs["loss"]))
    return StepTimes()


def path_taken(batch):
    """"fused", or why `auto` keeps the keras.ops path, for embeddings (batch, 128) on this device."""
    import keras

    from clzoo.losses.fused import dispatch

    z = keras.ops.zeros((batch, 128))
    if dispatch.use_fused("auto", z):
        return "fused"
    return "keras.ops: " + (dispatch.blocker(z) or "auto takes the kernel only for a CUDA tensor under torch")


def train(kernel, features, labels, args):
    import clzoo.losses as L

    model = head(0)
    model.compile(optimizer="sgd", loss=L.SupConLoss(kernel=kernel))
    timer = step_timer()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(features, labels, batch_size=args.batch, epochs=1, shuffle=False, verbose=0,
                  callbacks=[timer])
    later = timer.seconds[1:] or timer.seconds
    return {"ms_per_step": 1e3 * sorted(later)[len(later) // 2], "first_loss": timer.losses[0],
            "last_loss": timer.losses[-1],
            "warnings": sorted({str(w.message)[:300] for w in caught if "kernel=" in str(w.message)})}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=4096)
    args = parser.parse_args()
    import keras
    import numpy as np

    rng = np.random.default_rng(0)
    features = rng.normal(size=(args.steps * args.batch, 512)).astype("float32")
    labels = rng.integers(0, 100, size=args.steps * args.batch)
    probe = keras.ops.zeros(1)
    result = {"backend": keras.backend.backend(), "device": str(getattr(probe, "device", "?")),
              "auto_path": path_taken(args.batch)}
    for kernel in ("auto", "xla"):
        result[kernel] = train(kernel, features, labels, args)
    result["first_losses_agree"] = abs(result["auto"]["first_loss"] - result["xla"]["first_loss"]) < 1e-3
    print(json.dumps(result))


if __name__ == "__main__":
    main()
