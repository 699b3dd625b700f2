"""Issue 86 (hostile round 7), the parts' findings.

6. A label head (online probe, auxiliary classifier) with fewer classes than the labels, fed a
   `tf.data` dataset or a Python generator, is refused with one line naming its classes and the
   setting, on every backend (it trained silently on TensorFlow and JAX).
7. A part switched on by `--set` over a recipe whose task refuses it is blamed on the `--set`,
   not on the recipe file (which has no such part).
"""

import math
import pathlib

import keras
import numpy as np
import pytest

import clzoo
from clzoo.parts import AuxiliaryPart, OnlineLinearProbe
from tests.hostile._util import BACKEND

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEADS = {"online probe": OnlineLinearProbe, "auxiliary classifier": AuxiliaryPart}


def _labelled_model(head):
    keras.utils.set_random_seed(0)
    model = clzoo.models.ContrastiveModel(
        keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(4)]),
        clzoo.models.ProjectionHead(hidden_dims=(4,), output_dim=2), parts=[HEADS[head](classes=2)])
    model.compile(optimizer="sgd", loss=clzoo.losses.SupConLoss())
    return model


def _batches():
    """A good batch, then one with labels 0..4 (the second, so a check of the first alone fails)."""
    x = np.random.default_rng(0).uniform(size=(5, 2, 4, 4, 1)).astype("float32")
    return [(x, np.array([0, 1, 0, 1, 1], "int32")), (x, np.arange(5, dtype="int32"))]


def _stream(kind):
    if kind == "generator":
        return (batch for batch in _batches())
    import tensorflow as tf

    x, y = zip(*_batches())
    return tf.data.Dataset.from_tensor_slices((np.stack(x), np.stack(y)))


@pytest.mark.parametrize("kind", ["tf.data", "generator"])
@pytest.mark.parametrize("head", list(HEADS))
def test_a_streams_labels_beyond_a_label_heads_classes_are_refused_in_one_line(head, kind):
    model = _labelled_model(head)
    with pytest.raises(ValueError) as caught:
        model.fit(_stream(kind), epochs=1, verbose=0)
    message = str(caught.value)
    assert f"The {head} has 2 classes; labels must lie in [0, 2)" in message, message
    assert "\n" not in message and "classes=" in message
    weights = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    assert all(np.isfinite(w).all() for w in weights)  # no NaN left behind
    if BACKEND != "tensorflow":  # checked on the host: the label found and the classes it needs
        assert "labels from 0 to 4: give it at least 5 classes" in message, message


@pytest.mark.filterwarnings("ignore:Your input ran out of data")
def test_a_stream_within_the_classes_still_trains():
    model = _labelled_model("online probe")
    x, y = _batches()[0]
    history = model.fit((batch for batch in [(x, y)] * 2), epochs=1, verbose=0)
    assert math.isfinite(history.history["loss"][-1])


# the key that turns each part on from the command line, and what the blame names
SWITCH_ON = {"queue": ("model.queue.size=64", "model.queue.size"),
             "grad_cache": ("model.grad_cache.chunk_size=8", "model.grad_cache.chunk_size"),
             "auxiliary": ("model.auxiliary.weight=0.5", "model.auxiliary.weight"),
             "online_probe": ("model.online_probe={}", "model.online_probe")}


def _refusals(overrides_of):
    """`(recipe, part, override, line)` of each shipped recipe whose task refuses a part that
    `overrides_of(part)` turns on."""
    from clzoo.train.recipe import RecipeError, load_recipe

    found = []
    for path in sorted([*ROOT.glob("recipes/**/*.yaml"), *ROOT.glob("clzoo/recipes/**/*.yaml")]):
        recipe = str(path.relative_to(ROOT))
        for part in SWITCH_ON:
            try:
                load_recipe(recipe, overrides_of(part))
            except RecipeError as error:
                found += [(recipe, part, line) for line in error.lines if f": model.{part}: " in line]
    return found


