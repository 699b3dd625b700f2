"""Issue 70 item 1: an earlier recipe spelling is upgraded once, where it is read, with a note per
moved key; stored records carry `recipe_version`; nothing past the upgrade reads a flat key."""

from pathlib import Path

import pytest
import yaml

from clzoo.train import RecipeError, validate_recipe
from clzoo.train.recipe_upgrade import RECIPE_VERSION, upgrade

EARLIER = {"training": {"optimizer": "lookahead_sgd", "momentum": 0.85, "lookahead_every": 5,
                        "schedule": "linear", "warmup_epochs": 2},
           "model": {"architecture": "resnet8", "queue_size": 1024, "momentum": 0.99,
                     "test_time_flip": True}}
TODAY = {"training": {"optimizer": {"name": "lookahead_sgd", "momentum": 0.85, "lookahead_every": 5},
                      "schedule": {"name": "linear", "warmup_epochs": 2}},
         "model": {"encoder": {"name": "resnet8"}, "queue": {"size": 1024, "momentum": 0.99},
                   "test_time": {}}}


def test_an_earlier_spelling_reads_as_todays_with_a_note_per_moved_key():
    earlier, today = validate_recipe(EARLIER), validate_recipe(TODAY)
    assert earlier.to_dict() == today.to_dict() and today.upgrade_notes == []
    assert earlier.upgrade_notes == [
        "model.architecture is now model.encoder.name",
        "model.queue_size is now model.queue.size",
        "model.momentum is now model.queue.momentum",
        "model.test_time_flip is now model.test_time",
        "training.momentum is now training.optimizer.momentum",
        "training.lookahead_every is now training.optimizer.lookahead_every",
        "training.warmup_epochs is now training.schedule.warmup_epochs"]
    stored = earlier.to_dict()
    assert stored["recipe_version"] == RECIPE_VERSION
    assert validate_recipe(stored).upgrade_notes == []  # read once: the record is today's
    assert upgrade(EARLIER)[0]["recipe_version"] == RECIPE_VERSION and "recipe_version" not in EARLIER


def test_the_upgrade_reads_attributes_of_sections_only():
    recipe = validate_recipe(EARLIER)
    assert recipe.model.encoder.name == "resnet8" and recipe.model.queue.size == 1024
    assert recipe.training.optimizer.setting("lookahead_every") == 5
    for flat in ("architecture", "queue_size", "test_time_flip"):
        assert not hasattr(recipe.model, flat)
    assert not hasattr(recipe.training, "momentum")


@pytest.mark.parametrize("version", [3, 0, "2", True, None, 2.0])
def test_a_recipe_version_this_clzoo_cannot_read_is_refused_in_one_line(version):
    with pytest.raises(RecipeError) as caught:
        validate_recipe({"recipe_version": version})
    assert len(caught.value.lines) == 1 and "recipe_version" in caught.value.lines[0]


def test_an_upgrade_refusal_names_the_section_and_both_spellings_and_every_section_is_checked():
    with pytest.raises(RecipeError) as caught:
        validate_recipe({"training": {"optimizer": {"name": "sgd", "momentum": 0.5}, "momentum": 0.8},
                         "model": {"test_time_translate": 2}})
    assert caught.value.lines == [
        "<recipe>: model.test_time_translate = 2: the model.test_time part is off (model.test_time_flip "
        "absent or False); turn it on or drop the key",
        "<recipe>: training.optimizer.momentum is given twice, as training.momentum and in its section: "
        "give it once"]


FIXTURES = Path(__file__).with_name("earlier_recipes")


@pytest.mark.parametrize("name", ["flat_stored.yaml", "sections_unversioned.yaml"])
def test_a_stored_recipe_of_each_earlier_spelling_reads_as_todays(name):
    """A run folder's recipe.yaml of every earlier spelling loads (stored: settings that did
    nothing dropped), equals the same run in today's spelling, and resumes (the run folder's
    check compares it with the run's recipe through `_with_defaults`)."""
    from clzoo.train import load_recipe
    from clzoo.train.run_folder import _with_defaults

    recipe = load_recipe(FIXTURES / name, stored=True)
    today = load_recipe(FIXTURES / "sections_unversioned.yaml", stored=True).to_dict()
    assert recipe.to_dict() == today and today["recipe_version"] == RECIPE_VERSION
    assert "momentum" not in today["training"]["optimizer"] and today["model"].get("auxiliary") is None
    assert _with_defaults(yaml.safe_load((FIXTURES / name).read_text())) == today
    assert validate_recipe(today).to_dict() == today  # the record it writes reads back as is


