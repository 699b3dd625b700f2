"""Issue 86 (hostile round 7), files: `benchmarks/gpu/pack.sh --dest` replaces only an earlier
pack (item 4), a `.keras` file whose part config holds a key the part does not take is refused in
one line (item 8), and a checkpoint saved with `jit_compile=True` loads eager on torch (item 11b).
The environment's own `pyvenv.cfg` as an output (item 10) is in tests/test_installed_outputs.py."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import keras
import pytest

import clzoo
import clzoo.saving
from clzoo import cli
from clzoo.parts.auxiliary import AuxiliaryPart
from clzoo.parts.grad_cache import GradCacheStep
from clzoo.parts.online_probe import OnlineLinearProbe
from clzoo.parts.queue import QueuePart
from tests.train.tiny_data import write_tiny_digits

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "benchmarks" / "gpu" / "pack.sh"
MARK = ".clzoo-gpu-pack"


# --- item 4: pack.sh --dest / --data ------------------------------------------------------------

@pytest.fixture
def images(tmp_path):
    """A two-class image folder with train/ and test/ (1 image a class and split is packed)."""
    return Path(write_tiny_digits(tmp_path / "images", train=8, test=4, classes=2))


def _pack(*args, cwd):
    return subprocess.run(["bash", str(PACK), "--no-wheels", "--subset", "1", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def _refused(out, names):
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and str(names) in lines[0], out.stderr


def test_pack_refuses_a_dest_that_holds_the_users_files(images, tmp_path):
    projects = tmp_path / "projects"
    (projects / "thesis").mkdir(parents=True)
    (projects / "thesis" / "notes.txt").write_text("mine")
    _refused(_pack("--data", str(images), "--dest", str(projects), cwd=tmp_path), projects)
    assert (projects / "thesis" / "notes.txt").read_text() == "mine"
    assert not (tmp_path / "projects.new").exists()
    _refused(_pack("--data", str(images), "--dest", str(images), cwd=tmp_path), images)  # `--dest data`
    assert sorted(p.name for p in images.iterdir()) == ["test", "train"]
    # an earlier pack with a file of the user's added is no longer only a pack
    pack = tmp_path / "pack"
    assert _pack("--data", str(images), "--dest", str(pack), cwd=tmp_path).returncode == 0
    (pack / "keep.txt").write_text("mine")
    _refused(_pack("--data", str(images), "--dest", str(pack), cwd=tmp_path), pack)
    assert (pack / "keep.txt").read_text() == "mine"


def test_pack_keeps_a_folder_named_as_a_packs_file_and_refuses_a_dest_inside_the_data(images, tmp_path):
    """Hostile pass on this change: a marker beside folders named cifar10.tar.xz / wheels.txt holding
    the user's files passed the name-only check and was deleted; --dest inside --data packed itself."""
    trick = tmp_path / "trick"
    (trick / "cifar10.tar.xz").mkdir(parents=True)
    (trick / "cifar10.tar.xz" / "thesis.tex").write_text("precious")
    (trick / ".clzoo-gpu-pack").write_text("")
    _refused(_pack("--data", str(images), "--dest", str(trick), cwd=tmp_path), trick)
    assert (trick / "cifar10.tar.xz" / "thesis.tex").read_text() == "precious"
    inside = images / "train" / "zz"
    _refused(_pack("--data", str(images), "--dest", str(inside), cwd=tmp_path), "lies inside --data")
    assert not inside.exists() and not inside.with_name("zz.new").exists()


