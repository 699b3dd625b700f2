"""One worker of a 2-worker MultiWorkerMirroredStrategy check (run by test_distributed.py).

Usage: python multi_worker_check.py <task_index> <port0> <port1>

Each worker takes its contiguous half of a fixed global batch, computes the
per-sample losses of its anchors and the all-reduced weight gradient of one
step (as Keras' `fit` does: local mean loss / replicas, summed across
replicas), and prints the largest differences from the one-device values on
the whole global batch as JSON lines.
"""

import json
import os
import sys

task, port0, port1 = int(sys.argv[1]), sys.argv[2], sys.argv[3]
os.environ["KERAS_BACKEND"] = "tensorflow"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["TF_CONFIG"] = json.dumps({
    "cluster": {"worker": [f"127.0.0.1:{port0}", f"127.0.0.1:{port1}"]},
    "task": {"type": "worker", "index": task},
})
# After site-packages: test the installed clzoo.
sys.path.append(os.path.join(os.path.dirname(__file__), "..", ".."))

import tensorflow as tf  # noqa: E402

strategy = tf.distribute.MultiWorkerMirroredStrategy()

import keras  # noqa: E402
import numpy as np  # noqa: E402

from tests.losses.distributed_cases import LOSSES  # noqa: E402

GLOBAL, LOCAL = 16, 8
rng = np.random.default_rng(0)
x = rng.normal(size=(GLOBAL, 2, 8)).astype("float32")
y = rng.integers(0, 3, size=(GLOBAL,)).astype("int32")

with strategy.scope():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((2, 8)), keras.layers.Dense(5)])
model_single = keras.Sequential([keras.Input((2, 8)), keras.layers.Dense(5)])
model_single.set_weights(model.get_weights())


def local_slice(_context):
    start = task * LOCAL
    return tf.data.Dataset.from_tensor_slices(
        (x[start:start + LOCAL], y[start:start + LOCAL])).batch(LOCAL)


batch = next(iter(strategy.distribute_datasets_from_function(local_slice)))
for name, make_loss in LOSSES.items():
    loss = make_loss()

    @tf.function
    def replica_step(xx, yy, loss=loss):
        with tf.GradientTape() as tape:
            per_sample = loss.call(yy, model(xx))
            scaled = tf.reduce_mean(per_sample) / strategy.num_replicas_in_sync
        grads = tape.gradient(scaled, model.trainable_variables)
        grads = tf.distribute.get_replica_context().all_reduce("sum", grads)
        return per_sample, grads

    per_sample, grads = strategy.run(replica_step, args=batch)
    per_sample = np.asarray(strategy.experimental_local_results(per_sample)[0])
    grads = [np.asarray(strategy.experimental_local_results(g)[0]) for g in grads]

    with tf.GradientTape() as tape:
        reference = loss.call(y, model_single(x))
        mean = tf.reduce_mean(reference)
    ref_grads = [np.asarray(g) for g in tape.gradient(mean, model_single.trainable_variables)]
    reference = np.asarray(reference)[task * LOCAL:(task + 1) * LOCAL]
    print(json.dumps({
        "worker": task, "loss": name,
        "value_diff": float(np.max(np.abs(per_sample - reference))),
        "grad_diff": max(float(np.max(np.abs(a - b))) for a, b in zip(grads, ref_grads)),
        "grad_scale": max(float(np.max(np.abs(g))) for g in ref_grads),
    }), flush=True)
