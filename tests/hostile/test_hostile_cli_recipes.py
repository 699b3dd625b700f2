"""Hostile recipes, command lines and run folders (issue 23): every kind is refused on one short line
naming the key or argument, before any work and without writing anything, and never by a hang,
a traceback, a silently replaced file or a silently changed run.

Kinds: 1 YAML size / alias bombs, 2 duplicate keys, 3 non-finite numbers, 4 edited run recipes,
5 refused runs leave nothing, 6 empty recipes, 7 bad batch / view sizes and tfds names,
8 inputs checked first (compare, nested class folders, truncated checkpoints), 9 outputs never
overwritten without --overwrite, 10 P x K beyond a class's images, 11 a queue larger than memory.
"""

import os

import keras
import numpy as np
import pytest
import yaml
from PIL import Image

from clzoo import cli
from clzoo.data import class_balanced_indices
from clzoo.data.checks import check_data
from clzoo.data.tf_data_views import ViewConfig
from clzoo.train import RecipeError, load_recipe, validate_recipe
from clzoo.train.run_folder import RunFolder
from tests.data.image_folders import write_image_folder

pytestmark = pytest.mark.timeout(120)  # a YAML bomb must never hang

TINY = {"name": "tiny", "model": {"embedding_dim": 8}, "views": {"size": 8},
        "training": {"epochs": 1, "batch_size": 4},
        "eval": {"knn_k": [1], "knn_headline_k": 1, "metrics": ["knn"], "baselines": []}}


def _main(args, capsys):
    """`clzoo ARGS` in this process: (exit status, stdout, stderr); argparse errors included."""
    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(err, *fragments):
    """`err` is one `error:` line (no traceback, not huge) holding every fragment."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    assert len(lines[0]) <= cli.MAX_ERROR, len(lines[0])
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def _refused(text, tmp_path, *fragments, overrides=()):
    """Load `text` as a recipe file; it must be refused fast, each line short, naming `fragments`."""
    path = tmp_path / "r.yaml"
    path.write_text(text)
    with pytest.raises(RecipeError) as info:  # an expanded document would hang: the module's timeout
        load_recipe(path, overrides)
    joined = "\n".join(info.value.lines)
    assert all(len(line) <= 500 for line in info.value.lines), joined[:2000]
    for fragment in fragments:
        assert fragment in joined, (fragment, joined)
    return joined


def _recipe_file(tmp_path, data, **sections):
    recipe = {**TINY, "data": str(data), **sections}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


@pytest.fixture
def folder(tmp_path):
    """A 2-class image folder of 8 x 8 PNGs (the size `tiny_model` takes), 4 per class and split."""
    return write_image_folder(tmp_path / "data", per_class=4, size=(8, 8))


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A `.keras` encoder (8 x 8 RGB -> 4 features) with a BatchNormalization, and its bytes."""
    root = tmp_path_factory.mktemp("model")
    keras.utils.set_random_seed(0)
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(4, 3)(inputs)
    x = keras.layers.BatchNormalization()(x)
    model = keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(x))
    model.save(root / "encoder.keras")
    return root / "encoder.keras"


# --- 1. YAML bombs: size and aliases limited before expansion; short messages ------------------

