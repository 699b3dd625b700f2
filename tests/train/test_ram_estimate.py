"""The memory estimate before training (issue 43 item 5): a step that cannot fit is refused with
the number and the fixes, before the run folder is written."""

from pathlib import Path

import keras
import pytest

import clzoo
from clzoo.train import load_recipe
from clzoo.train.ram_estimate import activation_bytes_per_image, check_step_memory
from clzoo.train.recipe import RecipeError


def test_activation_bytes_sum_every_layer_output():
    inputs = keras.Input((4, 4, 3))
    x = keras.layers.Conv2D(8, 3, padding="same")(inputs)  # 4*4*8 floats
    x = keras.layers.ReLU()(x)  # 4*4*8
    outputs = keras.layers.GlobalAveragePooling2D()(x)  # 8
    encoder = keras.Model(inputs, outputs)
    assert activation_bytes_per_image(encoder) == 4 * (3 * 16 + 128 + 128 + 8)  # input layer too


def test_activation_bytes_of_a_huge_input_do_not_overflow():
    side = 2**40  # one output of 3 * 2**80 elements: past int64, which np.prod overflowed
    inputs = keras.Input((side, side, 3))
    encoder = keras.Model(inputs, keras.layers.Flatten()(inputs))
    assert activation_bytes_per_image(encoder) == 2 * 4 * 3 * side**2


def _recipe(batch, chunk=None):
    sets = [f"training.batch_size={batch}", "data=digits"]
    if chunk:
        sets.append(f"model.encoder_chunk_size={chunk}")
    return load_recipe(Path(__file__).resolve().parents[2] / "recipes" / "sincere_digits.yaml", sets)


def test_a_step_too_large_for_the_machine_is_refused_with_the_fixes():
    encoder = clzoo.models.get_encoder("resnet20", input_shape=(32, 32, 3))
    per_image = activation_bytes_per_image(encoder)
    total = 100 * per_image  # a machine with room for 80 images' activations
    check_step_memory(_recipe(32), encoder, 2, on_cpu=True, total=total)  # 64 images fit
    with pytest.raises(RecipeError, match=r"training.batch_size = 64: 128 images per step .*"
                                          r"model.encoder_chunk_size"):
        check_step_memory(_recipe(64), encoder, 2, on_cpu=True, total=total)
    check_step_memory(_recipe(64, chunk=32), encoder, 2, on_cpu=True, total=total)  # GradCache
    check_step_memory(_recipe(64), encoder, 2, on_cpu=False, total=total)  # device memory: not ours
