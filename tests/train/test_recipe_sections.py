"""Issue 60 item 1: `training.optimizer` / `training.schedule` as `{name, **settings}` sections that
build what they name, and the key-translation table that keeps every earlier recipe loading."""

import json
from pathlib import Path

import pytest
import yaml

from clzoo.train import RecipeError, load_recipe, validate_recipe
from clzoo.train.recipe_upgrade import MOVED, upgrade

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted((ROOT / "recipes").rglob("*.yaml"))
PRESET_RECIPES = sorted((ROOT / "clzoo/presets/builtin").glob("*/metadata.json"))  # = pretrained/


def _stored_recipe(metadata):
    return json.loads(metadata.read_text())["recipe"]


def _check_translated(raw, recipe):
    """Each flat key the file writes is its section's setting now, with the value written (or,
    for a key the named factory does not take, absent and at its earlier default)."""
    training = raw.get("training") or {}
    dumped = recipe.to_dict()["training"]
    for key, value in training.items():
        if f"training.{key}" in MOVED:
            section = dumped[MOVED[f"training.{key}"].split(".")[1]]
            assert section.get(key, value) == value, key
    for section in ("optimizer", "schedule"):
        written = training.get(section)
        name = written if isinstance(written, str) else (written or {}).get("name")
        assert dumped[section]["name"] == (name or {"optimizer": "sgd", "schedule": "cosine"}[section])


def test_the_translation_is_checked_on_real_recipes():
    assert len(RECIPES) >= 40 and len(PRESET_RECIPES) >= 4


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: str(p.relative_to(ROOT / "recipes")))
def test_every_recipe_loads_and_reads_back_the_same_in_sections(path):
    recipe = load_recipe(path)
    _check_translated(yaml.safe_load(path.read_text()), recipe)
    assert validate_recipe(recipe.to_dict()).to_dict() == recipe.to_dict()  # sections read back


@pytest.mark.parametrize("path", PRESET_RECIPES, ids=lambda p: p.parts[-2])
def test_every_preset_stored_recipe_loads(path):
    raw = _stored_recipe(path)
    recipe = validate_recipe(raw, stored=True)  # a stored record: inert flat keys dropped
    _check_translated(raw, recipe)
    assert validate_recipe(recipe.to_dict()).to_dict() == recipe.to_dict()


def test_the_flat_and_the_section_spellings_build_the_same_recipe():
    flat = {"optimizer": "lookahead_sgd", "momentum": 0.85, "nesterov": True, "lookahead_every": 5,
            "schedule": "linear", "warmup_epochs": 2, "final_learning_rate_fraction": 0.07}
    sections = {"optimizer": {"name": "lookahead_sgd", "momentum": 0.85, "nesterov": True,
                              "lookahead_every": 5},
                "schedule": {"name": "linear", "warmup_epochs": 2, "final_learning_rate_fraction": 0.07}}
    a, b = validate_recipe({"training": flat}), validate_recipe({"training": sections})
    assert a.to_dict() == b.to_dict()
    assert a.training.optimizer.setting("momentum") == 0.85
    assert a.training.optimizer.setting("weight_decay") == 1e-4  # the factory's default
    assert upgrade({"training": {"epochs": 3}}) == ({"training": {"epochs": 3}, "recipe_version": 2}, [])


@pytest.mark.parametrize("overrides, expected", [
    (["training.momentum=0.5"], 0.5),  # a flat override on a file with the section
    (["training.optimizer.momentum=0.6"], 0.6),
])
def test_overrides_meet_the_recipe_in_either_spelling(tmp_path, overrides, expected):
    for training in ({"optimizer": {"name": "sgd", "momentum": 0.8}}, {"optimizer": "sgd", "momentum": 0.8}):
        path = tmp_path / "r.yaml"
        path.write_text(yaml.safe_dump({"training": training}))
        assert load_recipe(path, overrides).training.optimizer.settings["momentum"] == expected


