"""Every module of this folder runs in every backend lane (see `tests/conftest.py`), so a new
loss test file is covered on TensorFlow, JAX and PyTorch by being placed here.

`test_distributed.py` is the exception: its checks pick their own backend in their own
processes, so it stays on the tensorflow lane. A test's own `backends` marker wins over this rule.
"""

import zlib
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
ONE_LANE = {"test_distributed.py"}


def pytest_collection_modifyitems(items):
    for item in items:
        path = Path(item.path).resolve()
        if HERE in path.parents and path.name not in ONE_LANE and not item.get_closest_marker("backends"):
            item.add_marker(pytest.mark.backends("tensorflow", "jax", "torch"))


@pytest.fixture(autouse=True)
def _order_free_data(request):
    """Give each test its own seed for its module's `RNG`.

    A module-wide generator hands a test whichever numbers the tests xdist ran before it on
    the same worker left over, so a tolerance could pass here and fail on another schedule.
    """
    if isinstance(getattr(request.module, "RNG", None), np.random.Generator):
        request.module.RNG = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
