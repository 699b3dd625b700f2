"""Run `clzoo ARGS...` as if TensorFlow were not installed: `python tests/no_tensorflow.py ARGS...`.

TensorFlow is hidden from the import system (`tests/hide_tensorflow/sitecustomize.py`:
`import tensorflow` raises ModuleNotFoundError and `importlib.util.find_spec("tensorflow")` is None,
as on a machine without it), then the `clzoo` command runs as `python -m clzoo` would.
Exits with status 3 if TensorFlow ended up in `sys.modules` anyway.
"""

import importlib.util
import runpy
import sys
from pathlib import Path


def _hide_tensorflow():
    """Run `hide_tensorflow/sitecustomize.py` by its path (PYTHONSAFEPATH keeps this folder off
    `sys.path`, and a `sitecustomize` may be imported already)."""
    path = Path(__file__).resolve().parent / "hide_tensorflow" / "sitecustomize.py"
    spec = importlib.util.spec_from_file_location("clzoo_tests_hide_tensorflow", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


if __name__ == "__main__":
    _hide_tensorflow()
    sys.argv = ["clzoo", *sys.argv[1:]]
    try:
        runpy.run_module("clzoo", run_name="__main__", alter_sys=True)
    finally:
        if "tensorflow" in sys.modules:
            sys.exit(3)
