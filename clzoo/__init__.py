"""clzoo: contrastive representation learning for Keras 3.

`import clzoo` registers clzoo's serializable classes with Keras (models, losses,
metrics, LARS), so `keras.saving.load_model` reads a full clzoo checkpoint; the other
subpackages (`clzoo.data`, `clzoo.eval`, `clzoo.train`, `clzoo.presets`) load on
first use (PEP 562). The `clzoo` command (console script, `python -m clzoo` or
`python -m clzoo.cli`) skips even the registration: it imports what each command
needs, so `clzoo --help` starts without Keras or TensorFlow.
"""

import importlib
import os
import sys

from clzoo.version import __version__

_SUBPACKAGES = ("data", "eval", "losses", "metrics", "models", "optimizers", "parts", "presets", "train")

__all__ = ["data", "losses", "models", "__version__"]


def __getattr__(name):
    """Import a subpackage on first access: `clzoo.losses`, `clzoo.data`, ..."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"clzoo.{name}")
    raise AttributeError(f"module 'clzoo' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBPACKAGES))


def _run_as_command():
    """True inside the `clzoo` command: the console script, `python -m clzoo` or `-m clzoo.cli`."""
    if os.path.basename(sys.argv[0] if sys.argv else "") in ("clzoo", "clzoo.exe"):
        return True
    if sys.argv[:1] != ["-m"]:  # `python -m MODULE` sets argv[0] to "-m" while it imports MODULE's packages
        return False  # (so a script's own `-m clzoo` arguments do not count)
    argv = list(sys.orig_argv)  # the interpreter's own command line: its first "-m" names MODULE
    return "-m" in argv and argv[argv.index("-m") + 1:argv.index("-m") + 2] in (["clzoo"], ["clzoo.cli"])


# The command imports clzoo.cli, hence this file, before parsing its arguments.
if not _run_as_command():
    from clzoo import console  # noqa: E402

    # TensorFlow 2.17+ prints INFO / WARNING lines while it loads, whatever TF_CPP_MIN_LOG_LEVEL
    # says; loaded here (by Keras, below) they are dropped, its errors kept (console.py)
    if console.keras_backend_name() == "tensorflow" and not console.tensorflow_logs_wanted():
        console._import_tensorflow_quietly()
    from clzoo import losses, metrics, models, optimizers  # noqa: E402, F401  (Keras registrations)
