"""Run the metric tests under every other Keras backend, from one pytest command."""

from pathlib import Path

import keras
import pytest

from tests.backend_runner import BACKENDS, run_on_backend

HERE = Path(__file__).parent


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != keras.backend.backend()])
def test_metric_suite_on_backend(backend):
    run_on_backend(backend, [HERE / "test_diagnostics.py"], "metric tests")
