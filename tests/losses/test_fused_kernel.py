"""The fused Triton kernel (`clzoo.losses.fused`): dispatch in every lane, exactness in the interpreter.

Anything that loads Triton runs in its own process (`fused_check.py`): under `TRITON_INTERPRET=1`
on the CPU, and before TensorFlow: a process that loads Triton after TensorFlow aborts (their LLVMs
collide), and torch >= 2.13 loads Triton on `import torch` wherever it is installed.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

import clzoo.losses as L

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
COVERED = [L.SupConLoss, L.SINCERELoss, L.SupInfoNCELoss, L.InfoNCELoss]
FAMILIES = ["supcon_out", "supcon_out_base", "supcon_in", "sincere", "sup_info_nce", "info_nce"]


def _run(args, env_extra=None):
    env = {**os.environ, "KERAS_BACKEND": "torch", **(env_extra or {})}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.parametrize("cls", COVERED)
def test_kernel_argument_is_checked_and_kept_in_the_config(cls):
    with pytest.raises(ValueError, match=r"`kernel` must be one of .*Received: kernel='gpu'"):
        cls(kernel="gpu")
    loss = cls(kernel="xla")
    assert loss.get_config()["kernel"] == "xla"
    assert cls.from_config(loss.get_config()).kernel == "xla"
    assert cls().kernel == "auto"


def test_losses_without_a_fused_kernel_take_no_kernel_argument():
    assert "kernel" not in L.DCLLoss().get_config()
    with pytest.raises(TypeError, match="kernel"):
        L.DCLLoss(kernel="fused")


def test_fused_where_it_cannot_run_is_one_clear_error():
    z = np.random.default_rng(0).normal(size=(4, 2, 8)).astype("float32")
    y = np.array([0, 0, 1, 1])
    # On the CPU without the interpreter, on TensorFlow / JAX, or without Triton: each says why.
    with pytest.raises(ValueError, match=r"kernel='fused' cannot run here: .*Received: kernel='fused'"):
        L.SINCERELoss(kernel="fused")(y, z)
    with pytest.raises(ValueError, match="cannot run here: max_positives is set"):
        L.SupConLoss(kernel="fused", max_positives=1)(y, z)
    with pytest.raises(ValueError, match="cannot run here: label_similarity is set"):
        L.SINCERELoss(kernel="fused", label_similarity="cosine")(np.eye(4)[[0, 0, 1, 1]], z)


def test_auto_off_a_gpu_is_the_keras_ops_path():
    z = np.random.default_rng(1).normal(size=(6, 2, 8)).astype("float32")
    y = np.array([0, 0, 1, 1, 2, 3])
    for cls in COVERED:
        auto = keras.ops.convert_to_numpy(cls(kernel="auto")(y, z))
        xla = keras.ops.convert_to_numpy(cls(kernel="xla")(y, z))
        assert auto == xla


@pytest.mark.backends("torch")
@pytest.mark.parametrize("family", FAMILIES)
def test_fused_kernel_matches_the_float64_references_in_the_triton_interpreter(family):
    result = _run(["tests/losses/fused_check.py", "--device", "cpu", "--family", family])
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    # five mask cases (InfoNCE: three, it refuses one view), many tiles, learnable temperature
    assert len(lines) == (5 if family == "info_nce" else 7)
    assert all(line["ok"] for line in lines)


@pytest.mark.backends("torch")
def test_the_kernel_refuses_what_it_cannot_take():
    result = _run(["tests/losses/fused_check.py", "--refusals"])
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.count("refused:") == 6