def test_pack_resolves_links_and_packs_a_class_whose_name_has_a_space(images, tmp_path):
    """Second hostile pass: --dest reached through a link into --data packed its own work folder,
    and a class folder named "a b" split into two names that find could not read."""
    import tarfile

    (tmp_path / "link").symlink_to(images)
    _refused(_pack("--data", str(images), "--dest", str(tmp_path / "link" / "train" / "zz"), cwd=tmp_path),
             "lies inside --data")
    assert not (images / "train" / "zz").exists() and not (images / "train" / "zz.new").exists()
    (images / "train" / "0").rename(images / "train" / "a b")
    out = _pack("--data", str(images), "--dest", str(tmp_path / "pack"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("4 images packed")  # one a class and split: 2 classes x 2 splits
    with tarfile.open(tmp_path / "pack" / "cifar10.tar.xz") as archive:
        assert any(name.startswith("cifar10/train/a b/") for name in archive.getnames())


def test_pack_reads_relative_paths_from_the_callers_folder(images, tmp_path):
    out = _pack("--data", "images", "--dest", "out", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "4 images packed" in out.stdout
    assert (tmp_path / "out" / "cifar10.tar.xz").is_file() and (tmp_path / "out" / MARK).is_file()
    assert not (ROOT / "out").exists() and not (ROOT / "out.new").exists()


@pytest.mark.parametrize("flag", ["--dest", "--data"])
def test_pack_refuses_an_empty_path(images, tmp_path, flag):
    other = ["--data", str(images)] if flag == "--dest" else ["--dest", str(tmp_path / "p")]
    out = _pack(*other, flag, "", cwd=tmp_path)
    _refused(out, f"{flag} takes a folder")
    assert not (tmp_path / ".new").exists() and not (ROOT / ".new").exists()
    assert not (tmp_path / "p").exists()


def test_pack_replaces_an_earlier_pack_or_an_empty_folder(images, tmp_path):
    pack = tmp_path / "pack"
    pack.mkdir()  # empty: fine
    for _ in range(2):  # then over the pack it wrote
        out = _pack("--data", str(images), "--dest", str(pack), cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        (pack / "wheels" / "optree-0.20.0-cp312-cp312-manylinux_2_17_x86_64.whl").write_bytes(b"")
    assert sorted(p.name for p in pack.iterdir()) == sorted([MARK, "cifar10.tar.xz", "wheels"])
    # a pack in progress left by an interrupted run is replaced; anything else there is refused
    (tmp_path / "pack.new").mkdir()
    (tmp_path / "pack.new" / MARK).write_text("")
    assert _pack("--data", str(images), "--dest", str(pack), cwd=tmp_path).returncode == 0
    (tmp_path / "pack.new").mkdir()
    (tmp_path / "pack.new" / "mine.txt").write_text("mine")
    _refused(_pack("--data", str(images), "--dest", str(pack), cwd=tmp_path), tmp_path / "pack.new")
    assert (tmp_path / "pack.new" / "mine.txt").read_text() == "mine"


# --- item 8: a part config key the part does not take ------------------------------------------

def _saved(path, part, compile_jit=None):
    keras.utils.set_random_seed(0)
    encoder = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(6)])
    head = clzoo.models.ProjectionHead(hidden_dims=(5,), output_dim=3)
    model = clzoo.models.ContrastiveModel(encoder, head, parts=[part] if part else [])
    model.build((None, 2, 8, 8, 3))
    if compile_jit is not None:
        model.compile(optimizer="sgd", loss=clzoo.losses.SupConLoss(), jit_compile=compile_jit)
    model.save(path)
    return path


def _tampered(path, edit):
    """`path` with its config.json's first part config passed through `edit`, as a new file."""
    with zipfile.ZipFile(path) as archive:
        items = {item.filename: archive.read(item) for item in archive.infolist()}
    config = json.loads(items["config.json"])
    edit(config["config"]["parts"][0]["config"])
    items["config.json"] = json.dumps(config).encode()
    out = path.with_name(f"tampered_{path.name}")
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in items.items():
            archive.writestr(name, data)
    return out


PARTS = [(QueuePart(16, 0.9), "queue", "QueuePart", "size, momentum"),
         (GradCacheStep(4), "grad_cache", "GradCacheStep", "chunk_size"),
         (AuxiliaryPart(classes=2), "auxiliary", "AuxiliaryPart", "classes, weight"),
         (OnlineLinearProbe(classes=2), "online_probe", "OnlineLinearProbe", "classes")]


@pytest.mark.backends("tensorflow", "jax", "torch")
@pytest.mark.parametrize("part, name, kind, takes", PARTS, ids=[p[1] for p in PARTS])
def test_a_part_config_key_the_part_does_not_take_is_one_line(part, name, kind, takes, tmp_path):
    bad = _tampered(_saved(tmp_path / "model.keras", part), lambda config: config.update(x=1))
    says = (rf"^the \.keras file's {name} config has key 'x' that {kind} does not take "
            rf"\(it takes: {takes}.*\)$")
    for load in (keras.saving.load_model, clzoo.saving.load_model):
        with pytest.raises(ValueError, match=says):
            load(bad)


@pytest.mark.backends("tensorflow", "jax", "torch")
def test_a_part_config_missing_a_key_is_one_line(tmp_path):
    bad = _tampered(_saved(tmp_path / "model.keras", QueuePart(16)), lambda config: config.pop("size"))
    with pytest.raises(ValueError, match=r"^the \.keras file's queue config lacks key 'size' that "
                                         r"QueuePart needs \(it takes: size, momentum\)$"):
        clzoo.saving.load_model(bad)


@pytest.mark.backends("tensorflow", "jax", "torch")
def test_embed_and_eval_report_the_tampered_part_in_one_line(tmp_path, capsys):
    bad = _tampered(_saved(tmp_path / "model.keras", QueuePart(16, 0.9)), lambda c: c.update(x=1))
    data = write_tiny_digits(tmp_path / "data", train=8, test=4, classes=2)
    for args in (["embed", str(bad), "--data", data, "--output", str(tmp_path / "e.npz")],
                 ["eval", str(bad), "--data", data, "--output", str(tmp_path / "eval")]):
        assert cli.main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "queue config has key 'x' that QueuePart does not take" in err[0], err
    assert not (tmp_path / "e.npz").exists()


# --- item 11b: jit_compile of a checkpoint loaded on torch -------------------------------------

_LOAD_ON_TORCH = """
import sys, keras, clzoo.saving
contrastive = keras.saving.load_model(sys.argv[1])
classifier = clzoo.saving.load_model(sys.argv[2])
print(keras.backend.backend(), contrastive.jit_compile, classifier.jit_compile)
"""


@pytest.mark.backends("tensorflow")  # its process picks torch: once is enough
def test_a_checkpoint_saved_with_jit_compile_loads_eager_on_torch(tmp_path):
    """A JAX run's checkpoint.keras keeps `jit_compile=True` in its compile config; loaded on torch
    with Keras' own load_model it sent the next `fit` through torch.compile."""
    contrastive = _saved(tmp_path / "checkpoint.keras", QueuePart(16), compile_jit=True)
    inputs = keras.Input((4,))
    classifier = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    classifier.compile(optimizer="sgd", loss="mse", jit_compile=True)
    classifier.save(tmp_path / "classifier.keras")
    env = {**os.environ, "KERAS_BACKEND": "torch"}
    out = subprocess.run([sys.executable, "-c", _LOAD_ON_TORCH, str(contrastive),
                          str(tmp_path / "classifier.keras")], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-3:] == ["torch", "False", "False"], out.stdout


# --- round 7 follow-up: a part added to the config without its weights -------------------------

def _with_part_added(path, added):
    """`path` with `added` (a serialized part) appended to its config's parts, as a new file."""
    with zipfile.ZipFile(path) as archive:
        items = {item.filename: archive.read(item) for item in archive.infolist()}
    config = json.loads(items["config.json"])
    config["config"]["parts"].append(added)
    items["config.json"] = json.dumps(config).encode()
    out = path.with_name(f"added_{path.name}")
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in items.items():
            archive.writestr(name, data)
    return out


@pytest.mark.backends("tensorflow")
def test_a_part_added_without_its_weights_is_one_line(tmp_path, capsys):
    """Keras said "A total of 1 objects could not be loaded ... Layer 'online_probe' expected 2
    variables" over six lines, after a warning about the optimizer's variables."""
    saved = _saved(tmp_path / "checkpoint.keras", QueuePart(16, 0.9), compile_jit=False)
    bad = _with_part_added(saved, {"class_name": "online_probe", "config": {"classes": 2}})
    says = "the .keras file's config names parts whose weights it does not hold: online_probe"
    with pytest.raises(ValueError) as caught:
        clzoo.saving.load_model(bad)
    assert str(caught.value) == f"{bad}: {says}; the file was edited or is damaged"
    data = write_tiny_digits(tmp_path / "data", train=8, test=4, classes=2)
    for args in (["embed", str(bad), "--data", data, "--output", str(tmp_path / "e.npz")],
                 ["eval", str(bad), "--data", data, "--output", str(tmp_path / "eval")]):
        assert cli.main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and says in err[0] and str(bad) in err[0], err
    assert not (tmp_path / "e.npz").exists()


@pytest.mark.backends("tensorflow")
def test_an_auxiliary_classifier_added_without_its_weights_is_named(tmp_path):
    saved = _saved(tmp_path / "model.keras", OnlineLinearProbe(classes=2))
    bad = _with_part_added(saved, {"class_name": "auxiliary", "config": {"classes": 2}})
    with pytest.raises(ValueError, match=r"weights it does not hold: auxiliary; the file was edited"):
        clzoo.saving.load_model(bad)
    assert isinstance(clzoo.saving.load_model(saved), clzoo.models.ContrastiveModel)  # untouched loads
