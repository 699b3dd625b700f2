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


def _settings_as_arguments(factory):
    """Refuse a factory of the form before the recipe's sections, `(learning_rate, training)`:
    each setting is now its own keyword argument, filled from `training.optimizer` / `.schedule`."""
    if "training" in inspect.signature(factory).parameters:
        raise TypeError(f"{getattr(factory, '__name__', factory)} takes `training` (the whole recipe "
                        "section, the form before the sections); take each setting as a keyword "
                        "argument with its default (momentum=0.9, ...), and learning_rate "
                        "(and total_steps / epochs, steps_per_epoch) as the run fills them")


OPTIMIZERS = Registry("optimizer", check=_settings_as_arguments)
SCHEDULES = Registry("schedule", check=_settings_as_arguments)


def _in_range(key, value, low, high=None, high_open=False, low_open=False):
    """Refuse a setting outside `[low, high]` (an end open when asked), naming it (recipe words)."""
    below = value <= low if low_open else value < low
    above = high is not None and (value >= high if high_open else value > high)
    if below or above:
        bounds = [f"greater than {'' if low_open else 'or equal to '}{low}"]
        if high is not None:
            bounds.append(f"less than {'' if high_open else 'or equal to '}{high}")
        raise ValueError(f"{key} = {value!r}: must be {' and '.join(bounds)}")


def _schedule_settings(warmup_epochs, warmup_start_fraction, final_learning_rate_fraction):
    _in_range("warmup_epochs", warmup_epochs, 0)
    _in_range("warmup_start_fraction", warmup_start_fraction, 0, 1)
    _in_range("final_learning_rate_fraction", final_learning_rate_fraction, 0, 1)


def _sgd_settings(momentum, weight_decay, **_):
    _in_range("momentum", momentum, 0, 1, high_open=True)
    _in_range("weight_decay", weight_decay, 0)


# An optimizer's `check` (its registration's metadata) refuses bad settings without building it:
# a Keras optimizer creates variables, and on TensorFlow a variable made before the strategy
# ends the chance to set up MultiWorkerMirroredStrategy's collective ops (recipes are checked first).
def _adamw_settings(weight_decay, **_):
    _in_range("weight_decay", weight_decay, 0)


def _lookahead_settings(momentum, weight_decay, bias_learning_rate_multiplier,
                        offset_weight_decay_multiplier, lookahead_every, lookahead_alpha, **_):
    _sgd_settings(momentum, weight_decay)
    _in_range("bias_learning_rate_multiplier", bias_learning_rate_multiplier, 0, low_open=True)
    _in_range("offset_weight_decay_multiplier", offset_weight_decay_multiplier, 0)
    _in_range("lookahead_every", lookahead_every, 0)
    _in_range("lookahead_alpha", lookahead_alpha, 0, 1, high_open=True)


def _lars_settings(momentum, weight_decay, trust_coefficient, **_):
    _sgd_settings(momentum, weight_decay)
    _in_range("trust_coefficient", trust_coefficient, 0, low_open=True)


@SCHEDULES.register("cosine", description="linear warm-up from `warmup_start_fraction` x peak, then cosine "
                    "decay to `final_learning_rate_fraction` x peak (SINCERE app. J)")
def cosine(learning_rate, epochs, steps_per_epoch, warmup_epochs=1.0, warmup_start_fraction=1e-3,
           final_learning_rate_fraction=0.0):
    _schedule_settings(warmup_epochs, warmup_start_fraction, final_learning_rate_fraction)
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
def linear(learning_rate, epochs, steps_per_epoch, warmup_epochs=1.0, warmup_start_fraction=1e-3,
           final_learning_rate_fraction=0.0):
    _schedule_settings(warmup_epochs, warmup_start_fraction, final_learning_rate_fraction)
    total = max(1, epochs * steps_per_epoch)
    warmup = min(total - 1, int(warmup_epochs * steps_per_epoch))
    return WarmupLinearDecay(float(learning_rate), warmup, total, start_fraction=float(warmup_start_fraction),
                             end_fraction=float(final_learning_rate_fraction))


@SCHEDULES.register("constant", description="the peak learning rate throughout")
def constant(learning_rate, epochs=None, steps_per_epoch=None):
    return float(learning_rate)


@OPTIMIZERS.register("sgd", description="SGD with momentum and coupled weight decay (SupCon)",
                     check=_sgd_settings)
def sgd(learning_rate, momentum=0.9, nesterov=False, weight_decay=1e-4):
    _sgd_settings(momentum, weight_decay)
    return keras.optimizers.SGD(learning_rate, momentum=momentum, nesterov=nesterov,
                                weight_decay=weight_decay or None)


@OPTIMIZERS.register("adamw", description="AdamW, decoupled weight decay", check=_adamw_settings)
def adamw(learning_rate, weight_decay=1e-4):
    _adamw_settings(weight_decay)
    return keras.optimizers.AdamW(learning_rate, weight_decay=weight_decay)


@OPTIMIZERS.register("lookahead_sgd", description="SGD, Nesterov momentum, bias learning-rate "
                     "multiplier and Lookahead (airbench94's optimizer; airbench94 sets the last four "
                     "to 64, 1, 5, 0.95 ** 5): `bias_learning_rate_multiplier` is the learning-rate "
                     "factor of the batch-norm offsets, `offset_weight_decay_multiplier` their decay per "
                     "step relative to the weights', `lookahead_every` the steps between Lookahead "
                     "pulls (0: off), `lookahead_alpha` the largest pull", check=_lookahead_settings)
def lookahead_sgd(learning_rate, momentum=0.9, nesterov=False, weight_decay=1e-4,
                  bias_learning_rate_multiplier=1.0, offset_weight_decay_multiplier=1.0,
                  lookahead_every=0, lookahead_alpha=0.95**5, total_steps=None):
    _lookahead_settings(momentum, weight_decay, bias_learning_rate_multiplier,
                        offset_weight_decay_multiplier, lookahead_every, lookahead_alpha)
    return LookaheadSGD(learning_rate, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay,
                        bias_learning_rate_multiplier=bias_learning_rate_multiplier,
                        offset_weight_decay_multiplier=offset_weight_decay_multiplier,
                        lookahead_every=lookahead_every, lookahead_alpha=lookahead_alpha,
                        total_steps=total_steps)


@OPTIMIZERS.register("lars", description="LARS (SimCLR's large-batch optimizer)", check=_lars_settings)
def lars(learning_rate, momentum=0.9, weight_decay=1e-4, trust_coefficient=1e-3):
    _lars_settings(momentum, weight_decay, trust_coefficient)
    return LARS(learning_rate, momentum=momentum, weight_decay=weight_decay,
                trust_coefficient=trust_coefficient)


# Filled by the factory itself (the schedule, the run's length), not from a recipe key.
_NOT_SETTINGS = ("learning_rate", "total_steps", "epochs", "steps_per_epoch")


def settings_of(factory):
    """The recipe keys `factory` takes as its own settings (its parameters but the run's)."""
    parameters = inspect.signature(factory).parameters
    return tuple(name for name in parameters if name not in _NOT_SETTINGS)


def owners(registry):
    """`{setting: [names of registry's factories that take it]}`, each signature read once."""
    out = {}
    for name in registry:
        for key in settings_of(registry.get(name)):
            out.setdefault(key, []).append(name)
    return out
