"""Optimizers the papers train with that Keras core lacks, and the recipe names of all of them."""

from clzoo.optimizers.lars import LARS
from clzoo.optimizers.lookahead_sgd import LookaheadSGD
from clzoo.optimizers.registry import OPTIMIZERS, SCHEDULES
from clzoo.optimizers.schedules import WarmupLinearDecay

__all__ = ["LARS", "LookaheadSGD", "OPTIMIZERS", "SCHEDULES", "WarmupLinearDecay"]