def test_the_flat_fixture_written_by_a_user_is_refused_for_what_did_nothing():
    from clzoo.train import load_recipe

    with pytest.raises(RecipeError) as caught:
        load_recipe(FIXTURES / "flat_stored.yaml")
    # the upgrade's refusal and the sections' own, at once (the refused key is left out)
    assert caught.value.lines == [
        f"{FIXTURES / 'flat_stored.yaml'}: model.auxiliary_label_smoothing = 0.3: the model.auxiliary "
        "part is off (model.auxiliary_cross_entropy_weight absent or 0); turn it on or drop the key",
        f"{FIXTURES / 'flat_stored.yaml'}: training.optimizer.momentum is a setting of optimizer sgd, "
        "lookahead_sgd and lars, not adamw"]


def test_a_section_override_replaces_the_upgraded_section_and_says_what_it_left_out(tmp_path):
    """One spelling inside: a flat `momentum: 0.9` is `training.optimizer.momentum` once read, so
    `--set training.optimizer=adamw` replaces that section as it does in today's spelling (a section
    override starts from the factory's defaults), and a note names the settings it left out (the
    earlier code took the flat keys along into the new section)."""
    from clzoo.train import load_recipe

    path = tmp_path / "flat.yaml"
    path.write_text("data: digits\ntraining: {optimizer: sgd, momentum: 0.8, schedule: cosine, "
                    "warmup_epochs: 2}\n")
    adamw = load_recipe(path, ["training.optimizer=adamw"])
    assert adamw.training.optimizer.settings == {} and adamw.override_notes == [
        "--set training.optimizer replaces the whole training.optimizer, leaving out "
        "momentum = 0.8"]
    assert load_recipe(path, ["training.schedule=constant"]).override_notes == [
        "--set training.schedule replaces the whole training.schedule, leaving out "
        "warmup_epochs = 2"]
    kept = load_recipe(path, ["training.optimizer={name: lars, momentum: 0.8}"])
    assert kept.training.optimizer.setting("momentum") == 0.8 and kept.override_notes == []
    today = _file(tmp_path, {"training": {"optimizer": {"name": "sgd", "momentum": 0.8}}})
    assert load_recipe(today, ["training.optimizer=adamw"]).override_notes == adamw.override_notes
    with pytest.raises(RecipeError, match="momentum is a setting of optimizer sgd, lookahead_sgd and "
                                          "lars, not adamw"):  # the name alone keeps the settings
        load_recipe(path, ["training.optimizer.name=adamw"])


@pytest.mark.parametrize("overrides, queue, test_time", [
    (["model.momentum=0.9", "model.queue_size=1024"], {"size": 1024, "momentum": 0.9}, None),
    (["model.queue_size=1024", "model.momentum=0.9"], {"size": 1024, "momentum": 0.9}, None),
    (["model.momentum=0.5", "model.queue={size: 100}"], {"size": 100, "momentum": 0.5}, None),
    (["model.test_time_translate=2", "model.test_time_flip=true"], None, {"translate": 2}),
])
def test_flat_overrides_of_a_part_apply_in_any_order(overrides, queue, test_time):
    from clzoo.train import load_recipe

    model = load_recipe(None, ["loss.name=SupConLoss", *overrides]).to_dict()["model"]
    assert (model.get("queue"), model["test_time"]) == (queue, test_time)


@pytest.mark.parametrize("overrides, words", [
    (["model.momentum=0.5", "model.queue_size=null"], "the model.queue part is off"),
    (["model.auxiliary_label_smoothing=0.3", "model.auxiliary_cross_entropy_weight=0"], "part is off"),
])
def test_a_setting_of_a_part_switched_off_later_is_refused_not_dropped(overrides, words):
    from clzoo.train import load_recipe

    with pytest.raises(RecipeError, match=words):
        load_recipe(None, ["loss.name=SupConLoss", *overrides])


