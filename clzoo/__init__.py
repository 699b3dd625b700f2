"""clzoo: contrastive representation learning for Keras 3."""

from clzoo import data, losses, models
from clzoo.version import __version__

__all__ = ["data", "losses", "models", "__version__"]
