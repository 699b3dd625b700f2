"""`import clzoo` and `import clzoo.losses` stay light: no TensorFlow under the JAX and torch backends."""

import ast
import os
import subprocess
import sys

import pytest

HEAVY = ("tensorflow", "sklearn")


def _loaded_after(statement, backend, prelude=""):
    """Which of HEAVY (and keras) are in `sys.modules` after `statement`, in a fresh process."""
    code = (f"import sys\n{prelude}\n{statement}\n"
            f"print(sorted(m for m in {HEAVY + ('keras',)!r} if m in sys.modules))")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**env, "KERAS_BACKEND": backend}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return ast.literal_eval(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_import_clzoo_loads_no_tensorflow(backend):
    pytest.importorskip(backend)
    loaded = _loaded_after("import clzoo; clzoo.__version__", backend)
    assert "tensorflow" not in loaded and "keras" in loaded  # keras: the registrations


def test_import_clzoo_is_enough_to_load_a_full_checkpoint(tmp_path):
    path = tmp_path / "model.keras"
    save = ("import clzoo, sys\n"
            "m = clzoo.models.ContrastiveModel(clzoo.models.get_encoder('resnet20', input_shape=(8, 8, 3)),"
            " clzoo.models.ProjectionHead((64,), 4))\n"
            "m.compile(optimizer=clzoo.optimizers.LARS(0.1), loss=clzoo.losses.SINCERELoss())\n"
            "m.build((None, 2, 8, 8, 3)); m.save(sys.argv[1])")
    load = ("import clzoo, keras, sys\n"
            "m = keras.saving.load_model(sys.argv[1])\n"
            "print(type(m).__name__, type(m.loss).__name__, type(m.optimizer).__name__)")
    for code in (save, load):
        result = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                                text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-3:] == ["ContrastiveModel", "SINCERELoss", "LARS"]


def test_a_script_given_the_arguments_m_clzoo_still_registers_the_keras_classes():
    # Only `python -m clzoo` itself skips the registrations, not `-m clzoo` among a script's arguments.
    code = "import sys, clzoo; print('clzoo.losses' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code, "-m", "clzoo"], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-1] == "True"


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_import_clzoo_losses_loads_no_tensorflow_or_sklearn(backend):
    pytest.importorskip(backend)
    loaded = _loaded_after("import clzoo.losses", backend)
    assert "tensorflow" not in loaded and "keras" in loaded
    # Keras itself imports scikit-learn when it is installed (keras.wrappers); clzoo.losses
    # adds nothing to that, and works without it.
    assert set(loaded) <= set(_loaded_after("import keras", backend))
    blocked = _loaded_after(
        "import clzoo.losses, numpy as np\n"
        "clzoo.losses.SINCERELoss()(np.array([0, 1]), np.eye(2, 4, dtype='float32')[:, None])",
        backend, prelude="sys.modules['sklearn'] = None  # import sklearn raises ImportError")
    assert "tensorflow" not in blocked
