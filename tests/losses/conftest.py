"""Every module of this folder runs in every backend lane (see `tests/conftest.py`), so a new
loss test file is covered on TensorFlow, JAX and PyTorch by being placed here.

`test_distributed.py` is the exception: its checks pick their own backend in their own
processes, so it stays on the tensorflow lane. A test's own `backends` marker wins over this rule.
"""

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ONE_LANE = {"test_distributed.py"}


def pytest_collection_modifyitems(items):
    for item in items:
        path = Path(item.path).resolve()
        if HERE in path.parents and path.name not in ONE_LANE and not item.get_closest_marker("backends"):
            item.add_marker(pytest.mark.backends("tensorflow", "jax", "torch"))
