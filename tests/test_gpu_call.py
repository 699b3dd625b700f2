"""Issue 71 items 2-3: the one prepared GPU call (`benchmarks/gpu/`) cannot rot.

The large tier dry-runs `pack.sh` + `run.sh --dry` on the CPU (a subset of CIFAR-10, Triton's and
Pallas' interpreters, TensorFlow hidden, one epoch, N = 256) and checks that every step wrote
its result; the default tier checks the carried wheels and pack.sh's refusals.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "cifar10"


def _module(name):
    """benchmarks/gpu/<name>.py, imported under a name of its own (`gpu_<name>`)."""
    spec = importlib.util.spec_from_file_location(f"gpu_{name}", ROOT / "benchmarks" / "gpu" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


steps, wheels = _module("steps"), _module("wheels")
PACK = ["bash", "benchmarks/gpu/pack.sh", "--no-wheels", "--dest"]


def test_the_carried_wheels_are_what_clzoo_needs_beyond_the_gpu_image():
    from importlib import metadata

    needed = wheels.missing()
    assert {"keras", "pydantic", "pydantic-core", "namex", "optree", "typing-extensions"} <= set(needed)
    assert needed["keras"] == metadata.version("keras")  # pinned to what is tested here
    present = wheels.device_packages()
    assert not set(needed) & present and {"numpy", "torch", "jax", "scikit-learn"} <= present
    # with nothing on the image, the walk reaches keras' and clzoo's own needs
    assert {"numpy", "h5py", "ml-dtypes", "scikit-learn", "pillow"} <= set(wheels.missing(present=set()))


def test_a_requirement_not_installed_here_is_named(monkeypatch):
    monkeypatch.setattr(wheels, "requirements", lambda name: ["no-such-dist"] if name == "clzoo" else [])
    with pytest.raises(LookupError, match="no-such-dist .needed by clzoo. is not installed here"):
        wheels.missing(present=set())


def test_the_gpu_runs_train_the_recipe_as_given():
    """Each training step's arguments on the GPU (not the dry run's) make a recipe that validates:
    a shortened run keeps its warm-up inside the run (5.52 warm-up epochs refused 3 epochs)."""
    from clzoo.train import load_recipe

    runs = [step for step in steps.step_table(_Args(ROOT, dry=False)) if "train" in step.command]
    assert [step.name for step in runs] == ["airbench_jax_float32", "airbench_jax_mixed_bfloat16",
                                            "airbench_torch"]
    for step in runs:
        args = step.command[step.command.index(steps.RECIPE) + 1:]
        overrides = [args[i + 1] for i, arg in enumerate(args) if arg == "--set"]
        if "--epochs" in args:
            overrides.append(f"training.epochs={args[args.index('--epochs') + 1]}")
        recipe = load_recipe(ROOT / steps.RECIPE, overrides)
        assert recipe.training.schedule.setting("warmup_epochs") < recipe.training.epochs, step.name
    assert "training.precision=mixed_bfloat16" in runs[1].command


@pytest.mark.backends("jax")
def test_the_jax_floor_keeps_its_three_products():
    """XLA merges two identical products: the floor's second G Z multiplies a copy of Z."""
    import jax
    import jax.numpy as jnp

    path = ROOT / "benchmarks" / "pallas_kernel.py"
    spec = importlib.util.spec_from_file_location("bench_pallas_kernel", path)
    pallas_kernel = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pallas_kernel)
    z = jnp.ones((96, 16))
    compiled = jax.jit(pallas_kernel.floor_fn(96)).lower(z, jnp.array(z, copy=True)).compile()
    assert compiled.as_text().count(" dot(") == 3


@pytest.mark.parametrize("args, says", [
    (["--subset", "two"], "--subset takes a whole number"),
    (["--data", "/nonexistent"], "has no train/ folder"),
    (["--frobnicate"], "unknown argument '--frobnicate'"),
])
def test_pack_refuses_bad_arguments_in_one_line(args, says, tmp_path):
    out = subprocess.run([*PACK, str(tmp_path / "p"), *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and says in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "p").exists()


@pytest.mark.large
@pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data/cifar10")
def test_the_gpu_call_dry_runs_every_step_on_the_cpu(tmp_path):
    pack, out = tmp_path / "pack", tmp_path / "out"
    packed = subprocess.run([*PACK, str(pack), "--subset", "8"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert packed.returncode == 0, packed.stderr
    assert "160 images packed" in packed.stdout and "of the 64 MiB" in packed.stdout
    # the GPU's Python 3.12 wheels: a dry run here leaves them alone
    (pack / "wheels" / "optree-0.20.0-cp312-cp312-manylinux_2_17_x86_64.whl").write_bytes(b"")
    env = {**os.environ, "CLZOO_GPU_PACK": str(pack), "OUT": str(out), "PYTHON": sys.executable,
           "TMPDIR": str(tmp_path)}
    run = subprocess.run(["bash", "benchmarks/gpu/run.sh", "--dry"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=1800)
    assert run.returncode == 0, run.stderr[-3000:]
    results = {r["step"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    names = [step[0] for step in steps.step_table(_Args(pack))]
    log = (out / "log.txt").read_text()
    assert list(results) == names + ["collect"], results
    failed = {name: results[name] for name in names if not results[name]["ok"]}
    assert not failed, (failed, log[-4000:])
    _assert_each_step_measured(results)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["results.jsonl", "log.txt", "fused_triton.json", "fused_pallas.json", "runs.tar.gz",
         "encoder-jax-float32.keras", "encoder-jax-mixed_bfloat16.keras", "encoder-torch-float32.keras"])
    report = subprocess.run([sys.executable, "benchmarks/gpu/report.py", str(out / "results.jsonl")],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "| airbench_jax_mixed_bfloat16 | mixed_bfloat16 | 1 |" in report.stdout, report.stderr
    assert report.stdout.count("| 256 | float32 | fused SINCERE |") == 2  # Triton and Pallas
    with tarfile.open(out / "runs.tar.gz") as archive:
        assert "jax-mixed_bfloat16/metrics.json" in archive.getnames()
    assert not any(tmp_path.glob("clzoo-gpu.*")), "run.sh left its scratch folder"


class _Args:
    def __init__(self, folder, dry=True):
        self.dry, self.out, self.work, self.data = dry, folder, folder, folder


def _assert_each_step_measured(results):
    assert results["triton_check"]["cases"] == results["triton_check"]["passed"] > 0
    assert results["pallas_check"]["cases"] == results["pallas_check"]["passed"] >= 25
    for name in ("triton_timing", "pallas_timing"):
        rows = results[name]["rows"]
        assert {r["row"] for r in rows} >= {"floor (3 products)", "fused SupCon L_out", "fused SINCERE"}
        assert all(r["x_floor"] > 0 for r in rows), rows
    runs = {"airbench_jax_float32": "float32", "airbench_jax_mixed_bfloat16": "mixed_bfloat16",
            "airbench_torch": "float32"}
    for name, precision in runs.items():
        run = results[name]
        assert run["precision"] == precision and run["epochs"] == 1 and 0 <= run["knn_top1"] <= 1
        assert run["images_per_second"] > 0 and run["seconds_per_epoch"] > 0
    assert results["fit_auto_torch"]["first_losses_agree"] and results["fit_auto_jax"]["first_losses_agree"]
    assert results["fit_auto_jax"]["auto_path"].startswith("keras.ops")
    assert any(r["stream"] == "device" for r in results["file_stream"]["rows"])
    assert "jax" in results["environment"]
