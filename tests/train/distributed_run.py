"""Training runs under tf.distribute for test_strategies.py (one process per call).

Usage:
    python distributed_run.py mirrored <data> <out>    2 logical CPUs, MirroredStrategy,
                                                        then one device; same recipe
    python distributed_run.py data_parallel <data> <out>
                                                        the same on JAX: 2 host devices,
                                                        keras.distribution.DataParallel
    python distributed_run.py worker <i> <port0> <port1> <data> <out>
                                                        worker i of a 2-worker run
"""

import json
import os
import sys

mode = sys.argv[1]
os.environ["KERAS_BACKEND"] = "jax" if mode == "data_parallel" else "tensorflow"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
if mode == "worker":
    task, port0, port1, data, out = sys.argv[2:7]
    os.environ["TF_CONFIG"] = json.dumps({
        "cluster": {"worker": [f"127.0.0.1:{port0}", f"127.0.0.1:{port1}"]},
        "task": {"type": "worker", "index": int(task)},
    })
else:
    data, out = sys.argv[2:4]
# After site-packages: test the installed clzoo.
sys.path.append(os.path.join(os.path.dirname(__file__), "..", ".."))

from tests.xla_flags import for_tests  # noqa: E402

if mode == "data_parallel":
    os.environ["XLA_FLAGS"] = for_tests("--xla_force_host_platform_device_count=2")

import tensorflow as tf  # noqa: E402

if mode == "mirrored":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])

import keras  # noqa: E402

keras.config.disable_traceback_filtering()
from clzoo.train import load_recipe, train  # noqa: E402

# A one-layer ViT (the strategies are compared, not depth): LayerNorm only. With batch norm
# the curves agree to ~1e-6 for the first steps, then drift apart: float32 rounding in the
# one-pass synchronized variance (E[x^2] - E[x]^2) of Keras' BatchNormalization(synchronized=True),
# amplified by training.
RECIPE = [f"data={data}", "model.architecture=vit_small_patch4", "model.embedding_dim=16",
          "model.encoder_options={num_layers: 1, hidden_dim: 48, mlp_dim: 96}",
          "views.size=8", "views.flip=false",
          "views.grayscale_p=0.0", "training.epochs=4", "training.batch_size=32",
          "training.learning_rate=0.05", "training.log_every_steps=1", "eval.report=false",
          "eval.knn_k=[5]", "eval.knn_headline_k=5"]
config = load_recipe(None, RECIPE)
if mode in ("mirrored", "data_parallel"):
    for name, strategy in (("mirrored", "mirrored"), ("single", "one_device")):
        train(config, os.path.join(out, name), verbose=0, strategy=strategy)
else:
    train(config, out, verbose=0, strategy="multi_worker")
print("done", flush=True)
