"""SIGTERM / SIGINT stop a run cleanly: a checkpoint at the step reached, a clear line, a resumable run."""

import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from tests.train.test_resume import _steps_logged, tiny_recipe
from tests.train.tiny_data import write_tiny_digits


@pytest.mark.large
@pytest.mark.parametrize("which", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_checkpoints_and_the_run_resumes(tmp_path, which):
    from clzoo.train.callbacks import checkpoint_progress

    recipe = tiny_recipe(write_tiny_digits(tmp_path / "data"))
    recipe["training"]["epochs"] = 40
    recipe["training"]["checkpoint_every_steps"] = 1000  # only the signal and epoch ends save
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(recipe))
    run = tmp_path / "run"
    command = [sys.executable, "-m", "clzoo.cli", "train", str(path), "--output", str(run)]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + 240
    while _steps_logged(run / "steps.jsonl") < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    process.send_signal(which)
    out, err = process.communicate(timeout=240)
    assert process.returncode == 128 + which, (out, err)
    assert f"stopped: Training stopped by {which.name}" in err and "--resume" in err
    assert "Traceback" not in err
    step = checkpoint_progress(run / "checkpoint.keras")["step"]
    assert step >= 3 and step == _steps_logged(run / "steps.jsonl")
    assert not (run / "metrics.json").exists()
    resumed = subprocess.run([sys.executable, "-m", "clzoo.cli", "train", "--resume", str(run),
                              "--set", "eval.baselines=[]"],
                             env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode != 0 and "differs" in resumed.stderr  # the recipe is pinned
    # Resumed, it trains on from the checkpoint's step (a signal stops it again; the resumed run
    # trained to the end, metrics and weights equal to an uninterrupted run, is test_resume.py's).
    process = subprocess.Popen([sys.executable, "-m", "clzoo.cli", "train", "--resume", str(run)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while _steps_logged(run / "steps.jsonl") < step + 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    process.send_signal(which)
    out, err = process.communicate(timeout=240)
    assert process.returncode == 128 + which, (out, err)
    assert f"resuming at step {step}" in out and "Traceback" not in err
    assert checkpoint_progress(run / "checkpoint.keras")["step"] >= step + 2
    assert not (run / "metrics.json").exists()
