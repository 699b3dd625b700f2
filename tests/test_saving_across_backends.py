"""A checkpoint saved under torch names Keras' torch optimizer class
(`keras.src.backend.torch.optimizers...`); loading it under TensorFlow imported torch, which loads
Triton beside TensorFlow's LLVM and aborted the process (issue 58 item 1, found for the contrastive
model and, by review, for any model: the soft-target classifier is a plain functional model).
`clzoo.saving.load_model` names the class by `keras.optimizers` and keeps the optimizer's state."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.backends("tensorflow")  # its processes pick their own backends

SAVE = """
import sys, numpy as np, keras
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="mse")
model.fit(np.ones((8, 3), "float32"), np.zeros((8, 2), "float32"), batch_size=4, epochs=1, verbose=0)
model.save(sys.argv[1])
"""
LOAD = """
import sys, tensorflow, keras
from clzoo.saving import load_model
model = load_model(sys.argv[1])
print(int(model.optimizer.iterations), type(model.optimizer).__module__, "torch" in sys.modules)
"""


def _run(code, backend, path):
    env = dict(os.environ, KERAS_BACKEND=backend)
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                          env=env, timeout=300)


def test_a_torch_checkpoint_of_any_model_loads_under_tensorflow_without_torch(tmp_path):
    pytest.importorskip("torch")
    saved = _run(SAVE, "torch", tmp_path / "model.keras")
    assert saved.returncode == 0, saved.stderr[-2000:]
    loaded = _run(LOAD, "tensorflow", tmp_path / "model.keras")
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert loaded.stdout.split()[-3:] == ["2", "keras.src.optimizers.sgd", "False"]
