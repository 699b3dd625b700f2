"""Run `clzoo ARGS...` as if TensorFlow were not installed: `python tests/no_tensorflow.py ARGS...`.

TensorFlow is hidden from the import system (`import tensorflow` raises
ModuleNotFoundError and `importlib.util.find_spec("tensorflow")` is None, as on a
machine without it), then the `clzoo` command runs as `python -m clzoo` would.
Exits with status 3 if TensorFlow ended up in `sys.modules` anyway.
"""

import importlib.abc
import importlib.machinery
import runpy
import sys


class _NoTensorFlow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "tensorflow":
            return None
        return importlib.machinery.PathFinder.find_spec(name, path, target)


if __name__ == "__main__":
    sys.meta_path[:] = [_NoTensorFlow() if finder is importlib.machinery.PathFinder else finder
                        for finder in sys.meta_path]
    sys.argv = ["clzoo", *sys.argv[1:]]
    try:
        runpy.run_module("clzoo", run_name="__main__", alter_sys=True)
    finally:
        if "tensorflow" in sys.modules:
            sys.exit(3)
