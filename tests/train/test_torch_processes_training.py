"""`clzoo train` over two `torch.distributed` processes (torchrun, gloo on the CPU) against one.

The same recipe and global batch (SupCon on a ResNet-8, whose batch norm is synchronized, with a
labelled memory queue; the device stream, each process reading its rows of every global batch):
two processes equal one to float32 rounding in their per-epoch losses, weights and queue, rank 0
alone writes the run and speaks, `kill -9` of every process then `--resume` ends where an
uninterrupted run does, and a process that dies stops the others.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.train.tiny_data import write_tiny_digits

pytestmark = pytest.mark.backends("torch")
CLZOO = str(Path(sys.executable).with_name("clzoo"))  # the installed console script
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
            "--no-python", CLZOO]
GROUP = "torch_processes"


def _recipe(tmp, epochs=2, **training):
    data = write_tiny_digits(tmp / "data", train=64, test=32)
    recipe = {"name": "tiny", "data": data,
              "model": {"encoder": "resnet8", "embedding_dim": 8, "queue": {"size": 32}},
              "loss": {"name": "SupConLoss", "temperature": 0.1},
              "views": {"size": 8, "flip": False, "grayscale_p": 0.0},
              "training": {"epochs": epochs, "batch_size": 16, "learning_rate": 0.05, **training},
              "eval": {"knn_k": [1], "knn_headline_k": 1, "metrics": ["knn"], "baselines": []}}
    path = tmp / "tiny.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


def _env():
    return {key: value for key, value in os.environ.items()
            if key not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")} | {
        "KERAS_BACKEND": "torch", "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}


def _train(command, tmp, output, *extra, timeout=600):
    result = subprocess.run([*command, "train", str(tmp / "tiny.yaml"), "--output", str(output), *extra],
                            capture_output=True, text=True, env=_env(), timeout=timeout)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return result


def _variables(path):
    import keras

    import clzoo  # noqa: F401  (registers the model classes)

    model = keras.saving.load_model(path)
    return {v.path: keras.ops.convert_to_numpy(v) for v in model.variables}


def _losses(run):
    return [json.loads(line)["loss"] for line in (run / "history.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("torch_processes")
    _recipe(tmp)
    one = _train([CLZOO], tmp, tmp / "one")
    two = _train(TORCHRUN, tmp, tmp / "two")
    return tmp, one, two


@pytest.mark.large
@pytest.mark.xdist_group(GROUP)
def test_two_processes_equal_one_on_the_same_global_batch(runs):
    tmp, _, two = runs
    assert "(torch, multi_worker x2, device stream)" in two.stdout
    assert "each of 2 processes reads its rows" in two.stdout
    np.testing.assert_allclose(_losses(tmp / "two"), _losses(tmp / "one"), rtol=1e-5)
    one, both = _variables(tmp / "one" / "checkpoint.keras"), _variables(tmp / "two" / "checkpoint.keras")
    assert one.keys() == both.keys() and any("memory_queue/embeddings" in k for k in one)
    for name in one:  # encoder, head, batch-norm statistics, optimizer state and the queue's keys
        np.testing.assert_allclose(both[name], one[name], atol=1e-5, err_msg=name)


@pytest.mark.large
@pytest.mark.xdist_group(GROUP)
def test_rank_0_alone_writes_the_run_and_speaks(runs):
    tmp, one, two = runs
    assert two.stdout.count("wrote ") == 1 and two.stdout.count("plan: ") == 1
    assert sorted(p.name for p in (tmp / "two").iterdir()) == sorted(p.name for p in (tmp / "one").iterdir())
    metrics = json.loads((tmp / "two" / "metrics.json").read_text())
    assert metrics["processes"] == 2 and metrics["strategy"] == "multi_worker"


def _steps_logged(path):
    rows = [json.loads(line)["step"] for line in path.read_text().splitlines()] if path.exists() else []
    return max(rows, default=0)


def _kill_group(process):
    os.killpg(process.pid, signal.SIGKILL)  # torchrun and every process it started: no clean-up
    process.wait()


@pytest.mark.large
@pytest.mark.xdist_group(GROUP)
def test_kill_9_of_every_process_then_resume_equals_the_uninterrupted_run(tmp_path):
    _recipe(tmp_path, epochs=3, checkpoint_every_steps=2, log_every_steps=1)
    _train(TORCHRUN, tmp_path, tmp_path / "reference")
    run = tmp_path / "run"
    command = [*TORCHRUN, "train", str(tmp_path / "tiny.yaml"), "--output", str(run), "--resume"]
    for target in (3, 7):  # of 12 steps; checkpoints every 2 steps and every epoch (4 steps)
        process = subprocess.Popen(command, env=_env(), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 300
        while _steps_logged(run / "steps.jsonl") < target and process.poll() is None:
            assert time.monotonic() < deadline, "training made no progress"
            time.sleep(0.05)
        assert process.poll() is None, "the run ended before it was killed"
        _kill_group(process)
    _train(TORCHRUN, tmp_path, run, "--resume")
    np.testing.assert_allclose(_losses(run), _losses(tmp_path / "reference"), rtol=1e-5)
    resumed = _variables(run / "encoder.keras")
    reference = _variables(tmp_path / "reference" / "encoder.keras")
    for name in reference:
        np.testing.assert_allclose(resumed[name], reference[name], atol=1e-5, err_msg=name)


def _rank_1(torchrun):
    """The pid of the process torchrun started with RANK=1."""
    children = subprocess.run(["pgrep", "-P", str(torchrun)], capture_output=True, text=True)
    for child in children.stdout.split():
        try:
            environ = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"RANK=1" in environ:
            return int(child)
    return None


@pytest.mark.large
@pytest.mark.xdist_group(GROUP)
def test_a_process_that_dies_stops_the_others(tmp_path):
    _recipe(tmp_path, epochs=200, log_every_steps=1)
    process = subprocess.Popen([*TORCHRUN, "train", str(tmp_path / "tiny.yaml"), "--output",
                                str(tmp_path / "run")], env=_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while _steps_logged(tmp_path / "run" / "steps.jsonl") < 2:
            assert time.monotonic() < deadline and process.poll() is None, "training made no progress"
            time.sleep(0.05)
        victim = _rank_1(process.pid)
        assert victim is not None
        os.kill(victim, signal.SIGKILL)
        process.communicate(timeout=120)  # never waits for ever on the dead process
        assert process.returncode != 0
    finally:
        if process.poll() is None:
            _kill_group(process)


def test_a_multi_process_strategy_outside_torchrun_is_one_line_naming_the_command(tmp_path):
    _recipe(tmp_path)
    result = subprocess.run([CLZOO, "train", str(tmp_path / "tiny.yaml"), "--output", str(tmp_path / "run"),
                             "--strategy", "multi_worker"], capture_output=True, text=True, env=_env(),
                            timeout=300)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert "torchrun --standalone --nproc-per-node N --no-python clzoo train" in result.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow  # the slow tier (not CI's): four more runs
@pytest.mark.xdist_group(GROUP)
@pytest.mark.parametrize("parts", [["--set", "model.grad_cache.chunk_size=4"],
                                   ["--set", "model.online_probe={}"]], ids=["grad_cache", "online_probe"])
def test_gradcache_and_the_online_probe_over_two_processes_equal_one(tmp_path, parts):
    """GradCache's chunks are its batch-norm batches (not synchronized: each process's chunks are
    one process's); the online probe's loss and top-1 are the global batch's."""
    _recipe(tmp_path)
    _train([CLZOO], tmp_path, tmp_path / "one", *parts)
    _train(TORCHRUN, tmp_path, tmp_path / "two", *parts)
    rows = [[json.loads(line) for line in (tmp_path / run / "history.jsonl").read_text().splitlines()]
            for run in ("one", "two")]
    for key in rows[0][0]:
        if "loss" in key or "top1" in key:
            np.testing.assert_allclose([r[key] for r in rows[1]], [r[key] for r in rows[0]],
                                       rtol=1e-5, err_msg=key)
    one = _variables(tmp_path / "one" / "encoder.keras")
    both = _variables(tmp_path / "two" / "encoder.keras")
    for name in one:  # under GradCache each process's moving averages follow its own chunks:
        if parts[1].startswith("model.grad_cache") and "moving_" in name:  # rank 0's are saved
            continue
        np.testing.assert_allclose(both[name], one[name], atol=1e-5, err_msg=name)
