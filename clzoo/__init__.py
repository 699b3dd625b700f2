"""clzoo: contrastive representation learning for Keras 3."""

from clzoo import losses
from clzoo.version import __version__

__all__ = ["losses", "__version__"]
