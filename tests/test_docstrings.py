"""Every `>>>` example in clzoo's public docstrings runs and prints what it says."""

import doctest
import importlib
import pkgutil

import pytest

import clzoo

MODULES = sorted(
    name for _, name, _ in pkgutil.walk_packages(clzoo.__path__, "clzoo.")
    if name != "clzoo.cli"
)


@pytest.mark.large
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name, globs={}):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
