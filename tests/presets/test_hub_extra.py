"""The `[hub]` extra is light (issue 85 item 7): `hf://` presets load with huggingface_hub alone,
TensorFlow and keras-hub absent, while the keras-hub backbones live in their own `[keras-hub]`
extra (keras-hub requires tensorflow-text, which pins TensorFlow) and say so when it is missing."""

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import clzoo

ROOT = Path(__file__).resolve().parents[2]
HIDE = ROOT / "tests" / "hide_tensorflow" / "sitecustomize.py"
HEAVY = {"tensorflow", "tensorflow-text", "tensorflow-cpu", "keras-hub", "keras-nlp", "tensorflow-hub"}


def _name(requirement):
    """The normalised project name of a requirement string (`keras_hub>=0.20; ...` -> `keras-hub`)."""
    return canonicalize_name(Requirement(requirement).name)


def _always(requirement):
    """Whether pip installs `requirement` here without an extra being asked for."""
    marker = Requirement(requirement).marker
    return marker is None or marker.evaluate({"extra": ""})


def _extras():
    tomllib = pytest.importorskip("tomllib")
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("no pyproject.toml beside the tests (an installed copy of the suite)")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_the_hub_extra_pulls_neither_keras_hub_nor_tensorflow():
    extras = _extras()
    hub = {_name(r) for r in extras["hub"]}
    assert hub == {"huggingface-hub"}, hub
    assert "keras-hub" in {_name(r) for r in extras["keras-hub"]}
    # one level down: what huggingface_hub itself always installs (its extras aside)
    try:
        needs = importlib.metadata.requires("huggingface_hub") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("huggingface_hub is not installed")
    always = {_name(r) for r in needs if _always(r)}
    assert not always & HEAVY, always & HEAVY


def _cached_preset(tmp_path):
    """A preset in a Hugging Face cache under tmp_path/hf, as `snapshot_download` leaves one
    (no network in the tests), and the encoder it was built from."""
    from clzoo.presets import build_preset

    run = tmp_path / "run"
    run.mkdir()
    encoder = clzoo.models.get_encoder("resnet10_narrow", name="encoder")
    encoder.save(run / "encoder.keras")
    (run / "recipe.yaml").write_text(yaml.safe_dump(
        {"name": "tiny", "data": "digits", "model": {"architecture": "resnet10_narrow"},
         "loss": {"name": "SINCERELoss", "temperature": 0.1}}))
    (run / "metrics.json").write_text(json.dumps({"knn_top1_by_k": {"k20": 0.5}, "knn_top1": 0.5,
                                                  "knn_top1_k": 20}))
    repo = tmp_path / "hf" / "hub" / "models--someone--tiny"
    build_preset(run, repo / "snapshots" / ("a" * 40), name="tiny")
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("a" * 40)
    return encoder


# TensorFlow hidden as on a machine without it, keras-hub and tensorflow-text absent.
LOAD = """import importlib.util as u, sys
s = u.spec_from_file_location('hide', sys.argv[1]); s.loader.exec_module(u.module_from_spec(s))
sys.modules['keras_hub'] = sys.modules['tensorflow_text'] = None
import numpy as np, clzoo
e = clzoo.presets.Encoder.from_preset('hf://someone/tiny')
np.save(sys.argv[2], e.predict(np.load(sys.argv[3]), verbose=0))
heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras_hub') and sys.modules[m])
print('loaded', 'huggingface_hub' in sys.modules, heavy)
"""


@pytest.mark.backends("jax")
def test_an_hf_preset_loads_with_huggingface_hub_alone(tmp_path):
    pytest.importorskip("huggingface_hub")
    encoder = _cached_preset(tmp_path)
    x = np.random.default_rng(0).uniform(size=(2, 32, 32, 3)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    env = {**os.environ, "KERAS_BACKEND": keras.backend.backend(), "HF_HOME": str(tmp_path / "hf"),
           "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", LOAD, str(HIDE), str(tmp_path / "out.npy"),
                             str(tmp_path / "x.npy")], env=env, capture_output=True, text=True,
                            timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "loaded True []", result.stdout
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), encoder.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.backends("tensorflow", "jax", "torch")
@pytest.mark.parametrize("architecture", ["hub_resnet18", "hub_resnet50", "vit_small_patch4"])
def test_a_keras_hub_backbone_without_keras_hub_is_one_line_naming_the_extra(architecture, monkeypatch):
    monkeypatch.setitem(sys.modules, "keras_hub", None)
    with pytest.raises(ModuleNotFoundError) as caught:
        clzoo.models.get_encoder(architecture)
    message = str(caught.value)
    assert len(message.splitlines()) == 1 and 'pip install "clzoo[keras-hub]"' in message, message
    assert "TensorFlow" in message and caught.value.__cause__ is None
