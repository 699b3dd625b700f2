"""The airbench stack as recipe keys: a run fits the whitening stem to its data, trains with
Lookahead SGD on batch-wise views, resumes by step, and ships the test-time averaged encoder."""

from pathlib import Path

import keras
import numpy as np
import pytest

from clzoo.models import PatchWhitening
from clzoo.optimizers import LookaheadSGD, WarmupLinearDecay
from clzoo.saving import load_model
from clzoo.train import load_recipe, train
from clzoo.train.builders import build_optimizer
from clzoo.train.recipe import RecipeError

ROOT = Path(__file__).resolve().parents[2]

STACK = ["data=digits", "model.architecture=airbench_half", "model.embedding_dim=16",
         "model.encoder_options={whitening: true, dirac: true, batch_norm_scale: false, "
         "batch_norm_momentum: 0.6, batch_norm_epsilon: 1.0e-5}",
         "model.test_time_flip=true", "model.test_time_translate=1",
         "views={recipe: airbench, views: 1, translate: 2}",
         "training.optimizer=lookahead_sgd", "training.learning_rate=0.2",
         "training.momentum=0.85", "training.nesterov=true", "training.schedule=linear",
         "training.warmup_start_fraction=0.2", "training.final_learning_rate_fraction=0.07",
         "training.bias_learning_rate_multiplier=64", "training.offset_weight_decay_multiplier=8",
         "training.lookahead_every=5",
         "training.batch_size=128", "training.epochs=2", "eval.metrics=[knn]",
         "eval.knn_k=[5]", "eval.knn_headline_k=5", "eval.baselines=[]"]


def test_the_stack_builds_from_recipe_keys():
    recipe = load_recipe(None, STACK)
    optimizer = build_optimizer(recipe, steps_per_epoch=10)
    assert isinstance(optimizer, LookaheadSGD)
    assert (optimizer.nesterov, optimizer.bias_learning_rate_multiplier,
            optimizer.offset_weight_decay_multiplier, optimizer.lookahead_every,
            optimizer.total_steps) == (True, 64.0, 8.0, 5, 20)
    schedule = optimizer._learning_rate
    assert isinstance(schedule, WarmupLinearDecay) and schedule.start_fraction == 0.2


@pytest.mark.parametrize("override, key", [
    ("training.lookahead_every=5", "lookahead_every is a setting of optimizer lookahead_sgd"),
    ("training.bias_learning_rate_multiplier=64", "bias_learning_rate_multiplier"),
    ("training.offset_weight_decay_multiplier=64",
     "offset_weight_decay_multiplier is a setting of optimizer lookahead_sgd"),
    ("model.test_time_translate=1", "the model.test_time part is off"),
    ("training.nesterov=true", "nesterov is a setting of optimizer sgd and lookahead_sgd"),
    ("task=soft_target", "views recipe airbench .* needs task contrastive"),
    ("views.views=9", "at most 8")])
def test_levers_are_refused_where_they_do_nothing(override, key):
    overrides = ["training.optimizer=adamw", override]
    if override.startswith(("task", "views")):
        overrides = ["views={recipe: airbench}", override]
    with pytest.raises(RecipeError, match=key):
        load_recipe(None, overrides)


def test_a_factory_without_total_steps_still_builds():
    from clzoo.optimizers.registry import OPTIMIZERS

    @OPTIMIZERS.register("plain_sgd", description="a user's factory, no run length")
    def plain_sgd(learning_rate, momentum=0.5):
        return keras.optimizers.SGD(learning_rate, momentum=momentum)

    try:
        recipe = load_recipe(None, ["training.optimizer={name: plain_sgd, momentum: 0.7}"])
        optimizer = build_optimizer(recipe, steps_per_epoch=3)
        assert isinstance(optimizer, keras.optimizers.SGD) and optimizer.momentum == 0.7
    finally:
        OPTIMIZERS._entries.pop("plain_sgd", None)


def test_a_factory_of_the_form_before_the_sections_is_refused_at_registration():
    from clzoo.optimizers.registry import OPTIMIZERS, SCHEDULES

    def two_argument_sgd(learning_rate, training):
        return keras.optimizers.SGD(learning_rate)

    for registry in (OPTIMIZERS, SCHEDULES):
        with pytest.raises(TypeError, match="two_argument_sgd takes `training` .the whole recipe section"):
            registry.register("two_argument_sgd", two_argument_sgd)
        assert "two_argument_sgd" not in registry.list()


