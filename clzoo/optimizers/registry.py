"""Optimizers and learning-rate schedules by the names recipes use (`training.optimizer`/`schedule`).

Each factory takes the recipe's `training` section (`clzoo.train.TrainingSpec`):
`SCHEDULES.get(name)(training, steps_per_epoch)` gives a learning rate or a
`keras.optimizers.schedules.LearningRateSchedule`, and
`OPTIMIZERS.get(name)(learning_rate, training, total_steps=...)` the optimizer.
"""

import keras

from clzoo.optimizers.lars import LARS
from clzoo.optimizers.lookahead_sgd import LookaheadSGD
from clzoo.optimizers.schedules import WarmupLinearDecay
from clzoo.registry import Registry

OPTIMIZERS = Registry("optimizer")
SCHEDULES = Registry("schedule")


@SCHEDULES.register("cosine", description="linear warm-up from `warmup_start_fraction` x peak, then cosine "
                    "decay to `final_learning_rate_fraction` x peak (SINCERE app. J)")
def cosine(training, steps_per_epoch):
    total = max(1, training.epochs * steps_per_epoch)
    warmup = min(total - 1, int(training.warmup_epochs * steps_per_epoch))
    peak = float(training.learning_rate)
    return keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=peak * training.warmup_start_fraction if warmup else peak,
        decay_steps=total - warmup,
        warmup_target=peak if warmup else None,
        warmup_steps=warmup,
        alpha=float(training.final_learning_rate_fraction),
    )


@SCHEDULES.register("linear", description="linear warm-up from `warmup_start_fraction` x peak, "
                    "then linear decay to `final_learning_rate_fraction` x peak (airbench94)")
def linear(training, steps_per_epoch):
    total = max(1, training.epochs * steps_per_epoch)
    warmup = min(total - 1, int(training.warmup_epochs * steps_per_epoch))
    return WarmupLinearDecay(float(training.learning_rate), warmup, total,
                             start_fraction=float(training.warmup_start_fraction),
                             end_fraction=float(training.final_learning_rate_fraction))


@SCHEDULES.register("constant", description="the peak learning rate throughout")
def constant(training, steps_per_epoch):
    return float(training.learning_rate)


@OPTIMIZERS.register("sgd", description="SGD with momentum and coupled weight decay (SupCon)")
def sgd(learning_rate, training, total_steps=None):
    return keras.optimizers.SGD(learning_rate, momentum=training.momentum,
                                nesterov=training.nesterov,
                                weight_decay=training.weight_decay or None)


@OPTIMIZERS.register("adamw", description="AdamW, decoupled weight decay")
def adamw(learning_rate, training, total_steps=None):
    return keras.optimizers.AdamW(learning_rate, weight_decay=training.weight_decay)


@OPTIMIZERS.register("lookahead_sgd", description="SGD, Nesterov momentum, bias learning-rate "
                     "multiplier and Lookahead (airbench94's optimizer)")
def lookahead_sgd(learning_rate, training, total_steps=None):
    return LookaheadSGD(learning_rate, momentum=training.momentum, nesterov=training.nesterov,
                        weight_decay=training.weight_decay,
                        bias_learning_rate_multiplier=training.bias_learning_rate_multiplier,
                        offset_weight_decay_multiplier=training.offset_weight_decay_multiplier,
                        lookahead_every=training.lookahead_every,
                        lookahead_alpha=training.lookahead_alpha, total_steps=total_steps)


@OPTIMIZERS.register("lars", description="LARS (SimCLR's large-batch optimizer)")
def lars(learning_rate, training, total_steps=None):
    return LARS(learning_rate, momentum=training.momentum, weight_decay=training.weight_decay,
                trust_coefficient=training.trust_coefficient)
