"""The `clzoo` command as a user meets it: fast help, --version, presets, clean output in a log file."""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from clzoo import cli, run_reuse
from clzoo.cli import listing
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


def _run(args, env=None, **kwargs):
    return subprocess.run(_clzoo() + list(args), capture_output=True, text=True,
                          env=_user_env() if env is None else env, timeout=600, **kwargs)


def test_help_prints_usage_alone():
    """Help is quick because the parser imports no TensorFlow (the next test); no wall-time verdict."""
    for args in (["--help"], ["train", "--help"], ["eval", "--help"]):
        result = _run(args)
        assert result.returncode == 0, result.stderr
        assert "usage: clzoo" in result.stdout and not result.stderr


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


# Refusals that need no model or data loaded: each must come before Keras (and TensorFlow) is imported.
FAST_REFUSALS = [
    (["eval", "runs/typo", "--data", "digits"], "no model at runs/typo"),
    (["eval", "supcon_airbench_cifar1", "--data", "digits"], "Did you mean 'supcon_airbench_cifar10'?"),
    (["eval", "supcon_airbench_cifar10", "--data", "{tmp}/missing"], "no such path"),
    (["embed", "runs/typo", "--data", "digits", "--output", "{tmp}/e.npz"], "no model at runs/typo"),
    (["embed", "supcon_airbench_cifar10", "--data", "digits", "--output", "{tmp}/e.txt"], ".npz or .parquet"),
    (["compare", "supcon_airbench_cifar10", "typo", "--data", "digits"], "no model at typo"),
    (["eval", "supcon_airbench_cifar10", "--data", "digits", "--k", "5,2000"],
     "--k: k = 2000 is not in [1, 1437]"),
    (["compare", "supcon_airbench_cifar10", "supcon_airbench_cifar10", "--data", "digits", "--k", "1438"],
     "Received: --k=1438"),
    (["export", "typo", "--output", "{tmp}/x.tflite", "--format", "litert"], "no model at typo"),
    (["show-views", "--data", "{tmp}/missing", "--output", "{tmp}/v.png"], "no such path"),
    (["show-views", "--data", "digits", "--output", "{tmp}/encoder.keras"], "name a .png file"),
    (["transfer", "typo_preset", "--data", "digits"], "no encoder 'typo_preset'"),
    (["transfer", "supcon_airbench_cifar10", "--data", "digits", "--epochs", "5"], "add --protocol sgd"),
    (["push", "{tmp}/run", "--builtin", "Bad-Name"], "a built-in preset name is 3-64 characters"),
    (["transfer", "supcon_airbench_cifar10", "--data", "{tmp}/missing"], "no such path"),
    (["train", "{tmp}/missing.yaml"], "recipe file not found"),
    # issue 69 item 7: a recipe's keys, types, ranges and earlier spellings, before Keras
    (["train", "sincere_digits", "--set", "training.epocks=3"], "Did you mean 'epochs'?"),
    (["train", "sincere_digits", "--set", "training.epochs=-3"],
     "--set training.epochs (over "),
    (["train", "sincere_digits", "--set", "model.momentum=0.9"], "the model.queue part is off"),
    (["train", "sincere_digits", "--set", "views.size=16.5"], "--set views.size (over "),
    (["train", "sincere_digits", "--set", "model.classifier_hidden_dims=[8]"], "would do nothing"),
]