@pytest.mark.large
def test_a_stack_run_whitens_its_stem_checkpoints_lookahead_and_ships_test_time_views(tmp_path):
    whole = train(load_recipe(None, STACK), tmp_path / "whole", verbose=0)
    encoder = load_model(tmp_path / "whole" / "encoder.keras")
    stems = [layer for layer in encoder._flatten_layers() if isinstance(layer, PatchWhitening)]
    assert len(stems) == 1  # shared by the six test-time views
    kernel = keras.ops.convert_to_numpy(stems[0].kernel)
    identity = np.eye(12, dtype="float32").reshape(2, 2, 3, 12)
    assert not np.allclose(kernel[..., :12], identity, atol=1e-2)  # fitted to the digits
    assert any(layer.name == "shift_down_right" for layer in encoder._flatten_layers())
    assert whole.knn_top1 > 0.5  # ten digit classes: chance is 10%
    # the checkpoint holds Lookahead's slow weights, so a resumed run continues them: training
    # ends on them (the last step's pull has decay 1), so they equal the trained weights
    checkpoint = keras.saving.load_model(tmp_path / "whole" / "checkpoint.keras")
    optimizer = checkpoint.optimizer
    assert isinstance(optimizer, LookaheadSGD) and len(optimizer.slow_weights) == len(
        checkpoint.trainable_variables)
    for slow, weight in zip(optimizer.slow_weights, checkpoint.trainable_variables):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(slow),
                                   keras.ops.convert_to_numpy(weight), atol=1e-6)


def test_a_run_started_before_the_new_keys_still_resumes(tmp_path):
    import yaml

    from clzoo.train.run_folder import RunFolder, fingerprint
    from tests.train.earlier_spelling import section_to_flat

    recipe = load_recipe(None, ["training.epochs=2"])
    saved = recipe.to_dict()
    saved.pop("recipe_version")  # written before recipe_version: version 1
    for section in ("optimizer", "schedule"):  # flat, as recipe.yaml was before the sections
        settings = saved["training"].pop(section)
        saved["training"][section] = settings.pop("name")
        saved["training"].update(settings)
    saved["training"].pop("levers")
    for key in ("nesterov", "warmup_start_fraction", "bias_learning_rate_multiplier",
                "offset_weight_decay_multiplier", "lookahead_every", "lookahead_alpha"):
        saved["training"].pop(key, None)  # a recipe.yaml written before these keys existed
    saved["model"] = section_to_flat(saved["model"])  # flat, as before the model's sections
    assert saved["model"]["architecture"] == "resnet20" and saved["model"].get("queue_size") is None
    saved["model"].pop("test_time_translate", None)
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(saved))
    (tmp_path / "recipe.sha256").write_text(fingerprint(saved) + "\n")
    RunFolder(tmp_path)._check_saved_recipe(recipe)  # same recipe: no refusal
    changed = load_recipe(None, ["training.epochs=2", "training.nesterov=true"])
    with pytest.raises(ValueError, match="differs from the one it started with in .*training"):
        RunFolder(tmp_path)._check_saved_recipe(changed)


def test_the_auxiliary_head_is_a_recipe_key_and_refused_where_it_cannot_run():
    from clzoo.train.tasks import build_model

    recipe = load_recipe(None, ["model.auxiliary_cross_entropy_weight=0.5",
                                "model.auxiliary_label_smoothing=0.1",
                                "model.auxiliary_logit_scale=0.25"])
    model = build_model(recipe, num_classes=10)
    assert (model.auxiliary_classes, model.auxiliary_weight, model.auxiliary_label_smoothing,
            model.auxiliary_logit_scale) == (10, 0.5, 0.1, 0.25)
    assert [w.shape[-1] for w in model.auxiliary_classifier.weights] == [10]  # a kernel, no bias
    assert build_model(load_recipe(None, []), num_classes=10).auxiliary_classifier is None
    soft_target = ["task=soft_target", "loss.name=SoftTargetInfoNCELoss"]
    for overrides, key in ((soft_target, "needs task contrastive"),
                           (["model.encoder_chunk_size=64"], "GradCache"),
                           (["model.auxiliary_label_smoothing=1"], "model.auxiliary.label_smoothing = 1"),
                           (["model.auxiliary_logit_scale=0"], "auxiliary_logit_scale"),
                           (["model.auxiliary_logit_scale=nan"], "auxiliary_logit_scale")):
        with pytest.raises(RecipeError, match=key):
            load_recipe(None, ["model.auxiliary_cross_entropy_weight=0.5", *overrides])


@pytest.mark.large
def test_a_run_with_the_auxiliary_head_trains_resumes_and_ships_the_bare_encoder(tmp_path):
    overrides = [*STACK, "model.auxiliary_cross_entropy_weight=0.5", "training.epochs=2"]
    result = train(load_recipe(None, overrides), tmp_path / "aux", verbose=0)
    assert result.knn_top1 > 0.5 and np.isfinite(result.final_loss)
    checkpoint = keras.saving.load_model(tmp_path / "aux" / "checkpoint.keras")
    assert checkpoint.auxiliary_classes == 10  # resumable: the head is in the checkpoint
    encoder = load_model(tmp_path / "aux" / "encoder.keras")
    assert not any("auxiliary" in layer.name for layer in encoder._flatten_layers())


