"""A hostile user against the recipe's sections (stop 66's review): parts written null turned on
by a setting, one key given in two spellings, run folders recorded by earlier versions, levers
named twice, encoder options the builder refuses, and errors naming keys as written."""

import pytest
import yaml

from clzoo.cli.train import _run_files
from clzoo.train import RecipeError, load_recipe, validate_recipe
from clzoo.train.builders import build_encoder
from clzoo.train.run_folder import _with_defaults


def _write(tmp_path, model, training=None):
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "model": model, "training": training or {}}))
    return path


@pytest.mark.parametrize("override, check", [
    ("model.grad_cache.chunk_size=16", lambda m: m.grad_cache.chunk_size == 16),
    ("model.queue.size=8", lambda m: m.queue.size == 8 and m.queue.momentum is None),
    ("model.auxiliary.weight=1", lambda m: m.auxiliary.weight == 1.0),
    ("model.test_time.translate=1", lambda m: m.test_time.translate == 1),
])
def test_a_part_written_null_is_turned_on_by_one_of_its_settings(tmp_path, override, check):
    """A run's stored recipe writes every part it had off as null."""
    path = _write(tmp_path, {"queue": None, "grad_cache": None, "auxiliary": None, "test_time": None})
    assert check(load_recipe(path, [override]).model)


@pytest.mark.parametrize("overrides, key", [
    (["model.queue.size=8", "model.queue_size=9"], "model.queue.size"),
    (["training.momentum=0.8", "training.optimizer.momentum=0.7"], "training.optimizer.momentum"),
    (["model.architecture=resnet8", "model.encoder.name=resnet20"], "model.encoder.name"),
    (["model.encoder_options.whitening=true", "model.encoder.whitening=false"], "model.encoder.whitening"),
])
def test_one_key_in_two_spellings_is_refused(overrides, key):
    with pytest.raises(RecipeError, match=f"set the same key \\({key}\\); give it once"):
        load_recipe(None, overrides)


@pytest.mark.parametrize("overrides, replaced", [
    (["model.queue_size=64", "model.queue={size: 128}"], "the whole section"),
    (["training.optimizer.weight_decay=0.1", "training.optimizer=adamw"], "the whole section"),
    (["model.test_time.translate=1", "model.test_time_flip=false"], "the whole section"),
    # review item 9: encoder_options and the encoder section dropped each other's options
    (["model.encoder_options={whitening: true}", "model.encoder=airbench"], "the whole section"),
    (["model.encoder.whitening=true", "model.encoder_options={width: 2}"], "every option of model.encoder"),
    (["model.encoder_options.whitening=true", "model.encoder_options={width: 2}"],
     "every option of model.encoder"),
])
def test_a_section_after_one_of_its_own_keys_is_refused(overrides, replaced):
    with pytest.raises(RecipeError, match=f"override {overrides[1].split('=')[0]} replaces {replaced}, "
                                          f"discarding the earlier {overrides[0].split('=')[0]}"):
        load_recipe(None, overrides)


@pytest.mark.parametrize("overrides", [
    ["model.auxiliary_cross_entropy_weight=0", "model.auxiliary.label_smoothing=0.1"],
    ["model.auxiliary=null", "model.auxiliary.label_smoothing=0.1"],
    ["model.queue_size=null", "model.queue.momentum=0.9"],
    ["model.test_time_flip=false", "model.test_time.translate=1"],
])
def test_a_setting_after_its_part_was_turned_off_on_the_command_line_is_refused(overrides):
    """Review item 5: the setting turned the part back on with its defaults, without a word."""
    section = overrides[1].split("=")[0].rsplit(".", 1)[0]
    with pytest.raises(RecipeError, match=f"is a setting of {section}, which the earlier --set "
                                          f"{overrides[0].split('=')[0]} turns off: give one of them"):
        load_recipe(None, overrides)


