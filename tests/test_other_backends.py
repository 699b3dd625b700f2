"""Run the model, preset round-trip, view / soft-target and repeatability tests under every other
Keras backend.

The loss suite has its own runner in `tests/losses/test_other_backends.py`. The
other data tests exercise only TensorFlow ops and run once.
"""

import keras
import pytest

from tests.backend_runner import BACKENDS, TESTS, run_on_backend

PRESETS = TESTS / "presets" / "test_presets.py"


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != keras.backend.backend()])
def test_data_and_model_suites_on_backend(backend):
    run_on_backend(backend, [
        TESTS / "models", TESTS / "data" / "test_view_recipes.py",
        TESTS / "data" / "test_soft_targets.py", TESTS / "data" / "test_views.py",
        f"{PRESETS}::test_round_trip_gives_identical_embeddings",
        f"{PRESETS}::test_builtin_preset_loads_offline_and_matches_its_registry",
        TESTS / "train" / "test_repeatable.py",  # same seed, same weights on every backend
        # Tests that start their own backend subprocesses already cover every backend.
        "-k", "not on_backend and not two_devices",
    ], "data/model/preset/repeatability tests")
