import pytest

from clzoo.train import DEFAULTS, load_recipe


def test_defaults_and_overrides(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("data: digits\ntraining:\n  epochs: 3\nloss:\n  name: SupConLoss\n")
    config = load_recipe(recipe, ["training.batch_size=64", "loss.temperature=0.2",
                                  "loss.variant=in", "views.flip=false"])
    assert config["name"] == "r"
    assert config["training"]["epochs"] == 3
    assert config["training"]["batch_size"] == 64
    assert config["training"]["momentum"] == DEFAULTS["training"]["momentum"]
    assert config["loss"] == {"name": "SupConLoss", "temperature": 0.2, "variant": "in"}
    assert config["views"] == {"flip": False}


def test_unknown_key(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("training:\n  epochz: 3\n")
    with pytest.raises(ValueError, match="Unknown recipe key 'training.epochz'"):
        load_recipe(recipe)
    with pytest.raises(ValueError, match="Unknown recipe key 'training.lr'"):
        load_recipe(None, ["training.lr=0.1"])


def test_missing_recipe_and_bad_override(tmp_path):
    with pytest.raises(ValueError, match="Recipe file not found"):
        load_recipe(tmp_path / "missing.yaml")
    with pytest.raises(ValueError, match="training.epochs=5"):
        load_recipe(None, ["epochs"])
