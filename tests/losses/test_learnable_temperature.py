"""`temperature="learnable"`: same values as a fixed temperature, trained by `fit`, saved with the model.

Runs in every backend lane (the folder rule in `tests/losses/conftest.py`).
"""

import math

import keras
import numpy as np
import pytest
from keras import ops

import clzoo

L = clzoo.losses
RNG = np.random.default_rng(5)
EMBEDDING_LOSSES = {"SINCERELoss": L.SINCERELoss, "SupConLoss": L.SupConLoss,
                    "SupInfoNCELoss": L.SupInfoNCELoss, "SpreadLoss": L.SpreadLoss, "NSCLLoss": L.NSCLLoss,
                    "DCLLoss": L.DCLLoss, "InfoNCELoss": L.InfoNCELoss}


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


@pytest.mark.parametrize("name", sorted(EMBEDDING_LOSSES))
def test_learnable_starts_at_the_fixed_value(name):
    cls = EMBEDDING_LOSSES[name]
    y = np.array([0, 0, 1, 1, 2, 2])
    z = RNG.normal(size=(6, 2, 5)).astype("float32")
    learnable = cls(temperature="learnable", temperature_init=0.2, reduction="none")
    fixed = cls(temperature=0.2, reduction="none")
    np.testing.assert_allclose(_np(learnable(y, z)), _np(fixed(y, z)), rtol=2e-5, atol=1e-6)
    learnable.temperature_layer.log_scale.assign(-math.log(0.5))
    np.testing.assert_allclose(_np(learnable(y, z)), _np(cls(temperature=0.5, reduction="none")(y, z)),
                               rtol=2e-5, atol=1e-6)


def test_clamped_as_clip():
    layer = L.LearnableTemperature()
    assert abs(float(_np(layer.temperature())) - 0.07) < 1e-6  # CLIP's init
    layer.log_scale.assign(10.0)  # logit scale e^10, beyond CLIP's 100
    assert abs(float(_np(layer.temperature())) - 0.01) < 1e-7
    assert float(_np(layer.log_scale.constraint(ops.convert_to_tensor(10.0)))) == pytest.approx(
        math.log(100.0))
    np.testing.assert_allclose(_np(layer(np.array([1.0, -2.0]))), [100.0, -200.0], rtol=1e-5)


def _model():
    encoder = keras.Sequential([keras.Input((4, 4, 1)), keras.layers.Flatten(), keras.layers.Dense(8)])
    return clzoo.models.ContrastiveModel(encoder, clzoo.models.ProjectionHead((8,), 4))


def _data(n=32):
    return RNG.random((n, 2, 4, 4, 1)).astype("float32"), RNG.integers(0, 3, size=(n,))


def test_fit_trains_it_and_save_restores_it(tmp_path):
    keras.utils.set_random_seed(0)
    model = _model()
    loss = L.SINCERELoss(temperature="learnable", temperature_init=0.5)
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss=loss)
    x, y = _data()
    model.fit(x, y, batch_size=16, epochs=3, verbose=0)
    learned = float(_np(model.learnable_temperature.log_scale))
    assert any(w is model.learnable_temperature.log_scale for w in model.trainable_weights)
    assert abs(learned - math.log(2.0)) > 1e-3  # fit moved it
    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    assert float(_np(restored.learnable_temperature.log_scale)) == pytest.approx(learned, abs=1e-7)
    assert restored.loss.temperature_layer is restored.learnable_temperature  # the loss reads the weight
    assert restored.loss.get_config() == loss.get_config()
    np.testing.assert_allclose(restored.evaluate(x, y, verbose=0), model.evaluate(x, y, verbose=0),
                               rtol=1e-5)
    restored.fit(x, y, batch_size=16, epochs=1, verbose=0)  # and training goes on
    assert float(_np(restored.learnable_temperature.log_scale)) != pytest.approx(learned, abs=1e-7)


def test_optimizer_step_respects_the_bounds():
    model = _model()
    model.compile(optimizer=keras.optimizers.SGD(1e4),
                  loss=L.SupConLoss(temperature="learnable", temperature_init=0.1, min_temperature=0.05,
                                    max_temperature=0.2))
    x, y = _data(16)
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    value = float(_np(model.learnable_temperature.log_scale))
    assert -math.log(0.2) - 1e-6 <= value <= -math.log(0.05) + 1e-6


def test_config_round_trip():
    loss = L.SupConLoss(temperature="learnable", temperature_init=0.1, max_temperature=0.5, variant="in")
    config = loss.get_config()
    assert config["temperature"] == "learnable" and config["temperature_init"] == 0.1
    assert config["max_temperature"] == 0.5 and config["min_temperature"] == 0.01
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(loss))
    assert clone.get_config() == config
    assert "temperature_init" not in L.SupConLoss(temperature=0.1).get_config()


@pytest.mark.parametrize("kwargs, match", [
    ({"temperature": "hot"}, "'learnable'. Received: temperature='hot'"),
    ({"temperature": 0.1, "temperature_init": 0.2}, "apply only to temperature='learnable'"),
    ({"temperature": "learnable", "chunk_size": 4}, "cannot be combined with `chunk_size`"),
    ({"temperature": "learnable", "temperature_init": 2.0}, "temperature_init=2.0"),
    ({"temperature": "learnable", "min_temperature": 0.0}, "min_temperature=0.0"),
    ({"temperature": "learnable", "temperature_init": float("nan")}, "temperature_init=nan"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        L.SINCERELoss(**kwargs)


def test_numpy_scalars_are_accepted_like_the_other_loss_arguments():
    loss = L.SupConLoss(temperature="learnable", temperature_init=np.float32(0.25),
                        max_temperature=np.int64(1))
    assert float(_np(loss.temperature_layer.temperature())) == pytest.approx(0.25, rel=1e-6)
    with pytest.raises(ValueError, match="min_temperature=True"):
        L.LearnableTemperature(min_temperature=True)


def test_built_model_needs_its_own_layer():
    model = _model()
    model(np.zeros((1, 2, 4, 4, 1), "float32"))  # built
    loss = L.InfoNCELoss(temperature="learnable")
    with pytest.raises(ValueError, match="pass learnable_temperature=loss.temperature_layer"):
        model.compile(optimizer="sgd", loss=loss)
    owner = clzoo.models.ContrastiveModel(model.encoder, model.projection_head,
                                          learnable_temperature=L.LearnableTemperature(0.3))
    owner(np.zeros((1, 2, 4, 4, 1), "float32"))
    owner.compile(optimizer="sgd", loss=loss)
    assert loss.temperature_layer is owner.learnable_temperature  # the model's weight is the one read
    x, _ = _data(8)
    owner.fit(x, None, batch_size=8, epochs=1, verbose=0)
