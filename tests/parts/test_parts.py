"""`ContrastiveModel` composed of parts (`clzoo.parts.base.ModelPart`): the arguments build one
part each, each part checks its own settings, and the model calls every part's hooks, so a new
part is a class with the hooks it needs (here a test part, on all three backends)."""

from pathlib import Path

import keras
import numpy as np
import pytest

import clzoo
from clzoo.models.contrastive_model import model_parts
from clzoo.parts.auxiliary import AuxiliaryPart
from clzoo.parts.base import PARTS, ModelPart, part_name
from clzoo.parts.grad_cache import GradCacheStep
from clzoo.parts.queue import QueuePart

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")
SHAPE = (2, 4, 4, 3)


def _model(**parts):
    keras.utils.set_random_seed(0)
    encoder = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(6)])
    head = clzoo.models.ProjectionHead(hidden_dims=(5,), output_dim=3)
    return clzoo.models.ContrastiveModel(encoder, head, **parts)


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(8,) + SHAPE).astype("float32"), (np.arange(8) % 2).astype("int32")


@pytest.mark.parametrize("arguments, kinds", [
    ({}, []),
    ({"queue_size": 16, "momentum": 0.9}, [QueuePart]),
    ({"encoder_chunk_size": 4}, [GradCacheStep]),
    ({"auxiliary_classes": 2}, [AuxiliaryPart]),
    ({"queue_size": 16, "encoder_chunk_size": 4}, [QueuePart, GradCacheStep]),
])
def test_each_argument_builds_its_part(arguments, kinds):
    model = _model(**arguments)
    assert [type(part) for part in model.parts] == kinds
    assert (model.memory_queue is not None) == ("queue_size" in arguments)
    assert (model.auxiliary_classifier is not None) == ("auxiliary_classes" in arguments)
    config = model.get_config()
    assert "queue_size" not in config
    assert [item["class_name"] for item in config["parts"]] == [part_name(part) for part in model.parts]
    assert model.encoder_chunk_size == arguments.get("encoder_chunk_size")


@pytest.mark.parametrize("arguments, message", [
    ({"queue_size": 0}, "queue_size"),
    ({"encoder_chunk_size": -1}, "encoder_chunk_size"),
    ({"auxiliary_classes": 1}, "auxiliary_classes"),
    ({"momentum": 0.9}, "needs a queue"),
    ({"auxiliary_classes": 2, "encoder_chunk_size": 4}, "does not run under GradCache"),
    ({"queue_size": 8, "momentum": 1.0}, "momentum"),
])
def test_each_part_checks_its_settings_and_the_rules_between_them(arguments, message):
    with pytest.raises(ValueError, match=message):
        model_parts(**arguments)


def test_the_weights_keep_their_order():
    """Keras lists weights, and saves optimizer slots by position, in the order layers were
    assigned: the auxiliary classifier's kernel first, as in every checkpoint written with it."""
    model = _model(auxiliary_classes=2, queue_size=8, momentum=0.9)
    model.build((None,) + SHAPE)
    owners = [variable.path.split("/")[1].rstrip("_0123456789") for variable in model.trainable_variables]
    assert owners == ["auxiliary_classifier"] + ["sequential"] * 2 + ["projection_head"] * 4
    assert model.auxiliary_weight == 1.0 and _model().auxiliary_weight == 1.0  # as given when off


class _DoubledLoss(ModelPart):
    """A part that replaces the step's loss by twice Keras' (what a new part looks like)."""

    def batch_loss(self, model, x, y, y_pred, sample_weight):
        return 2 * keras.Model.compute_loss(model, x, y, y_pred, sample_weight)


def test_the_model_calls_a_new_parts_hooks():
    x, y = _data()
    losses = []
    for parts in ((), (_DoubledLoss(),)):
        model = _model()
        model.parts = model.parts + parts
        model.compile(optimizer=keras.optimizers.SGD(0.0), loss=clzoo.losses.SupConLoss())
        losses.append(model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
                      .history["loss"][0])
        assert model.evaluate(x, y, batch_size=8, verbose=0) == pytest.approx(losses[0], rel=1e-5)
    assert losses[1] == pytest.approx(2 * losses[0], rel=1e-5)


EARLIER = Path(__file__).parent / "earlier_models"


