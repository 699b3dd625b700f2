"""The fused kernels (`clzoo.losses.fused`): dispatch in every lane; Triton (torch lane) and Pallas
(jax lane) against the float64 references in their interpreters.

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
from tests.losses.autodiff import numeric_gradient, value_and_grad
from tests.losses.fused_cases import FAMILIES as CASES
from tests.losses.fused_cases import MASK_CASES, T

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
COVERED = [L.SupConLoss, L.SINCERELoss, L.SupInfoNCELoss, L.InfoNCELoss]
FAMILIES = list(CASES)


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


def test_fused_where_it_cannot_run_is_one_clear_error(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("CLZOO_PALLAS_INTERPRET", raising=False)
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
    # five mask cases (InfoNCE: three, it refuses one view), many tiles, learnable temperature;
    # SINCERE also without normalization at D = 100
    assert len(lines) == {"info_nce": 5, "sincere": 8}.get(family, 7)
    assert all(line["ok"] for line in lines)


@pytest.mark.backends("torch")
def test_auto_takes_the_kernel_on_a_measured_gpu_only_and_says_why_not_elsewhere():
    result = _run(["tests/losses/fused_check.py", "--auto"], {"TRITON_INTERPRET": "1"})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert (report["measured_gpu_calls"], report["unmeasured_gpu_calls"]) == (1, 0)
    assert report["warnings"] == ["kernel='auto' keeps the keras.ops path on this CUDA device: "
                                  "its tiles were measured on (9, 0), not (8, 6)"]


@pytest.mark.backends("torch")
def test_the_kernel_refuses_what_it_cannot_take():
    result = _run(["tests/losses/fused_check.py", "--refusals"])
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.count("refused:") == 8  # 6 arguments, bfloat16 on the CPU, second derivatives



@pytest.mark.backends("jax")
@pytest.mark.parametrize("case", MASK_CASES, ids=[case[0] for case in MASK_CASES])
@pytest.mark.parametrize("family", FAMILIES)
def test_pallas_kernel_matches_the_float64_references_in_interpret_mode(family, case, monkeypatch):
    monkeypatch.setenv("CLZOO_PALLAS_INTERPRET", "1")
    function, _, options, reference = CASES[family]
    name, labels, views = case
    if family == "info_nce" and views < 2:
        pytest.skip("InfoNCE refuses one view (its positives are the other views)")
    labels = np.array(labels)
    rng = np.random.default_rng(0)
    z = rng.normal(size=(len(labels), views, 5))
    weights = rng.uniform(0.2, 2.0, size=len(labels))
    value, grad = value_and_grad(lambda x: keras.ops.sum(
        weights * function(labels, x, temperature=T, kernel="fused", **options)), z)
    expected = float(np.sum(weights * reference(labels, z)))
    expected_grad = numeric_gradient(lambda x: float(np.sum(weights * reference(labels, x))), z)
    np.testing.assert_allclose(value, expected, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(grad, expected_grad, atol=1e-4)


@pytest.mark.backends("jax")
@pytest.mark.parametrize("family", ["supcon_out", "supcon_in", "sincere", "sup_info_nce", "info_nce"])
def test_pallas_kernel_over_many_tiles_and_its_temperature_gradient(family, monkeypatch):
    """180 embeddings in 7 classes (3 x 3 tiles of 64): the value, the embedding gradient and
    the gradient of the temperature (learnable temperature) equal the keras.ops path's."""
    import jax

    monkeypatch.setenv("CLZOO_PALLAS_INTERPRET", "1")
    function, _, options, _ = CASES[family]
    rng = np.random.default_rng(1)
    z = rng.normal(size=(90, 2, 16)).astype("float32")
    labels = rng.integers(0, 7, size=90)
    found = {}
    for kernel in ("fused", "xla"):
        def total(x, temperature, kernel=kernel):
            return keras.ops.sum(function(labels, x, temperature=temperature, kernel=kernel, **options))
        found[kernel] = jax.jit(jax.value_and_grad(total, argnums=(0, 1)))(z, 0.1)
    value, (grad, temperature_grad) = found["fused"]
    np.testing.assert_allclose(value, found["xla"][0], rtol=1e-5)
    np.testing.assert_allclose(grad, found["xla"][1][0], atol=1e-5)
    np.testing.assert_allclose(temperature_grad, found["xla"][1][1], rtol=1e-4)


