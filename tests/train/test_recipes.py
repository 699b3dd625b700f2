"""Every recipe in recipes/ resolves: known keys, a registered encoder, a loss, optimizer and views
that build."""

from pathlib import Path

import keras
import numpy as np
import pytest

from clzoo.data import ViewConfig
from clzoo.models import list_encoders
from clzoo.optimizers import LARS
from clzoo.train import load_recipe
from clzoo.train.builders import build_loss, build_optimizer, views_from_config
from clzoo.train.tasks import TASKS

OTHER_VIEW_LOSSES = ("DCLLoss", "NSCLLoss", "SpreadLoss", "InfoNCELoss")
ROOT = Path(__file__).parents[2] / "recipes"
RECIPES = sorted(ROOT.rglob("*.yaml"))


def test_each_loss_and_dataset_has_its_full_small_and_fast_recipes():
    names = {str(p.relative_to(p.parents[1])) for p in RECIPES if p.parent.name != "recipes"}
    for loss in ("sincere", "supcon", "supinfonce"):
        for data in ("cifar2", "cifar10", "cifar100"):
            assert {f"{loss}/{data}.yaml", f"{loss}/{data}_small.yaml"} <= names
        assert f"{loss}/imagenet100.yaml" in names
    for recipe in ("supcon/cifar10_lars.yaml", "spread/cifar10_coarse.yaml",
                   "spread/cifar10_coarse_small.yaml", "spread/cifar100_coarse.yaml",
                   "nscl/cifar10_small.yaml", "dcl/cifar10_small.yaml", "simclr/cifar10_small.yaml",
                   "soft_target/cifar10_infonce_small.yaml",
                   "soft_target/cifar10_cross_entropy_small.yaml",
                   "soft_target/imagenet_infonce.yaml", "soft_target/imagenet_cross_entropy.yaml",
                   # the airbench_half recipes of benchmarks/reproduce.py's subset claims
                   "nscl/cifar10_fast.yaml", "dcl/cifar10_fast.yaml",
                   "spread/cifar10_coarse_fast.yaml", "supcon/cifar10_coarse_fast.yaml",
                   "soft_target/cifar10_infonce_fast.yaml",
                   "soft_target/cifar10_cross_entropy_fast.yaml",
                   # airbench's whole stack: the recipes of the airbench presets
                   "supcon/cifar10_airbench.yaml", "sincere/cifar10_airbench.yaml"):
        assert recipe in names


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recipe_resolves_and_builds(path):
    text = path.read_text()
    assert text.startswith("#"), "a recipe starts with comments saying where its values come from"
    config = load_recipe(path)
    assert config.model.encoder.name in list_encoders()
    loss = build_loss(config)
    assert isinstance(loss, keras.losses.Loss)
    optimizer = build_optimizer(config, steps_per_epoch=10)
    if config.training.optimizer.name == "lars":
        assert isinstance(optimizer, LARS)
    views = views_from_config(config.views)
    if config.task == "soft_target":  # a classifier on one view of MixUp / CutMix batches
        assert views.views == 1 and config.mix["label_smoothing"] == 0.1
        small = path.stem.endswith(("_small", "_fast"))  # the CPU recipes build at 32 px
        task = TASKS.get(config.task)()
        model = task.build_model(config, ViewConfig(views=1, size=32), 3) if small else None
        assert model is None or model.output_shape == (None, 3)
    elif path.stem.endswith(("_fast", "_airbench")):  # the airbench presets' recipes average
        assert config.model.test_time is not None  # the encoder over test-time views
        # One view where labels give the positives; two where a positive is the image's other
        # view (DCL, NSCL, L_spread) and for SupCon's CIFAR10-Coarse baseline of L_spread.
        other_view = config.loss.name in OTHER_VIEW_LOSSES or "coarse" in path.stem
        assert views.views == (2 if other_view else 1)
    else:
        assert views.views == 2
    if path.stem.endswith("_fast"):  # the CPU-budget recipes of the airbench presets
        assert config.model.encoder.name == "airbench_half" and config.training.epochs <= 30
    elif path.stem.endswith("_airbench"):  # airbench's whole stack, within an hour on 2 cores
        assert config.model.encoder.name == "airbench" and config.training.epochs <= 30
        # airbench's batch-wise views, except for self-supervised InfoNCE, whose two views of an
        # image must differ by more than a flip and a 2 px shift (per-image crops and colour)
        view_recipe = "supcon" if config.loss.name == "InfoNCELoss" else "airbench"
        assert config.views["recipe"] == view_recipe and config.training.optimizer.name == "lookahead_sgd"
        assert config.model.encoder.options["whitening"] and config.model.encoder.options["dirac"]
    elif path.stem.endswith("_small"):
        assert config.model.encoder.name == "resnet20" and config.training.epochs <= 12
    elif config.task == "soft_target":  # the paper's ImageNet schedule (Table 3)
        assert config.training.epochs == 100 and config.training.batch_size == 1024
    elif path.parent.name != "recipes":  # the full recipes carry the papers' lengths
        assert config.training.epochs >= 800 and config.training.batch_size >= 512
        assert config.training.schedule.setting("warmup_epochs") == 10