def _ladder():
    """benchmarks/airbench_ladder.py as a module."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import airbench_ladder

    return airbench_ladder


def test_no_ladder_rung_sets_a_key_twice():
    airbench_ladder, root = _ladder(), ROOT
    for name, overrides in airbench_ladder.rungs().items():
        keys = [s.split("=")[0] for s in airbench_ladder.settings(overrides, 5, "digits")]
        assert len(keys) == len(set(keys)), name
        load_recipe(root / "recipes/supcon/cifar10_airbench.yaml",
                    airbench_ladder.settings(overrides, 5, "digits"))  # clzoo train would accept it
    sets = airbench_ladder.settings(airbench_ladder.rungs()["offset_decay_64"], 5, "digits")
    assert "training.offset_weight_decay_multiplier=64" in sets
    assert "training.offset_weight_decay_multiplier=1" not in sets


def test_ladder_refuses_an_unknown_rung(tmp_path, capsys):
    airbench_ladder = _ladder()
    with pytest.raises(SystemExit) as exit_info:
        airbench_ladder.main(["--output", str(tmp_path), "--only", "two_view"])
    assert exit_info.value.code == 2
    assert "no such rung ['two_view']" in capsys.readouterr().err


def test_every_factory_takes_only_its_own_settings_and_each_is_a_training_key():
    """Issue 60 item 1: optimizer and schedule factories no longer receive the whole `training`
    section; each parameter they take as a setting is a recipe key."""
    from clzoo.optimizers.registry import OPTIMIZERS, SCHEDULES, settings_of
    from clzoo.train.recipe_upgrade import MOVED

    flat = {key.split(".")[1]: new.split(".")[1] for key, new in MOVED.items() if key.startswith("training.")}

    for section, registry in (("optimizer", OPTIMIZERS), ("schedule", SCHEDULES)):
        for name in registry:
            settings = settings_of(registry.get(name))
            assert settings is not None, name
            # each setting is a key of the section; the ones earlier recipes wrote flat translate
            assert all(flat.get(key, section) == section for key in settings), (name, settings)
            assert load_recipe(None, [f"training.{section}.name={name}"]).training.model_dump()[
                section] == {"name": name, **{k: v for k, v in _defaults(registry.get(name)).items()}}
    assert settings_of(OPTIMIZERS.get("adamw")) == ("weight_decay",)
    taken = {key for registry in (OPTIMIZERS, SCHEDULES) for name in registry
             for key in settings_of(registry.get(name))}
    assert set(flat) <= taken  # every earlier flat key still has a factory that takes it


def _defaults(factory):
    import inspect

    from clzoo.optimizers.registry import settings_of

    parameters = inspect.signature(factory).parameters
    return {key: parameters[key].default for key in settings_of(factory)}


@pytest.mark.parametrize("overrides, words", [
    (["training.optimizer=adamw", "training.momentum=0.5"],
     "momentum is a setting of optimizer sgd, lookahead_sgd and lars, not adamw"),
    (["training.trust_coefficient=0.01"], "trust_coefficient is a setting of optimizer lars, not sgd"),
])
def test_a_setting_the_chosen_optimizer_does_not_take_is_refused(overrides, words):
    """The rule follows the factories' signatures (adamw silently ignored `momentum` before)."""
    with pytest.raises(RecipeError, match=words):
        load_recipe(None, overrides)


def test_a_new_optimizer_is_its_factory_and_its_registration():
    """A user's optimizer with a setting of its own: the factory and `register` are all it takes;
    the recipe's keys reach it by name, and keys it does not take are refused for it."""
    from clzoo.optimizers.registry import OPTIMIZERS

    @OPTIMIZERS.register("nadam_with_decay", description="a user's optimizer")
    def nadam_with_decay(learning_rate, weight_decay=0.0):
        return keras.optimizers.Nadam(learning_rate, weight_decay=weight_decay)

    try:
        recipe = load_recipe(None, ["training.optimizer=nadam_with_decay", "training.weight_decay=0.05"])
        optimizer = build_optimizer(recipe, steps_per_epoch=3)
        assert isinstance(optimizer, keras.optimizers.Nadam) and optimizer.weight_decay == pytest.approx(0.05)
        with pytest.raises(RecipeError, match="nesterov is a setting of optimizer sgd and lookahead_sgd"):
            load_recipe(None, ["training.optimizer=nadam_with_decay", "training.nesterov=true"])
    finally:
        OPTIMIZERS._entries.pop("nadam_with_decay", None)