def _laughs(levels, width):
    """`levels` anchors, each a list of `width` aliases of the one before: width ** levels values."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return "\n".join(lines) + f"\ntraining: {{epochs: *a{levels - 1}}}\n"


BOMBS = [
    ("billion laughs", _laughs(9, 10), "values once aliases are expanded"),
    ("two levels of a hundred", _laughs(2, 100), "aliases"),
    ("many aliases of a scalar", "a: &a 1\nb: [" + ", ".join(["*a"] * 150) + "]\n", "aliases"),
    ("recursive sequence", "training: &t [*t]\n", "contains itself"),
    ("recursive mapping", "training: &t {epochs: *t}\n", "contains itself"),
    ("deep nesting", "eval: {knn_k: " + "[" * 30000 + "]" * 30000 + "}\n", "nested too deeply"),
    ("over 64 KiB", "# " + "x" * (70 * 1024) + "\ntraining: {epochs: 1}\n", "bytes"),
    ("a long flat list", "eval: {knn_k: [" + ", ".join(["1"] * 12000) + "]}\n", "values"),
]


@pytest.mark.parametrize("name, text, fragment", BOMBS, ids=[b[0] for b in BOMBS])
def test_yaml_bombs_are_refused_before_expansion(name, text, fragment, tmp_path):
    _refused(text, tmp_path, fragment)


def test_an_override_bomb_is_refused(tmp_path):
    value = "[" + ", ".join(["&a [1, 2]"] + ["*a"] * 120) + "]"
    with pytest.raises(RecipeError, match="aliases"):
        load_recipe(None, [f"eval.knn_k={value}"])


@pytest.mark.parametrize("text, key", [
    ("training:\n  epochs: [" + ", ".join(map(str, range(5000))) + "]\n", "training.epochs"),
    ("loss:\n  name: " + "L" * 50000 + "\n", "loss"),
    ("data: " + "d" * 5000 + "\n", "data"),
    ("name: " + "n" * 5000 + "\n", "name"),
    ("views:\n  jitter: [" + ", ".join(["0.4"] * 5000) + "]\n", "views"),
])
def test_errors_never_print_a_huge_value(text, key, tmp_path):
    joined = _refused(text, tmp_path, key)
    assert len(joined) < 1200, len(joined)


def test_the_cli_prints_a_bomb_in_one_short_line(tmp_path, capsys):
    (tmp_path / "bomb.yaml").write_text(_laughs(9, 10))
    code, _, err = _main(["train", tmp_path / "bomb.yaml", "--output", tmp_path / "run"], capsys)
    assert code == 2
    _one_line(err, "values once aliases are expanded")
    assert not (tmp_path / "run").exists()


# --- 2. duplicate keys -----------------------------------------------------------------------

@pytest.mark.parametrize("text, key", [
    ("training:\n  epochs: 3\n  epochs: 4\n", "'training.epochs'"),
    ("training:\n  epochs: 3\ntraining:\n  batch_size: 8\n", "'training'"),
    ("training: {epochs: 3, epochs: 4}\n", "'training.epochs'"),
    ("views:\n  per_view:\n    - {blur_p: 1.0, blur_p: 0.1}\n", "'views.per_view.blur_p'"),
    ("training:\n  epochs: 3\n  \"epochs\": 4\n", "'training.epochs'"),
    ("loss:\n  name: SupConLoss\n  temperature: 0.1\n  temperature: 0.5\n", "'loss.temperature'"),
    ("seed: 1\nseed: 2\n", "'seed'"),
])
def test_duplicate_keys_are_refused(text, key, tmp_path):
    _refused(text, tmp_path, "duplicate key", key)


@pytest.mark.parametrize("args, key", [
    (["--set", "training.epochs=3", "--set", "training.epochs=4"], "training.epochs"),
    (["--set", "seed=1", "--set", "seed=1"], "seed"),
    (["--set", " loss.temperature=0.1", "--set", "loss.temperature =0.2"], "loss.temperature"),
    (["--epochs", "3", "--set", "training.epochs=4"], "training.epochs"),
    (["--data", "digits", "--set", "data=digits"], "data"),
    (["--batch-size", "8", "--set", "training.batch_size=8"], "training.batch_size"),
    (["--strategy", "auto", "--set", "training.strategy=auto"], "training.strategy"),
])
def test_a_key_given_twice_on_the_command_line_is_refused(args, key, tmp_path, capsys):
    recipe = _recipe_file(tmp_path, "digits")
    code, _, err = _main(["train", recipe, *args, "--output", tmp_path / "run"], capsys)
    assert code == 2
    _one_line(err, f"{key} is set twice on the command line")
    assert not (tmp_path / "run").exists()


def test_in_python_a_later_override_wins():
    assert load_recipe(None, ["training.epochs=3", "training.epochs=4"]).training.epochs == 4


def test_a_merge_key_may_be_overridden(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("data: digits\nviews: {<<: {size: 8, flip: false}, size: 16}\n")
    assert load_recipe(path).views == {"size": 16, "flip": False}


# --- 3. non-finite numbers anywhere ----------------------------------------------------------

@pytest.mark.parametrize("text, key", [
    ("training:\n  learning_rate: .inf\n", "training.learning_rate = inf"),
    ("training:\n  learning_rate: .nan\n", "training.learning_rate = nan"),
    ("training:\n  weight_decay: -.inf\n", "training.optimizer.weight_decay = -inf"),
    ("training:\n  warmup_epochs: .inf\n", "training.schedule.warmup_epochs = inf"),
    ("training:\n  final_learning_rate_fraction: .nan\n", "training.schedule.final_learning_rate_fraction"),
    ("loss:\n  name: SupConLoss\n  temperature: .inf\n", "loss.temperature = inf"),
    ("views:\n  jitter: [0.4, .nan, 0.4, 0.1]\n", "views.jitter = nan"),
    ("views:\n  crop_scale: [0.2, .inf]\n", "views.crop_scale = inf"),
    ("task: soft_target\nloss: {name: SoftTargetCrossEntropy}\nmix:\n  mixup_alpha: .inf\n",
     "mix.mixup_alpha = inf"),
    ("model:\n  momentum: .nan\n  queue_size: 64\n", "model.queue.momentum = nan"),
])
def test_non_finite_numbers_are_refused(text, key, tmp_path):
    _refused("data: digits\n" + text, tmp_path, key, "must be a finite number")


def test_non_finite_numbers_from_overrides_and_dicts(tmp_path):
    with pytest.raises(RecipeError, match=r"--set training.learning_rate \(over <defaults>\): "
                                          r"training.learning_rate = inf"):
        load_recipe(None, ["training.learning_rate=.inf"])
    with pytest.raises(RecipeError, match="training.momentum = nan"):
        validate_recipe({"training": {"momentum": float("nan")}})
    with pytest.raises(RecipeError, match="eval.knn_k = inf"):
        validate_recipe({"eval": {"knn_k": [1, float("inf")]}})


# --- 4. a run's recipe.yaml edited, then --resume ----------------------------------------------

@pytest.fixture
def started_run(tmp_path):
    """A run folder as `clzoo train` leaves it after its first checkpoint (a truncated one here)."""
    recipe = validate_recipe({**TINY, "data": "digits"}, "tiny")
    run = RunFolder(tmp_path / "run")
    run.prepare(recipe, {"argv": ["clzoo", "train"]})
    run.checkpoint.write_bytes(b"PK\x03\x04" + b"\0" * 100)  # cut short
    return run, recipe


@pytest.mark.parametrize("edit", [
    lambda r: r["training"].update(epochs=5),
    lambda r: r["loss"].update(name="SupConLoss"),
    lambda r: r["views"].update(flip=False),
    lambda r: r.pop("seed"),
    lambda r: r.update(seed=7),
    lambda r: r["model"].update(embedding_dim=16),
], ids=["epochs", "loss", "views key added", "key removed", "seed", "embedding_dim"])
def test_resume_refuses_an_edited_recipe_yaml(edit, started_run, capsys):
    run, recipe = started_run
    saved = yaml.safe_load((run / "recipe.yaml").read_text())
    edit(saved)
    (run / "recipe.yaml").write_text(yaml.safe_dump(saved))
    with pytest.raises(ValueError, match="recipe.yaml was edited"):
        run.guard(validate_recipe(saved), resume=True)
    code, _, err = _main(["train", "--resume", run.path], capsys)
    assert code == 2
    _one_line(err, "recipe.yaml was edited")
    assert (run / "recipe.yaml").read_text() == yaml.safe_dump(saved)  # left as the user has it


def test_resume_accepts_a_comment_and_checks_the_checkpoint(started_run, capsys):
    run, _ = started_run
    (run / "recipe.yaml").write_text("# resumed after a crash\n" + (run / "recipe.yaml").read_text())
    code, _, err = _main(["train", "--resume", run.path], capsys)
    assert code == 2  # past the recipe check: the truncated checkpoint is named
    _one_line(err, "checkpoint.keras", "truncated")
    assert "File not found" not in err


# --- 5. a refused run leaves nothing behind --------------------------------------------------

def _nested(root):
    (root / "train" / "cat" / "sub").mkdir()
    Image.new("RGB", (4, 4)).save(root / "train" / "cat" / "sub" / "x.png")


def _corrupt(root):
    (root / "train" / "dog" / "bad.png").write_bytes(b"not an image")


def _two_sizes(root):
    Image.new("RGB", (6, 6)).save(root / "test" / "dog" / "big.png")


def _missing_test(root):
    import shutil

    shutil.rmtree(root / "test")


REFUSED_RUNS = [  # (damage to the folder, data spec ({} = the folder), recipe sections, message)
    ("a nested class folder", _nested, "{}", {}, "is a folder inside the class folder"),
    ("an undecodable image", _corrupt, "{}", {}, "bad.png"),
    ("images of two sizes", _two_sizes, "{}", {}, "differ in size"),
    ("no test split", _missing_test, "{}", {}, "'test' sub-folder"),
    ("a batch over the images", None, "{}", {"training": {"epochs": 1, "batch_size": 64}},
     "larger than"),
    ("a label set the folder lacks", None, "{}@cifar2", {}, "cifar2"),
    ("an empty tfds name", None, "tfds:", {}, "no dataset name"),
    ("an unknown tfds name", None, "tfds:no_such_dataset_here", {}, "not a TensorFlow Datasets name"),
]


@pytest.mark.parametrize("name, damage, data, sections, fragment", REFUSED_RUNS,
                         ids=[r[0] for r in REFUSED_RUNS])
def test_a_refused_run_writes_nothing(name, damage, data, sections, fragment, folder, tmp_path,
                                      capsys):
    if damage:
        damage(folder)
    if data.startswith("tfds:"):
        pytest.importorskip("tensorflow_datasets")
    recipe = _recipe_file(tmp_path, data.format(folder), **sections)
    code, _, err = _main(["train", recipe, "--output", tmp_path / "run", "--quiet"], capsys)
    assert code == 2
    _one_line(err, fragment)
    assert not (tmp_path / "run").exists()


# --- 6. empty recipes and a bare `clzoo train` -------------------------------------------------

@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "{}\n", "---\n", "null\n", "~\n"])
def test_an_empty_recipe_is_refused(text, tmp_path, capsys):
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    with pytest.raises(RecipeError, match="the recipe is empty"):
        load_recipe(path)
    code, _, err = _main(["train", path, "--output", tmp_path / "run"], capsys)
    assert code == 2
    _one_line(err, "empty.yaml", "the recipe is empty")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("args", [[], ["--quiet"], ["--set", "training.epochs=1"],
                                  ["--data", "digits"], ["--epochs", "1"]])
def test_train_without_a_recipe_is_refused(args, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = _main(["train", *args], capsys)
    assert code == 2 and not out
    _one_line(err, "needs a recipe YAML", "--resume RUN")
    assert not (tmp_path / "runs").exists()


# --- 7. fractional batch sizes, bad view sizes, bad tfds names ------------------------------

@pytest.mark.parametrize("flag, value", [("--batch-size", "2.5"), ("--batch-size", "0"),
                                         ("--batch-size", "-8"), ("--batch-size", "1e3"),
                                         ("--batch-size", "many"), ("--epochs", "1.5"),
                                         ("--epochs", "0")])
def test_a_bad_whole_number_flag_is_one_line(flag, value, tmp_path, capsys):
    code, _, err = _main(["train", _recipe_file(tmp_path, "digits"), flag, value], capsys)
    assert code == 2
    _one_line(err, flag, f"Received: '{value}'", "whole number")


@pytest.mark.parametrize("command", [
    ["eval", "m", "--data", "digits", "--k", "1,2.5"], ["eval", "m", "--data", "digits", "--shots", "0"],
    ["eval", "m", "--data", "digits", "--probe-epochs", "2.5"],
    ["compare", "a", "b", "--data", "digits", "--resamples", "-1"],
    ["compare", "a", "b", "--data", "digits", "--resamples", "1"],  # a one-point "interval"
    ["compare", "a", "b", "--data", "digits", "--resamples", "99"],
    ["show-views", "--data", "digits", "--images", "0"], ["show-views", "--data", "digits", "--views", "1.5"],
    ["transfer", "p", "--data", "digits", "--learning-rates", "0.1,nan"],
    ["transfer", "p", "--data", "digits", "--epochs", "0"],
])
def test_bad_numbers_on_other_commands_are_one_line(command, capsys):
    code, _, err = _main(command, capsys)
    assert code == 2
    _one_line(err, "argument --", "Received:")


@pytest.mark.parametrize("sections, fragment", [
    ({"training": {"batch_size": 2.5}}, "training.batch_size = 2.5"),
    ({"training": {"batch_size": 0}}, "training.batch_size = 0"),
    ({"training": {"batch_size": "32"}}, "training.batch_size = '32'"),
    ({"views": {"size": 0}}, "`size` must be a whole number in [1, 8192]. Received: size=0"),
    ({"views": {"size": -3}}, "Received: size=-3"),
    ({"views": {"size": 2.5}}, "Received: size=2.5"),
    ({"views": {"size": True}}, "Received: size=True"),
    ({"views": {"size": "16"}}, "Received: size='16'"),
    ({"views": {"views": 0}}, "Received: views=0"),
    ({"views": {"recipe": "supcon", "size": -1}}, "Received: size=-1"),
    ({"views": {"size": 10**23}}, f"`size` must be a whole number in [1, 8192]. Received: size={10**23}"),
    ({"views": {"recipe": "airbench", "size": 8193}}, "Received: size=8193"),
    ({"views": {"crop_ratio": [-1, 2]}}, "crop_ratio"),
])
def test_bad_batch_and_view_sizes_name_the_key(sections, fragment):
    with pytest.raises(RecipeError) as info:
        validate_recipe({"data": "digits", **sections})
    assert len(info.value.lines) == 1 and fragment in info.value.lines[0], info.value.lines


@pytest.mark.parametrize("item, fragment", [
    ("views.size=0", "`size` must be a whole number in [1, 8192]. Received: size=0"),
    ("views.size=-4", "Received: size=-4"), ("views.size=2.5", "Received: size=2.5"),
    ("views.size=100000000000000000000000", "in [1, 8192]. Received: size=100000000000000000000000"),
    ("training.batch_size=2.5", "--set training.batch_size (over "),
    ("training.batch_size=-1", "training.batch_size = -1: "),
])
def test_a_bad_size_from_the_command_line(item, fragment, tmp_path, capsys):
    code, _, err = _main(["train", _recipe_file(tmp_path, "digits"), "--set", item,
                          "--output", tmp_path / "run"], capsys)
    assert code == 2
    _one_line(err, fragment)
    assert not (tmp_path / "run").exists()
    with pytest.raises(ValueError, match="`size` must be a whole number"):
        ViewConfig(size=0)


@pytest.mark.parametrize("data, fragment", [
    ("tfds:", "no dataset name"), ("tfds:   ", "no dataset name"),
    ("tfds:no_such_dataset_here", "not a TensorFlow Datasets name"),
    ("tfds:CIFAR10", "Did you mean 'cifar10'"), ("tfds:mnistt", "Did you mean 'mnist'"),
    ("tfds:cifar10/no_such_config", "tfds cannot build"),
    ("tfds:cifar10:99.0.0", "tfds cannot build"),
])
def test_bad_tfds_names_are_one_line_before_any_download(data, fragment, tiny_model, tmp_path,
                                                         capsys):
    pytest.importorskip("tensorflow_datasets")
    with pytest.raises(ValueError, match=fragment):
        check_data(data)
    code, out, err = _main(["eval", tiny_model, "--data", data, "--output", tmp_path / "e"], capsys)
    assert code == 2 and "[clzoo eval]" not in out and not (tmp_path / "e").exists()
    _one_line(err, f"--data {data!r}", fragment)


# --- 8. inputs checked first; nested class folders; truncated checkpoints ----------------------

def _truncated(tiny_model, tmp_path, name="encoder.keras"):
    data = tiny_model.read_bytes()
    path = tmp_path / name
    path.write_bytes(data[: len(data) // 2])
    return path


@pytest.mark.parametrize("which", ["a missing B", "a missing A", "a truncated B", "a run without a model",
                                   "a missing data folder"])
def test_compare_checks_every_input_before_evaluating(which, tiny_model, folder, tmp_path, capsys):
    models, data = [tiny_model, tiny_model], folder
    if which == "a missing B":
        models[1] = tmp_path / "missing"
    elif which == "a missing A":
        models[0] = tmp_path / "missing.keras"
    elif which == "a truncated B":
        models[1] = _truncated(tiny_model, tmp_path)
    elif which == "a run without a model":
        (tmp_path / "empty_run").mkdir()
        models[1] = tmp_path / "empty_run"
    else:
        data = tmp_path / "no_data"
    out = tmp_path / "cmp"
    code, stdout, err = _main(["compare", *models, "--data", data, "--metrics", "knn", "--k", "1",
                               "--output", out], capsys)
    assert code == 2 and "[clzoo eval]" not in stdout and not out.exists()
    _one_line(err)


@pytest.mark.parametrize("layout", ["train/cat/sub/x.png", "test/dog/deeper/still/x.png",
                                    "train/cat/empty_sub/", "train/dog/link_to_dir"])
def test_nested_class_folders_are_refused(layout, folder):
    target = folder / layout
    if layout.endswith("link_to_dir"):
        os.symlink(folder / "train" / "cat", target)
    elif layout.endswith("/"):
        target.mkdir()
    else:
        target.parent.mkdir(parents=True)
        Image.new("RGB", (4, 4)).save(target)
    nested = folder / "/".join(layout.split("/")[:3])
    with pytest.raises(ValueError, match="is a folder inside the class folder") as info:
        check_data(str(folder))
    assert str(nested) in str(info.value)


def test_hidden_folders_in_a_class_folder_are_still_ignored(folder):
    (folder / "train" / "cat" / ".ipynb_checkpoints").mkdir()
    assert check_data(str(folder)).class_names == ("cat", "dog")


@pytest.mark.parametrize("command", [
    ["eval", "{model}", "--data", "{data}", "--metrics", "knn", "--k", "1", "--output", "{out}"],
    ["eval", "{run}", "--data", "{data}", "--metrics", "knn", "--k", "1", "--output", "{out}"],
    ["eval", "{run}", "--data", "{data}", "--space", "projection", "--output", "{out}"],
    ["embed", "{model}", "--data", "{data}", "--output", "{out}.npz"],
    ["export", "{model}", "--output", "{out}"],
    ["compare", "{run}", "{run}", "--data", "{data}", "--output", "{out}"],
])
def test_a_truncated_checkpoint_is_named_as_truncated(command, tiny_model, folder, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    _truncated(tiny_model, run, "encoder.keras")
    _truncated(tiny_model, run, "checkpoint.keras")
    model = _truncated(tiny_model, tmp_path, "model.keras")
    args = [a.format(model=model, run=run, data=folder, out=tmp_path / "out") for a in command]
    code, _, err = _main(args, capsys)
    assert code == 2
    _one_line(err, "truncated")
    assert "File not found" not in err and not list(tmp_path.glob("out*"))


def test_push_of_a_truncated_run_is_named(tiny_model, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    _truncated(tiny_model, run, "encoder.keras")
    (run / "recipe.yaml").write_text(yaml.safe_dump({"name": "t", "data": "digits"}))
    (run / "metrics.json").write_text("{}")
    code, _, err = _main(["push", run, "hf://owner/repo", "--dry-run", tmp_path / "out"], capsys)
    assert code == 2
    _one_line(err, "truncated")


# --- 9. outputs are never replaced without --overwrite --------------------------------------

def _taken(path, folder):
    if folder:
        path.mkdir()
        (path / "keep.txt").write_text("mine")
        return path / "keep.txt"
    path.write_text("mine")
    return path


OUTPUTS = [  # (command, output name, a folder?)
    (["eval", "{model}", "--data", "{data}", "--output", "{out}"], "report", True),
    (["embed", "{model}", "--data", "{data}", "--output", "{out}"], "e.npz", False),
    (["export", "{model}", "--output", "{out}"], "served", True),
    (["export", "{model}", "--format", "litert", "--output", "{out}"], "e.tflite", False),
    (["compare", "{model}", "{model}", "--data", "{data}", "--output", "{out}"], "cmp", True),
    (["show-views", "--data", "{data}", "--output", "{out}"], "views.png", False),
    (["push", "{run}", "hf://owner/repo", "--dry-run", "{out}"], "preset", True),
    (["transfer", "no_such_preset", "--data", "{data}", "--output", "{out}"], "t.json", False),
]


@pytest.mark.parametrize("command, name, is_folder", OUTPUTS, ids=[o[0][0] + "-" + o[1] for o in OUTPUTS])
def test_an_existing_output_is_refused_without_overwrite(command, name, is_folder, tiny_model,
                                                         folder, tmp_path, capsys):
    kept = _taken(tmp_path / name, is_folder)
    args = [a.format(model=tiny_model, data=folder, run=tmp_path / "run", out=tmp_path / name)
            for a in command]
    code, out, err = _main(args, capsys)
    assert code == 2 and "[clzoo eval]" not in out
    if "litert" in command and "needs" in err:
        pytest.skip("LiteRT export is not available here")
    _one_line(err, str(tmp_path / name), "exists already", "--overwrite")
    assert kept.read_text() == "mine"


def test_the_default_eval_folder_written_by_train_is_not_replaced(tiny_model, folder, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "encoder.keras").write_bytes(tiny_model.read_bytes())
    kept = _taken(run / "eval", True)
    code, out, err = _main(["eval", run, "--data", folder, "--metrics", "knn", "--k", "1"], capsys)
    assert code == 0, err  # a second look writes beside it (issue 85), never over it
    assert f"writing {run / 'eval-2'}" in out and (run / "eval-2" / "metrics.json").is_file()
    assert kept.read_text() == "mine"


def test_a_file_where_a_folder_goes_is_refused_even_with_overwrite(tiny_model, folder, tmp_path, capsys):
    (tmp_path / "report").write_text("mine")
    code, _, err = _main(["eval", tiny_model, "--data", folder, "--output", tmp_path / "report",
                          "--overwrite"], capsys)
    assert code == 2
    _one_line(err, "is a file; a folder is written there")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "notes.txt").write_text("mine")
    code, _, err = _main(["export", tiny_model, "--output", tmp_path / "plain", "--overwrite"], capsys)
    assert code == 2
    _one_line(err, "holds no SavedModel")
    assert (tmp_path / "plain" / "notes.txt").read_text() == "mine"


def test_overwrite_replaces_an_embeddings_file(tiny_model, folder, tmp_path, capsys):
    out = tmp_path / "e.npz"
    out.write_text("old")
    code, _, err = _main(["embed", tiny_model, "--data", folder, "--output", out, "--overwrite"], capsys)
    assert code == 0, err
    assert np.load(out)["embeddings"].shape == (16, 4)


# --- 10. P x K beyond a class's images ----------------------------------------------------------

@pytest.mark.parametrize("labels, p, k, fragment", [
    (np.repeat(np.arange(4), 3), 2, 4, "exceeds the 3 images of class 0"),
    (np.repeat(np.arange(4), 3), 4, 100, "exceeds the 3 images"),
    (np.array([0] * 50 + [1] * 50 + [2]), 2, 2, "exceeds the 1 images of class 2"),
    (np.array([0] * 8 + [5] * 8 + [9] * 3), 2, 4, "of class 9"),
    (np.array([3, 3, 7, 7, 7]), 1, 3, "of class 3 (1 class(es) have fewer than 3)"),
])
def test_pk_batches_never_repeat_an_image(labels, p, k, fragment):
    with pytest.raises(ValueError, match="samples_per_class") as info:
        class_balanced_indices(labels, p, k)
    assert fragment in str(info.value)


def test_pk_batches_at_the_limit_have_distinct_images():
    labels = np.array([0] * 3 + [1] * 5 + [2] * 3)
    for batch in class_balanced_indices(labels, 3, 3, seed=2).take(20):
        assert len(set(batch.numpy().tolist())) == 9


# --- 11. a memory queue larger than the machine -----------------------------------------------

@pytest.mark.parametrize("model, training", [
    ({"queue_size": 1_000_000, "embedding_dim": 16_384}, {}),
    ({"queue_size": 1_000_000, "embedding_dim": 32_768}, {}),  # widths are bounded at 32,768
    ({"queue_size": 1_000_000}, {"batch_size": 1_000_000}),
    ({"queue_size": 1_000_000, "embedding_dim": 32_768, "momentum": 0.99}, {}),
])
def test_a_queue_over_the_memory_is_refused_at_the_check(model, training):
    with pytest.raises(RecipeError, match=f"model.queue.size = {model['queue_size']}") as info:
        validate_recipe({"data": "digits", "loss": {"name": "SupConLoss"}, "model": model,
                         "training": training})
    assert "GiB available" in str(info.value)


def test_the_queue_check_uses_the_available_memory(monkeypatch):
    sections = {"loss": {"name": "SupConLoss"}, "model": {"queue_size": 65536}}
    from clzoo.data import memory_budget

    monkeypatch.setattr(memory_budget, "available_memory", lambda: 2**34)  # 16 GiB
    assert validate_recipe(sections).model.queue.size == 65536  # about 0.4 GiB: fine
    monkeypatch.setattr(memory_budget, "available_memory", lambda: 2**28)  # 256 MiB
    with pytest.raises(RecipeError, match=r"--set model.queue_size \(over <defaults>\): "
                                          r"model.queue.size = 65536"):
        load_recipe(None, ["loss.name=SupConLoss", "model.queue_size=65536"])
    monkeypatch.setattr(memory_budget, "available_memory", lambda: None)  # unknown: not refused
    assert validate_recipe(sections).model.queue.size == 65536


def test_the_queue_memory_estimate():
    recipe = validate_recipe({"loss": {"name": "SupConLoss"}, "model": {"queue_size": 1000,
                              "embedding_dim": 64}, "training": {"batch_size": 10}})
    from clzoo.parts.queue import queue_bytes

    assert recipe.model.queue.size == 1000
    assert queue_bytes(1000, 64, 10 * 2) == 4 * 1000 * (64 + 1 + 3 * 10 * 2)
