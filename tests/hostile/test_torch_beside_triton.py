"""The torch backend's commands where TensorFlow and Triton are both installed (issue 58 item 1).

TensorFlow's LLVM and Triton's collide: a process that loads TensorFlow and then Triton aborts
(status 134, no output). The tests import torch first, so only the console script, started as a
user starts it, shows whether clzoo's own import order is safe.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.train.tiny_data import write_tiny_digits

CLZOO = str(Path(sys.executable).with_name("clzoo"))  # the installed console script
RECIPE = Path(__file__).parents[2] / "recipes" / "sincere_digits.yaml"
pytestmark = [
    pytest.mark.large,
    pytest.mark.backends("tensorflow"),  # its processes pick the torch backend: once is enough
    pytest.mark.skipif(importlib.util.find_spec("triton") is None
                       or importlib.util.find_spec("tensorflow") is None
                       or importlib.util.find_spec("torch") is None,
                       reason="needs TensorFlow, torch and Triton installed together"),
]


def _clzoo(*args):
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "CUDA_VISIBLE_DEVICES")}
    env["KERAS_BACKEND"] = "torch"
    return subprocess.run([CLZOO, *map(str, args)], capture_output=True, text=True, env=env, timeout=600)


def _ok(result):
    assert result.returncode == 0, f"rc {result.returncode}: {result.stderr[-3000:]}"


def test_the_torch_backend_commands_run_beside_tensorflow_and_triton(tmp_path):
    data = write_tiny_digits(tmp_path / "data", train=48, test=24)
    for pipeline in ("auto", "tf_data"):  # tf_data loads TensorFlow on the torch path
        run = tmp_path / f"run_{pipeline}"
        _ok(_clzoo("train", RECIPE, "--data", data, "--output", run, "-q", "--set", "training.epochs=1",
                   "--set", "training.batch_size=16", "--set", f"training.pipeline={pipeline}"))
        assert (run / "encoder.keras").is_file()
    # Its checkpoint read under TensorFlow: the torch optimizer class it names is not imported
    # (importing torch there loads Triton and aborted the process).
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    code = ("import sys, tensorflow, keras, clzoo; m = keras.saving.load_model(sys.argv[1]); "
            "print(int(m.optimizer.iterations), 'torch' in sys.modules)")
    read = subprocess.run([sys.executable, "-c", code, str(run / "checkpoint.keras")],
                          capture_output=True, text=True, timeout=600,
                          env=dict(env, KERAS_BACKEND="tensorflow"))
    assert read.returncode == 0 and read.stdout.split() == ["3", "False"], read.stderr[-2000:]
    _ok(_clzoo("eval", run, "--data", data, "--output", tmp_path / "eval"))
    assert (tmp_path / "eval" / "metrics.json").is_file()
    _ok(_clzoo("embed", run, "--data", data, "--output", tmp_path / "e.npz"))
    assert (tmp_path / "e.npz").is_file()
    refused = _clzoo("export", run, "--output", tmp_path / "served")  # refused in one line, not aborted
    assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1].startswith("error: ")
    _ok(_clzoo("transfer", "sincere_airbench_cifar10", "--data", data, "--image-size", 32,
               "--protocol", "lbfgs", "--output", tmp_path / "transfer.json"))
    assert (tmp_path / "transfer.json").is_file()
