"""Run 3 fit steps of a queue model on 2 devices (`mirrored` on TF, `data_parallel` on JAX) and on
one device; print a JSON line with both queues and losses. Used by tests/models/test_memory_queue.py."""

import contextlib
import json
import os
import sys

from tests.xla_flags import for_tests

MODE = sys.argv[1]
os.environ["KERAS_BACKEND"] = "tensorflow" if MODE == "mirrored" else "jax"
if MODE == "data_parallel":
    os.environ["XLA_FLAGS"] = for_tests("--xla_force_host_platform_device_count=2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from tests.parts.queue_model import batches, queue_state, tiny_model  # noqa: E402


def run(scope=None):
    with scope or contextlib.nullcontext():
        model = tiny_model(queue_size=10, momentum=0.9)
    x, y = batches(12)
    history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    state = queue_state(model)
    shadows = [keras.ops.convert_to_numpy(v.value) for v in model.momentum_encoder.weights]
    return model, {"loss": history.history["loss"], "queue": {k: v.tolist() for k, v in state.items()},
                   "shadow": [s.tolist() for s in shadows]}


if MODE == "mirrored":
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    single_model, single = run()
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    model, multi = run(strategy.scope())
    # Every replica holds the same queue.
    copies = [np.asarray(c) for c in model.memory_queue.embeddings._value.values]
    multi["replicas"] = len(copies)
    multi["replicas_equal"] = all(np.array_equal(copies[0], c) for c in copies[1:])
else:
    single_model, single = run()
    keras.distribution.set_distribution(keras.distribution.DataParallel())
    model, multi = run()
    multi["replicas"] = len(keras.distribution.list_devices())
print("RESULT " + json.dumps({"single": single, "multi": multi}))
