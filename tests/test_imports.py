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
def test_import_clzoo_loads_no_framework(backend):
    pytest.importorskip(backend)
    assert _loaded_after("import clzoo; clzoo.__version__", backend) == []


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
