"""Typed recipes: defaults in one place, every bad value refused up front with its key named."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clzoo.eval.records import Baseline
from clzoo.train import DEFAULTS, RecipeError, load_recipe, train
from clzoo.train.builders import build_loss
from tests.data.image_folders import write_image_folder


def test_defaults_and_overrides(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("data: digits\ntraining:\n  epochs: 3\nloss:\n  name: SupConLoss\n")
    config = load_recipe(recipe, ["training.batch_size=64", "loss.temperature=0.2",
                                  "loss.variant=in", "views.flip=false"])
    assert config.name == "r"
    assert config.training.epochs == 3
    assert config.training.batch_size == 64
    assert config.training.optimizer.setting("momentum") == DEFAULTS["training"]["optimizer"]["momentum"]
    assert config.loss.name == "SupConLoss"
    assert config.loss.kwargs == {"temperature": 0.2, "variant": "in"}
    assert config.views == {"flip": False}


@pytest.mark.parametrize("name, temperature", [("SpreadLoss", 0.5), ("SoftTargetInfoNCELoss", 1.0),
                                               ("SINCERELoss", 0.1), ("SupConLoss", 0.1)])
def test_a_loss_keeps_its_own_defaults(name, temperature):
    """Only the arguments a recipe gives reach the loss: no recipe-wide temperature leaks in."""
    config = load_recipe(None, [f"loss.name={name}"])
    assert config.loss.kwargs == {}
    assert build_loss(config).temperature == pytest.approx(temperature)


def test_exponent_floats_are_numbers(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("training:\n  optimizer: lars\n  trust_coefficient: 1e-3\n"
                      "  learning_rate: 5e-2\n")
    config = load_recipe(recipe)
    assert config.training.optimizer.setting("trust_coefficient") == 1e-3
    assert config.training.learning_rate == 0.05


BAD = [  # (override, the key the message must name, a fragment of the reason)
    ("training.epochz=3", "training.epochz", "Did you mean 'epochs'"),
    ("trainig.epochs=3", "trainig", "Did you mean 'training'"),
    ("training.batch_size=0", "training.batch_size", "greater than 0"),
    ("training.batch_size=-8", "training.batch_size", "greater than 0"),
    ("training.batch_size=12.5", "training.batch_size", "integer"),
    ("training.epochs=0", "training.epochs", "greater than 0"),
    ("training.epochs='5'", "training.epochs", "integer"),
    ("training.learning_rate=0", "training.learning_rate", "greater than 0"),
    ("training.learning_rate=-0.1", "training.learning_rate", "greater than 0"),
    ("training.momentum=1.5", "training.momentum", "less than 1"),
    ("training.weight_decay=-1", "training.weight_decay", "greater than or equal to 0"),
    ("training.warmup_epochs=11", "warmup_epochs", "longer than training"),
    ("training.optimizer=adam", "training.optimizer", "Did you mean 'adamw'"),
    ("training.schedule=cosin", "training.schedule", "Did you mean 'cosine'"),
    ("training.strategy=gpu", "training.strategy", "one_device"),
    ("training.deterministic=1", "training.deterministic", "boolean"),
    ("training.checkpoint_every_steps=0", "training.checkpoint_every_steps", "greater than 0"),
    ("eval.knn_headline_k=7", "knn_headline_k", "knn_k"),
    ("eval.knn_k=[]", "eval.knn_k", "at least 1"),
    ("eval.knn_k=[0, 5]", "eval.knn_k", "greater than 0"),
    ("eval.metrics=[knn, probz]", "eval.metrics", "probz"),
    ("eval.baselines=[pixels]", "eval.baselines", "raw_pixels"),
    ("eval.monitor_every=-1", "eval.monitor_every", "greater than or equal to 0"),
    ("model.architecture=resnet21", "model.architecture", "Did you mean 'resnet20'"),
    ("model.encoder_options={depth: 8}", "encoder_options", "argument 'depth' of resnet20"),
    ("model.encoder_options={name: x}", "encoder_options", "the encoder's name is model.architecture"),
    ("model.encoder_options={mean: 0.5}", "encoder_options", "like its default"),
    ("model.embedding_dim=0", "model.embedding_dim", "greater than 0"),
    ("model.head_hidden_dims=[0]", "model.head_hidden_dims", "greater than 0"),
    ("loss.name=SupConLos", "SupConLos", "Did you mean 'SupConLoss'"),
    ("loss.temprature=0.2", "temprature", "Did you mean 'temperature'"),
    ("loss.temperature=-1", "temperature", "positive"),
    ("views.sise=16", "sise", "Did you mean 'size'"),
    ("views.views=0", "views", ">= 1"),
    ("views.recipe=simclrr", "simclrr", "simclr"),
    ("mix.mixup_alpha=-1", "mixup_alpha", ">= 0"),
    ("mix.alpha=1", "alpha", "unknown mix argument"),
    ("task=soft", "task", "soft_target"),
    ("seed=-1", "seed", "greater than or equal to 0"),
    ("seed=4294967296", "seed", "less than 4294967296"),  # failed 40 s later naming no key
    ("seed=1.5", "seed", "integer"),
    ("data=[1, 2]", "data", "string"),
]


@pytest.mark.parametrize("override, key, reason", BAD, ids=[b[0] for b in BAD])
def test_bad_values_are_refused_with_their_key(tmp_path, override, key, reason):
    recipe = tmp_path / "bad.yaml"
    recipe.write_text("training:\n  epochs: 10\n")
    with pytest.raises(RecipeError) as caught:
        load_recipe(recipe, [override])
    message = str(caught.value)
    assert str(recipe) in message and key in message and reason in message, message
    assert "Traceback" not in message


def test_every_problem_is_listed_at_once(tmp_path):
    recipe = tmp_path / "bad.yaml"
    recipe.write_text("training:\n  epochs: 0\n  batch_size: -1\n  lr: 0.1\n")
    with pytest.raises(RecipeError) as caught:
        load_recipe(recipe)
    assert len(caught.value.lines) == 3
    assert all(line.startswith(str(recipe)) for line in caught.value.lines)


@pytest.mark.parametrize("text, reason", [("- a\n- b\n", "mapping"), ("a: [1\n", "not valid YAML"),
                                          (b"\xff\xfe\x00", "not valid YAML")])
def test_unreadable_recipe_files(tmp_path, text, reason):
    recipe = tmp_path / "bad.yaml"
    recipe.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(RecipeError, match=reason):
        load_recipe(recipe)


def test_missing_recipe_and_bad_override(tmp_path):
    with pytest.raises(RecipeError, match="recipe file not found"):
        load_recipe(tmp_path / "missing.yaml")
    with pytest.raises(RecipeError, match="training.epochs=5"):
        load_recipe(None, ["epochs"])


def _folder(root, train, test):
    """`root/train/<train classes>` and `root/test/<test classes>`, two 8x8 PNGs per class."""
    write_image_folder(root, train, per_class=2, splits=("train",))
    return write_image_folder(root, test, per_class=2, splits=("test",))


@pytest.mark.parametrize("layout, reason", [
    ((["a", "b"], ["a", "c"]), "only in train: ['b']; only in test: ['c']"),
    ((["a", "b"], ["a"]), "only in train: ['b']"),
    ((["a"], ["a"]), "at least two"),
    ((["a", "b"], None), "'test' sub-folder"),
])
def test_bad_data_is_refused_before_a_run_folder_exists(tmp_path, layout, reason):
    data = _folder(tmp_path / "data", layout[0], layout[1] or [])
    output = tmp_path / "run"
    with pytest.raises(RecipeError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        train(load_recipe(None, [f"data={data}", "training.batch_size=2"]), output, verbose=0)
    assert not output.exists()


def test_hidden_folders_are_not_classes(tmp_path):
    from clzoo.data import load_split
    from clzoo.data.checks import check_data

    data = _folder(tmp_path / "data", ["a", "b"], ["a", "b"])
    for split in ("train", "test"):
        (data / split / ".ipynb_checkpoints").mkdir()
        (data / split / "a" / ".hidden.png").write_bytes(b"not an image")
    assert check_data(str(data)).class_names == ("a", "b")
    assert load_split(str(data), "train").class_names == ["a", "b"]


def test_batch_larger_than_the_data_leaves_nothing(tmp_path):
    output = tmp_path / "run"
    with pytest.raises(RecipeError, match="training.batch_size = 5000: larger than the 1437"):
        train(load_recipe(None, ["training.batch_size=5000"]), output, verbose=0)
    assert not output.exists()


@pytest.mark.large
def test_cli_prints_one_line_per_problem_and_no_traceback(tmp_path):
    recipe = tmp_path / "bad.yaml"
    recipe.write_text("training:\n  epochz: 3\n  learning_rate: 0\n")
    done = subprocess.run([str(Path(sys.executable).parent / "clzoo"), "train", str(recipe),
                           "--output", str(tmp_path / "run")], capture_output=True, text=True)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith(f"error: {recipe}") for line in lines), lines
    assert not (tmp_path / "run").exists()


def test_typed_overrides_are_used_as_given_not_reparsed(tmp_path):
    # The CLI's flags arrive typed: a data spec that reads as YAML (`tfds:x` is a one-key
    # mapping, `1e3` a float, `null` None) must stay the text given; an int stays an int.
    recipe = load_recipe(None, [("training.epochs", 3), ("data", "null")])
    assert recipe.training.epochs == 3 and recipe.data == "null"
    assert load_recipe(None, ["training.epochs=3"]).training.epochs == 3
    with pytest.raises(RecipeError, match="training.epochs"):
        load_recipe(None, [("training.epochs", "3")])  # typed means typed: a str is refused


def test_encoder_options_reach_the_encoder_and_its_random_init_baseline(monkeypatch):
    import clzoo
    import clzoo.eval.baselines
    from clzoo.data import from_arrays
    from clzoo.train.builders import views_from_config
    from clzoo.train.evaluation import baselines
    from clzoo.train.tasks import TASKS

    options = "model.encoder_options={num_layers: 1, hidden_dim: 48, mlp_dim: 96}"
    recipe = load_recipe(None, ["model.architecture=vit_small_patch4", options, "views.size=8",
                                "eval.baselines=[random_init]"])
    views = views_from_config(recipe.views)
    small = clzoo.models.get_encoder("vit_small_patch4", (8, 8, 3), num_layers=1, hidden_dim=48,
                                     mlp_dim=96).count_params()
    assert small < clzoo.models.get_encoder("vit_small_patch4", (8, 8, 3)).count_params() / 10
    for task in ("contrastive", "soft_target"):
        model = TASKS.get(task)().build_model(recipe, views, 4)
        encoder = TASKS.get(task)().encoder(model)
        assert encoder.count_params() == small and encoder.output_shape == (None, 48), task
    seen = []
    monkeypatch.setattr(clzoo.eval.baselines, "baseline_metrics",
                        lambda train, test, encoder, **kwargs: seen.append(encoder) or
                        {"random_init": Baseline(knn={"k1": 0.5})})
    split = from_arrays(np.zeros((4, 8, 8, 3), np.uint8), np.arange(4) % 2)
    baselines(recipe, split, split, 8, probe=False, verbose=0)
    assert seen[0].count_params() == small


def test_strings_that_read_as_numbers_stay_strings_in_a_runs_recipe_yaml(tmp_path):
    from clzoo.train.run_folder import RunFolder

    folder = tmp_path / "1e5"  # a data folder named like a number
    write_image_folder(folder)
    recipe = load_recipe(None, [("name", "1e-3"), ("data", str(folder)), ("training.learning_rate", 1e-3)])
    run = RunFolder(tmp_path / "run")
    run.prepare(recipe, {}, resuming=False)
    text = (tmp_path / "run" / "recipe.yaml").read_text()
    assert "name: '1e-3'" in text and "learning_rate: 0.001" in text
    stored = load_recipe(tmp_path / "run" / "recipe.yaml", stored=True)
    assert (stored.name, stored.data, stored.training.learning_rate) == ("1e-3", str(folder), 1e-3)
