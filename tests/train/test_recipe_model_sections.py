"""Issue 60 item 1 for `model:`: the encoder and each optional part (queue, grad_cache, auxiliary,
test_time) as its own section, and the key-translation table that keeps every earlier recipe
(flat keys such as `model.queue_size`) loading, named as written in errors."""

import json
from pathlib import Path

import pytest
import yaml

from clzoo.train import RecipeError, load_recipe, validate_recipe
from clzoo.train.recipe_model import part_defaults
from clzoo.train.recipe_upgrade import MOVED, OFF_DEFAULTS, SWITCHES
from tests.train.earlier_spelling import section_to_flat

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted((ROOT / "recipes").rglob("*.yaml"))
PRESET_RECIPES = sorted((ROOT / "clzoo/presets/builtin").glob("*/metadata.json"))

FLAT = {"architecture": "airbench_half", "encoder_options": {"whitening": False},
        "queue_size": 4096, "momentum": 0.99, "auxiliary_cross_entropy_weight": 0.5,
        "auxiliary_label_smoothing": 0.1, "auxiliary_logit_scale": 0.25, "test_time_flip": True,
        "test_time_translate": 2}
SECTIONS = {"encoder": {"name": "airbench_half", "whitening": False},
            "queue": {"size": 4096, "momentum": 0.99},
            "auxiliary": {"weight": 0.5, "label_smoothing": 0.1, "logit_scale": 0.25},
            "test_time": {"translate": 2}}


def _model_keeps_what_was_written(raw_model, recipe):
    """Each flat key the file writes is in its section (`model.queue_size` as `model.queue.size`);
    a part's setting written while the part is off is its default, which is what was written."""
    for key, value in (raw_model or {}).items():
        if f"model.{key}" in MOVED:
            assert _in_section(recipe.model, key) == value, key


def _in_section(model, key):
    """The value the flat key `key` of an earlier recipe now has in its section of `model`."""
    flat = f"model.{key}"
    _, section, *setting = MOVED[flat].split(".")
    value = getattr(model, section)
    if section == "encoder":
        return value.name if setting else value.options
    if value is None:  # the part is off: its switch's "off", else the setting's default
        if flat in SWITCHES:
            return SWITCHES[flat]
        return OFF_DEFAULTS.get(flat, part_defaults(section).get(setting[0]))
    return True if not setting else getattr(value, setting[0])


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: str(p.relative_to(ROOT / "recipes")))
def test_every_recipe_keeps_its_model_keys_in_the_sections(path):
    raw = yaml.safe_load(path.read_text())
    recipe = load_recipe(path)
    _model_keeps_what_was_written(raw.get("model"), recipe)
    dumped = recipe.to_dict()["model"]
    assert not {f"model.{key}" for key in dumped} & set(MOVED)  # stored in sections only
    assert validate_recipe(recipe.to_dict()).to_dict() == recipe.to_dict()


@pytest.mark.parametrize("path", PRESET_RECIPES, ids=lambda p: p.parts[-2])
def test_every_preset_stored_recipe_keeps_its_model(path):
    raw = json.loads(path.read_text())["recipe"]
    recipe = validate_recipe(raw, stored=True)  # a stored record: inert flat keys dropped
    _model_keeps_what_was_written(raw["model"], recipe)
    assert recipe.model.test_time is not None and recipe.model.encoder.name.startswith("airbench") \
        or "resnet" in recipe.model.encoder.name


def test_the_flat_and_the_section_spellings_build_the_same_model():
    a, b = validate_recipe({"model": FLAT}), validate_recipe({"model": SECTIONS})
    assert a.to_dict() == b.to_dict()
    assert b.model.queue.size == 4096 and b.model.test_time is not None
    assert b.model.encoder.options == {"whitening": False}
    assert section_to_flat(b.to_dict()["model"])["queue_size"] == 4096
    assert validate_recipe({"model": section_to_flat(b.to_dict()["model"])}).to_dict() == b.to_dict()
    off = validate_recipe({"model": {
        "queue_size": None, "encoder_chunk_size": None, "test_time_flip": False,
        "auxiliary_cross_entropy_weight": 0.0, "auxiliary_label_smoothing": 0.2}})
    assert (off.model.queue, off.model.grad_cache, off.model.test_time, off.model.auxiliary) == (None,) * 4


