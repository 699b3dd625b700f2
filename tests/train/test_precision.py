"""`training.precision` (issue 71 item 1): a run builds and trains its model under Keras' mixed
policies on every backend, records the precision, saves an encoder that keeps it, scales the loss
under float16, and leaves the process's policy as it found it."""

import json

import keras
import pytest

from clzoo.saving import load_model
from clzoo.train import train
from tests.train.test_resume import tiny_recipe
from tests.train.tiny_data import write_tiny_digits

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")


@pytest.mark.large
@pytest.mark.parametrize("precision", ["mixed_bfloat16", "mixed_float16"])
def test_a_run_trains_under_a_mixed_policy_and_records_it(tmp_path, precision):
    recipe = tiny_recipe(write_tiny_digits(tmp_path / "data", train=64, test=32))
    recipe["training"].update(epochs=2, checkpoint_every_steps=None, precision=precision)
    recipe["eval"]["report"] = False
    result = train(recipe, tmp_path / "run", verbose=0)
    assert keras.config.dtype_policy().name == "float32"  # the process's policy, restored
    assert json.loads((tmp_path / "run" / "environment.json").read_text())["precision"] == precision
    encoder = load_model(tmp_path / "run" / "encoder.keras")
    policies = {layer.dtype_policy.name for layer in encoder.layers if layer.weights}
    assert policies == {precision}, policies  # every layer with weights computes in half precision
    assert all(w.dtype == "float32" for w in encoder.weights)  # and keeps float32 weights
    optimizer = load_model(tmp_path / "run" / "checkpoint.keras").optimizer
    scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    assert scaled == (precision == "mixed_float16")
    assert 0.3 < result.knn_top1 <= 1.0  # four classes: chance is 0.25
    if precision == "mixed_bfloat16" and keras.backend.backend() == "tensorflow":
        _exports_in_float32(tmp_path / "run" / "encoder.keras", tmp_path)
    if precision == "mixed_bfloat16":  # the preset's card names it beside the speed
        from clzoo.presets import build_preset

        preset = build_preset(tmp_path / "run", tmp_path / "preset", name="tiny")
        assert "in mixed_bfloat16 (`training.precision`)" in (preset / "README.md").read_text()


def test_an_unknown_precision_is_refused_naming_the_key():
    from clzoo.train import RecipeError, validate_recipe

    with pytest.raises(RecipeError, match="training.precision"):
        validate_recipe({"data": "digits", "training": {"precision": "bfloat16"}})


@pytest.mark.large
def test_a_float16_run_with_a_weight_average_resumes(tmp_path):
    """Review: the resume check compared the checkpoint's LossScaleOptimizer with an unwrapped fresh
    optimizer, and the ema lever read `use_ema` off the wrapper: every such resume was refused."""
    recipe = tiny_recipe(write_tiny_digits(tmp_path / "data", train=64, test=32))
    recipe["training"].update(epochs=1, checkpoint_every_steps=None, precision="mixed_float16",
                              levers=[{"name": "ema", "momentum": 0.9}])
    recipe["eval"]["report"] = False
    first = train(recipe, tmp_path / "run", verbose=0)
    (tmp_path / "run" / "metrics.json").unlink()  # as if stopped after its last checkpoint
    again = train(recipe, tmp_path / "run", verbose=0, resume=True)
    assert again.knn_top1 == pytest.approx(first.knn_top1)
    optimizer = load_model(tmp_path / "run" / "checkpoint.keras").optimizer
    assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer) and optimizer.inner_optimizer.use_ema


def _exports_in_float32(path, tmp_path):
    """Hostile pass: a bfloat16 run's SavedModel served bfloat16 features, and its LiteRT file did
    not run (Flex ops) and was left behind after the failed check."""
    import numpy as np
    import tensorflow as tf

    from clzoo.export.serving import export_encoder, exported_outputs

    encoder = load_model(path)
    images = np.random.default_rng(0).uniform(size=(3, *encoder.input_shape[1:])).astype("float32")
    half = np.asarray(encoder.predict(images, verbose=0), "float32")
    saved = tf.saved_model.load(str(export_encoder(encoder, tmp_path / "served")))
    assert saved.serve(tf.constant(images)).dtype == tf.float32
    lite = exported_outputs(export_encoder(encoder, tmp_path / "e.tflite", "litert"), "litert", images)
    assert lite.dtype == np.float32
    np.testing.assert_allclose(lite, half, atol=0.05 * np.abs(half).max())  # bfloat16's rounding


@pytest.mark.large
def test_a_resume_under_another_precision_is_refused_naming_it(tmp_path):
    """Hostile pass: the refusal said only "differs ... in ['training']"."""
    recipe = tiny_recipe(write_tiny_digits(tmp_path / "data", train=64, test=32))
    recipe["training"].update(epochs=1, checkpoint_every_steps=None)
    recipe["eval"]["report"] = False
    train(recipe, tmp_path / "run", verbose=0)
    (tmp_path / "run" / "metrics.json").unlink()
    recipe["training"]["precision"] = "mixed_bfloat16"
    with pytest.raises(ValueError, match=r"training.precision: 'float32' -> 'mixed_bfloat16'"):
        train(recipe, tmp_path / "run", verbose=0, resume=True)
    assert keras.config.dtype_policy().name == "float32"
