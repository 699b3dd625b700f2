"""Cross-replica negatives: two MirroredStrategy replicas equal one device on the global batch."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")
SCRIPT = Path(__file__).with_name("distributed_check.py")


@pytest.mark.large
def test_mirrored_strategy_matches_single_device():
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                            timeout=600, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    assert result.returncode == 0, result.stderr[-4000:]
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    control = [r for r in rows if r["loss"] == "control_local_negatives"]
    rows = [r for r in rows if r["loss"] != "control_local_negatives"]
    assert len(rows) == 8 and len(control) == 1, result.stdout
    assert control[0]["value_diff"] > 1e-3  # local negatives only: not the same loss
    for row in rows:
        assert row["value_diff"] < 1e-5, row
        assert row["fit_loss_diff"] < 1e-5, row
        assert row["weight_diff"] < 1e-5, row


@pytest.mark.large
def test_jax_data_parallel_matches_single_device():
    pytest.importorskip("jax")
    script = SCRIPT.with_name("jax_data_parallel_check.py")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 8, result.stdout
    for row in rows:
        assert row["fit_loss_diff"] < 1e-5, row
        assert row["weight_diff"] < 1e-5, row


def _free_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.large
def test_multi_worker_mirrored_strategy_matches_single_device():
    script = SCRIPT.with_name("multi_worker_check.py")
    ports = [str(_free_port()), str(_free_port())]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    workers = [subprocess.Popen([sys.executable, str(script), str(i), *ports], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for i in range(2)]
    outputs = []
    try:
        for worker in workers:
            out, err = worker.communicate(timeout=600)
            assert worker.returncode == 0, err[-4000:]
            outputs.append(out)
    finally:
        for worker in workers:
            worker.kill()
    rows = [json.loads(line) for out in outputs for line in out.splitlines()
            if line.startswith("{")]
    assert len(rows) == 16, outputs
    for row in rows:
        assert row["value_diff"] < 1e-5, row
        assert row["grad_diff"] < 1e-5 and row["grad_scale"] > 1e-3, row
