"""Recipe values that pass the schema but cannot work for this run are refused before anything is
written, naming the key (issue 44, item 5)."""

import re

import pytest
import yaml

from clzoo.train import load_recipe, train
from clzoo.train.recipe import RecipeError
from tests.train.test_resume import tiny_recipe
from tests.train.tiny_data import write_tiny_digits


@pytest.fixture
def setup(tmp_path):
    data = write_tiny_digits(tmp_path / "data", train=64, test=16)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_recipe(data)))
    return path, tmp_path


@pytest.mark.parametrize("override, says", [
    ("training.learning_rate=1e-50",
     "training.learning_rate = 1e-50: 1e-50 is outside float32"),
    ("loss.temperature=1e-45", "temperature = 1e-45 is outside float32's range"),
    ("loss.temperature=1e39", "temperature = 1e+39 is outside float32's range"),
    # issue 58 item 6: every float setting, not only the learning rate and temperature
    ("training.weight_decay=1e300", "weight_decay = 1e+300 is outside float32's range"),
    ("training.momentum=1e-60", "momentum = 1e-60 is outside float32's range"),
    ("training.warmup_start_fraction=1e-50", "warmup_start_fraction = 1e-50 is outside float32"),
    # nested values and optional floats too
    ("views.jitter_p=1e-50", "views.jitter_p = 1e-50 is outside float32"),
    ("views.crop_scale=[1e-50, 1.0]", "views.crop_scale[0] = 1e-50 is outside float32"),
    ("mix.mixup_alpha=1e39", "mix.mixup_alpha = 1e+39 is outside float32"),
])
def test_values_float32_cannot_hold_are_refused(setup, override, says):
    path, _ = setup
    with pytest.raises(RecipeError, match=re.escape(says)):
        load_recipe(path, [override])


@pytest.mark.parametrize("override, says", [
    (["eval.knn_k=[1, 100]", "eval.knn_headline_k=100"],
     "eval.knn_headline_k = 100: more than the 64 training images"),
    (["training.epochs=1000000000"], "training.epochs = 1000000000: 2,000,000,000 steps"),
    # issue 58 item 7: airbench views (no resize) on 8x8 data: a Keras shape error inside fit
    (["views={recipe: airbench, views: 2}"],
     "views.size = 32: the airbench views take the images as they are, and"),
    # issue 58 item 6: LookaheadSGD that never pulls ended on the untrained weights
    (["training.optimizer=lookahead_sgd", "training.lookahead_every=7"],
     "training.optimizer.lookahead_every = 7: more than the run's 6 steps"),
])
def test_values_impossible_for_the_data_are_refused_before_writing(setup, override, says):
    path, tmp_path = setup
    with pytest.raises(RecipeError, match=re.escape(says)):
        train(load_recipe(path, override), tmp_path / "run", verbose=0)
    assert not (tmp_path / "run").exists()


def test_an_output_inside_the_data_folder_is_refused(setup):
    path, tmp_path = setup
    inside = tmp_path / "data" / "train" / "run"
    with pytest.raises(RecipeError, match="is inside the data.s train/ or test/ folder"):
        train(load_recipe(path), inside, verbose=0)
    assert not inside.exists()


@pytest.mark.large
def test_k_above_the_images_other_than_the_headline_is_skipped_not_refused(setup):
    """The default knn_k [1, 5, 20, 200] on a small dataset: k = 200 is skipped, by design."""
    path, tmp_path = setup
    metrics = train(load_recipe(path, ["training.epochs=1", "eval.knn_k=[1, 5, 200]"]),
                    tmp_path / "run", verbose=0)
    assert set(metrics.knn) == {"k1", "k5"}


@pytest.mark.large
def test_an_output_beside_the_splits_is_fine(setup):
    """Only train/ and test/ are read: a run folder next to them spoils nothing."""
    path, tmp_path = setup
    train(load_recipe(path, ["training.epochs=1"]), tmp_path / "data" / "runs" / "a", verbose=0)
    assert (tmp_path / "data" / "runs" / "a" / "metrics.json").is_file()


@pytest.mark.parametrize("key, value", [("warmup_epochs", 2.0), ("warmup_start_fraction", 0.1),
                                        ("final_learning_rate_fraction", 0.01)])
def test_a_constant_schedule_refuses_the_settings_it_would_ignore(setup, key, value):
    """Issue 58 item 6: schedule constant ignored these without a word."""
    path, _ = setup
    with pytest.raises(RecipeError, match=f"{key} is a setting of schedule cosine and linear, not constant"):
        load_recipe(path, ["training.schedule=constant", f"training.{key}={value}"])
    assert load_recipe(path, ["training.schedule=constant", "training.warmup_epochs=0"])


def test_lookahead_sgd_refuses_a_period_longer_than_the_run():
    from clzoo.optimizers import LookaheadSGD

    with pytest.raises(ValueError, match=r"`lookahead_every` \(11\) must be at most `total_steps` \(10\)"):
        LookaheadSGD(0.1, lookahead_every=11, total_steps=10)
    assert LookaheadSGD(0.1, lookahead_every=10, total_steps=10).lookahead_every == 10