@pytest.mark.parametrize("overrides", [
    ["model.encoder_options={whitening: true}", "model.architecture=airbench"],
    ["model.encoder_options={whitening: true}", "model.encoder.name=airbench"],
    ["model.encoder.name=airbench", "model.encoder_options={whitening: true}", "model.encoder.dirac=true"],
])
def test_encoder_options_keep_the_name_and_take_later_options(overrides):
    encoder = load_recipe(None, overrides).model.encoder
    assert encoder.options["whitening"] is True and encoder.name == "airbench"


@pytest.mark.parametrize("overrides, check", [
    (["model.encoder=airbench", "model.encoder_options={whitening: true}"],
     lambda r: r.model.encoder.options),
    (["model.encoder=airbench", "model.encoder.whitening=true"], lambda r: r.model.encoder.options),
    (["training.optimizer=adamw", "training.optimizer.weight_decay=0.1"],
     lambda r: r.to_dict()["training"]["optimizer"] == {"name": "adamw", "weight_decay": 0.1}),
])
def test_a_section_then_one_of_its_keys_is_taken(overrides, check):
    assert check(load_recipe(None, overrides))


def test_a_stored_recipe_with_settings_that_did_nothing_still_loads(tmp_path):
    """Earlier versions stored such keys (auxiliary off with a smoothing, AdamW with a momentum);
    a written recipe is refused for them, the run folder's own recipe.yaml resumes."""
    path = _write(tmp_path, {"architecture": "resnet8", "auxiliary_cross_entropy_weight": 0,
                             "auxiliary_label_smoothing": 0.3},
                  {"optimizer": "adamw", "momentum": 0.8})
    with pytest.raises(RecipeError, match="auxiliary part is off"):
        load_recipe(path)
    recipe = load_recipe(path, stored=True)
    assert recipe.model.auxiliary is None and "momentum" not in recipe.to_dict()["training"]["optimizer"]
    assert _with_defaults(yaml.safe_load(path.read_text())) == recipe.to_dict()  # the resume check
    with pytest.raises(RecipeError, match="nesterov is a setting of optimizer sgd and lookahead_sgd, "
                                          "not adamw"):  # overrides: strict
        load_recipe(path, ["training.nesterov=true"], stored=True)


def test_a_lever_named_twice_is_refused():
    with pytest.raises(RecipeError, match=r"levers\[1\]: ema is already levers\[0\]"):
        load_recipe(None, ["training.levers=[{name: ema}, {name: ema, momentum: 0.5}]"])


@pytest.mark.parametrize("model, words", [
    ({"grad_cache": {"chunk_size": 8}, "auxiliary": {"weight": 1}},
     "does not run under GradCache: unset model.grad_cache"),
    ({"encoder_chunk_size": 8, "auxiliary_cross_entropy_weight": 1},
     "does not run under GradCache: unset model.grad_cache"),
    ({"encoder": {"name": "resnet20", "widht": 2}}, "model.encoder: unknown encoder argument 'widht'"),
    ({"encoder": {"name": "vit_small_patch4", "num_heads": 0}}, "'num_heads' of vit_small_patch4 is a size"),
    ({"encoder": {"name": "vit_small_patch4", "num_layers": -2}},
     "'num_layers' of vit_small_patch4 is a size"),
])
def test_errors_name_the_key_as_written(model, words):
    with pytest.raises(RecipeError) as info:
        validate_recipe({"model": model})
    assert words in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("encoder, words", [
    ({"name": "airbench", "batch_norm_momentum": 5.0}, "`batch_norm_momentum` must be in [0, 1)"),
])
def test_options_the_builder_refuses_give_one_line_naming_the_encoder(encoder, words):
    recipe = validate_recipe({"model": {"encoder": encoder}})
    with pytest.raises(ValueError) as info:
        build_encoder(recipe, 32)
    message = str(info.value)
    assert message.startswith(f"model.encoder = {encoder}: {encoder['name']} cannot be built for "
                              "32x32 images with these options")
    assert words in message and "\n" not in message and isinstance(info.value.__cause__, ValueError)


