"""Re-run pytest targets in a subprocess under another Keras backend (the backend is fixed per process)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
BACKENDS = ("tensorflow", "jax", "torch")


def run_on_backend(backend, targets, what):
    """Run `targets` (pytest args) with `KERAS_BACKEND=backend`; fail with the tail of the output."""
    pytest.importorskip({"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}[backend])
    env = dict(os.environ, KERAS_BACKEND=backend)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *map(str, targets)],
        cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, (
        f"{what} failed on the {backend} backend:\n{result.stdout[-6000:]}\n{result.stderr[-3000:]}"
    )
    assert "passed" in result.stdout
