"""`clzoo train` over two JAX processes (`jax.distributed`, gloo CPU collectives) against one process.

Both runs use the installed console script on the same recipe and global batch: a one-layer ViT
(LayerNorm only, so no batch-norm statistics differ) with InfoNCE and a memory queue of 48 keys,
64 images, batch 16, on the tf.data stream (`auto` would give the one process the device stream,
whose views differ). The two processes join a coordinator on 127.0.0.1 and train under
`keras.distribution.DataParallel` over one CPU device each, so each sees half of every batch while
the loss sees the global one (its negatives come from both processes) and the queue enqueues the
global batch. Process 1 writes to its own run folder, which must stay empty: every file is written
once, by process 0.
"""

import io
import json
import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.train.tiny_data import write_tiny_digits
from tests.xla_flags import for_tests

pytestmark = pytest.mark.backends("jax")
CLZOO = str(Path(sys.executable).with_name("clzoo"))  # the installed console script
RECIPE = """\
name: jax_processes
data: {data}
data_loading: stream  # each process decodes only its rows of every global batch from the files
model: {{architecture: vit_small_patch4, embedding_dim: 16, queue_size: 48,
        encoder_options: {{num_layers: 1, hidden_dim: 48, mlp_dim: 96}}}}
loss: {{name: InfoNCELoss}}
views: {{size: 8, flip: false, grayscale_p: 0.0}}
training: {{epochs: 3, batch_size: 16, learning_rate: 0.05, log_every_steps: 1, pipeline: tf_data}}
eval: {{report: false, knn_k: [5], knn_headline_k: 5}}
"""
RUNS = "jax_processes"  # xdist group of the tests that share the `runs` fixture (built once)
CLUSTER = ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "KERAS_DISTRIBUTION_NUM_PROCESSES",
           "KERAS_DISTRIBUTION_PROCESS_ID")


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(tmp, **extra):
    """One CPU device per process; a private TMPDIR, to see that throwaway saves are deleted."""
    env = {key: value for key, value in os.environ.items() if key not in CLUSTER}
    env.update(KERAS_BACKEND="jax", CUDA_VISIBLE_DEVICES="", TMPDIR=str(tmp),
               XLA_FLAGS=for_tests("--xla_force_host_platform_device_count=1"), **extra)
    Path(tmp).mkdir(parents=True, exist_ok=True)
    return env