def test_the_section_spelling_trains_the_same_model():
    """What the task builds from either spelling: the same queue, key encoder and auxiliary head."""
    from clzoo.train.tasks import build_model

    flat = {"architecture": "resnet8", "embedding_dim": 8, "queue_size": 64, "momentum": 0.9,
            "auxiliary_cross_entropy_weight": 0.5, "auxiliary_logit_scale": 0.25}
    sections = {"encoder": "resnet8", "embedding_dim": 8, "queue": {"size": 64, "momentum": 0.9},
                "auxiliary": {"weight": 0.5, "logit_scale": 0.25}}
    built = [build_model(validate_recipe({"model": model, "views": {"size": 16}}), num_classes=3)
             for model in (flat, sections)]
    for model in built:
        queue = (model.memory_queue.size, model.memory_queue.dim, model.momentum_encoder.momentum)
        auxiliary = (model.auxiliary_weight, model.auxiliary_logit_scale, model.auxiliary_classes)
        assert queue == (64, 8, 0.9) and auxiliary == (0.5, 0.25, 3)
    assert [w.shape for w in built[0].encoder.weights] == [w.shape for w in built[1].encoder.weights]


@pytest.mark.parametrize("model, overrides, check", [
    (SECTIONS, ["model.queue_size=64"], lambda m: m.queue.size == 64 and m.queue.momentum == 0.99),
    (SECTIONS, ["model.queue_size=null", "model.momentum=null"], lambda m: m.queue is None),
    (SECTIONS, ["model.test_time_flip=false", "model.test_time_translate=0"], lambda m: m.test_time is None),
    (SECTIONS, ["model.encoder_options.whitening=true"], lambda m: m.encoder.options == {"whitening": True}),
    # a switch set to its "off" value turns the whole part off, its settings with it
    (SECTIONS, ["model.test_time_flip=false"], lambda m: m.test_time is None and m.queue.size == 4096),
    (FLAT, ["model.test_time_flip=false"], lambda m: m.test_time is None and m.auxiliary.weight == 0.5),
    (FLAT, ["model.queue_size=null"], lambda m: m.queue is None and m.test_time.translate == 2),
    (SECTIONS, ["model.auxiliary_cross_entropy_weight=0"], lambda m: m.auxiliary is None),
    (FLAT, ["model.queue.size=64"], lambda m: m.queue.size == 64 and m.queue.momentum == 0.99),
    (FLAT, ["model.queue=null"], lambda m: m.queue is None and m.auxiliary.weight == 0.5),
    (FLAT, ["model.encoder={name: resnet8}"],
     lambda m: m.encoder.name == "resnet8" and not m.encoder.options),
    (FLAT, ["model.grad_cache={chunk_size: 8}", "model.auxiliary=null"],
     lambda m: m.grad_cache.chunk_size == 8 and m.auxiliary is None),
])
def test_overrides_meet_the_model_in_either_spelling(tmp_path, model, overrides, check):
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({"model": model}))
    assert check(load_recipe(path, overrides).model)


