"""`clzoo train` on the device stream (`training.pipeline: device`) where TensorFlow is not installed:
the digits recipe to its kNN report, and kill -9 + --resume ending with an uninterrupted run's weights."""

import json
import subprocess
import sys
from pathlib import Path

import keras
import pytest

from tests.train.test_resume import kill_9_then_resume, tiny_recipe
from tests.train.tiny_data import write_tiny_digits

pytestmark = pytest.mark.backends("jax", "torch")
NO_TENSORFLOW = [sys.executable, str(Path(__file__).resolve().parents[1] / "no_tensorflow.py")]


@pytest.mark.large
def test_the_digits_recipe_trains_and_reports_without_tensorflow(tmp_path):
    recipe = Path(__file__).resolve().parents[2] / "recipes" / "sincere_digits.yaml"
    command = [*NO_TENSORFLOW, "train", str(recipe), "--output", str(tmp_path / "run"),
               "--set", "training.epochs=1", "--set", "model.architecture=resnet8",
               "--set", "eval.baselines=[raw_pixels]"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert f"({keras.backend.backend()}, one_device x1, device stream)" in result.stdout
    assert "| float32 | parts: none" in result.stdout  # the banner names precision and parts
    assert "no tensorboard/ logs" in result.stdout
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["pipeline"] == "device" and metrics["backend"] == keras.backend.backend()
    assert "tensorflow" not in metrics["versions"]
    assert 0.3 < metrics["knn_top1"] <= 1.0  # ten classes: chance is 0.1
    assert (tmp_path / "run" / "eval" / "report.md").is_file()


@pytest.mark.large
def test_kill_9_then_resume_on_the_device_stream_without_tensorflow(tmp_path):
    recipe = tiny_recipe(write_tiny_digits(tmp_path / "data"))
    recipe["training"]["pipeline"] = "device"
    # The reference trains in this process, whose JAX programs compile with the tests' fast XLA
    # flags (tests/xla_flags.py) while the killed runs compile with XLA's own: last-bit
    # differences over 15 steps, 1.2e-5 seen. The batches themselves are exact (tests/data).
    atol = 1e-4 if keras.backend.backend() == "jax" else 1e-5
    kill_9_then_resume(tmp_path, recipe, NO_TENSORFLOW, atol=atol)


def test_a_resumed_run_keeps_the_stream_it_started_on(tmp_path, capsys):
    from clzoo.train import load_recipe
    from clzoo.train.run_folder import RunFolder
    from clzoo.train.runner import _kept_pipeline, _recorded_environment

    recipe, run = load_recipe(None, ["data=digits"]), RunFolder(tmp_path)
    (tmp_path / "environment.json").write_text(json.dumps({"pipeline": "tf_data"}))
    kept = _kept_pipeline(run, _recorded_environment(run), recipe, None, "device", verbose=1)
    assert kept == "tf_data"  # started on TF
    assert "resuming on the tf_data stream the run started on" in capsys.readouterr().out
    (tmp_path / "environment.json").write_text(json.dumps({"pipeline": "device"}))
    assert _kept_pipeline(run, _recorded_environment(run), recipe, None, "device", verbose=1) == "device"
    chosen = load_recipe(None, ["data=digits", "training.pipeline=tf_data"])  # asked for by name
    assert _kept_pipeline(run, {"pipeline": "device"}, chosen, None, "tf_data", verbose=0) == "tf_data"
    (tmp_path / "environment.json").write_text("[1, 2]")  # not a record: the stream chosen now
    assert _kept_pipeline(run, _recorded_environment(run), recipe, None, "device", verbose=0) == "device"


def test_a_run_started_on_the_device_stream_is_not_resumed_over_several_processes(tmp_path):
    from clzoo.train import RecipeError, load_recipe
    from clzoo.train.distribute import Placement
    from clzoo.train.run_folder import RunFolder
    from clzoo.train.runner import _kept_pipeline

    (tmp_path / "environment.json").write_text(json.dumps({"pipeline": "device"}))
    place = Placement("data_parallel", replicas=4, processes=2)  # auto picks tf_data there
    with pytest.raises(RecipeError, match="started on the device stream.*data_parallel"):
        _kept_pipeline(RunFolder(tmp_path), {"pipeline": "device"}, load_recipe(None, ["data=digits"]),
                       place, "tf_data", 0)


def test_show_views_without_tensorflow_draws_the_device_streams_views(tmp_path):
    """Issue 69 item 9: `clzoo show-views` without TensorFlow said only "No module named 'tensorflow'"."""
    out = tmp_path / "views.png"
    result = subprocess.run([*NO_TENSORFLOW, "show-views", "--data", "digits", "--images", "2",
                             "--views", "2", "--output", str(out)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    refused = subprocess.run([*NO_TENSORFLOW, "show-views", "--data", "digits", "--stream", "tf_data",
                              "--output", str(tmp_path / "other.png")], capture_output=True, text=True,
                             timeout=300)
    assert refused.returncode == 2 and "--stream device" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not (tmp_path / "other.png").exists()


def test_a_command_on_the_default_backend_without_tensorflow_says_how_to_fix_it(tmp_path):
    """Keras' default backend is tensorflow: a `[jax]` install without KERAS_BACKEND set got only
    "No module named 'tensorflow'"."""
    import os

    result = subprocess.run([*NO_TENSORFLOW, "show-views", "--data", "digits", "--output",
                             str(tmp_path / "v.png")], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "KERAS_BACKEND": "tensorflow"})
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "pip install 'clzoo[tensorflow]'" in result.stderr and "KERAS_BACKEND" in result.stderr
