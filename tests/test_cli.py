"""The `clzoo` command as a user meets it: fast help, --version, presets, clean output in a log file."""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from clzoo import cli
from clzoo.version import __version__
from tests.train.tiny_data import write_tiny_digits

# TensorFlow / absl C++ log lines and start-up chatter a user cannot act on.
TF_CHATTER = re.compile(r"^\d{4}-\d\d-\d\d .*[IW] tensorflow|^[IWE]\d{4} \d\d:\d\d:\d+\.\d+ |"
                        r"oneDNN|cuda|absl|cpu_feature_guard|build\(\) was called", re.I | re.M)


def _clzoo():
    """The installed `clzoo` script beside this Python, else `python -m clzoo.cli`."""
    script = Path(sys.executable).with_name("clzoo")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "clzoo.cli"]


def _user_env(**extra):
    """The environment of a user's shell: none of the test suite's TensorFlow settings."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "CUDA_VISIBLE_DEVICES")}
    return {**env, **extra}


def _run(args, **kwargs):
    return subprocess.run(_clzoo() + list(args), capture_output=True, text=True, env=_user_env(),
                          timeout=600, **kwargs)


def test_help_is_fast():
    for args in (["--help"], ["train", "--help"], ["eval", "--help"]):
        walls = []
        for _ in range(3):
            start = time.perf_counter()
            result = _run(args)
            walls.append(time.perf_counter() - start)
            assert result.returncode == 0, result.stderr
            assert "usage: clzoo" in result.stdout and not result.stderr
        # About 0.05 s here (5.5 s when the parser imported TensorFlow); slack for a loaded machine.
        assert min(walls) < 4.0, (args, walls)


def test_parser_and_light_commands_import_no_tensorflow():
    code = ("import sys, contextlib, io\n"
            "sys.argv[0] = 'bin/clzoo'  # as the console script runs it\n"
            "import clzoo.cli as cli\n"
            "for argv in (['--help'], ['train', '--help'], ['--version']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "        cli.main(argv)\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert cli.main(['presets']) == 0\n"
            "print(sorted(m for m in ('tensorflow', 'keras', 'jax', 'torch', 'sklearn')"
            " if m in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=_user_env(), timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_version():
    from importlib import metadata

    result = _run(["--version"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"clzoo {__version__} ")
    assert f"keras {metadata.version('keras')}" in result.stdout


def test_presets_lists_every_registry_entry(capsys):
    registry = json.loads(cli.PRESET_REGISTRY.read_text())
    assert registry, "no built-in presets in the registry"
    assert cli.main(["presets"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for name, entry in registry.items():
        row = next(line for line in lines if line.startswith(name + " "))
        for field in (entry["architecture"], entry["loss"], entry["dataset"],
                      f"{entry['metrics']['knn_top1_k20']:.2%}",
                      f"{entry['metrics']['linear_probe_top1']:.2%}"):
            assert field in row, (name, field, row)
    assert cli.main(["presets", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == registry


def test_parser_constants_match_the_registries():
    from clzoo.data import VIEW_RECIPES
    from clzoo.eval import DEFAULT_METRICS, METRICS
    from clzoo.presets.loading import REGISTRY

    assert cli.EVAL_METRICS == tuple(METRICS)
    assert cli.EVAL_DEFAULT_METRICS == DEFAULT_METRICS
    assert set(cli.VIEW_RECIPE_NAMES) == set(VIEW_RECIPES)
    assert cli.PRESET_REGISTRY.resolve() == REGISTRY.resolve()


def _tiny_recipe(tmp_path):
    data = write_tiny_digits(tmp_path / "data", train=64, test=32)
    recipe = {"name": "tiny", "data": data,
              "model": {"architecture": "resnet20", "embedding_dim": 16},
              "views": {"size": 8, "flip": False, "grayscale_p": 0.0},
              "training": {"epochs": 2, "batch_size": 32, "learning_rate": 0.05},
              "eval": {"knn_k": [1, 5], "knn_headline_k": 5, "metrics": ["knn"]}}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


@pytest.mark.slow
def test_train_into_a_log_file_is_plain_text(tmp_path):
    recipe = _tiny_recipe(tmp_path)
    log, errors = tmp_path / "train.log", tmp_path / "train.err"
    with open(log, "w") as out, open(errors, "w") as err:
        code = subprocess.run(_clzoo() + ["train", str(recipe), "--output", str(tmp_path / "run")],
                              stdout=out, stderr=err, env=_user_env(), timeout=600).returncode
    text, err_text = log.read_text(), errors.read_text()
    assert code == 0, text[-3000:] + err_text[-3000:]
    for name, content in (("stdout", text), ("stderr", err_text)):
        assert "\x1b" not in content and "\r" not in content, (name, content[-2000:])
        assert not TF_CHATTER.search(content), (name, TF_CHATTER.search(content).group(0), content)
    # One plain line per epoch, then the results.
    assert text.count("Epoch ") == 2 and len(re.findall(r"^2/2 - .*loss: ", text, re.M)) == 2
    assert "kNN top-1 (k=5" in text


@pytest.mark.slow
def test_train_quiet_prints_only_the_results(tmp_path, capsys):
    recipe = _tiny_recipe(tmp_path)
    assert cli.main(["train", str(recipe), "--output", str(tmp_path / "run"), "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "kNN top-1 (k=5" in out and "final training loss" in out
    for progress in ("Epoch", "/step", "[clzoo eval]", f"clzoo {__version__} |", "\x1b", "\r"):
        assert progress not in out, (progress, out)
    assert "decoding" not in err and "\r" not in err, err


def test_a_reader_that_leaves_early_gets_no_traceback():
    process = subprocess.Popen([sys.executable, "-c",
                                "import sys, time; sys.argv[0] = 'clzoo'; time.sleep(0.5)\n"
                                "from clzoo.cli import main; sys.exit(main(['presets']))"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_user_env())
    process.stdout.close()  # as `| head` does once it has its lines
    stderr = process.communicate(timeout=120)[1].decode()
    assert process.returncode == 0 and "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
