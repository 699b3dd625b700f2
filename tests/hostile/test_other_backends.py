"""Run the hostile loss cases under every other Keras backend, from one pytest command.

The preset cases do not depend on the backend and run once.
"""

from pathlib import Path

import keras
import pytest

from tests.backend_runner import BACKENDS, run_on_backend

HERE = Path(__file__).parent
LOSS_MODULES = [HERE / "test_hostile_labels.py", HERE / "test_hostile_embeddings.py",
                HERE / "test_hostile_soft_targets.py", HERE / "test_hostile_inputs_23.py"]


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != keras.backend.backend()])
def test_hostile_loss_cases_on_backend(backend):
    run_on_backend(backend, LOSS_MODULES, "hostile loss cases")
