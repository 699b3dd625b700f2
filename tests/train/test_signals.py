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


def _stop_at(command, env, which, run, steps):
    """Start `command`, send `which` once `steps` steps are logged; return its stdout and the
    step of the checkpoint it left."""
    from clzoo.train.callbacks import checkpoint_progress

    # SIGINT handled as at a terminal even where the suite runs with it ignored (`cmd &` in a script)
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 240
    while _steps_logged(run / "steps.jsonl") < steps and time.monotonic() < deadline:
        time.sleep(0.2)
    process.send_signal(which)
    out, err = process.communicate(timeout=240)
    assert process.returncode == 128 + which, (out, err)
    assert f"stopped: Training stopped by {which.name}" in err and "--resume" in err
    assert "Traceback" not in err
    step = checkpoint_progress(run / "checkpoint.keras")["step"]
    assert step >= steps and step == _steps_logged(run / "steps.jsonl")
    assert not (run / "metrics.json").exists()
    return out, step


@pytest.mark.large
def test_sigterm_then_sigint_each_checkpoint_and_the_run_resumes(tmp_path):
    """SIGTERM stops the run, SIGINT stops its resumed run (one sequence: 3 launches, not 6)."""
    recipe = tiny_recipe(write_tiny_digits(tmp_path / "data"))
    recipe["training"]["epochs"] = 40
    recipe["training"]["checkpoint_every_steps"] = 1000  # only the signal and epoch ends save
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(recipe))
    run = tmp_path / "run"
    train = [sys.executable, "-m", "clzoo.cli", "train"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    _, step = _stop_at([*train, str(path), "--output", str(run)], env, signal.SIGTERM, run, 3)
    resumed = subprocess.run([*train, "--resume", str(run), "--set", "eval.baselines=[]"],
                             env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode != 0 and "differs" in resumed.stderr  # the recipe is pinned
    # Resumed, it trains on from the checkpoint's step (the resumed run trained to the end,
    # metrics and weights equal to an uninterrupted run, is test_resume.py's).
    out, later = _stop_at([*train, "--resume", str(run)], env, signal.SIGINT, run, step + 2)
    assert f"resuming at step {step}" in out and later >= step + 2
