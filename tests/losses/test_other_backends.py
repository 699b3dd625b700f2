"""Run the loss tests under every Keras backend, from one pytest command.

The backend is fixed per process, so the modules of this folder are
re-run in a subprocess for each backend other than the current one.
"""

from pathlib import Path

import keras
import pytest

from tests.backend_runner import BACKENDS, run_on_backend

HERE = Path(__file__).parent


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != keras.backend.backend()])
def test_loss_suite_on_backend(backend):
    # Distribution checks pick their own backend in their own processes.
    run_on_backend(backend, [HERE, f"--ignore={Path(__file__)}", f"--ignore={HERE / 'test_distributed.py'}"],
                   "loss tests")