def test_refusals_before_keras_import_nothing_heavy(tmp_path):
    cases = [([a.format(tmp=tmp_path) for a in argv], expected) for argv, expected in FAST_REFUSALS]
    code = ("import sys, json, contextlib, io\n"
            "sys.argv[0] = 'bin/clzoo'  # as the console script runs it\n"
            "import clzoo.cli as cli\n"
            "out = []\n"
            f"for argv, _ in {cases!r}:\n"
            "    err = io.StringIO()\n"
            "    with contextlib.redirect_stderr(err):\n"
            "        rc = cli.main(argv)\n"
            "    out.append([rc, err.getvalue()])\n"
            "out.append(sorted(m for m in ('tensorflow', 'keras', 'jax', 'torch') if m in sys.modules))\n"
            "print(json.dumps(out))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                            env=_user_env(), timeout=300)
    assert result.returncode == 0, result.stderr
    *refusals, heavy = json.loads(result.stdout)
    for (argv, expected), (rc, stderr) in zip(cases, refusals):
        assert rc == 2 and stderr.count("\n") == 1 and expected in stderr, (argv, rc, stderr)
    assert heavy == []  # every refusal above came before Keras: a fraction of a second, not 5-10 s
    assert not list(tmp_path.iterdir())  # and nothing was written


def test_version():
    from importlib import metadata

    result = _run(["--version"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"clzoo {__version__} ")
    assert f"keras {metadata.version('keras')}" in result.stdout
    for backend, package in (("jax", "jax"), ("torch", "torch")):  # the backend Keras would load
        named = _run(["--version"], env=_user_env(KERAS_BACKEND=backend))
        assert f", backend {backend} {metadata.version(package)}, python" in named.stdout, named.stdout
    bogus = _run(["--version"], env=_user_env(KERAS_BACKEND="bogus"))
    assert "backend 'bogus', not a backend Keras knows" in bogus.stdout, bogus.stdout


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
                      f"{entry['metrics']['probe_top1']:.2%}"):
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
    from clzoo.eval.bootstrap import MIN_RESAMPLES

    assert cli.MIN_RESAMPLES == MIN_RESAMPLES


def _tiny_recipe(tmp_path):
    data = write_tiny_digits(tmp_path / "data", train=64, test=32)
    recipe = {"name": "tiny", "data": data,
              "model": {"architecture": "resnet8", "embedding_dim": 16},
              "views": {"size": 8, "flip": False, "grayscale_p": 0.0},
              "training": {"epochs": 2, "batch_size": 32, "learning_rate": 0.05},
              "eval": {"knn_k": [1, 5], "knn_headline_k": 5, "metrics": ["knn"]}}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


@pytest.mark.large
@pytest.mark.backends("tensorflow", "jax", "torch")  # JAX / torch import TensorFlow late (TensorBoard)
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


@pytest.mark.large
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


HEAVY_MODULES = re.compile(r"\|\s+(tensorflow|keras|jax|jaxlib|torch|sklearn|matplotlib|scipy)(\.|\s*$)",
                           re.M)


@pytest.mark.parametrize("args", [["-m", "clzoo.cli", "--help"], ["-m", "clzoo", "eval", "--help"],
                                  ["-m", "clzoo", "embed", "--help"], ["-m", "clzoo", "export", "--help"]])
def test_help_through_python_m_imports_nothing_heavy(args):
    # -X importtime lists every module the real invocation imports, on stderr.
    result = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True,
                            text=True, env=_user_env(), timeout=300)
    assert result.returncode == 0 and "usage: clzoo" in result.stdout, result.stderr[-2000:]
    heavy = HEAVY_MODULES.search(result.stderr)
    assert heavy is None, heavy.group(0)


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    """A small `.keras` encoder (8x8 RGB -> 6 features) and a 4-class image folder."""
    import keras

    root = tmp_path_factory.mktemp("tiny")
    keras.utils.set_random_seed(0)
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(4, 3, activation="relu")(inputs)
    x = keras.layers.GlobalAveragePooling2D()(x)
    model = keras.Model(inputs, keras.layers.Dense(6)(x))
    model.save(root / "encoder.keras")
    return root / "encoder.keras", write_tiny_digits(root / "data", train=48, test=24)


