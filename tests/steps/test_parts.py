"""`ContrastiveModel` composed of parts (`clzoo.steps.parts.ModelPart`): the arguments build one
part each, each part checks its own settings, and the model calls every part's hooks, so a new
part is a class with the hooks it needs (here a test part, on all three backends)."""

import keras
import numpy as np
import pytest

import clzoo
from clzoo.models.auxiliary_classifier import AuxiliaryPart
from clzoo.models.contrastive_model import model_parts
from clzoo.steps.grad_cache import GradCacheStep
from clzoo.steps.parts import ModelPart
from clzoo.steps.queue_step import QueuePart

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
    assert model.get_config().get("queue_size") == arguments.get("queue_size")
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