@pytest.mark.parametrize("model, words", [
    ({"queue": {"size": 0}}, r"^<recipe>: model\.queue\.size = 0: must be None or a positive integer$"),
    ({"queue_size": 0}, r"^<recipe>: model\.queue\.size = 0: must be None or a positive integer$"),
    ({"queue": {"size": 8, "momentum": 1.0}}, r"model\.queue\.momentum = 1\.0: must be a number in \[0, 1\)"),
    ({"queue_size": 8, "momentum": 1.0},
     r"^<recipe>: model\.queue\.momentum = 1\.0: must be a number in \[0, 1\)"),
    ({"queue": {"size": 8, "momentun": 0.9}},
     r"unknown recipe key 'model\.queue\.momentun'\. Did you mean 'momentum'"),
    ({"encoder": {"name": "resnet21"}}, r"model\.encoder\.name = 'resnet21': unknown encoder.*'resnet20'"),
    ({"encoder": {"name": "resnet20", "depth": 8}},
     r"model\.encoder: unknown encoder argument 'depth'"),
    ({"grad_cache": {"chunk_size": 8}, "auxiliary": {"weight": 1.0}},
     r"does not run under GradCache: unset model\.grad_cache"),
    ({"encoder_chunk_size": 8, "auxiliary_cross_entropy_weight": 1.0},
     r"does not run under GradCache: unset model\.grad_cache"),
    ({"queue": {"size": 8}, "queue_size": 16},
     r"model\.queue\.size is given twice, as model\.queue_size and in its section"),
    ({"auxiliary_label_smoothing": 0.3},
     r"model\.auxiliary_label_smoothing = 0\.3: the model\.auxiliary part is off"),
    ({"test_time_flip": "yes"}, r"model\.test_time_flip = 'yes': must be true or false"),
    ({"auxiliary": {"weight": 0.0}}, r"model\.auxiliary\.weight = 0\.0: must be a positive, finite number"),
    ({"test_time": 2}, r"model\.test_time = 2: Input should be a valid dictionary"),
])
def test_a_model_section_error_is_one_line_naming_the_key_as_written(model, words):
    with pytest.raises(RecipeError, match=words) as caught:
        validate_recipe({"model": model})
    assert len(caught.value.lines) == 1


def test_a_cross_section_rule_names_the_key_as_written():
    soft = {"task": "soft_target", "loss": {"name": "SoftTargetCrossEntropy"}}
    with pytest.raises(RecipeError, match=r"model\.grad_cache: GradCache needs task contrastive"):
        validate_recipe({**soft, "model": {"grad_cache": {"chunk_size": 8}}})
    with pytest.raises(RecipeError, match=r"model\.grad_cache: GradCache needs task contrastive"):
        validate_recipe({**soft, "model": {"encoder_chunk_size": 8}})
    with pytest.raises(RecipeError, match=r"model\.queue: a queue needs task contrastive and an embedding"):
        validate_recipe({**soft, "model": {"queue": {"size": 8}}})


def test_every_parts_problem_is_reported_at_once_one_line_each(tmp_path):
    """A section per part: a problem in one no longer hides the others' (nor another section's)."""
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump({"model": {"queue": {"size": 0}, "auxiliary": {"wieght": 1},
                                              "qeueu": {}}, "training": {"epochs": -1}}))
    with pytest.raises(RecipeError) as caught:
        load_recipe(path, ["model.grad_cache.chunk_size=0"])
    lines = caught.value.lines
    assert [line.split(": ", 1)[0] for line in lines] == [
        str(path)] * 3 + [f"--set model.grad_cache.chunk_size (over {path})", str(path)], lines
    assert "'model.auxiliary.wieght'. Did you mean 'weight'?" in lines[0]
    assert "'model.qeueu'. Did you mean 'queue'?" in lines[1]
    assert lines[2].endswith("model.queue.size = 0: must be None or a positive integer")
    assert lines[3].endswith("model.grad_cache.chunk_size = 0: must be None or a positive integer")
    assert "training.epochs = -1" in lines[4]


@pytest.mark.parametrize("field", ["model.encoder.name=resnet2", "model.embedding_dim=-1"])
def test_a_model_fields_problem_does_not_hide_the_parts_problems(field):
    """Review: pydantic skips the parts' check once a field of the model section fails, so an
    unknown encoder hid a queue of size 0 until the encoder was fixed."""
    with pytest.raises(RecipeError) as caught:
        load_recipe(None, [field, "model.queue.size=0", "model.qeueu={}", "training.epochs=-1"])
    lines = caught.value.lines
    assert [line.split(" (over")[0] for line in lines] == [
        f"--set {field.split('=')[0]}", "--set model.queue.size", "--set model.qeueu",
        "--set training.epochs"], lines
    assert lines[1].endswith("model.queue.size = 0: must be None or a positive integer")
    with pytest.raises(RecipeError) as alone:  # nothing added where the parts are fine
        load_recipe(None, [field, "model.queue.size=8"])
    assert len(alone.value.lines) == 1, alone.value.lines