def test_the_closing_line_lists_only_what_the_run_wrote(tmp_path):
    for name in ("encoder.keras", "metrics.json", "checkpoint.keras", "history.jsonl"):
        (tmp_path / name).write_text("x")
    assert _run_files(tmp_path) == "encoder.keras, metrics.json, checkpoint.keras, history.jsonl"
    (tmp_path / "history.csv").write_text("x")
    assert _run_files(tmp_path) == "encoder.keras, metrics.json, checkpoint.keras, history.jsonl/.csv"
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "report.md").write_text("x")
    (tmp_path / "tensorboard").mkdir()
    assert "eval/report.md" in _run_files(tmp_path) and _run_files(tmp_path).endswith("tensorboard/")


@pytest.mark.parametrize("overrides", [
    ["views=null", "views.size=16"],
    ["training.schedule=null", "training.schedule.warmup_epochs=0"],
    ["model.encoder=null", "model.encoder.name=airbench"],
    ["model.queue=null", "model.queue={size: 64}", "model.queue.momentum=0.9", "loss.name=SupConLoss"],
    ["model.queue_size=null", "model.queue_size=64", "loss.name=SupConLoss"],
])
def test_a_section_reset_or_a_part_turned_back_on_then_set_is_taken(overrides):
    """Review: only a model part is off when null; turned on again, its settings are taken."""
    load_recipe(None, overrides)


@pytest.mark.parametrize("overrides", [
    ["model.auxiliary.label_smoothing=0.1", "model.auxiliary_cross_entropy_weight=0"],
    ["model.queue.momentum=0.9", "model.queue_size=null"],
])
def test_a_flat_switch_turning_off_a_part_after_one_of_its_settings_is_refused(overrides):
    """Review: the setting was dropped without a word (the section spelling refused it already)."""
    with pytest.raises(RecipeError, match=f"--set {overrides[1].split('=')[0]} turns off .*, discarding "
                                          f"the earlier --set {overrides[0].split('=')[0]}"):
        load_recipe(None, overrides)


def test_a_section_overrides_note_names_what_changed_and_only_that(tmp_path):
    """Review: the note left out a name that fell back to the default (SupConLoss -> SINCERELoss),
    and listed settings whose value the new section keeps."""
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({"loss": {"name": "SupConLoss", "temperature": 0.2}, "training": {
        "schedule": {"name": "cosine", "warmup_epochs": 0, "warmup_start_fraction": 1e-3}}}))
    recipe = load_recipe(path, ["loss={temperature: 0.1}", "training.schedule=linear"])
    assert recipe.override_notes == [
        "--set loss replaces the whole loss, leaving out name = 'SupConLoss'",
        "--set training.schedule replaces the whole training.schedule, leaving out warmup_epochs = 0"]


def test_a_section_overrides_note_looks_inside_the_sections_it_gives(tmp_path):
    """Review: the notes looked one level deep: `--set model={queue: {size: 32}}` over a file's
    queue momentum dropped the momentum (no momentum encoder by default) without a word."""
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({"loss": {"name": "SupConLoss"}, "model": {
        "embedding_dim": 64, "queue": {"size": 64, "momentum": 0.9}}}))
    whole = load_recipe(path, ["model={queue: {size: 32}}"])
    assert whole.model.queue.momentum is None and whole.override_notes == [
        "--set model replaces the whole model, leaving out embedding_dim = 64, queue.momentum = 0.9"]
    assert load_recipe(path, ["model.queue={size: 32}"]).override_notes == [
        "--set model.queue replaces the whole model.queue, leaving out momentum = 0.9"]
    kept = load_recipe(path, ["model={queue: {size: 32, momentum: 0.9}, embedding_dim: 64}"])
    assert kept.model.queue.size == 32 and kept.override_notes == []