def test_eval_report_times_every_step(tiny_encoder, tmp_path, capsys):
    path, data = tiny_encoder
    out = tmp_path / "eval"
    assert cli.main(["eval", str(path), "--data", data, "--metrics", "knn,ncc,retrieval,map",
                     "--k", "1,5", "--output", str(out)]) == 0
    steps = ["load_model", "load_data", "embed_train", "embed_test", "knn", "ncc", "map",
             "retrieval", "plots"]
    timings = json.loads((out / "metrics.json").read_text())["timings"]
    assert list(timings) == steps + ["total"]
    assert all(timings[s] >= 0 for s in steps) and timings["total"] == pytest.approx(
        sum(timings[s] for s in steps), abs=0.02)
    report = (out / "report.md").read_text()
    for step in steps:
        assert f"| `{step}` | {timings[step]} |" in report, step
    printed = capsys.readouterr().out
    for number, step in enumerate(steps, 1):  # a start and an end line per step, plain text
        assert f"[clzoo eval] {number}/{len(steps)} {step}" in printed
        assert re.search(rf"^\[clzoo eval\] {number}/{len(steps)} {step}: \d+\.\d s$", printed, re.M)
    assert "\r" not in printed and "\x1b" not in printed


@pytest.mark.parametrize("budget, how", [(None, "memory"), ("1KiB", "stream")])
def test_eval_says_whether_it_held_or_streamed_the_data(tiny_encoder, tmp_path, budget, how):
    """Issue 85 item 8: `clzoo eval` never said whether it streamed. The console script prints it
    and metrics.json records it, per split."""
    path, data = tiny_encoder
    env = {k: v for k, v in _user_env().items() if k != "CLZOO_MEMORY_BUDGET"}
    if budget:
        env["CLZOO_MEMORY_BUDGET"] = budget
    done = _run(["eval", str(path), "--data", data, "--metrics", "knn", "--k", "1",
                 "--output", str(tmp_path / "eval")], env=env)
    assert done.returncode == 0, done.stderr
    words = {"memory": "held in memory", "stream": "streamed from their files"}[how]
    assert f"data: train and test {words}" in done.stdout
    recorded = json.loads((tmp_path / "eval" / "metrics.json").read_text())["data_loading"]
    assert recorded == {"train": how, "test": how}


