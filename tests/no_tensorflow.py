"""Run `clzoo ARGS...` as if TensorFlow were not installed: `python tests/no_tensorflow.py ARGS...`.

TensorFlow is hidden from the import system (`tests/hide_tensorflow/sitecustomize.py`:
`import tensorflow` raises ModuleNotFoundError and `importlib.util.find_spec("tensorflow")` is None,
as on a machine without it), then the `clzoo` command runs as `python -m clzoo` would.
Exits with status 3 if TensorFlow ended up in `sys.modules` anyway.
"""

import runpy
import sys

import hide_tensorflow.sitecustomize  # noqa: F401  (installs the finder)

if __name__ == "__main__":
    sys.argv = ["clzoo", *sys.argv[1:]]
    try:
        runpy.run_module("clzoo", run_name="__main__", alter_sys=True)
    finally:
        if "tensorflow" in sys.modules:
            sys.exit(3)