def _start(args, env):
    return subprocess.Popen([CLZOO, "train", *map(str, args)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish_all(processes, timeout=600):
    """Outputs of every process; a hang (e.g. a save only one process called) fails, not blocks."""
    outputs = []
    try:
        for process in processes:
            out, err = process.communicate(timeout=timeout)
            outputs.append((process.returncode, out, err))
    finally:
        for process in processes:
            process.kill()
    return outputs


@pytest.fixture(scope="module")
def runs(tmp_path_factory, long_evaluation):
    """One process and two on the same recipe. `long_evaluation` is asked for first so that its
    idle 40 s pass while these train (its test only collects the outputs)."""
    root = tmp_path_factory.mktemp("jax_processes")
    data = write_tiny_digits(root / "data", train=64, test=32)
    recipe = root / "recipe.yaml"
    recipe.write_text(RECIPE.format(data=data))
    single = _finish_all([_start([recipe, "--output", root / "single", "--strategy", "one_device",
                                  "-q"], _env(root / "tmp-single"))])
    port = _free_port()
    # The online kNN monitor is asked for, and must be turned off (with a note) over processes.
    pair = [_start([recipe, "--output", root / f"process{i}", "--strategy", "multi_worker",
                    "--set", "eval.monitor_every=1"],
                   _env(root / f"tmp{i}", KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
                        KERAS_DISTRIBUTION_NUM_PROCESSES="2", KERAS_DISTRIBUTION_PROCESS_ID=str(i)))
            for i in range(2)]
    return root, single[0], _finish_all(pair)


def _losses(run, name):
    return [json.loads(line)["loss"] for line in (run / name).read_text().splitlines()]


def _arrays(path):
    """Every array of a `.keras` file (weights, optimizer state, the queue) by its h5 path."""
    import h5py

    found = {}
    with zipfile.ZipFile(path) as archive, h5py.File(io.BytesIO(archive.read("model.weights.h5"))) as h5:
        h5.visititems(lambda name, item: found.__setitem__(name, np.asarray(item[()], "float64"))
                      if isinstance(item, h5py.Dataset) else None)
    return found


def _largest_differences(left, right):
    a, b = _arrays(left), _arrays(right)
    assert a.keys() == b.keys()
    return {name: float(np.max(np.abs(a[name] - b[name]), initial=0.0)) for name in a}


@pytest.mark.xdist_group(RUNS)
@pytest.mark.large
def test_both_processes_succeed_and_the_run_is_written_once(runs):
    root, (code, _out, err), pair = runs
    assert code == 0, err[-3000:]
    for i, (code, _out, err) in enumerate(pair):
        assert code == 0, f"process {i}: {err[-3000:]}"
    assert "online kNN monitor is off" in pair[0][1]
    assert "wrote" in pair[0][1] and "wrote" not in pair[1][1]  # only process 0 reports
    chief = root / "process0"
    assert (chief / "checkpoint.keras").is_file() and (chief / "encoder.keras").is_file()
    assert not [p.name for p in chief.rglob("*") if ".tmp" in p.name]  # no atomic-write leftovers
    other = root / "process1"
    assert not other.exists() or not list(other.rglob("*")), sorted(other.rglob("*"))
    for i in range(2):  # the non-chief's throwaway saves are deleted
        assert not list((root / f"tmp{i}").glob("clzoo-throwaway-*"))
    environment = json.loads((chief / "environment.json").read_text())
    assert (environment["strategy"], environment["replicas"], environment["processes"]) == (
        "data_parallel", 2, 2)
    assert len(environment["devices"]) == 2
    assert environment["data_loading"] == "stream" and environment["data_shards"] == 2


@pytest.mark.xdist_group(RUNS)
@pytest.mark.large
def test_two_processes_match_one_process_on_the_same_global_batch(runs):
    root, *_ = runs
    single, chief = root / "single", root / "process0"
    steps, reference = _losses(chief, "steps.jsonl"), _losses(single, "steps.jsonl")
    assert len(steps) == 12  # 3 epochs x 4 steps
    np.testing.assert_allclose(steps, reference, atol=1e-5)
    np.testing.assert_allclose(_losses(chief, "history.jsonl"), _losses(single, "history.jsonl"),
                               atol=1e-5)
    assert reference[-1] < reference[0] - 0.5  # it trained
    encoder = _largest_differences(single / "encoder.keras", chief / "encoder.keras")
    assert max(encoder.values()) < 1e-5, encoder
    checkpoint = _largest_differences(single / "checkpoint.keras", chief / "checkpoint.keras")
    assert max(checkpoint.values()) < 1e-4, checkpoint
    queue = _arrays(chief / "checkpoint.keras")
    keys = [name for name in queue if name.startswith("layers/memory_queue/") and queue[name].ndim == 2]
    assert len(keys) == 1 and np.linalg.norm(queue[keys[0]], axis=1).min() > 0  # full, no zero rows
    assert checkpoint[keys[0]] < 1e-5


def _error_lines(err):
    return [line for line in err.splitlines() if line.startswith("error: ")]


@pytest.mark.parametrize("given, expected", [
    ({"KERAS_DISTRIBUTION_PROCESS_ID": "1"}, "missing KERAS_DISTRIBUTION_JOB_ADDRESSES, "
                                             "KERAS_DISTRIBUTION_NUM_PROCESSES"),
    ({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "127.0.0.1:1", "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
      "KERAS_DISTRIBUTION_PROCESS_ID": "2"}, "from 0 to 1. Received: KERAS_DISTRIBUTION_PROCESS_ID='2'"),
])
@pytest.mark.large
def test_a_partial_or_malformed_cluster_is_refused_in_one_line(tmp_path, given, expected):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(RECIPE.format(data="digits"))
    [(code, out, err)] = _finish_all([_start([recipe, "--output", tmp_path / "run", "--strategy",
                                              "multi_worker"], _env(tmp_path / "tmp", **given))],
                                     timeout=300)
    assert code == 2 and "Traceback" not in err, err[-3000:]
    assert len(_error_lines(err)) == 1 and expected in _error_lines(err)[0], err[-3000:]
    assert not (tmp_path / "run").exists()  # refused before anything was written


SOFT_TARGET = """\
name: soft_target_processes
data: {data}
task: soft_target
loss: {{name: SoftTargetCrossEntropy}}
views: {{size: 8, views: 1, flip: false, grayscale_p: 0.0}}
training: {{epochs: 1, batch_size: 16}}
eval: {{report: false, knn_k: [5], knn_headline_k: 5}}
"""


@pytest.mark.large
def test_soft_target_is_refused_over_two_processes(tmp_path):
    data = write_tiny_digits(tmp_path / "data", train=32, test=8)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(SOFT_TARGET.format(data=data))
    port = _free_port()
    pair = _finish_all([
        _start([recipe, "--output", tmp_path / "run", "--strategy", "multi_worker"],
               _env(tmp_path / f"tmp{i}", KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
                    KERAS_DISTRIBUTION_NUM_PROCESSES="2", KERAS_DISTRIBUTION_PROCESS_ID=str(i)))
        for i in range(2)], timeout=300)
    for code, _out, err in pair:
        assert code == 2 and "Traceback" not in err, err[-3000:]
        assert _error_lines(err) == ["error: task = 'soft_target': not supported over several JAX "
                                     "processes (2); use task contrastive, or one process"], err[-3000:]
    assert not (tmp_path / "run").exists()


def test_write_once_keeps_only_the_chiefs_file(tmp_path, monkeypatch):
    from clzoo.train.distribute import Placement, write_once

    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    written = []

    def write(path):
        written.append(path)
        Path(path).write_text("model")

    target = tmp_path / "run" / "encoder.keras"
    assert write_once(Placement("data_parallel", is_chief=False), target, write) is None
    assert written == []  # no collective saves: the other processes do nothing
    other = Placement("data_parallel", is_chief=False, processes=2, collective_saves=True)
    assert write_once(other, target, write, suffix=".keras") is None
    assert len(written) == 1 and str(tmp_path / "tmp") in written[0] and written[0].endswith(".keras")
    assert not target.exists() and not list((tmp_path / "tmp").iterdir())  # throwaway deleted
    chief = Placement("data_parallel", processes=2, collective_saves=True)
    assert write_once(chief, target, write, suffix=".keras") == target
    assert target.read_text() == "model" and sorted(p.name for p in target.parent.iterdir()) == [
        "encoder.keras"]


def test_a_throwaway_checkpoint_saves_but_leaves_the_path_alone(tmp_path):
    import keras

    from clzoo.train.callbacks import AtomicCheckpoint

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    saved = []
    model.save = lambda path, _save=model.save: (saved.append(path), _save(path))[1]
    checkpoint = AtomicCheckpoint(tmp_path / "checkpoint.keras", throwaway=True)
    checkpoint.set_model(model)
    checkpoint.on_train_begin()
    checkpoint.on_epoch_end(0)
    assert len(saved) == 1 and not Path(saved[0]).exists()  # it did save (the collective), then deleted
    assert not list(tmp_path.iterdir()) and checkpoint.saved_step == 0


WAIT_FOR_THE_CHIEF = """\
import sys, time
from clzoo.train.distribute import finish_together, placement
place = placement("multi_worker")
import keras
keras.ops.sum(keras.ops.ones((4,)))  # the backend (and its gloo links) up on both processes
started = time.monotonic()
if place.is_chief:
    time.sleep(40)  # a final evaluation longer than gloo's 30 s set-up timeout
finish_together(place)
print("waited", round(time.monotonic() - started), flush=True)
"""


@pytest.fixture(scope="module")
def long_evaluation(tmp_path_factory):
    """The two processes of `WAIT_FOR_THE_CHIEF`, started and left running (a sleep and a
    barrier wait use no CPU), their output in files (a pipe nobody reads could fill);
    `test_the_other_processes_wait_for_a_long_final_evaluation` reads it."""
    root, port = tmp_path_factory.mktemp("long_evaluation"), _free_port()
    pair = []
    for i in range(2):
        with open(root / f"{i}.out", "w") as out, open(root / f"{i}.err", "w") as err:
            pair.append((subprocess.Popen(
                [sys.executable, "-c", WAIT_FOR_THE_CHIEF], stdout=out, stderr=err,
                env=_env(root / f"tmp{i}", KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
                         KERAS_DISTRIBUTION_NUM_PROCESSES="2", KERAS_DISTRIBUTION_PROCESS_ID=str(i))),
                root / f"{i}.out", root / f"{i}.err"))
    yield pair
    for process, *_ in pair:
        process.kill()


@pytest.mark.xdist_group(RUNS)
@pytest.mark.large
def test_the_other_processes_wait_for_a_long_final_evaluation(long_evaluation):
    for process, out, err in long_evaluation:
        assert process.wait(timeout=300) == 0, err.read_text()[-3000:]
        assert int(out.read_text().split()[-1]) >= 40  # both left only when the chief was done


def _pair(recipe, output, root, *extra):
    port = _free_port()
    return [_start([recipe, "--output", output, "--strategy", "multi_worker", "-q", *extra],
                   _env(root / f"tmp{i}", KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
                        KERAS_DISTRIBUTION_NUM_PROCESSES="2", KERAS_DISTRIBUTION_PROCESS_ID=str(i)))
            for i in range(2)]


@pytest.mark.xdist_group(RUNS)
# the slow tier: CI keeps kill -9 + resume (tests/train/test_resume.py and the device stream's)
# and two processes (the tests above)
@pytest.mark.slow
def test_two_processes_killed_and_resumed_end_as_one_process(runs, tmp_path):
    """kill -9 of both processes after the first checkpoint, then `--resume` on both (one run
    folder that both read): the same losses and weights as the uninterrupted single process."""
    import time

    root = runs[0]
    run = tmp_path / "run"
    pair = _pair(root / "recipe.yaml", run, tmp_path)
    deadline = time.monotonic() + 300
    while not (run / "checkpoint.keras").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    for process in pair:
        process.kill()
    _finish_all(pair)
    assert (run / "checkpoint.keras").exists() and not (run / "metrics.json").exists()
    for code, _out, err in _finish_all(_pair(root / "recipe.yaml", run, tmp_path, "--resume")):
        assert code == 0, err[-3000:]
    assert json.loads((run / "metrics.json").read_text())["resumed_from_step"] in (4, 8)  # epoch ends
    single = root / "single"
    np.testing.assert_allclose(_losses(run, "steps.jsonl"), _losses(single, "steps.jsonl"), atol=1e-5)
    encoder = _largest_differences(single / "encoder.keras", run / "encoder.keras")
    assert max(encoder.values()) < 1e-5, encoder
    checkpoint = _largest_differences(single / "checkpoint.keras", run / "checkpoint.keras")
    assert max(checkpoint.values()) < 1e-4, checkpoint


NO_TENSORFLOW = [sys.executable, str(Path(__file__).resolve().parents[1] / "no_tensorflow.py")]


@pytest.fixture(scope="module")
def device_runs(tmp_path_factory):
    """The recipe on the device stream with TensorFlow hidden (a `[jax]` install): one process, and
    two that each decode only their rows of every global batch (`shard` of the device stream)."""
    root = tmp_path_factory.mktemp("jax_device_processes")
    data = write_tiny_digits(root / "data", train=64, test=32)
    recipe = root / "recipe.yaml"
    recipe.write_text(RECIPE.format(data=data).replace("pipeline: tf_data", "pipeline: device"))

    def start(args, env):
        return subprocess.Popen([*NO_TENSORFLOW, "train", *map(str, args)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    single = _finish_all([start([recipe, "--output", root / "single", "--strategy", "one_device", "-q"],
                                _env(root / "tmp-single"))])
    port = _free_port()
    pair = [start([recipe, "--output", root / f"process{i}", "--strategy", "multi_worker"],
                  _env(root / f"tmp{i}", KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
                       KERAS_DISTRIBUTION_NUM_PROCESSES="2", KERAS_DISTRIBUTION_PROCESS_ID=str(i)))
            for i in range(2)]
    return root, single[0], _finish_all(pair)


@pytest.mark.large
def test_two_processes_without_tensorflow_on_the_device_stream_match_one(device_runs):
    root, (code, _out, err), pair = device_runs
    assert code == 0, err[-3000:]
    for i, (code, _out, err) in enumerate(pair):
        assert code == 0, f"process {i}: {err[-3000:]}"  # status 3: TensorFlow was imported
    assert "(jax, data_parallel x2, device stream)" in pair[0][1]
    assert "each of 2 processes reads its rows" in pair[0][1]
    single, chief = root / "single", root / "process0"
    np.testing.assert_allclose(_losses(chief, "steps.jsonl"), _losses(single, "steps.jsonl"), atol=1e-5)
    np.testing.assert_allclose(_losses(chief, "history.jsonl"), _losses(single, "history.jsonl"),
                               atol=1e-5)
    checkpoint = _largest_differences(single / "checkpoint.keras", chief / "checkpoint.keras")
    assert max(checkpoint.values()) < 1e-4, checkpoint  # weights, optimizer state and the queue
    other = root / "process1"
    assert not other.exists() or not list(other.rglob("*")), sorted(other.rglob("*"))
