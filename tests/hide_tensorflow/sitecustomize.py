"""Hide TensorFlow from every Python process started with this folder on `PYTHONPATH`.

`import tensorflow` raises ModuleNotFoundError and `importlib.util.find_spec("tensorflow")` is None,
as on a machine without it (the GPU machines): `PYTHONPATH=tests/hide_tensorflow python ...`.
Python imports `sitecustomize` at start-up from the first folder on its path that has one;
`tests/no_tensorflow.py` imports it for the `clzoo` command alone.
"""

import importlib.abc
import importlib.machinery
import sys


class NoTensorFlow(importlib.abc.MetaPathFinder):
    """The path finder, blind to `tensorflow` and its submodules."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "tensorflow":
            return None
        return importlib.machinery.PathFinder.find_spec(name, path, target)

    def find_distributions(self, *args, **kwargs):
        """importlib.metadata asks the path finder for installed projects (httpx2's import reads its
        own version): every one but TensorFlow's, as on a machine without it."""
        for dist in importlib.machinery.PathFinder.find_distributions(*args, **kwargs):
            if (dist.metadata["Name"] or "").lower() != "tensorflow":
                yield dist


sys.meta_path[:] = [NoTensorFlow() if finder is importlib.machinery.PathFinder else finder
                    for finder in sys.meta_path]
