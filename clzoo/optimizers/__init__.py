"""Optimizers the papers train with that Keras core lacks."""

from clzoo.optimizers.lars import LARS

__all__ = ["LARS"]
