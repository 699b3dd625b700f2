"""Build a recipe's parts by name: views, encoder, loss and optimizer (the model comes from its task)."""

import inspect

import keras

from clzoo.data.augmentation_settings import (  # noqa: F401  (re-exported: their home before)
    BATCH_VIEWS,
    views_from_config,
)
from clzoo.models import get_encoder


def loss_class(name):
    """The class of a recipe's `loss.name`: a clzoo loss, or `SoftTargetCrossEntropy`."""
    from clzoo.losses import ALL_OBJECTS_DICT

    if name == "SoftTargetCrossEntropy":
        return _soft_target_cross_entropy
    if name not in ALL_OBJECTS_DICT:
        from clzoo.registry import did_you_mean

        known = sorted(ALL_OBJECTS_DICT) + ["SoftTargetCrossEntropy"]
        raise ValueError(f"name {name!r} is not a loss; known: {', '.join(known)}."
                         + did_you_mean(name, known))
    return ALL_OBJECTS_DICT[name]


def _soft_target_cross_entropy(label_smoothing=0.0, reduction="sum_over_batch_size"):
    """Keras' categorical cross-entropy on logits: the soft-target baseline."""
    return keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=label_smoothing,
                                                reduction=reduction)


def build_encoder(recipe, size):
    """The recipe's untrained encoder (`model.encoder`: its name and builder arguments) for
    `(size, size, 3)` images in [0, 1], named "encoder".

    Raises:
        ValueError: one line naming `model.encoder` and the image size when the builder
            refuses them (a batch-norm momentum over 1, a ViT patch that does not divide the
            image): the recipe checks each option's name and type, the builder their values.
    """
    encoder = recipe.model.encoder
    try:
        return get_encoder(encoder.name, input_shape=(size, size, 3), name="encoder", **encoder.options)
    except (ValueError, TypeError, ArithmeticError, IndexError, KeyError) as error:
        reason = " ".join(str(error).split())[:300] or type(error).__name__
        written = {"name": encoder.name, **encoder.options}
        options = " with these options" if encoder.options else ""
        raise ValueError(f"model.encoder = {written}: {encoder.name} cannot be built for {size}x{size} "
                         f"images{options} ({type(error).__name__}: {reason})") from error


def build_loss(recipe):
    """The recipe's loss, with only the keyword arguments the recipe gives."""
    return loss_class(recipe.loss.name)(**recipe.loss.kwargs)


def build_optimizer(recipe, steps_per_epoch):
    """The recipe's optimizer on its learning-rate schedule (`clzoo.optimizers` registries): each
    factory given its section's settings (`training.optimizer` / `training.schedule`) and what
    the run fills in (learning rate, length)."""
    from clzoo.optimizers.registry import OPTIMIZERS, SCHEDULES

    spec = recipe.training
    total_steps = max(1, spec.epochs * steps_per_epoch)
    schedule = _call(SCHEDULES.get(spec.schedule.name), spec.schedule, learning_rate=spec.learning_rate,
                     epochs=spec.epochs, steps_per_epoch=steps_per_epoch)
    return _call(OPTIMIZERS.get(spec.optimizer.name), spec.optimizer, learning_rate=schedule,
                 total_steps=total_steps)


def _call(factory, section, **given):
    """`factory` with the `given` run arguments it takes and its `section`'s settings."""
    parameters = inspect.signature(factory).parameters
    kwargs = {key: value for key, value in given.items() if key in parameters}
    return factory(**kwargs, **section.settings)
