"""Fit a GradCache model (`encoder_chunk_size=3`) on 2 devices (`mirrored` on TF, `data_parallel` on
JAX) and an unchunked one on one device from the same weights; print a JSON line with both models'
losses and variables. Used by tests/models/test_grad_cache.py."""

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
import tensorflow as tf  # noqa: E402

from tests.parts.queue_model import batches, tiny_model  # noqa: E402


def run(chunk, scope=None):
    with scope or contextlib.nullcontext():
        model = tiny_model(queue_size=10, momentum=None)  # seeded: equal initial weights
        model.encoder_chunk_size = chunk
    x, y = batches(12)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(4, drop_remainder=True)
    history = model.fit(data, epochs=2, verbose=0)
    return {"loss": history.history["loss"],
            "variables": [keras.ops.convert_to_numpy(v.value).tolist() for v in model.variables]}


if MODE == "mirrored":  # logical devices first: TF refuses them once it has initialized
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
single = run(None)
if MODE == "mirrored":
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    multi, replicas = run(3, strategy.scope()), strategy.num_replicas_in_sync
else:
    keras.distribution.set_distribution(keras.distribution.DataParallel())
    multi, replicas = run(3), len(keras.distribution.list_devices())
print("RESULT " + json.dumps({"single": single, "multi": multi, "replicas": replicas}))