@pytest.mark.backends("tensorflow")
def test_the_triton_modules_refuse_to_load_after_tensorflow_instead_of_aborting():
    import importlib
    import sys

    import tensorflow  # noqa: F401  (the tensorflow lane has loaded it already)

    if "triton" in sys.modules:
        pytest.skip("Triton was loaded before TensorFlow in this process")
    for name in ("clzoo.losses.fused.function", "clzoo.losses.fused.triton_kernels"):
        sys.modules.pop(name, None)
        with pytest.raises(ImportError, match="import clzoo, torch or triton before tensorflow"):
            importlib.import_module(name)


@pytest.mark.backends("jax")
def test_pallas_kernel_keeps_int64_labels_apart_under_x64():
    """Issue 58 item 6: with jax_enable_x64 the kernel cast int64 ids to int32, merging 0 and 2^32
    (5.77 against 6.68); dense ranks keep them apart, as torch.unique does for Triton."""
    code = ("import numpy as np, clzoo\n"
            "z = np.random.default_rng(0).normal(size=(4, 2, 8)).astype('float32')\n"
            "y = np.array([0, 2**32, 1, 1], np.int64)\n"
            "print(*[float(clzoo.losses.SupConLoss(kernel=k)(y, z)) for k in ('xla', 'fused')])\n")
    env = dict(os.environ, JAX_ENABLE_X64="1", CLZOO_PALLAS_INTERPRET="1", KERAS_BACKEND="jax")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    xla, fused = map(float, out.stdout.split()[-2:])
    assert abs(xla - fused) < 1e-5


@pytest.mark.backends("tensorflow", "jax", "torch")
def test_a_fused_call_takes_its_implementation_from_the_one_table(monkeypatch):
    """`dispatch.IMPLEMENTATIONS` is the only place a fused call is looked up: a stand-in for this
    backend's entry is what `kernel="fused"` computes with, and its refusal is what blocks it."""
    import types

    from clzoo.losses.fused import dispatch

    calls = []

    def anchor_loss(z, labels, inverse_temperature, mode, epsilon=0.0):
        calls.append((tuple(z.shape), float(inverse_temperature), mode))
        return keras.ops.full((z.shape[0],), 2.0), keras.ops.ones((z.shape[0],), "bool")

    monkeypatch.setitem(sys.modules, "stand_in_fused", types.ModuleType("stand_in_fused"))
    sys.modules["stand_in_fused"].anchor_loss = anchor_loss
    refusal = {"reason": None}
    stand_in = dispatch.Implementation(keras.backend.backend(), "stand_in_fused", lambda z: refusal["reason"])
    monkeypatch.setattr(dispatch, "IMPLEMENTATIONS", {"stand_in": stand_in})
    z = np.random.default_rng(0).normal(size=(6, 2, 8)).astype("float32")
    y = np.array([0, 0, 1, 1, 2, 3])
    value = float(L.SupConLoss(kernel="fused", temperature=0.5)(y, z))
    assert value == pytest.approx(2.0) and calls == [((12, 8), 2.0, "supcon_out")]
    refusal["reason"] = "the stand-in refuses"
    with pytest.raises(ValueError, match="the stand-in refuses"):
        L.SupConLoss(kernel="fused")(y, z)
    monkeypatch.setattr(dispatch, "IMPLEMENTATIONS", {})
    with pytest.raises(ValueError, match=f"the {keras.backend.backend()} backend keeps the keras.ops path"):
        L.SupConLoss(kernel="fused")(y, z)


@pytest.mark.backends("torch")
def test_triton_is_loaded_when_a_call_takes_it_not_at_import(tmp_path):
    """A Triton that cannot even be imported (here a stand-in that raises) is never touched by
    importing the losses or by a call that keeps the keras.ops path (stop 62 loaded it at import)."""
    (tmp_path / "triton").mkdir()
    (tmp_path / "triton" / "__init__.py").write_text("raise ImportError('stand-in Triton imported')\n")
    code = ("import sys, numpy as np, clzoo.losses as L\n"
            "z = np.random.default_rng(0).normal(size=(6, 2, 8)).astype('float32')\n"
            "print(float(L.SupConLoss()(np.array([0, 0, 1, 1, 2, 3]), z)), 'triton' in sys.modules)\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}", KERAS_BACKEND="torch")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "False"
