"""Training levers (`training.levers`): the weight average (`ema`) as a recipe builds it, as Keras
trains with it, and as a run saves it."""

import keras
import numpy as np
import pytest

from clzoo.saving import load_model
from clzoo.train import RecipeError, train, validate_recipe
from clzoo.train.levers import build_levers
from tests.train.test_resume import tiny_recipe
from tests.train.tiny_data import write_tiny_digits

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")


@pytest.mark.parametrize("levers, message", [
    ([{"name": "emaa"}], "Unknown lever 'emaa'. Known: ema. Did you mean 'ema'"),
    ([{"name": "ema", "momentun": 0.9}], "unknown levers\\[0\\] argument 'momentun' of ema"),
    ([{"name": "ema", "momentum": 1.0}], "momentum must be a number in \\[0, 1\\)"),
    ([{"name": "ema", "momentum": True}], "momentum must be a number"),
    ([{"name": "ema", "total_steps": 5}], "unknown levers\\[0\\] argument 'total_steps'"),
    ([{"momentum": 0.9}], "must be a mapping with a `name`"),
    (["ema"], "valid dictionary"),
])
def test_a_recipe_refuses_a_lever_it_cannot_build(levers, message):
    with pytest.raises(RecipeError, match=message) as caught:
        validate_recipe({"training": {"levers": levers}})
    assert len(caught.value.lines) == 1 and "training.levers" in caught.value.lines[0]


def test_a_recipe_keeps_its_levers_as_written():
    recipe = validate_recipe({"training": {"levers": [{"name": "ema", "momentum": 0.9}]}})
    assert recipe.training.levers == [{"name": "ema", "momentum": 0.9}]
    assert validate_recipe({}).training.levers == []


def _line(optimizer):
    """A 1-weight least-squares model: loss (w - 1)^2, so each SGD(1.0) step maps w to 2 - w."""
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, use_bias=False)])
    model.compile(optimizer=optimizer, loss="mse")
    model.layers[0].kernel.assign([[0.5]])
    return model


def _fit(model, epochs, lever, initial_epoch=0):
    model.fit(np.ones((1, 1)), np.ones((1, 1)), epochs=epochs, initial_epoch=initial_epoch,
              verbose=0, callbacks=[lever])
    return float(keras.ops.convert_to_numpy(model.layers[0].kernel)[0, 0])


def test_ema_ends_the_run_on_the_average_and_only_the_run():
    # w: 0.5 -> 1.5 -> 0.5 -> 1.5; the average at momentum 0.5: 1.5, 1.0, 1.25
    (lever,) = build_levers([{"name": "ema", "momentum": 0.5}], total_steps=3)
    optimizer = keras.optimizers.SGD(1.0)
    lever.configure(optimizer)
    model = _line(optimizer)
    assert _fit(model, 2, lever) == pytest.approx(0.5)  # a fit that ends before the run: weights kept
    assert _fit(model, 3, lever, initial_epoch=2) == pytest.approx(1.25)  # the run's end: the average
    # without the lever the same steps end on the weights
    (plain,) = build_levers([{"name": "ema", "momentum": 0.0}], total_steps=3)
    optimizer = keras.optimizers.SGD(1.0)
    plain.configure(optimizer)
    assert _fit(_line(optimizer), 3, plain) == pytest.approx(1.5)


def test_ema_refuses_a_checkpoint_optimizer_without_its_average():
    (lever,) = build_levers([{"name": "ema", "momentum": 0.9}])
    optimizer = keras.optimizers.SGD(0.1)
    optimizer.build([keras.Variable(np.zeros(2, "float32"))])  # a checkpoint's: built, no average
    with pytest.raises(ValueError, match="has no weight average with momentum 0.9"):
        lever.configure(optimizer)


def _weights(model):
    return [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]


def test_a_run_with_ema_saves_the_average_of_the_weights_it_trained(tmp_path):
    """The encoder and the run's checkpoint both hold the average (issue 72 item 1: the checkpoint,
    which `eval --space projection` measures, held the raw weights), which is not the raw weights."""
    data = write_tiny_digits(tmp_path / "data", train=64, test=16)
    recipe = tiny_recipe(data)
    recipe["training"].update(epochs=2, checkpoint_every_steps=None)
    recipe["eval"]["report"] = False
    train(validate_recipe(recipe), tmp_path / "plain", verbose=0)
    recipe["training"]["levers"] = [{"name": "ema", "momentum": 0.8}]
    train(validate_recipe(recipe), tmp_path / "ema", verbose=0)
    checkpoint = load_model(tmp_path / "ema" / "checkpoint.keras")
    trained = checkpoint.get_layer("encoder")
    averages = {v.path: keras.ops.convert_to_numpy(a) for v, a in zip(
        checkpoint.trainable_weights, checkpoint.optimizer._model_variables_moving_average)}
    saved = load_model(tmp_path / "ema" / "encoder.keras")
    raw = _weights(load_model(tmp_path / "plain" / "encoder.keras"))  # the lever does not train
    moved = 0
    for weight, value, held, plain in zip(trained.trainable_weights, _weights(saved),
                                          _weights(trained), raw):
        np.testing.assert_allclose(value, averages[weight.path], rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(held, value)
        moved += not np.allclose(value, plain)
    assert moved > len(trained.trainable_weights) // 2  # the average is not the last weights
    # killed after the last step, before the encoder was saved: the resumed run ends on the average
    for name in ("encoder.keras", "metrics.json"):
        (tmp_path / "ema" / name).unlink()
    train(validate_recipe(recipe), tmp_path / "ema", verbose=0, resume=True)
    for a, b in zip(_weights(load_model(tmp_path / "ema" / "encoder.keras")), _weights(saved)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
