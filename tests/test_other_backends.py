"""Run the model, preset round-trip and view / soft-target tests under every other Keras backend.

The backend is fixed per process, so they are re-run in a subprocess per
backend (the loss suite has its own runner in `tests/losses/test_other_backends.py`).
The other data tests exercise only TensorFlow ops and run once.
"""

import os
import subprocess
import sys
from pathlib import Path

import keras
import pytest

TESTS = Path(__file__).parent
BACKENDS = ("tensorflow", "jax", "torch")


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != keras.backend.backend()])
def test_data_and_model_suites_on_backend(backend):
    pytest.importorskip({"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}[backend])
    env = dict(os.environ, KERAS_BACKEND=backend)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         str(TESTS / "models"), str(TESTS / "data" / "test_view_recipes.py"),
         str(TESTS / "data" / "test_soft_targets.py"), str(TESTS / "data" / "test_views.py"),
         str(TESTS / "presets" / "test_presets.py") + "::test_round_trip_gives_identical_embeddings",
         str(TESTS / "presets" / "test_presets.py") + "::test_builtin_preset_loads_offline_and_matches_its_registry"],
        cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, (
        f"data/model tests failed on the {backend} backend:\n{result.stdout[-6000:]}\n{result.stderr[-3000:]}"
    )
    assert "passed" in result.stdout