def test_resuming_with_an_override_reads_the_stored_keys_as_stored_and_checks_the_overrides(tmp_path):
    """Review: `--resume RUN --epochs 3` refused the run's own recipe.yaml for a key that did
    nothing in the run, which `--resume RUN` alone read."""
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump({"recipe_version": 2, "data": "digits", "mix": {"mixup_alpha": 0.2}}))
    assert load_recipe(path, ["training.epochs=3"], stored=True).training.epochs == 3
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump({"recipe_version": 2, "data": "digits"}))
    for stored in (True, False):  # named as the user wrote it, not as the file's
        with pytest.raises(RecipeError, match=r"^--set mix.mixup_alpha \(over .*\): recipe: mix would "
                                              "do nothing"):
            load_recipe(plain, ["mix.mixup_alpha=0.2"], stored=stored)


def test_a_part_name_with_a_line_break_stays_one_error_line(tmp_path):
    path = _write(tmp_path, {"qu\neue": {}})
    with pytest.raises(RecipeError) as caught:
        load_recipe(path)
    assert len(caught.value.lines) == 1 and "'model.qu\\neue'" in caught.value.lines[0]


def test_the_card_renders_a_recipe_it_cannot_read_as_stored_and_resolves_a_partial_one():
    """Review: a stored recipe that is no mapping crashed the card; a partial one in today's
    spelling was shown unresolved under "resolved config"."""
    from clzoo.presets.card import _recipe_yaml

    assert _recipe_yaml(None) == "null\n..."
    partial = _recipe_yaml({"recipe_version": 2, "model": {"encoder": "resnet8"}})
    assert "    name: resnet8" in partial and "head_hidden_dims: null" in partial


def test_a_section_overrides_note_reads_a_section_written_as_a_name_and_keys_not_text(tmp_path):
    """Review of the nested notes: `encoder: resnet18` (a section written as its name) replaced by
    `--set model={encoder: {}}` fell back to resnet20 without a note; a key that is no text (`1: 2`)
    crashed the note with a TypeError."""
    path = tmp_path / "r.yaml"
    path.write_text("model: {encoder: resnet18, 1: 2}\ntraining: {schedule: linear}\n")
    recipe = load_recipe(path, ["model={encoder: {}}", "training={schedule: {warmup_epochs: 1}}"])
    assert recipe.override_notes == [
        "--set model replaces the whole model, leaving out encoder.name = 'resnet18', 1 = 2",
        "--set training replaces the whole training, leaving out schedule.name = 'linear'"]


def test_a_model_key_that_is_no_text_is_one_line_in_both_passes(tmp_path):
    """Review: the parts' check beside a field's problem built `'model.' + 1` (a TypeError)."""
    from clzoo.train.recipe import check_recipe_keys

    path = tmp_path / "r.yaml"
    path.write_text("model:\n  1: {}\n")
    for check in (check_recipe_keys, load_recipe):
        with pytest.raises(RecipeError) as caught:
            check(path, [])
        assert caught.value.lines == [f"{path}: model = 1: Keys should be strings"]


def test_a_whole_section_override_is_blamed_for_what_it_wrote_inside(tmp_path):
    """Review: a whole-section override was not blamed for what it wrote inside (the file was named)."""
    other = tmp_path / "o.yaml"
    other.write_text("model: {encoder: resnet18}\n")
    with pytest.raises(RecipeError, match=r"^--set model \(over .*\): model.encoder: unknown encoder "
                                          "argument 'width'"):
        load_recipe(other, ["model={encoder: {width: 2}}"])