def test_embed_writes_embeddings_labels_and_paths(tiny_encoder, tmp_path):
    import keras

    from clzoo.data import load_split

    path, data = tiny_encoder
    assert cli.main(["embed", str(path), "--data", data, "--output", str(tmp_path / "e.npz")]) == 0
    saved = np.load(tmp_path / "e.npz")
    train, test = load_split(data, "train"), load_split(data, "test")
    expected = keras.saving.load_model(path).predict(
        np.concatenate([train.images, test.images]).astype("float32") / 255, verbose=0)
    np.testing.assert_allclose(saved["embeddings"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(saved["labels"], np.concatenate([train.labels, test.labels]))
    assert saved["split"].tolist() == ["train"] * 48 + ["test"] * 24
    assert saved["class_names"].tolist() == train.class_names
    for file, label, split in zip(saved["paths"], saved["labels"], saved["split"]):
        assert Path(file).parent.name == train.class_names[label] and Path(file).parts[-3] == split
    assert not list(tmp_path.glob(".*tmp*"))

    assert cli.main(["embed", str(path), "--data", data, "--split", "test", "--normalize",
                     "--output", str(tmp_path / "e.parquet")]) == 0
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "e.parquet").to_pydict()
    rows = np.asarray(table["embedding"])
    np.testing.assert_allclose(rows, expected[48:] / np.linalg.norm(expected[48:], axis=1,
                                                                    keepdims=True), rtol=1e-5)
    assert table["label"] == test.labels.tolist() and set(table["split"]) == {"test"}
    assert table["path"] == saved["paths"][48:].tolist()


def test_embed_refuses_an_unknown_suffix_before_any_work(tiny_encoder, tmp_path, capsys):
    path, data = tiny_encoder
    assert cli.main(["embed", str(path), "--data", data, "--output", str(tmp_path / "e.csv")]) == 2
    assert "must end in .npz or .parquet" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_export_saved_model_gives_the_keras_outputs(tiny_encoder, tmp_path, capsys):
    import keras
    import tensorflow as tf

    path, _ = tiny_encoder
    out = tmp_path / "served"
    assert cli.main(["export", str(path), "--format", "saved_model", "--output", str(out)]) == 0
    assert "differ from the Keras model's by at most" in capsys.readouterr().out
    images = np.random.default_rng(1).uniform(size=(5, 8, 8, 3)).astype("float32")
    loaded = tf.saved_model.load(str(out))
    served = loaded.serve(tf.constant(images)).numpy()
    np.testing.assert_allclose(served, keras.saving.load_model(path).predict(images, verbose=0),
                               rtol=1e-5, atol=1e-6)
    _assert_serves_the_input_contract(loaded, images)
    assert [p.name for p in tmp_path.iterdir()] == ["served"]  # no staging folder left
    # The folder exists now: a second export refuses to overwrite it.
    assert cli.main(["export", str(path), "--output", str(out)]) == 2
    assert "exists already" in capsys.readouterr().err


def _assert_serves_the_input_contract(loaded, images):
    """uint8 through `serve_uint8` equals [0, 1] through `serve`; `serve` refuses 0-255 values."""
    import tensorflow as tf

    pixels = (images * 255).round().astype("uint8")
    want = loaded.serve(tf.constant(pixels / np.float32(255))).numpy()
    np.testing.assert_allclose(loaded.serve_uint8(tf.constant(pixels)).numpy(), want, rtol=1e-5, atol=1e-6)
    signature = loaded.signatures["serve_uint8"](pixels=tf.constant(pixels))
    np.testing.assert_allclose(next(iter(signature.values())).numpy(), want, rtol=1e-5, atol=1e-6)
    assert set(loaded.signatures) == {"serving_default", "serve_uint8"}
    for wrong in (pixels, pixels.astype("float32")):  # a uint8 array becomes float32 0-255 here
        with pytest.raises(tf.errors.InvalidArgumentError, match="call `serve_uint8`") as refused:
            loaded.serve(wrong)
        message = next(line for line in str(refused.value).splitlines() if "serve_uint8" in line)
        assert "received values from" in message and "did not hold element-wise" not in message


@pytest.mark.large
def test_export_saved_model_under_jax_keeps_the_contract_and_torch_refuses(tiny_encoder, tmp_path):
    """The console script on the other backends: JAX (jax2tf) re-saved with both signatures;
    torch refused in one line before any work (Keras' torch.export bridge fails)."""
    import keras
    import tensorflow as tf

    path, _ = tiny_encoder
    env = dict(_user_env(), KERAS_BACKEND="jax")
    result = subprocess.run(_clzoo() + ["export", str(path), "--output", str(tmp_path / "jax")],
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    images = np.random.default_rng(3).uniform(size=(2, 8, 8, 3)).astype("float32")
    loaded = tf.saved_model.load(str(tmp_path / "jax"))
    np.testing.assert_allclose(loaded.serve(tf.constant(images)).numpy(),
                               keras.saving.load_model(path).predict(images, verbose=0), rtol=1e-5, atol=1e-5)
    _assert_serves_the_input_contract(loaded, images)
    env["KERAS_BACKEND"] = "torch"
    result = subprocess.run(_clzoo() + ["export", str(path), "--output", str(tmp_path / "torch")],
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 2 and not (tmp_path / "torch").exists()
    assert result.stderr.strip().splitlines()[-1].startswith("error: a SavedModel export from the torch")


@pytest.mark.large
def test_export_names_the_missing_package_in_one_line(tiny_encoder, tmp_path):
    from clzoo.export.serving import missing_packages

    missing = missing_packages("onnx")
    if not missing:
        pytest.skip("the ONNX converter for this backend is installed")
    result = _run(["export", str(tiny_encoder[0]), "--format", "onnx", "--output",
                   str(tmp_path / "m.onnx")])
    assert result.returncode == 2 and not list(tmp_path.iterdir())
    assert result.stderr.strip().splitlines() == [
        f"error: exporting to onnx needs {' and '.join(missing)}: pip install {' '.join(missing)}"]


def test_export_litert_gives_the_keras_outputs(tiny_encoder, tmp_path):
    import keras

    from clzoo.export.serving import exported_outputs, missing_packages

    if missing_packages("litert"):
        pytest.skip(f"LiteRT export needs {missing_packages('litert')}")
    path, _ = tiny_encoder
    assert cli.main(["export", str(path), "--format", "litert", "--output", str(tmp_path / "e.tflite")]) == 0
    images = np.random.default_rng(2).uniform(size=(3, 8, 8, 3)).astype("float32")
    np.testing.assert_allclose(exported_outputs(tmp_path / "e.tflite", "litert", images),
                               keras.saving.load_model(path).predict(images, verbose=0),
                               rtol=1e-5, atol=1e-5)
    pixels = (images * 255).round().astype("uint8")  # the input contract reaches the runtime too
    np.testing.assert_allclose(exported_outputs(tmp_path / "e.tflite", "litert", pixels),
                               exported_outputs(tmp_path / "e.tflite", "litert", pixels / np.float32(255)),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="float pixels in"):
        exported_outputs(tmp_path / "e.tflite", "litert", pixels.astype("float32"))
    assert cli.main(["export", str(path), "--format", "litert", "--output", str(tmp_path / "e.bin")]) == 2


def _file_size_limit(limit):
    def apply():
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG for the writer instead of a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.large
def test_an_os_fault_is_one_line_naming_the_path(tiny_encoder, tmp_path):
    path, data = tiny_encoder
    out = tmp_path / "features.npz"
    env = {**_user_env(), "CLZOO_CACHE": str(tmp_path / "cache")}
    command = _clzoo() + ["embed", str(path), "--data", data, "--output", str(out)]
    warm = subprocess.run(command[:-1] + [str(tmp_path / "warm.npz")], capture_output=True,
                          text=True, env=env, timeout=600)  # the decode cache, written unlimited
    assert warm.returncode == 0, warm.stderr
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600,
                            preexec_fn=_file_size_limit(1024))
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1, result.stderr
    assert lines == [f"error: File too large: {out} (errno 27); each file clzoo writes is complete "
                     "or absent, never cut short"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "warm.npz"]  # no partial file


def test_transfer_takes_a_run_folder_or_keras_file_like_eval(tiny_encoder, tmp_path, capsys):
    """Issue 69 item 9: `clzoo transfer <run folder>` failed "checksums.json is missing" after
    9-25 s with no hint, where eval, embed and export take run folders."""
    path, data = tiny_encoder
    for target in (path, path.parent):  # the .keras file, and a folder holding encoder.keras
        assert cli.main(["transfer", str(target), "--data", data, "--output",
                         str(tmp_path / f"{target.name}.json")]) == 0
        assert json.loads((tmp_path / f"{target.name}.json").read_text())["top1"] >= 0
    assert cli.main(["transfer", str(tmp_path / "nothing"), "--data", data]) == 2
    assert "no encoder" in capsys.readouterr().err


@pytest.mark.large
@pytest.mark.parametrize("command", ["export", "push"])
def test_a_write_cut_short_inside_tensorflow_or_h5py_is_one_line(tiny_encoder, tmp_path, command):
    """Issue 72 item 21: a full disk during `export --format saved_model` printed TensorFlow's 51-line
    ResourceExhaustedError; during `push --dry-run` h5py's text (and a SIGSEGV). Here the writes are
    cut short by a file-size limit (EFBIG), as in `test_an_os_fault_is_one_line_naming_the_path`."""
    from tests.presets.test_presets import _run

    path, _ = tiny_encoder
    (tmp_path / "dst").mkdir()
    out = tmp_path / "dst" / "out"
    if command == "export":
        args = ["export", str(path), "--output", str(out)]
    else:
        (tmp_path / "src").mkdir()
        args = ["push", str(_run(tmp_path / "src")[0]), "hf://me/tiny", "--dry-run", str(out)]
    result = subprocess.run(_clzoo() + args, capture_output=True, text=True, env=_user_env(),
                            timeout=600, preexec_fn=_file_size_limit(512))
    assert result.returncode == 1, result.stderr
    # one line of ours (TensorFlow's C++ logger may print its own first notice before it)
    assert "Traceback" not in result.stderr and result.stderr.count("error:") == 1, result.stderr
    assert re.search(r"error: File too large: \S+ \(errno 27\); each file clzoo writes is complete "
                     r"or absent, never cut short\n?$", result.stderr), result.stderr
    assert list((tmp_path / "dst").iterdir()) == []  # nothing half-written, no staging folder or lock


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs, almost full (148 KiB free): a real full disk, where h5py fails mid-file (a
    file-size limit fails it differently). Root only; skipped elsewhere."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        (mount / "filler").write_bytes(bytes(1900 * 1024))
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


@pytest.mark.large
def test_push_onto_a_full_disk_ends_in_one_line_without_a_crash(small_disk, tmp_path):
    """The hostile pass of issue 72: `push --dry-run` onto a nearly full disk printed h5py's
    "Can't decrement id ref count" tracebacks, then segfaulted in the interpreter's teardown."""
    from tests.presets.test_presets import _run

    (tmp_path / "src").mkdir()
    run = _run(tmp_path / "src")[0]
    result = subprocess.run(_clzoo() + ["push", str(run), "hf://me/x", "--dry-run", str(small_disk / "p")],
                            capture_output=True, text=True, env=_user_env(), timeout=600)
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and result.stderr.count("error:") == 1, result.stderr
    assert "No space left on device" in result.stderr
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]


def test_every_option_of_every_command_says_what_it_does():
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    silent = [f"{name} {a.option_strings or a.dest}" for name, sub in commands.choices.items()
              for a in sub._actions if not a.help and not isinstance(a, argparse._HelpAction)]
    assert not silent, f"options without help text: {silent}"


@pytest.mark.parametrize("after", [1.0, 2.5])
def test_ctrl_c_while_a_command_starts_ends_in_one_line(tmp_path, after):
    """Issue 58 item 4: Ctrl-C during TensorFlow's import (before, a 71-line KeyboardInterrupt
    traceback from `clzoo show-views`): exit status 130, one line, no output file."""
    import signal

    # SIGINT as a terminal delivers it, even where the suite itself was started with SIGINT ignored
    # (`cmd &` in a script): Python keeps an inherited SIG_IGN and the Ctrl-C would never arrive
    process = subprocess.Popen(_clzoo() + ["show-views", "--data", "digits", "--output",
                                           str(tmp_path / "v.png")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_user_env(),
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(after)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    lines = [line for line in err.splitlines() if not line.startswith(("W0", "I0", "E0", "WARNING"))]
    assert process.returncode == 130 and lines == [
        "error: interrupted (Ctrl-C); each file clzoo writes is complete or absent, never cut short"], err
    assert not (tmp_path / "v.png").exists()


class _InterruptedWhenCollected:
    """A Ctrl-C inside a finaliser, as JAX's garbage-collector callback takes one: "unraisable"."""

    def __del__(self):
        raise KeyboardInterrupt


def test_a_ctrl_c_python_drops_in_a_finaliser_still_stops_the_command(monkeypatch, capsys):
    """A Ctrl-C landing in JAX's gc callback (TensorFlow imports JAX) was printed and dropped, and
    `show-views` went on to write its file with status 0; now it ends the command as any Ctrl-C."""
    previous = sys.unraisablehook

    def command_interrupted(args):
        _InterruptedWhenCollected()  # collected at once; its KeyboardInterrupt is unraisable
        deadline = time.monotonic() + 60  # a hang guard: the interrupt arrives within milliseconds
        while time.monotonic() < deadline:
            time.sleep(0.005)
        return 0

    monkeypatch.setattr(listing, "_presets", command_interrupted)  # the parser takes it as `presets`' func
    # Python's own handler, as in a terminal: a suite started in the background (`cmd &`) inherits
    # SIGINT ignored, and an ignored signal is not delivered (nor does a Ctrl-C arrive there)
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert cli.main(["presets"]) == 130
    finally:
        signal.signal(signal.SIGINT, handler)
    assert "interrupted (Ctrl-C)" in capsys.readouterr().err
    assert sys.unraisablehook is previous  # the hook is the command's only


def test_a_ctrl_c_during_tensorflows_import_is_held_until_the_import_is_done():
    """A KeyboardInterrupt inside TensorFlow's import could crash the process (status -11, nothing
    printed): the import holds it and it takes effect once the import is done."""
    from clzoo import console

    handler = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    finished = []
    try:
        with pytest.raises(KeyboardInterrupt):
            with console.interrupts_deferred():
                signal.raise_signal(signal.SIGINT)  # a Ctrl-C in the middle of the block
                sum(range(10_000))
                finished.append(True)  # the block ran to its end
        assert finished == [True]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # ignored stays ignored: nothing held, nothing raised
        with console.interrupts_deferred():
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, handler)


def test_a_mistyped_model_gets_the_closest_preset_or_run(tmp_path, capsys, monkeypatch):
    """Issue 57 item 7: `clzoo eval runs/typo` named neither presets nor the run meant."""
    (tmp_path / "runs" / "sincere_digits").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    for typed, meant in (("runs/sincere_digit", "runs/sincere_digits"),
                         ("sincere_airbench_cifar1", "sincere_airbench_cifar10")):
        assert cli.main(["eval", typed, "--data", "digits"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "a preset name (clzoo presets lists them)" in err[0]
        assert err[0].endswith(f"Did you mean {meant!r}?")


def test_no_suggestion_of_the_target_itself_nor_of_presets_for_projection(tmp_path, capsys, monkeypatch):
    """Review of issue 57 item 7's did-you-mean: a run folder without its model suggested itself,
    and --space projection suggested presets, which it cannot take."""
    (tmp_path / "runs" / "unfinished").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["eval", "runs/unfinished", "--data", "digits"]) == 2
    assert "Did you mean" not in capsys.readouterr().err
    assert cli.main(["eval", "sincere_airbench_cifar1", "--space", "projection", "--data", "digits"]) == 2
    assert "Did you mean" not in capsys.readouterr().err


def test_bare_encoder_of_a_model_without_test_time_views_is_refused(tiny_encoder, tmp_path, capsys):
    path, data = tiny_encoder
    assert cli.main(["embed", str(path), "--data", data, "--bare-encoder",
                     "--output", str(tmp_path / "e.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "averages no test-time views" in err[0]
    assert not (tmp_path / "e.npz").exists()


@pytest.mark.parametrize("argv, dest", [
    (["train", "r.yaml", "--output", "~/run"], "output"), (["train", "--resume", "~/run"], "resume"),
    (["eval", "m", "--data", "digits", "--output", "~/run"], "output"),
    (["embed", "m", "--data", "digits", "--output", "~/run"], "output"),
    (["export", "m", "--output", "~/run"], "output"),
    (["compare", "a", "b", "--data", "d", "--output", "~/run"], "output"),
    (["show-views", "--data", "digits", "--output", "~/run"], "output"),
    (["push", "r", "hf://o/n", "--dry-run", "~/run"], "dry_run"),
    (["transfer", "p", "--data", "digits", "--output", "~/run"], "output"),
])
def test_a_tilde_in_an_output_is_the_home_folder(argv, dest, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert getattr(cli.build_parser().parse_args(argv), dest) == str(tmp_path / "run")


def test_show_views_writes_under_the_home_folder_not_a_folder_named_tilde(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "home").mkdir()
    assert cli.main(["show-views", "--data", "digits", "--images", "1", "--views", "1",
                     "--output=~/v.png"]) == 0
    assert (tmp_path / "home" / "v.png").is_file() and not (tmp_path / "~").exists()


def test_compare_names_a_dropped_default_k_once(tiny_encoder, tmp_path, capsys):
    path, data = tiny_encoder  # 48 training images: the default k = 200 cannot run
    assert cli.main(["compare", str(path), str(path), "--data", data, "--metrics", "knn",
                     "--resamples", "100", "--output", str(tmp_path / "cmp")]) == 0
    printed = capsys.readouterr().out
    assert printed.count("note: kNN k = 200 left out") == 1, printed
    assert set(json.loads((tmp_path / "cmp" / "compare.json").read_text())["bootstrap"]) == {
        "knn_k1", "knn_k5", "knn_k20"}


def test_train_says_which_settings_a_section_override_left_out(tmp_path, monkeypatch, capsys):
    """`--set training.optimizer=adamw` over `{name: sgd, momentum: 0.8}` starts from AdamW's
    defaults: the recipe's momentum is left out, and `clzoo train` says so before training."""
    import clzoo.train

    recipe = tmp_path / "r.yaml"
    recipe.write_text("data: digits\ntraining: {optimizer: {name: sgd, momentum: 0.8}}\n")
    trained = []
    monkeypatch.setattr(clzoo.train, "train", lambda config, *args, **kwargs: trained.append(config))
    cli.main(["train", str(recipe), "--set", "training.optimizer=adamw", "--output", str(tmp_path / "run")])
    assert trained and trained[0].training.optimizer.name == "adamw"
    assert ("note: --set training.optimizer replaces the whole training.optimizer, leaving out "
            "momentum = 0.8") in capsys.readouterr().err


def test_a_run_folder_lends_its_data_and_image_size_to_eval_embed_compare_and_transfer(tmp_path, capsys):
    import argparse

    run = tmp_path / "run"
    run.mkdir()
    (run / "recipe.yaml").write_text("data: /somewhere/photos\nimage_size: 32\n")
    for command, target in run_reuse.RUN_TARGETS.items():
        args = argparse.Namespace(command=command, data=None, image_size=None, model=None,
                                  model_a=None, preset=None)
        setattr(args, target, str(run))
        run_reuse.run_defaults(args)
        assert (args.data, args.image_size) == ("/somewhere/photos", 32)
    assert "--data /somewhere/photos and --image-size 32, the run's own" in capsys.readouterr().out
    given = argparse.Namespace(command="eval", data="digits", image_size=None, model=str(run))
    run_reuse.run_defaults(given)  # --data given: the run's image_size still applies (mixed-size folders)
    assert (given.data, given.image_size) == ("digits", 32)
    chosen = argparse.Namespace(command="eval", data="digits", image_size=16, model=str(run))
    run_reuse.run_defaults(chosen)
    assert (chosen.data, chosen.image_size) == ("digits", 16)  # what the user typed wins
    bare = argparse.Namespace(command="eval", data=None, image_size=None, model=str(tmp_path / "m.keras"))
    with pytest.raises(ValueError, match="--data is needed: .*m.keras is not a run folder"):
        run_reuse.run_defaults(bare)


def test_a_quick_try_of_a_long_recipe_names_the_flag_typed_and_the_fix(capsys):
    """Issue 85 item 5: `--epochs 1` on an ImageNet recipe blamed `--set training.epochs` (not typed)
    and named no fix for its 10 warm-up epochs."""
    code = cli.main(["train", "supcon/imagenet100", "--epochs", "1", "--data", "digits"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--epochs 1 (over " in err and "--set training.epochs" not in err
    assert "--set training.schedule.warmup_epochs=0" in err


def test_a_damaged_run_recipe_or_image_size_is_one_line_and_a_dangling_link_is_passed_over(tmp_path, capsys):
    """Hostile pass on issue 85's run defaults: `image_size: x` was dropped without a word, a recipe.yaml
    that does not parse was called "not a run folder", and a dangling eval-N link blocked every eval."""
    import argparse

    run = tmp_path / "run"
    run.mkdir()
    (run / "recipe.yaml").write_text("data: digits\nimage_size: x\n")
    args = argparse.Namespace(command="eval", data=None, image_size=None, model=str(run))
    with pytest.raises(ValueError, match=r"recipe.yaml: image_size = 'x' is not a whole number >= 1"):
        run_reuse.run_defaults(args)
    (run / "recipe.yaml").write_text("data: [unclosed\n")
    with pytest.raises(ValueError, match=r"--data is needed: .*recipe.yaml does not read as a recipe"):
        run_reuse.run_defaults(args)
    given = argparse.Namespace(command="eval", data="digits", image_size=None, model=str(run))
    run_reuse.run_defaults(given)
    assert "image_size is not reused" in capsys.readouterr().out
    (run / "eval").mkdir()
    (run / "eval" / "metrics.json").write_text("{}")
    (run / "eval-2").symlink_to(tmp_path / "gone")
    assert run_reuse.unused_report_folder(run / "eval") == run / "eval-3"
