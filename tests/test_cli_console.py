"""Every `clzoo` subcommand run as the installed console script, in a subprocess, on tiny data.

The console script imports no clzoo module ahead of the command (its `--help` starts without
Keras), so a command that loads a saved clzoo object must register clzoo's classes itself:
`push --dry-run` once crashed on "Could not locate class 'BatchNormalization'" while the
Python-level tests passed. One tiny run (ResNet-20, which has BatchNormalization) is trained
by `clzoo train` and shared by the other commands; the large tests share an xdist group so the
run is trained once.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.train.tiny_data import write_tiny_digits

CONSOLE = "cli_console"  # xdist group of the tests that share the trained run


def _script():
    """The `clzoo` console script installed beside this Python."""
    script = shutil.which("clzoo", path=str(Path(sys.executable).parent))
    assert script, f"no clzoo console script beside {sys.executable}: pip install ."
    return script


def _clzoo(args, env, cwd=None, code=0):
    """Run `clzoo ARGS` as a user would; check its exit status and that it printed no traceback."""
    result = subprocess.run([_script(), *map(str, args)], capture_output=True, text=True, env=env,
                            cwd=cwd, timeout=600)
    assert result.returncode == code, (args, result.stdout[-3000:], result.stderr[-3000:])
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A user's environment with a private clzoo cache (module fixtures run before the autouse
    per-test cache fixture, so it is set here)."""
    environ = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return {**environ, "CLZOO_CACHE": str(tmp_path_factory.mktemp("cache")),
            "CUDA_VISIBLE_DEVICES": ""}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """4 digit classes as 8 x 8 PNGs: 32 training and 16 test images."""
    return write_tiny_digits(tmp_path_factory.mktemp("data") / "digits", train=32, test=16)


@pytest.fixture(scope="module")
def run(data, env, tmp_path_factory):
    """`clzoo train` of a one-epoch ResNet-20 (BatchNormalization inside) on the tiny digits."""
    root = tmp_path_factory.mktemp("train")
    recipe = {"name": "tiny", "data": data,
              "model": {"architecture": "resnet8", "embedding_dim": 8},
              "views": {"size": 8, "flip": False, "grayscale_p": 0.0},
              "training": {"epochs": 1, "batch_size": 16, "learning_rate": 0.05},
              "eval": {"knn_k": [1], "knn_headline_k": 1, "metrics": ["knn"], "baselines": []}}
    (root / "tiny.yaml").write_text(yaml.safe_dump(recipe))
    result = _clzoo(["train", root / "tiny.yaml", "--output", root / "run", "--quiet"], env)
    return root / "run", result


@pytest.fixture(scope="module")
def preset(run, env, tmp_path_factory):
    """`clzoo push RUN hf://owner/repo --dry-run DIR`: the preset folder, and the command's output."""
    out = tmp_path_factory.mktemp("push") / "preset"
    result = _clzoo(["push", run[0], "hf://clzoo-test/tiny-digits", "--dry-run", out], env)
    return out, result


@pytest.mark.xdist_group(CONSOLE)
@pytest.mark.large
def test_train(run):
    folder, result = run
    for name in ("encoder.keras", "checkpoint.keras", "metrics.json", "recipe.yaml", "recipe.sha256",
                 "environment.json", "history.jsonl", "eval/report.md"):
        assert (folder / name).is_file(), name
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["epochs"] == 1 and 0 <= metrics["knn_top1"] <= 1
    assert "kNN top-1 (k=1" in result.stdout


@pytest.mark.xdist_group(CONSOLE)
@pytest.mark.large
def test_eval(run, data, env, tmp_path):
    out = tmp_path / "report"
    result = _clzoo(["eval", run[0], "--data", data, "--metrics", "knn,ncc", "--k", "1",
                     "--output", out], env)
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["knn"]) == {"k1"} and "accuracy" in metrics["ncc"]
    assert (out / "report.md").is_file() and "weighted kNN top-1" in result.stdout
    again = _clzoo(["eval", run[0], "--data", data, "--output", out], env, code=2)
    assert "--overwrite" in again.stderr
    summary = (Path(run[0]) / "metrics.json").read_bytes()
    into_run = _clzoo(["eval", run[0], "--data", data, "--output", run[0], "--overwrite"], env, code=2)
    assert "a report does not write" in into_run.stderr and "Traceback" not in into_run.stderr
    assert (Path(run[0]) / "metrics.json").read_bytes() == summary  # the run's summary stays