@pytest.mark.backends("tensorflow")  # recipe checks, no backend of their own: its lane, as the others
def test_a_part_turned_on_by_set_over_a_recipe_whose_task_refuses_it_blames_the_set():
    refusals = _refusals(lambda part: [SWITCH_ON[part][0]])
    assert ("recipes/soft_target/cifar10_infonce_fast.yaml", "queue") in {r[:2] for r in refusals}
    for recipe, part, line in refusals:
        assert line.startswith(f"--set {SWITCH_ON[part][1]} (over {recipe}): model.{part}: "), line


@pytest.mark.backends("tensorflow")
def test_a_part_the_file_turns_on_stays_the_files_under_a_set_of_its_setting(tmp_path):
    """The file that has the part and the task that refuses it is to blame, not `--set` of a setting."""
    from clzoo.train.recipe import RecipeError, load_recipe

    path = tmp_path / "r.yaml"
    path.write_text("data: digits\ntask: soft_target\nloss: {name: SoftTargetInfoNCELoss}\n"
                    "model: {queue: {size: 64}}\n")
    with pytest.raises(RecipeError) as caught:
        load_recipe(path, ["model.queue.momentum=0.5"])
    assert [line.split(": ", 1)[0] for line in caught.value.lines] == [str(path)], caught.value.lines


# --- round 7 follow-up: labels past int32, and uint8's 255 ------------------------------------

def _three_class_model(head):
    keras.utils.set_random_seed(0)
    model = clzoo.models.ContrastiveModel(
        keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(4)]),
        clzoo.models.ProjectionHead(hidden_dims=(4,), output_dim=2), parts=[HEADS[head](classes=3)])
    model.compile(optimizer="sgd", loss=clzoo.losses.SupConLoss())
    return model


def _feed(kind, y):
    x = np.random.default_rng(0).uniform(size=(len(y), 2, 4, 4, 1)).astype("float32")
    if kind == "numpy":
        return {"x": x, "y": y, "batch_size": len(y)}
    if kind == "generator":
        return {"x": (batch for batch in [(x, y)])}
    import tensorflow as tf

    return {"x": tf.data.Dataset.from_tensor_slices((x, y)).batch(len(y))}


@pytest.mark.parametrize("label", [2**32 + 1, 2**40])
@pytest.mark.parametrize("kind", ["tf.data", "generator"])
@pytest.mark.parametrize("head", list(HEADS))
def test_a_streams_int64_label_past_int32_is_refused_not_wrapped(head, kind, label):
    """TensorFlow's step cast the ids to int32 before its check: 2**40 became 0, 2**32 + 1 became
    1, both inside the classes, and the head trained on them."""
    model = _three_class_model(head)
    with pytest.raises(ValueError) as caught:
        model.fit(**_feed(kind, np.array([0, 1, 2, 0, 1, label], "int64")), epochs=1, verbose=0)
    message = str(caught.value)
    assert "\n" not in message, message
    assert f"The {head} has 3 classes; labels must lie in [0, 3)" in message or "int32" in message, message


@pytest.mark.parametrize("kind", ["numpy", "generator"])
@pytest.mark.parametrize("head", list(HEADS))
def test_uint8_label_255_asks_for_256_classes_not_0(head, kind):
    """255 + 1 in uint8 is 0: the advice read `classes=0`."""
    model = _three_class_model(head)
    with pytest.raises(ValueError) as caught:
        model.fit(**_feed(kind, np.array([0, 1, 2, 0, 1, 255], "uint8")), epochs=1, verbose=0)
    message = str(caught.value)
    assert "\n" not in message and "classes=0" not in message and "at least 0" not in message, message
    if kind == "numpy" or BACKEND != "tensorflow":  # TensorFlow's in-graph assert names no count
        assert "labels from 0 to 255: give it at least 256 classes" in message, message
        assert "classes=256" in message, message


def test_the_advice_counts_past_the_labels_dtype():
    from clzoo.parts.auxiliary import check_class_ids

    with pytest.raises(ValueError, match=r"give it at least 256 classes: OnlineLinearProbe\(classes=256\)$"):
        check_class_ids(np.array([0, 255], "uint8"), 3, "the online probe", "OnlineLinearProbe(classes={})")
