"""clzoo: contrastive representation learning for Keras 3."""

from clzoo import data, eval, losses, models, optimizers, presets  # noqa: A004  (clzoo.eval is the evaluation package)
from clzoo.version import __version__

__all__ = ["data", "losses", "models", "__version__"]
