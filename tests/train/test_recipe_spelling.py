"""The files in `recipes/` are written in the section spelling, and each one, written back in the
flat spelling of earlier recipes, loads to the same recipe (the key-translation table on every
recipe, with an inverse written here by hand rather than derived from the table)."""

from pathlib import Path

import pytest
import yaml

from clzoo.train import validate_recipe

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted((ROOT / "recipes").rglob("*.yaml"))

EARLIER_MODEL_KEYS = {"architecture", "encoder_options", "queue_size", "momentum", "encoder_chunk_size",
                      "auxiliary_cross_entropy_weight", "auxiliary_label_smoothing",
                      "auxiliary_logit_scale", "test_time_flip", "test_time_translate"}
EARLIER_TRAINING_KEYS = {"momentum", "nesterov", "weight_decay", "bias_learning_rate_multiplier",
                         "offset_weight_decay_multiplier", "lookahead_every", "lookahead_alpha",
                         "trust_coefficient", "warmup_epochs", "warmup_start_fraction",
                         "final_learning_rate_fraction"}
PART_KEYS = {"queue": {"size": "queue_size", "momentum": "momentum"},
             "grad_cache": {"chunk_size": "encoder_chunk_size"},
             "auxiliary": {"weight": "auxiliary_cross_entropy_weight",
                           "label_smoothing": "auxiliary_label_smoothing",
                           "logit_scale": "auxiliary_logit_scale"},
             "test_time": {"translate": "test_time_translate"}}


def _flat_model(model):
    flat = {key: value for key, value in model.items() if key not in {"encoder", *PART_KEYS}}
    if "encoder" in model:
        options = dict(model["encoder"])
        flat["architecture"] = options.pop("name")
        if options:
            flat["encoder_options"] = options
    for part, keys in PART_KEYS.items():
        if model.get(part) is not None:
            flat.update({keys[setting]: value for setting, value in model[part].items()})
    if model.get("test_time") is not None:
        flat["test_time_flip"] = True
    return flat


def _flat_training(training):
    flat = dict(training)
    for section in ("optimizer", "schedule"):
        if isinstance(training.get(section), dict):
            settings = dict(training[section])
            flat[section] = settings.pop("name")
            flat.update(settings)
    return flat


def test_every_recipe_is_checked():
    assert len(RECIPES) >= 40


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: str(p.relative_to(ROOT / "recipes")))
def test_each_recipe_is_written_in_sections(path):
    raw = yaml.safe_load(path.read_text())
    assert not set(raw.get("model") or {}) & EARLIER_MODEL_KEYS
    assert not set(raw.get("training") or {}) & EARLIER_TRAINING_KEYS


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: str(p.relative_to(ROOT / "recipes")))
def test_each_recipe_in_the_earlier_flat_spelling_loads_the_same(path):
    raw = yaml.safe_load(path.read_text())
    flat = dict(raw, model=_flat_model(raw.get("model") or {}),
                training=_flat_training(raw.get("training") or {}))
    assert flat != raw or not (raw.get("model") or raw.get("training"))
    assert validate_recipe(flat).to_dict() == validate_recipe(raw).to_dict()
