"""The README's "Use the losses" block runs as written on every install: with TensorFlow, and on
JAX and PyTorch with TensorFlow hidden (the `[jax]` / `[torch]` installs), data and length shrunk."""

import os
import re
import subprocess
import sys
from pathlib import Path

import keras
import pytest

ROOT = Path(__file__).resolve().parents[1]
HIDE = ROOT / "tests" / "hide_tensorflow" / "sitecustomize.py"


def _block():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Use the losses", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def _shrunk(block):
    """The block on data that ships with scikit-learn (no download), one short epoch."""
    for old, new in (('"tfds:cifar10"', '"digits"'), ("epochs=10", "epochs=1"),
                     ('cifar_resnet("resnet18")', 'cifar_resnet("resnet8")')):
        assert old in block, f"the README block no longer holds {old}; update this test"
        block = block.replace(old, new)
    return block + "\nprint('trained', type(stream).__name__, encoder.output_shape)\n"


def _run(script, hide_tensorflow):
    prelude = ""
    if hide_tensorflow:
        prelude = ("import importlib.util as u\n"
                   f"s = u.spec_from_file_location('hide', {str(HIDE)!r})\n"
                   "s.loader.exec_module(u.module_from_spec(s))\n")
    env = {**os.environ, "KERAS_BACKEND": keras.backend.backend()}
    return subprocess.run([sys.executable, "-c", prelude + script], capture_output=True, text=True,
                          env=env, timeout=900, cwd=ROOT)


@pytest.mark.large
@pytest.mark.backends("tensorflow", "jax", "torch")
def test_the_readme_python_block_runs_on_this_backend():
    hide = keras.backend.backend() != "tensorflow"
    result = _run(_shrunk(_block()), hide_tensorflow=hide)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    expected = "DeviceBatches" if hide else "Dataset"
    assert re.search(rf"trained \w*{expected}\w* \(None, 64\)", result.stdout), result.stdout


@pytest.mark.backends("jax")
def test_clzoo_data_batches_without_tensorflow_is_one_line_naming_the_entry_point():
    result = _run("import clzoo\nclzoo.data.batches", hide_tensorflow=True)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: clzoo.data.batches is built on tf.data"), result.stderr
    assert "clzoo.data.training_batches" in last
    assert "During handling" not in result.stderr  # one error, not a chain


@pytest.mark.backends("tensorflow", "jax", "torch")
def test_training_batches_refuses_views_that_are_no_config_and_arguments_no_stream_takes():
    """Hostile pass: `views={'size': 8}` ended in an AttributeError deep inside, and an unknown
    argument was told to try pipeline='tf_data', which does not take it either."""
    import numpy as np

    import clzoo

    split = clzoo.data.from_arrays(np.zeros((8, 8, 8, 3), np.uint8), np.arange(8) % 2)
    for views in ({"size": 8}, "digits"):
        with pytest.raises(TypeError, match="`views` must be a clzoo.data.ViewConfig or BatchViewConfig"):
            clzoo.data.training_batches(split, batch_size=4, views=views)
    with pytest.raises(TypeError, match="unexpected argument.*colour"):
        clzoo.data.training_batches(split, batch_size=4, views=clzoo.data.ViewConfig(size=8), colour=1)
