"""Issue 72 item 14: an encoder's `std` of zeros trained (every image inf / NaN after the first
layer); a NaN mean too. Refused by every encoder builder and by the recipe, naming the value."""

import math

import keras
import numpy as np
import pytest

import clzoo
from clzoo.models.input_normalization import normalized
from clzoo.train.recipe import RecipeError, validate_recipe

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)


@pytest.mark.parametrize("build", [
    lambda **k: clzoo.models.cifar_resnet("resnet8", input_shape=(8, 8, 3), **k),
    lambda **k: clzoo.models.airbench_net("airbench", input_shape=(16, 16, 3), **k),
])
@pytest.mark.parametrize("stats, message", [
    (dict(std=(0.0, 0.0, 0.0)), r"`std` must be positive .* std=\(0.0, 0.0, 0.0\)"),
    (dict(std=(0.2, -0.1, 0.2)), "`std` must be positive"),
    (dict(mean=(0.5, math.nan, 0.5)), "one finite number per channel"),
    (dict(std=(0.2, "0.2", 0.2)), "one finite number per channel"),
])
def test_encoders_refuse_a_std_that_is_not_positive_or_a_mean_that_is_not_finite(build, stats, message):
    with pytest.raises(ValueError, match=message):
        build(**stats)


def test_normalized_divides_by_the_std():
    inputs = keras.Input((1, 1, 3))
    model = keras.Model(inputs, normalized(inputs, (0.5, 0.0, 1.0), (0.5, 2.0, 0.25)))
    out = keras.ops.convert_to_numpy(model(np.ones((1, 1, 1, 3), "float32")))
    np.testing.assert_allclose(out.reshape(-1), [1.0, 0.5, 0.0], rtol=1e-6)


def test_a_recipe_refuses_an_encoder_std_of_zeros():
    with pytest.raises(RecipeError, match=r"model\.encoder.*`std` must be positive"):
        validate_recipe({"model": {"encoder": {"name": "airbench", "std": [0, 0, 0]}},
                         "views": {"recipe": "airbench"}})