# benchmarks/reproduce.py compares these pairs: the recipes may differ only in the loss, and in
# the training keys named (epochs: the ladder sets them; soft-target's learning rate: the paper's
# 5.5 : 3 ratio).
PAIRS = [("dcl/cifar10_fast.yaml", "nscl/cifar10_fast.yaml", ()),
         ("spread/cifar10_coarse_fast.yaml", "supcon/cifar10_coarse_fast.yaml", ()),
         ("soft_target/cifar10_infonce_fast.yaml", "soft_target/cifar10_cross_entropy_fast.yaml",
          ("learning_rate",)),
         ("sincere/cifar10_fast.yaml", "supcon/cifar10_fast.yaml", ("epochs",)),
         ("sincere/cifar10_fast.yaml", "supinfonce/cifar10_fast.yaml", ("epochs",)),
         ("sincere/cifar10_airbench.yaml", "supcon/cifar10_airbench.yaml", ())]


@pytest.mark.parametrize("a, b, training_keys", PAIRS, ids=str)
def test_compared_recipes_differ_only_in_the_loss(a, b, training_keys):
    left, right = (load_recipe(ROOT / name).to_dict() for name in (a, b))
    for recipe in (left, right):
        del recipe["name"], recipe["description"], recipe["loss"]  # the description: text, as the name
        for key in training_keys:
            del recipe["training"][key]
    assert left == right


# CI trains one recipe per task (the large tier); every recipe trains in the slow tier, to run
# after touching a recipe, a builder or a task (docs/development.md).
ONE_PER_TASK = ("supcon/cifar10_aux_ce_airbench.yaml", "soft_target/cifar10_cross_entropy_fast.yaml")


def _tier(path):
    name = f"{path.parent.name}/{path.name}"
    return pytest.param(path, marks=pytest.mark.large if name in ONE_PER_TASK else pytest.mark.slow)


def test_ci_trains_one_recipe_of_each_task():
    tasks = {load_recipe(ROOT / name).task for name in ONE_PER_TASK}
    assert tasks == set(TASKS.list()) and all((ROOT / name).is_file() for name in ONE_PER_TASK)


@pytest.mark.parametrize("path", [_tier(path) for path in RECIPES], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_recipe_trains_one_step(path):
    """Issue 60's acceptance: every recipe trains a step with its own model, loss, optimizer and
    view pipeline, built as the runner builds them (8 random images at its view size, 4 classes):
    a finite loss and weights that moved."""
    from clzoo.data.split import Split
    from clzoo.models import adapt_whitening

    recipe = load_recipe(path, [("training.batch_size", 8)])
    views, task, loss = views_from_config(recipe.views), TASKS.get(recipe.task)(), build_loss(recipe)
    keras.utils.set_random_seed(0)
    model = task.build_model(recipe, views, 4, getattr(loss, "temperature_layer", None))
    rng = np.random.default_rng(0)
    split = Split(rng.integers(0, 256, (8, views.size, views.size, 3), dtype=np.uint8),
                  (np.arange(8) % 4).astype("int32"), list("abcd"))
    adapt_whitening(task.encoder(model), split.images, seed=recipe.seed)
    model.compile(optimizer=build_optimizer(recipe, steps_per_epoch=1), loss=loss)
    x, y = next(iter(task.batches(split, recipe, views, 0, "tf_data")))
    before = [keras.ops.convert_to_numpy(v.value) for v in model.trainable_variables]
    value = float(model.train_on_batch(x, y))
    after = [keras.ops.convert_to_numpy(v.value) for v in model.trainable_variables]
    assert np.isfinite(value)
    assert any(not np.array_equal(b, a) for b, a in zip(before, after))