def test_todays_version_refuses_the_earlier_spelling_and_notes_are_said_once(tmp_path):
    from clzoo.train import load_recipe

    with pytest.raises(RecipeError, match=r"training.momentum: the earlier spelling in a recipe_version 2 "
                                          r"recipe; write training.optimizer.momentum"):
        validate_recipe({"recipe_version": 2, "training": {"momentum": 0.8}})
    path = tmp_path / "flat.yaml"
    path.write_text("data: digits\nloss: {name: SupConLoss}\nmodel: {queue_size: 64}\n")
    notes = load_recipe(path, ["model.queue_size=null"]).upgrade_notes
    assert notes == ["model.queue_size is now model.queue.size",
                     "model.queue_size = None: model.queue is off"]


def _file(tmp_path, sections):
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(sections))
    return path


@pytest.mark.parametrize("training, override, line", [
    ({"optimizer": "adamw"}, "training.momentum=0.5", "--set training.momentum (over {}): "
     "training.optimizer.momentum is a setting of optimizer sgd, lookahead_sgd and lars, not adamw"),
    ({"schedule": "constant"}, "training.warmup_epochs=5", "--set training.warmup_epochs (over {}): "
     "training.schedule.warmup_epochs is a setting of schedule cosine and linear, not constant; it "
     "keeps the peak learning rate throughout"),
    ({}, "model.encoder_options.name=airbench", "--set model.encoder_options.name (over {}): "
     "model.encoder_options.name: the encoder's name is model.architecture"),
])
def test_a_flat_override_refused_by_its_section_names_the_override(tmp_path, training, override, line):
    from clzoo.train import load_recipe

    path = _file(tmp_path, {"training": training})
    with pytest.raises(RecipeError) as caught:
        load_recipe(path, [override])
    assert caught.value.lines == [line.format(path)]


def test_a_flat_switch_beside_its_section_at_null_is_refused():
    for model in ({"queue_size": 64, "queue": None}, {"test_time_flip": True, "test_time": None}):
        with pytest.raises(RecipeError, match="null turns off: give one"):
            validate_recipe({"model": model})


def test_notes_say_what_was_dropped_and_a_stored_recipes_dropped_keys_stay_dropped(tmp_path):
    from clzoo.train import load_recipe

    path = _file(tmp_path, {"training": {"schedule": "constant"}})
    assert load_recipe(path, ["training.warmup_epochs=0"]).upgrade_notes == [
        "training.warmup_epochs = 0 dropped: it does nothing here (its part is off, or its factory "
        "does not take it)"]
    assert validate_recipe({"model": {"test_time_translate": 0}}).upgrade_notes == [
        "model.test_time_translate = 0: model.test_time is off (dropped)"]
    # adamw's flat momentum did nothing in the stored run: a section override does not bring it back
    stored = load_recipe(FIXTURES / "flat_stored.yaml", ["training.optimizer=adamw"], stored=True)
    assert stored.training.optimizer.settings == {} and stored.override_notes == [
        "--set training.optimizer replaces the whole training.optimizer, leaving out "
        "weight_decay = 0.05"]


def test_an_override_of_todays_training_key_to_null_is_not_an_earlier_key():
    """CI (large tier): `--set training.checkpoint_every_steps=null` crashed in the upgrade."""
    from clzoo.train import load_recipe

    recipe = load_recipe(None, ["training.checkpoint_every_steps=null", "training.log_every_steps=null"])
    assert recipe.training.checkpoint_every_steps is None and recipe.upgrade_notes == []


def test_a_stored_recipe_is_validated_once_and_keeps_the_keys_that_did_nothing_in_its_run(
        tmp_path, monkeypatch):
    """A run's recipe.yaml read without overrides (resume, push, the card) is the stored pass's
    result: validated once, and a today's-spelling key that did nothing in the run (`mix` under
    task contrastive) is read as it is, not refused by a second, strict pass."""
    from clzoo.train import load_recipe
    from clzoo.train.recipe import Recipe

    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump({"recipe_version": 2, "mix": {"mixup_alpha": 0.2}}))
    calls, validate = [], Recipe.model_validate.__func__
    monkeypatch.setattr(Recipe, "model_validate",
                        classmethod(lambda cls, data: calls.append(1) or validate(cls, data)))
    assert load_recipe(path, stored=True).mix == {"mixup_alpha": 0.2} and len(calls) == 1
    with pytest.raises(RecipeError, match="mix would do nothing"):
        load_recipe(path)  # a recipe a user wrote: refused
