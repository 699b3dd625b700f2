"""Every `>>>` example in clzoo's public docstrings runs and prints what it says."""

import doctest
import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path

import pytest

import clzoo


def _modules(path, prefix):
    """The modules `pkgutil.walk_packages` lists, less the `clzoo` command (`clzoo.cli` and its
    modules): importing it sets TF_CPP_MIN_LOG_LEVEL in this process's environment (the command's
    own setting), and it holds no examples. walk_packages imports each package it enters, so the
    command is left out here before it is entered."""
    for _, name, is_package in pkgutil.iter_modules(path, prefix):
        if name == "clzoo.cli":
            continue
        yield name
        if is_package:
            yield from _modules(importlib.import_module(name).__path__, f"{name}.")


MODULES = sorted(_modules(clzoo.__path__, "clzoo."))


def _loads_triton(name):
    return "import triton" in Path(importlib.util.find_spec(name).origin).read_text()


@pytest.mark.large
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    if _loads_triton(name) and "tensorflow" in sys.modules and "triton" not in sys.modules:
        # Triton after TensorFlow aborts the process (clzoo.losses.fused.dispatch.require_triton):
        # these modules hold no examples, so there is nothing to run here.
        assert ">>>" not in Path(importlib.util.find_spec(name).origin).read_text()
        return
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name, globs={}):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
