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
     "training.learning_rate = 1e-50 (from an override): 1e-50 is outside float32"),
    ("loss.temperature=1e-45", "temperature = 1e-45 is outside float32's range"),
    ("loss.temperature=1e39", "temperature = 1e+39 is outside float32's range"),
])
def test_values_float32_cannot_hold_are_refused(setup, override, says):
    path, _ = setup
    with pytest.raises(RecipeError, match=re.escape(says)):
        load_recipe(path, [override])


@pytest.mark.parametrize("override, says", [
    (["eval.knn_k=[1, 100]", "eval.knn_headline_k=100"],
     "eval.knn_headline_k = 100: more than the 64 training images"),
    (["training.epochs=1000000000"], "training.epochs = 1000000000: 2,000,000,000 steps"),
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
