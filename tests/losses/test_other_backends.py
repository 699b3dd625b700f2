"""Run the loss tests under every Keras backend, from one pytest command.

The backend is fixed per process, so the modules of this folder are
re-run in a subprocess for each backend other than the current one.
"""

import os
import subprocess
import sys
from pathlib import Path

import keras
import pytest

HERE = Path(__file__).parent
BACKENDS = ("tensorflow", "jax", "torch")


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != keras.backend.backend()])
def test_loss_suite_on_backend(backend):
    pytest.importorskip({"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}[backend])
    env = dict(os.environ, KERAS_BACKEND=backend)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         str(HERE), f"--ignore={Path(__file__)}",
         # Distribution checks pick their own backend in their own processes.
         f"--ignore={HERE / 'test_distributed.py'}"],
        cwd=HERE.parent.parent, env=env, capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, (
        f"loss tests failed on the {backend} backend:\n{result.stdout[-6000:]}\n{result.stderr[-3000:]}"
    )
    assert "passed" in result.stdout
