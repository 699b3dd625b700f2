"""Optimizers and learning-rate schedules by the names recipes use (`training.optimizer`/`schedule`).

Each factory takes only its own keyword arguments, named as the recipe's `training` keys
(`clzoo.train.TrainingSpec`): a schedule `(learning_rate, epochs, steps_per_epoch, ...)` gives a
learning rate or a `keras.optimizers.schedules.LearningRateSchedule`, an optimizer
`(learning_rate, <its settings>, total_steps=None)` the optimizer (`learning_rate` there is the
schedule). `clzoo.train.builders.build_optimizer` passes each factory the keys its signature
names, and a recipe that sets a key its optimizer does not take is refused (`settings_of`).
A new optimizer setting is a `training` key plus a parameter of the factories that take it.
"""

import inspect

import keras

from clzoo.optimizers.lars import LARS
from clzoo.optimizers.lookahead_sgd import LookaheadSGD
from clzoo.optimizers.schedules import WarmupLinearDecay
from clzoo.registry import Registry

OPTIMIZERS = Registry("optimizer")
SCHEDULES = Registry("schedule")


@SCHEDULES.register("cosine", description="linear warm-up from `warmup_start_fraction` x peak, then cosine "
                    "decay to `final_learning_rate_fraction` x peak (SINCERE app. J)")
def cosine(learning_rate, epochs, steps_per_epoch, warmup_epochs=1, warmup_start_fraction=1e-3,
           final_learning_rate_fraction=0.0):
    total = max(1, epochs * steps_per_epoch)
    warmup = min(total - 1, int(warmup_epochs * steps_per_epoch))
    peak = float(learning_rate)
    return keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=peak * warmup_start_fraction if warmup else peak,
        decay_steps=total - warmup,
        warmup_target=peak if warmup else None,
        warmup_steps=warmup,
        alpha=float(final_learning_rate_fraction),
    )


@SCHEDULES.register("linear", description="linear warm-up from `warmup_start_fraction` x peak, "
                    "then linear decay to `final_learning_rate_fraction` x peak (airbench94)")
def linear(learning_rate, epochs, steps_per_epoch, warmup_epochs=1, warmup_start_fraction=1e-3,
           final_learning_rate_fraction=0.0):
    total = max(1, epochs * steps_per_epoch)
    warmup = min(total - 1, int(warmup_epochs * steps_per_epoch))
    return WarmupLinearDecay(float(learning_rate), warmup, total, start_fraction=float(warmup_start_fraction),
                             end_fraction=float(final_learning_rate_fraction))


@SCHEDULES.register("constant", description="the peak learning rate throughout")
def constant(learning_rate, epochs=None, steps_per_epoch=None):
    return float(learning_rate)


@OPTIMIZERS.register("sgd", description="SGD with momentum and coupled weight decay (SupCon)")
def sgd(learning_rate, momentum=0.9, nesterov=False, weight_decay=1e-4):
    return keras.optimizers.SGD(learning_rate, momentum=momentum, nesterov=nesterov,
                                weight_decay=weight_decay or None)


@OPTIMIZERS.register("adamw", description="AdamW, decoupled weight decay")
def adamw(learning_rate, weight_decay=1e-4):
    return keras.optimizers.AdamW(learning_rate, weight_decay=weight_decay)


@OPTIMIZERS.register("lookahead_sgd", description="SGD, Nesterov momentum, bias learning-rate "
                     "multiplier and Lookahead (airbench94's optimizer)")
def lookahead_sgd(learning_rate, momentum=0.9, nesterov=False, weight_decay=1e-4,
                  bias_learning_rate_multiplier=1.0, offset_weight_decay_multiplier=1.0,
                  lookahead_every=0, lookahead_alpha=0.95**5, total_steps=None):
    return LookaheadSGD(learning_rate, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay,
                        bias_learning_rate_multiplier=bias_learning_rate_multiplier,
                        offset_weight_decay_multiplier=offset_weight_decay_multiplier,
                        lookahead_every=lookahead_every, lookahead_alpha=lookahead_alpha,
                        total_steps=total_steps)


@OPTIMIZERS.register("lars", description="LARS (SimCLR's large-batch optimizer)")
def lars(learning_rate, momentum=0.9, weight_decay=1e-4, trust_coefficient=1e-3):
    return LARS(learning_rate, momentum=momentum, weight_decay=weight_decay,
                trust_coefficient=trust_coefficient)


# Filled by the factory itself (the schedule, the run's length), not from a recipe key.
_NOT_SETTINGS = ("learning_rate", "total_steps", "epochs", "steps_per_epoch")


def settings_of(factory):
    """The recipe `training` keys `factory` takes as its own settings, or None for a factory of
    the earlier form `(learning_rate, training[, total_steps])`, which reads the section itself."""
    parameters = inspect.signature(factory).parameters
    if "training" in parameters:
        return None
    return tuple(name for name in parameters if name not in _NOT_SETTINGS)


def owners(registry):
    """`{setting: [names of registry's factories that take it]}`, each signature read once."""
    out = {}
    for name in registry:
        for key in settings_of(registry.get(name)) or ():
            out.setdefault(key, []).append(name)
    return out