@pytest.mark.parametrize("written, overrides, blamed", [
    # `--set model.q` was blamed for the file's `model.queue.size = 0` (a substring)
    ("model: {queue: {size: 0}}", ["model.q={}"], ["--set model.q (over {})", "{}"]),
    ("model: {queue: {size: 0}}", ["model.queue={size: 0}"], "--set model.queue (over {})"),
    ("model: {queue: {size: 0}}", ["model.queue.momentum=0.5"], "{}"),
    # an earlier spelling's override that keeps the file's section is not blamed for what it kept
    ("model: {test_time: {translate: -1}}", ["model.test_time_flip=true"], "{}"),
    ("model: {encoder: resnet99}", ["model.encoder_options={width: 2}"], "{}"),
    # a later override inside a whole-section one is named, not the section's
    ("", ["model={encoder: resnet20}", "model.queue.size=0"], "--set model.queue.size (over {})"),
    ("", ["model={encoder: resnet20}", "model.qeueu={}"], "--set model.qeueu (over {})"),
    ("model: {encoder: resnet18}", ["model.encoder.width=2"], "--set model.encoder.width (over {})"),
    # a rule between keys names the override that broke it, or a section around it
    ("model: {head_batch_norm: true}", ["model.head_hidden_dims=[]"],
     "--set model.head_hidden_dims (over {})"),
    ("training: {epochs: 3}", ["training.schedule.warmup_epochs=5"],
     "--set training.schedule.warmup_epochs (over {})"),
    ("training: {schedule: {warmup_epochs: 5}}", ["training.epochs=3"], "--set training.epochs (over {})"),
    ("training: {epochs: 3}", ["training.schedule={name: cosine, warmup_epochs: 50}"],
     "--set training.schedule (over {})"),
    # the section the message names (`unset model.grad_cache`), not its subject (`model.auxiliary:`)
    ("", ["model.grad_cache.chunk_size=8", "model.auxiliary.weight=0.5"],
     "--set model.grad_cache.chunk_size (over {})"),
    # the fourth review: a part's refusal of the task is the task's, not a setting's of the part
    ("model: {queue: {size: 64}}\nloss: {name: SupConLoss}", ["model.queue.momentum=0.5", "task=soft_target"],
     "--set task (over {})"),
    ("", ["views.recipe=size", "views.size=24"], "--set views.recipe (over {})"),  # a value, no key
    ("", ["loss.name=InfoNCELos"], "--set loss.name (over {})"),
    ("", ["eval.knn_k=[1,5]", "eval.knn_headline_k=20"], "--set eval.knn_k, eval.knn_headline_k (over {})"),
    # the third review: words of the message that are no key, and its suggestion, blame nobody
    ("image_size: 64\nviews: {recipe: airbench, views: 1}", ["views.views=1"], "{}"),
    ("model: {queue: {size: 1000000}, embedding_dim: 32768}", ["views.size=64"], "{}"),
    ("model: {queu: {size: 5}}", ["model.queue={size: 8}"], "{}"),
])
def test_a_problem_is_blamed_on_who_wrote_it_among_several_spellings(tmp_path, written, overrides, blamed):
    """The second review: `model.test_time_flip` and `model.encoder_options` were blamed for the
    file's test_time and encoder name; a whole `--set model` for a later `--set model.queue.size`;
    the file for `--set model.encoder.width` (the message quotes 'width')."""
    path = tmp_path / "r.yaml"
    path.write_text(f"data: digits\n{written}\n")
    with pytest.raises(RecipeError) as caught:
        load_recipe(path, overrides)
    blamed = [blamed] if isinstance(blamed, str) else blamed  # one line, or several in any order
    assert sorted(line.split(": ", 1)[0] for line in caught.value.lines) == sorted(
        one.format(path) for one in blamed), caught.value.lines


@pytest.mark.parametrize("recipe", [{"name": "digits"}, ["digits"]])
def test_a_view_recipe_that_is_no_name_is_one_line(tmp_path, recipe):
    """The second review: `views: {recipe: {name: digits}}` crashed inside the registry
    (TypeError: unhashable type), in both passes."""
    from clzoo.train.recipe import check_recipe_keys

    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({"data": "digits", "views": {"recipe": recipe}}))
    for check in (check_recipe_keys, load_recipe):
        with pytest.raises(RecipeError) as caught:
            check(path, [])
        assert caught.value.lines == [f"{path}: views: Unknown view recipe {recipe!r}. Known: supcon, "
                                      "simclr, randaugment, stacked_randaugment, asymmetric, digits."]
