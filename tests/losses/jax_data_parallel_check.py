"""Run as a script: JAX with two host devices and keras.distribution.DataParallel.

Prints one JSON line per loss with the largest difference between the
data-parallel run and the one-device run on the same global batch (loss of a
fit step and weights after it).
"""

import json
import os
import sys

os.environ["KERAS_BACKEND"] = "jax"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# After site-packages: test the installed clzoo.
sys.path.append(os.path.join(os.path.dirname(__file__), "..", ".."))

from tests.xla_flags import for_tests  # noqa: E402

os.environ["XLA_FLAGS"] = for_tests("--xla_force_host_platform_device_count=2")

import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

from tests.losses.distributed_cases import LOSSES  # noqa: E402

assert len(jax.devices()) == 2, jax.devices()
rng = np.random.default_rng(0)
x = rng.normal(size=(16, 2, 8)).astype("float32")
y = rng.integers(0, 3, size=(16,)).astype("int32")


def one_step(make_loss, distribution):
    keras.distribution.set_distribution(distribution)
    try:
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((2, 8)), keras.layers.Dense(5)])
        model.compile(optimizer=keras.optimizers.SGD(0.5), loss=make_loss())
        history = model.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
        return [np.asarray(w) for w in model.get_weights()], history.history["loss"][0]
    finally:
        keras.distribution.set_distribution(None)


parallel = keras.distribution.DataParallel(devices=jax.devices())
for name, make_loss in LOSSES.items():
    w1, l1 = one_step(make_loss, None)
    w2, l2 = one_step(make_loss, parallel)
    print(json.dumps({"loss": name, "fit_loss_diff": abs(l1 - l2),
                      "weight_diff": max(float(np.max(np.abs(a - b))) for a, b in zip(w1, w2))}),
          flush=True)