@pytest.mark.xdist_group(CONSOLE)
@pytest.mark.large
def test_eval_of_a_run_right_after_train_takes_its_data_and_writes_a_new_report(run, env, tmp_path):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run[0], copy)  # the module's run stays as train left it
    before = (copy / "eval" / "metrics.json").read_bytes()
    result = _clzoo(["eval", copy, "--metrics", "knn", "--k", "1"], env)  # no --data, no --overwrite
    assert "--data" in result.stdout and "the run's own" in result.stdout
    assert f"writing {copy / 'eval-2'}" in result.stdout
    assert set(json.loads((copy / "eval-2" / "metrics.json").read_text())["knn"]) == {"k1"}
    assert (copy / "eval" / "metrics.json").read_bytes() == before  # train's report untouched
    _clzoo(["eval", copy, "--metrics", "knn", "--k", "1"], env)
    assert (copy / "eval-3" / "metrics.json").is_file()


@pytest.mark.xdist_group(CONSOLE)
@pytest.mark.large
def test_compare(run, data, env, tmp_path):
    out = tmp_path / "cmp"
    _clzoo(["compare", run[0], run[0], "--data", data, "--metrics", "knn", "--k", "1",
            "--resamples", "100", "--output", out], env)
    compared = json.loads((out / "compare.json").read_text())
    assert compared["bootstrap"]["knn_k1"]["difference"] == 0.0
    assert (out / "compare.md").is_file() and (out / "A" / "metrics.json").is_file()
    assert (out / "B" / "metrics.json").is_file()


@pytest.mark.xdist_group(CONSOLE)
@pytest.mark.large
def test_embed(run, data, env, tmp_path):
    out = tmp_path / "e.npz"
    result = _clzoo(["embed", run[0], "--data", data, "--output", out], env)
    saved = np.load(out)
    assert saved["embeddings"].shape[0] == 48 and saved["labels"].shape == (48,)
    assert f"wrote {out}" in result.stdout
    _clzoo(["embed", run[0], "--data", data, "--output", out], env, code=2)


@pytest.mark.xdist_group(CONSOLE)
@pytest.mark.large
def test_export(run, env, tmp_path):
    out = tmp_path / "served"
    result = _clzoo(["export", run[0], "--output", out], env)
    assert (out / "saved_model.pb").is_file()
    assert "differ from the Keras model's by at most" in result.stdout


@pytest.mark.xdist_group(CONSOLE)
@pytest.mark.large
def test_push_dry_run_of_an_encoder_with_batch_norm(preset):
    folder, result = preset
    assert '"BatchNormalization"' in (folder / "config.json").read_text()  # what once crashed
    for name in ("config.json", "model.weights.h5", "README.md", "checksums.json"):
        assert (folder / name).is_file(), name
    assert "Could not locate class" not in result.stderr
    assert "nothing uploaded" in result.stdout


@pytest.mark.xdist_group(CONSOLE)
@pytest.mark.large
def test_transfer_from_the_pushed_preset(preset, data, env, tmp_path):
    out = tmp_path / "transfer.json"
    result = _clzoo(["transfer", preset[0], "--data", data, "--protocol", "lbfgs",
                     "--output", out], env)
    report = json.loads(out.read_text())
    assert 0 <= report["top1"] <= 1 and report["test_images"] == 16
    assert "linear-probe top-1" in result.stdout


@pytest.mark.xdist_group(CONSOLE)
@pytest.mark.large
def test_show_views(data, env, tmp_path):
    out = tmp_path / "views.png"
    _clzoo(["show-views", "--data", data, "--images", "2", "--views", "2", "--output", out], env)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_presets(env):
    registry = json.loads(_clzoo(["presets", "--json"], env).stdout)
    listed = _clzoo(["presets"], env).stdout
    assert registry and all(name in listed for name in registry)


def test_a_notebook_kernel_gets_the_live_bar_and_a_log_the_plain_lines(monkeypatch):
    import io
    import types

    from clzoo import console

    monkeypatch.setattr(sys, "stdout", io.StringIO())  # not a terminal
    monkeypatch.setitem(sys.modules, "ipykernel", object())  # imported, but no kernel is running
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))
    assert console.keras_verbose(True) == 2 and console.keras_verbose(True, plain=0) == 0
    shell = types.SimpleNamespace(kernel=object())  # Jupyter / Colab: Keras' bar renders live
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    assert console.keras_verbose(True) == 1 and console.keras_verbose(True, plain=0) == 1
    assert console.keras_verbose(False) == 0 and console.keras_verbose(2) == 2
