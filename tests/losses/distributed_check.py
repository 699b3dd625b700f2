"""Run under `python tests/losses/distributed_check.py`: MirroredStrategy on 2 logical CPUs.

Prints one JSON line per loss with the largest differences between the
two-replica run and the one-device run on the same global batch: per-sample
loss values, and weights after one SGD step under `fit`.
"""

import json
import os
import sys

os.environ["KERAS_BACKEND"] = "tensorflow"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# After site-packages: test the installed clzoo.
sys.path.append(os.path.join(os.path.dirname(__file__), "..", ".."))

import tensorflow as tf  # noqa: E402

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])

import keras  # noqa: E402
import numpy as np  # noqa: E402

from tests.losses.distributed_cases import LOSSES  # noqa: E402

GLOBAL_BATCH = 16
rng = np.random.default_rng(0)
x = rng.normal(size=(GLOBAL_BATCH, 2, 8)).astype("float32")
y = rng.integers(0, 3, size=(GLOBAL_BATCH,)).astype("int32")
z = rng.normal(size=(GLOBAL_BATCH, 2, 5)).astype("float32")


def per_sample(strategy, loss):
    dataset = strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices((z, y)).batch(GLOBAL_BATCH))
    batch = next(iter(dataset))
    result = strategy.run(tf.function(lambda zz, yy: loss.call(yy, zz)), args=batch)
    return np.concatenate([np.asarray(r) for r in strategy.experimental_local_results(result)])


def one_step(strategy, make_loss):
    with strategy.scope():
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((2, 8)), keras.layers.Dense(5)])
        model.compile(optimizer=keras.optimizers.SGD(0.5), loss=make_loss())
    history = model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH),
                        epochs=1, verbose=0)
    return model.get_weights(), history.history["loss"][0]


one = tf.distribute.OneDeviceStrategy("/cpu:0")
two = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
assert two.num_replicas_in_sync == 2
for name, make_loss in LOSSES.items():
    single_values = per_sample(one, make_loss())
    mirrored_values = per_sample(two, make_loss())
    w1, l1 = one_step(one, make_loss)
    w2, l2 = one_step(two, make_loss)
    print(json.dumps({
        "loss": name,
        "value_diff": float(np.max(np.abs(single_values - mirrored_values))),
        "fit_loss_diff": abs(l1 - l2),
        "weight_diff": max(float(np.max(np.abs(a - b))) for a, b in zip(w1, w2)),
        "weight_change": max(float(np.max(np.abs(a))) for a in w1),
    }), flush=True)

# Control: with the all-gather switched off each replica only sees its own
# slice, and the values must then differ (so the check above can fail).
from clzoo.losses import distributed  # noqa: E402

distributed.gather_global_batch = lambda z, labels, views: (z, labels, 0)
local_only = per_sample(two, LOSSES["SINCERELoss"]())
print(json.dumps({"loss": "control_local_negatives",
                  "value_diff": float(np.max(np.abs(per_sample(one, LOSSES["SINCERELoss"]())
                                                    - local_only)))}), flush=True)