@pytest.mark.parametrize("training, words", [
    ({"optimizer": {"name": "sgd", "momentum": 1.0}},
     "training.optimizer.momentum = 1.0: must be greater than or equal to 0 and less than 1"),
    ({"optimizer": "sgd", "momentum": 1.0}, "training.optimizer.momentum = 1.0: must be greater"),
    ({"optimizer": {"name": "sgd", "momentun": 0.5}}, "unknown training.optimizer argument 'momentun' of "
     "sgd; known: momentum, nesterov, weight_decay. Did you mean 'momentum'"),
    ({"optimizer": {"name": "sdg"}}, "name 'sdg': must be one of .*Did you mean 'sgd'"),
    ({"optimizer": {"name": "sgd", "nesterov": 1}}, "training.optimizer.nesterov = 1: must be a bool"),
    ({"optimizer": {"name": "adamw", "weight_decay": "0.1"}}, "weight_decay = '0.1': must be a float"),
    ({"optimizer": {"name": "sgd", "momentum": 0.4}, "momentum": 0.5},
     "training.optimizer.momentum is given twice, as training.momentum and in its section"),
    ({"optimizer": "adamw", "momentum": 0.5}, "momentum is a setting of optimizer sgd, lookahead_sgd "
     "and lars, not adamw"),
    ({"schedule": {"name": "cosine", "warmup_start_fraction": 2.0}},
     "training.schedule.warmup_start_fraction = 2.0: must be greater than or equal to 0 and less"),
    ({"schedule": {"name": "cosine", "warmup_epochs": 1e-45}}, "outside float32's range"),
    ({"optimizer": 5}, "training.optimizer = 5: Input should be a valid dictionary"),
])
def test_a_section_is_checked_by_its_factory_in_one_line(training, words):
    with pytest.raises(RecipeError, match=words) as caught:
        validate_recipe({"training": training})
    assert len(caught.value.lines) == 1


def test_a_new_optimizer_setting_needs_no_recipe_field():
    """A user's optimizer with a setting no built-in takes: its factory and registration only."""
    import keras

    from clzoo.optimizers.registry import OPTIMIZERS
    from clzoo.train.builders import build_optimizer

    def centered_rmsprop(learning_rate, rho=0.9):
        return keras.optimizers.RMSprop(learning_rate, rho=rho, centered=True)

    OPTIMIZERS.register("test_centered_rmsprop", centered_rmsprop)
    try:
        recipe = validate_recipe({"training": {"optimizer": {"name": "test_centered_rmsprop", "rho": 0.8},
                                               "schedule": "constant"}})
        optimizer = build_optimizer(recipe, steps_per_epoch=4)
        assert isinstance(optimizer, keras.optimizers.RMSprop) and optimizer.rho == 0.8
        assert recipe.to_dict()["training"]["optimizer"] == {"name": "test_centered_rmsprop", "rho": 0.8}
        with pytest.raises(RecipeError, match="unknown training.optimizer argument 'roh'"):
            validate_recipe({"training": {"optimizer": {"name": "test_centered_rmsprop", "roh": 0.8}}})
    finally:
        OPTIMIZERS._entries.pop("test_centered_rmsprop")  # the registry has no public removal


def _recipe_keys_tool():
    """docs/recipe_keys.py, the docs tool that writes docs/recipe-keys.md."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("recipe_keys", ROOT / "docs" / "recipe_keys.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_key_reference_page_is_generated_from_the_sections():
    recipe_reference = _recipe_keys_tool().recipe_reference
    page = (ROOT / "docs" / "recipe-keys.md").read_text()
    assert page == recipe_reference(), "run: python docs/recipe_keys.py > docs/recipe-keys.md"
    for key in ("`training.optimizer`", "`training.levers`", "`model.queue.size`", "`eval.knn_k`"):
        assert key in page
    assert "| `lookahead_sgd` |" in page and "`momentum=0.99`" in page  # registries, with defaults


def test_checking_a_recipe_builds_no_optimizer(monkeypatch):
    """A Keras optimizer makes variables; on TensorFlow one made before the strategy stops
    MultiWorkerMirroredStrategy from setting up its collective ops (the run checks its recipe first)."""
    import keras

    def refuse(*args, **kwargs):
        raise AssertionError("a recipe check built an optimizer")

    monkeypatch.setattr(keras.optimizers.Optimizer, "__init__", refuse)
    for name in ("sgd", "adamw", "lookahead_sgd", "lars"):
        validate_recipe({"training": {"optimizer": {"name": name}}})
    with pytest.raises(RecipeError, match="lookahead_every = -1: must be greater than or equal to 0"):
        validate_recipe({"training": {"optimizer": {"name": "lookahead_sgd", "lookahead_every": -1}}})


def test_the_key_reference_shows_angle_brackets_outside_code():
    """Issue 69 item 9: `runs/<name>-<time>` was read as an HTML tag by the docs site and vanished."""
    import re

    page = _recipe_keys_tool().recipe_reference()
    assert "runs/&lt;name&gt;-&lt;time&gt;" in page
    prose = re.sub(r"`[^`]*`", "", page.split("-->", 1)[1])  # after the generated-by comment
    assert "<" not in prose and ">" not in prose
