"""Optimizers the papers train with that Keras core lacks, and the recipe names of all of them."""

from clzoo.optimizers.lars import LARS
from clzoo.optimizers.registry import OPTIMIZERS, SCHEDULES

__all__ = ["LARS", "OPTIMIZERS", "SCHEDULES"]