@pytest.mark.parametrize("name, parts", [
    ("queue_auxiliary", [{"class_name": "queue", "config": {"size": 16, "momentum": 0.9}},
                         {"class_name": "auxiliary", "config": {"classes": 3, "weight": 0.5,
                                                                "label_smoothing": 0.1,
                                                                "logit_scale": 1 / 9}}]),
    ("grad_cache", [{"class_name": "grad_cache", "config": {"chunk_size": 4}}]),
])
def test_a_model_saved_with_the_flat_arguments_loads_bit_identically_and_trains_on(name, parts):
    """Issue 70 item 2: `.keras` files written before `parts=[...]` (flat `queue_size=...`,
    saved by clzoo fa9c53a on TensorFlow after 2 epochs of SGD with momentum) load through the
    upgrade table with the same weights and optimizer slots in the same order, and resume."""
    model = keras.saving.load_model(EARLIER / f"{name}.keras")
    saved = np.load(EARLIER / f"{name}.npz")
    stored = [saved[f"arr_{index}"] for index in range(len(saved.files))]
    weights = model.get_weights()
    slots = [keras.ops.convert_to_numpy(variable) for variable in model.optimizer.variables]
    assert len(weights) + len(slots) == len(stored)
    for got, expected in zip(weights + slots, stored):
        np.testing.assert_array_equal(got, expected)
    assert model.get_config()["parts"] == parts
    x = np.random.default_rng(1).normal(size=(8, 2, 4, 4, 3)).astype("float32")
    loss = model.fit(x, np.arange(8) % 3, batch_size=8, epochs=1, verbose=0).history["loss"][0]
    assert np.isfinite(loss)


class _Scaled(ModelPart):
    """A part a user adds: one class, one registration (the step's loss times `factor`)."""

    def __init__(self, factor=2.0):
        if not factor > 0:
            raise ValueError(f"`factor` must be positive. Received: factor={factor!r}")
        self.factor = factor

    def batch_loss(self, model, x, y, y_pred, sample_weight):
        return self.factor * keras.Model.compute_loss(model, x, y, y_pred, sample_weight)

    def refuse(self, context):
        return "scaled needs no queue" if "queue" in context.parts else None


@pytest.fixture
def scaled_part():
    PARTS.register("scaled", _Scaled, description="the loss times a factor")
    yield
    del PARTS._entries["scaled"]


def test_a_registered_part_is_a_recipe_section_the_task_builds(scaled_part):
    """A new part = a class + its registration: the recipe's `model.scaled` section is checked by
    building it, its refuse hook meets the other parts, and the task's model holds it."""
    from clzoo.train.recipe import RecipeError, load_recipe
    from clzoo.train.tasks import build_model

    recipe = load_recipe(None, ["model.scaled={factor: 3.0}"])
    assert recipe.model.scaled == {"factor": 3.0} and recipe.model.scaled.factor == 3.0
    model = build_model(recipe, num_classes=10)
    assert [part_name(part) for part in model.parts] == ["scaled"] and model.part("scaled").factor == 3.0
    assert model.get_config()["parts"] == [{"class_name": "scaled", "config": {"factor": 3.0}}]
    for overrides, message in (
            (["model.scaled={factor: -1.0}"], r"model.scaled.factor = -1.0: must be positive"),
            (["model.scaled={}", "model.queue={size: 64}"], "model.scaled: scaled needs no queue"),
            (["model.scaled={facter: 2.0}"], "unknown recipe key 'model.scaled.facter'. Did you mean"),
            (["model.scaledd={}"],
             r"--set model.scaledd \(over .*unknown recipe key 'model.scaledd'. Did you mean 'scaled'")):
        with pytest.raises(RecipeError, match=message):
            load_recipe(None, overrides)


def test_a_lever_may_refuse_the_run_it_meets(monkeypatch):
    """Levers see the same context as parts (the parts, the task, the loss)."""
    from clzoo.train.levers.weight_average import WeightAverage
    from clzoo.train.recipe import RecipeError, load_recipe

    monkeypatch.setattr(WeightAverage, "refuse",
                        lambda self, context: "not beside a queue" if "queue" in context.parts else None)
    load_recipe(None, ["training.levers=[{name: ema}]"])
    with pytest.raises(RecipeError, match=r"training.levers\[0\] \(ema\): not beside a queue"):
        load_recipe(None, ["training.levers=[{name: ema}]", "model.queue={size: 64}"])
