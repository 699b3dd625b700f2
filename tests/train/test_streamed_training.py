"""`clzoo train` on an image folder streamed from its files: chosen by the memory budget and recorded,
the same run as held in memory, and (TensorFlow absent) killed and resumed to the uninterrupted run."""

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
    monkeypatch.setenv("CLZOO_MEMORY_BUDGET", "1000")  # 64 images of 8x8: 12,288 bytes decoded
    streamed = train(_recipe(tmp_path), tmp_path / "streamed", verbose=0)
    environment = json.loads((tmp_path / "streamed" / "environment.json").read_text())
    assert environment["data_loading"] == "stream"
    assert environment["data_loading_why"].startswith("auto: 0.00 GiB decoded exceeds the budget")
    assert "CLZOO_MEMORY_BUDGET=1000" in environment["data_loading_why"]
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
