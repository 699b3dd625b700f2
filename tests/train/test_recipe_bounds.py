"""Issue 72 items 9, 10, 13 and 14: recipe values that trained silently as something else (a flat
key dropped at another factory's default, YAML 1.1 integers, a newline in the name, a zero std),
keys that did nothing, and sizes without a bound: each refused in one line naming the key."""

from pathlib import Path

import pytest

from clzoo.train.recipe import RecipeError, load_recipe, validate_recipe

CASES = [
    # item 9: a flat key equal to another schedule's default was dropped (1.5 was refused)
    ({"training": {"schedule": "constant", "warmup_epochs": 1}},
     "warmup_epochs is a setting of schedule cosine and linear, not constant"),
    # item 14: adamw with flat momentum 0.9 (sgd's default) was dropped; 0.5 was refused
    ({"training": {"optimizer": "adamw", "momentum": 0.9}}, "momentum is a setting of optimizer sgd"),
    ({"name": "a\nb"}, "name = 'a\\\\nb': must be 1-100 printable characters"),
    ({"model": {"encoder": {"name": "airbench", "std": [0, 0, 0]}}, "views": {"recipe": "airbench"}},
     r"airbench: `std` must be positive"),
    ({"model": {"encoder": {"name": "resnet20", "mean": [[0.5], 0.5, 0.5]}}},
     r"resnet20: `mean` and `std` need one finite number per channel"),
    # item 10: sizes that ended in a 41-56-line allocation error
    ({"model": {"embedding_dim": 1_000_000_000}}, "model.embedding_dim = 1000000000: .* 32768"),
    ({"model": {"head_hidden_dims": [2048, 100_000]}}, "model.head_hidden_dims"),
    ({"model": {"encoder": {"name": "vit_small_patch4", "hidden_dim": 1_000_000}}},
     r"a ViT of num_layers=6, hidden_dim=1000000, mlp_dim=384 has about [\d,]+ parameters"),
    # item 13: keys that do nothing in the run
    ({"mix": {"mixup_alpha": 0.5}}, r"mix would do nothing \(MixUp / CutMix are task soft_target's\)"),
    ({"model": {"classifier_hidden_dims": [64]}}, "model.classifier_hidden_dims would do nothing"),
    ({"model": {"head_hidden_dims": [], "head_batch_norm": True}}, "model.head_batch_norm would do nothing"),
    ({"task": "soft_target", "loss": {"name": "SoftTargetCrossEntropy"}, "model": {"embedding_dim": 99}},
     r"model.embedding_dim would do nothing \(task soft_target trains a classifier"),
    ({"task": "soft_target", "loss": {"name": "SoftTargetCrossEntropy"}, "views": {"views": 4}},
     r"views.views would do nothing \(task soft_target draws one view"),  # the hostile pass
]


@pytest.mark.parametrize("sections, message", CASES)
def test_a_recipe_refuses_what_would_train_as_something_else(sections, message):
    with pytest.raises(RecipeError, match=message):
        validate_recipe(sections)


def test_the_same_settings_where_they_act_are_taken():
    assert validate_recipe({"training": {"schedule": "constant", "warmup_epochs": 0}})
    assert validate_recipe({"training": {"optimizer": "sgd", "momentum": 0.9}})
    assert validate_recipe({"model": {"embedding_dim": 32_768, "head_hidden_dims": [4096, 4096]}})
    assert validate_recipe({"task": "soft_target", "loss": {"name": "SoftTargetCrossEntropy"},
                            "mix": {"mixup_alpha": 0.5}, "model": {"classifier_hidden_dims": [64]}})
    assert validate_recipe({"model": {"encoder": {"name": "vit_small_patch4", "hidden_dim": 384,
                                                  "num_heads": 6}}})


@pytest.mark.parametrize("text, says", [
    ("epochs: 010", "is not a decimal integer"), ("epochs: 1:30", "is not a decimal integer"),
    ("epochs: 0x10", "is not a decimal integer"), ("epochs: 0b11", "is not a decimal integer"),
    ("learning_rate: 1:30.5", "is a base-60 number"),  # the hostile pass: read as 90.5
])
def test_yaml_1_1_numbers_are_refused_with_their_line(tmp_path, text, says):
    """`epochs: 010` trained 8 epochs (octal), `1:30` 90 (base 60)."""
    path = tmp_path / "r.yaml"
    path.write_text(f"name: r\ntraining:\n  {text}\n")
    with pytest.raises(RecipeError, match=rf"line 3: .* {says}"):
        load_recipe(path)
    key, _, value = text.partition(": ")
    with pytest.raises(RecipeError, match=says):
        load_recipe(None, [f"training.{key}={value}"])


def test_an_override_of_an_inert_flat_key_is_refused():
    with pytest.raises(RecipeError, match="warmup_epochs is a setting of schedule cosine and linear"):
        load_recipe(Path(__file__).parents[2] / "recipes" / "sincere_digits.yaml",
                    overrides=["training.schedule=constant", "training.warmup_epochs=1"])


def test_an_override_typo_is_named_as_the_override_and_the_hint_lists_section_keys():
    """Issue 69 item 7: a `--set` typo was blamed on the recipe file; the hint listed the flat keys
    of earlier recipes (momentum, weight_decay, ...) among the training keys."""
    path = Path(__file__).parents[2] / "recipes" / "sincere_digits.yaml"
    with pytest.raises(RecipeError) as refused:
        load_recipe(path, overrides=["training.epochz=3"])
    message = str(refused.value)
    assert message.startswith(f"--set training.epochz (over {path}): unknown recipe key "
                              "'training.epochz'. Did you mean 'epochs'?")
    known = message.split("Known keys here: ")[1]
    assert "optimizer" in known and "momentum" not in known and "weight_decay" not in known


@pytest.mark.parametrize("value", ["a\nb", "'a\n b'", "a\r\nb"])
def test_an_override_text_with_a_line_break_is_refused_not_folded(value):
    """Hostile round 6: `--set 'name=a<newline>b'` became the name `a b` (YAML folds plain lines)."""
    with pytest.raises(RecipeError, match="a line break in a text value"):
        load_recipe(Path(__file__).parents[2] / "recipes" / "sincere_digits.yaml",
                    overrides=[f"name={value}"])
    assert load_recipe(Path(__file__).parents[2] / "recipes" / "sincere_digits.yaml",
                       overrides=["name=ab\n"]).name == "ab"  # a trailing newline is not a line break in it
