"""clzoo: contrastive representation learning for Keras 3.

Subpackages load on first use (PEP 562), so `import clzoo` is cheap and imports
neither Keras nor TensorFlow: `clzoo.losses`, `clzoo.data`, ... are imported
when first accessed. Keras only knows clzoo's serializable classes (models,
losses, LARS) once their subpackage is imported: before
`keras.saving.load_model` of a full clzoo model, touch `clzoo.models` and
`clzoo.losses` (or import them).
"""

import importlib

from clzoo.version import __version__

_SUBPACKAGES = ("data", "eval", "losses", "models", "optimizers", "presets", "train")

__all__ = ["data", "losses", "models", "__version__"]


def __getattr__(name):
    """Import a subpackage on first access: `clzoo.losses`, `clzoo.data`, ..."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"clzoo.{name}")
    raise AttributeError(f"module 'clzoo' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBPACKAGES))
