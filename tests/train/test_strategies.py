"""Strategies: MirroredStrategy on 2 logical CPUs, 2 workers on 127.0.0.1, JAX DataParallel,
each against one device on the same global batch."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clzoo.train.distribute import placement
from tests.train.tiny_data import write_tiny_digits

SCRIPT = Path(__file__).with_name("distributed_run.py")


def _losses(run):
    return [json.loads(line)["loss"] for line in (Path(run) / "steps.jsonl").read_text().splitlines()]


def _run(args, timeout=900):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    env.pop("XLA_FLAGS", None)
    return subprocess.Popen([sys.executable, str(SCRIPT), *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process, timeout=900):
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-4000:]
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_tiny_digits(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def mirrored_runs(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("mirrored")
    _finish(_run(["mirrored", data, out]))
    return out


# Both tests share the one-device reference of `mirrored_runs`: keep them on one xdist worker.
@pytest.mark.xdist_group("mirrored_runs")
@pytest.mark.large
def test_mirrored_on_two_devices_matches_one_device(mirrored_runs):
    mirrored, single = _losses(mirrored_runs / "mirrored"), _losses(mirrored_runs / "single")
    assert len(mirrored) == len(single) == 20
    np.testing.assert_allclose(mirrored, single, atol=1e-4)
    assert single[-1] < single[0] - 0.1  # it trained
    meta = json.loads((mirrored_runs / "mirrored" / "environment.json").read_text())
    assert meta["strategy"] == "mirrored" and meta["replicas"] == 2


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.xdist_group("mirrored_runs")
@pytest.mark.large
def test_two_workers_match_one_process_on_the_same_global_batch(data, mirrored_runs, tmp_path):
    ports = [_free_port(), _free_port()]
    workers = [_run(["worker", i, *ports, data, tmp_path / "run"]) for i in range(2)]
    try:
        for worker in workers:
            _finish(worker)
    finally:
        for worker in workers:
            worker.kill()
    np.testing.assert_allclose(_losses(tmp_path / "run"), _losses(mirrored_runs / "single"),
                               atol=1e-4)
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    single = json.loads((mirrored_runs / "single" / "metrics.json").read_text())
    assert metrics["strategy"] == "multi_worker" and metrics["replicas"] == 2
    # each worker decoded only its half of every global batch (tf.distribute.InputContext)
    assert json.loads((tmp_path / "run" / "environment.json").read_text())["data_shards"] == 2
    assert abs(metrics["knn_top1"] - single["knn_top1"]) <= 1 / 60 + 1e-9  # 60 test images


# The slow tier: CI keeps JAX data parallelism by tests/losses/test_distributed.py (fit's losses and
# weights over 2 devices) and tests/train/test_jax_multi_process.py (a run over two processes).
@pytest.mark.slow
def test_jax_data_parallel_matches_one_device(data, tmp_path):
    pytest.importorskip("jax")
    _finish(_run(["data_parallel", data, tmp_path]))
    parallel, single = _losses(tmp_path / "mirrored"), _losses(tmp_path / "single")
    assert len(parallel) == 20
    np.testing.assert_allclose(parallel, single, atol=1e-4)
    meta = json.loads((tmp_path / "mirrored" / "environment.json").read_text())
    assert meta["strategy"] == "data_parallel" and meta["replicas"] == 2


def test_placement_errors_name_what_was_expected(monkeypatch):
    with pytest.raises(ValueError, match="one of"):
        placement("tpu")
    monkeypatch.delenv("TF_CONFIG", raising=False)
    import keras

    if keras.backend.backend() == "tensorflow":
        with pytest.raises(ValueError, match="TF_CONFIG"):
            placement("multi_worker")
    assert placement("one_device").replicas == 1
