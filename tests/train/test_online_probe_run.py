"""Issue 70 item 3 as a user meets it: `clzoo train sincere_digits --set model.online_probe={}`
(the console script) logs the probe's top-1 every epoch in history.jsonl, history.csv and
TensorBoard, the probe beats chance on digits after 2 epochs, and `clzoo push --dry-run` puts
its curve on the card."""

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# one lane: the probe's own tests run on all three (tests/parts/test_online_probe.py); this run of
# the console script cost 42 / 61 / 95 s on the tensorflow / jax / torch lanes of CI
pytestmark = [pytest.mark.large, pytest.mark.backends("jax")]


def _clzoo(*args, env):
    script = shutil.which("clzoo", path=str(Path(sys.executable).parent))
    assert script, f"no clzoo console script beside {sys.executable}: pip install ."
    result = subprocess.run([script, *map(str, args)], capture_output=True, text=True, env=env, timeout=900)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    return result


def test_a_run_with_the_online_probe_logs_its_top1_and_puts_it_on_the_card(tmp_path):
    env = {**os.environ, "CLZOO_CACHE": str(tmp_path / "cache"), "CUDA_VISIBLE_DEVICES": ""}
    run = tmp_path / "run"
    _clzoo("train", "sincere_digits", "--set", "model.online_probe={}", "--epochs", "2",
           "--output", run, env=env)
    rows = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    assert [row["epoch"] for row in rows] == [1, 2]
    top1 = [row["online_probe_top1"] for row in rows]
    assert top1[-1] > 0.2, top1  # 10 digits: chance is 0.1 (59.8% on JAX here)
    with open(run / "history.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert [float(row["online_probe_top1"]) for row in table] == pytest.approx(top1)
    events = list((run / "tensorboard").rglob("events.out.tfevents.*"))
    if events:  # Keras' TensorBoard writer needs TensorFlow (absent from some lanes' installs)
        assert any(b"epoch_online_probe_top1" in path.read_bytes() for path in events)
    card = tmp_path / "card"
    _clzoo("push", run, "hf://me/digits-probe", "--dry-run", card, env=env)
    text = (card / "README.md").read_text()
    assert "| epoch | images seen | training loss | `online_probe_top1` |" in text
    assert f"| 2 | 2,816 | {rows[-1]['loss']:.4f} | {top1[-1]:.2%} |" in text
