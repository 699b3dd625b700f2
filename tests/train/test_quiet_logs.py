"""No Keras `shuffle=True ... ignored` warning and no TensorFlow retracing warning, fixed at their cause.

The `clzoo` command raises TensorFlow's Python logger to ERROR; these tests
turn that filter off, so they see what the code itself provokes.
"""

import subprocess
import sys
import warnings

import keras
import numpy as np
import pytest
import yaml

import clzoo
from clzoo.eval.embed import predict_images
from tests.train.tiny_data import write_tiny_digits

# Run as a user would, with nothing filtered: Python warnings and TensorFlow's logger both recorded.
_UNFILTERED_TRAIN = """
import logging, sys, warnings
from clzoo import console, cli
console.quiet_tensorflow = lambda: None
records = []
class Record(logging.Handler):
    def emit(self, record):
        records.append(record.getMessage())
logger = logging.getLogger("tensorflow")
logger.addHandler(Record())
logger.setLevel(logging.WARNING)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    code = cli.main(["train", sys.argv[1], "--output", sys.argv[2], "--quiet"])
for w in caught:
    print("PYTHON WARNING:", w.category.__name__, str(w.message).replace("\\n", " "))
for message in records:
    print("TENSORFLOW LOG:", message.replace("\\n", " "))
sys.exit(code)
"""


def _views(n=8):
    return np.random.default_rng(0).uniform(size=(n, 2, 16, 16, 3)).astype("float32")


def _model():
    inputs = keras.Input((16, 16, 3))
    encoder = keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(4, 3)(inputs)))
    model = clzoo.models.ContrastiveModel(encoder, clzoo.models.ProjectionHead((8,), 4))
    model.compile(optimizer="sgd", loss=clzoo.losses.SINCERELoss())
    return model


def test_contrastive_model_fit_on_a_dataset_gives_no_shuffle_warning():
    import tensorflow as tf

    data = tf.data.Dataset.from_tensor_slices((_views(), np.arange(8) % 2)).batch(4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _model().fit(data, epochs=1, verbose=0)
        _model().fit(_views(), np.arange(8) % 2, batch_size=4, epochs=1, verbose=0)  # arrays: shuffled
    assert not [w for w in caught if "shuffle" in str(w.message)], [str(w.message) for w in caught]


class _CountCalls(keras.layers.Layer):
    """Identity whose Python `call` runs once per trace of a compiled predict function."""

    calls = 0

    def call(self, x):
        _CountCalls.calls += 1
        return x


@pytest.mark.skipif(keras.backend.backend() == "torch", reason="torch runs eagerly: no traces")
def test_predict_images_traces_once_where_predict_traces_twice():
    images = np.random.default_rng(0).integers(0, 256, (1100, 4, 4, 3), dtype=np.uint8)

    def fresh():
        inputs = keras.Input((4, 4, 3))
        model = keras.Model(inputs, keras.layers.Flatten()(_CountCalls()(inputs)))
        _CountCalls.calls = 0  # building the functional model called it once, symbolically
        return model

    model = fresh()
    out = predict_images(model, images)  # 512, 512, 76 padded to 512
    out_test = predict_images(model, images[:300])  # one batch, 300 padded to 512
    assert _CountCalls.calls == 1
    np.testing.assert_allclose(out, images.reshape(1100, -1) / 255.0, atol=1e-6)
    assert out_test.shape == (300, 48)
    model = fresh()
    model.predict(images.astype("float32") / 255.0, batch_size=512, verbose=0)
    assert _CountCalls.calls == 2  # Keras alone: again for the last partial batch


def test_eval_dataset_pads_to_full_batches_only_when_asked():
    from clzoo.data import eval_dataset

    images = np.full((5, 2, 2, 3), 255, np.uint8)
    padded = [b.numpy() for b in eval_dataset(images, batch_size=4, pad=True)]
    assert [b.shape[0] for b in padded] == [4, 4] and padded[1][1:].max() == 0
    assert [b.shape[0] for b in eval_dataset(images, batch_size=4)] == [4, 1]


@pytest.mark.large
def test_tiny_clzoo_train_provokes_neither_warning(tmp_path):
    data = write_tiny_digits(tmp_path / "data", train=64, test=32)
    recipe = {"name": "tiny", "data": data, "model": {"architecture": "resnet8", "embedding_dim": 16},
              "views": {"size": 8, "flip": False, "grayscale_p": 0.0},
              "training": {"epochs": 2, "batch_size": 32, "learning_rate": 0.05},
              "eval": {"knn_k": [1, 5], "knn_headline_k": 5}}  # default metrics and both baselines
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(recipe))
    result = subprocess.run([sys.executable, "-c", _UNFILTERED_TRAIN, str(path), str(tmp_path / "run")],
                            capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert any(line.startswith("final training loss") for line in lines)
    noisy = [line for line in lines if line.startswith(("PYTHON WARNING", "TENSORFLOW LOG"))
             and ("shuffle" in line or "retracing" in line)]
    assert not noisy, noisy
