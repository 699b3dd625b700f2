"""`clzoo train` on an image folder streamed from its files: chosen by the memory budget and recorded,
the same run as held in memory, and (TensorFlow absent) killed and resumed to the uninterrupted run;
a resumed checkpoint compiles as a new run on the backend that resumes it (every lane)."""

import json
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from clzoo.train import train, validate_recipe
from tests.train.test_resume import kill_9_then_resume, tiny_recipe
from tests.train.tiny_data import write_tiny_digits

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")
NO_TENSORFLOW = [sys.executable, str(Path(__file__).resolve().parents[1] / "no_tensorflow.py")]


def _recipe(tmp_path):
    data = tmp_path / "data"
    recipe = tiny_recipe(str(data) if data.is_dir() else write_tiny_digits(data, train=64, test=16))
    recipe["training"].update(epochs=1, checkpoint_every_steps=None)
    recipe["eval"]["baselines"] = ["raw_pixels"]
    return validate_recipe(recipe)


def test_a_budget_below_the_split_streams_it_and_the_run_equals_the_one_held_in_memory(
        tmp_path, monkeypatch):
    monkeypatch.setenv("CLZOO_MEMORY_BUDGET", "1KB")  # 64 images of 8x8: 12,288 bytes decoded
    streamed = train(_recipe(tmp_path), tmp_path / "streamed", verbose=0)
    environment = json.loads((tmp_path / "streamed" / "environment.json").read_text())
    assert environment["data_loading"] == "stream"
    assert environment["data_loading_why"].startswith("auto: 12.0 KiB decoded exceeds the budget 1000 B")
    assert "CLZOO_MEMORY_BUDGET=1KB" in environment["data_loading_why"]
    monkeypatch.setenv("CLZOO_MEMORY_BUDGET", "1MB")
    held = train(_recipe(tmp_path), tmp_path / "held", verbose=0)
    assert json.loads((tmp_path / "held" / "metrics.json").read_text())["data_loading"] == "memory"
    np.testing.assert_allclose(streamed.final_loss, held.final_loss, rtol=1e-6)
    assert streamed.knn == held.knn and streamed.baselines == held.baselines


@pytest.mark.large
@pytest.mark.backends("jax", "torch")
def test_kill_9_then_resume_streaming_from_files_without_tensorflow(tmp_path):
    recipe = tiny_recipe(write_tiny_digits(tmp_path / "data"))
    recipe["data_loading"], recipe["training"]["pipeline"] = "stream", "device"
    atol = 1e-4 if keras.backend.backend() == "jax" else 1e-5  # as test_device_stream_training
    kill_9_then_resume(tmp_path, recipe, NO_TENSORFLOW, atol=atol)
    environment = json.loads((tmp_path / "run" / "environment.json").read_text())
    assert environment["data_loading"] == "stream" and "tensorflow" not in environment["versions"]


def _imagenet_shaped(root, classes=100, per_class=2):
    """JPEGs of 256-500 px in `classes` classes, a few each: ImageNet's shape, not its size."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for split, count in (("train", per_class), ("test", 1)):
        for c in range(classes):
            folder = root / split / f"n{c:08d}"
            folder.mkdir(parents=True)
            for i in range(count):
                height, width = rng.integers(256, 501, 2)
                coarse = rng.integers(0, 256, (height // 32 + 1, width // 32 + 1, 3), dtype=np.uint8)
                Image.fromarray(coarse).resize((int(width), int(height))).save(folder / f"{i}.JPEG")
    return root


@pytest.mark.large
@pytest.mark.backends("tensorflow")
def test_the_imagenet_recipe_streams_an_imagenet_shaped_folder_at_224_px_to_its_report(tmp_path):
    import os
    import subprocess

    recipe = Path(__file__).resolve().parents[2] / "recipes" / "soft_target" / "imagenet_infonce.yaml"
    data = _imagenet_shaped(tmp_path / "imagenet")
    shrink = ["model.encoder={name: hub_resnet18}", "model.classifier_hidden_dims=[64]",
              "training.batch_size=16", "training.epochs=1", "training.schedule.warmup_epochs=0",
              "training.checkpoint_every_steps=null", "eval.metrics=[knn]", "eval.baselines=[]"]
    command = [sys.executable, "-c", "import resource, sys, runpy; sys.argv = sys.argv[1:]; "
               "from clzoo.cli import main; code = main(sys.argv[1:]); "
               "print('peak_rss_kib', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss); sys.exit(code)",
               "clzoo", "train", str(recipe), "--data", str(data), "--output", str(tmp_path / "run"),
               *[arg for key in shrink for arg in ("--set", key)]]
    env = {**os.environ, "CLZOO_MEMORY_BUDGET": "10MB", "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "data: streamed from its files (auto: 37.5 MiB decoded exceeds the budget" in result.stdout
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["data_loading"] == "stream" and metrics["train_images"] == 200
    assert metrics["views_per_second"] > 0 and 0 <= metrics["classifier_top1"] <= 1
    assert (tmp_path / "run" / "eval" / "report.md").is_file()
    peak = int(result.stdout.split("peak_rss_kib")[1].split()[0]) * 1024
    # 9.3 GiB before evaluation batches were capped, 4.7 after
    assert peak < 7 * 2**30, f"peak RSS {peak / 2**30:.1f} GiB"


def test_a_resumed_checkpoint_compiles_as_a_new_run_on_this_backend():
    from clzoo.train.runner import compile_as_new

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", jit_compile=True)  # as a JAX run saves it
    fresh = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    fresh.compile(optimizer="sgd", loss="mse")  # "auto" on this backend
    compile_as_new(model)
    assert model.jit_compile == fresh.jit_compile
    assert model.jit_compile is (keras.backend.backend() == "jax")  # torch: eager; TF on a CPU: no XLA


def test_a_resume_may_switch_where_the_images_live(tmp_path):
    from clzoo.train.run_folder import RunFolder

    recipe = _recipe(tmp_path)
    run = RunFolder(tmp_path / "run")
    run.prepare(recipe, {}, resuming=False)
    run._check_saved_recipe(recipe.model_copy(update={"data_loading": "stream"}))  # the same batches
    with pytest.raises(ValueError, match=r"started with in \['seed'\]"):
        run._check_saved_recipe(recipe.model_copy(update={"seed": 1}))
