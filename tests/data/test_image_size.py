"""`image_size` / `--image-size`: image sets of mixed sizes resized on load."""

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from clzoo.data import data_source, load_split
from clzoo.data.resize import resize_image
from clzoo.train import load_recipe
from tests.data.image_folders import write_image_folder


def _mixed(tmp_path):
    root = write_image_folder(tmp_path / "data")
    odd = np.random.default_rng(1).integers(0, 256, (12, 20, 3), dtype=np.uint8)
    Image.fromarray(odd).save(root / "train" / "dog" / "odd.png")
    return root, odd


def test_mixed_sizes_are_refused_naming_the_option(tmp_path):
    root, _ = _mixed(tmp_path)
    with pytest.raises(ValueError, match=r"differ in size.*--image-size N \(recipe key image_size"):
        load_split(str(root))


def test_image_size_resizes_every_image_on_load_with_pillow_bilinear(tmp_path):
    root, odd = _mixed(tmp_path)
    split = data_source(str(root), image_size=6).load("train")
    assert split.images.shape == (7, 6, 6, 3) and split.images.dtype == np.uint8
    row = [i for i, path in enumerate(split.paths) if path.endswith("odd.png")][0]
    expected = np.asarray(Image.fromarray(odd).resize((6, 6), Image.Resampling.BILINEAR))
    np.testing.assert_array_equal(split.images[row], expected)
    # the cache is keyed by the size: another size decodes again, the first one still reads back
    assert data_source(str(root), image_size=4).load("train").images.shape[1:3] == (4, 4)
    np.testing.assert_array_equal(data_source(str(root), image_size=6).load("train").images, split.images)


def test_image_size_on_a_resolved_source_and_on_digits():
    source = data_source("digits")
    assert data_source(source) is source
    resized = data_source(source, image_size=16)
    assert resized.image_size == 16 and resized.spec == "digits"
    test = resized.load("test")
    assert test.images.shape == (360, 16, 16, 3)
    np.testing.assert_array_equal(test.images[0], resize_image(source.load("test").images[0], 16))


@pytest.mark.parametrize("value", [0, -3, 4097, 2.5, True, "32"])
def test_a_bad_image_size_is_refused_before_any_decoding(value):
    with pytest.raises(ValueError, match=r"`image_size` must be a whole number of pixels from 1 to 4096"):
        data_source("digits", image_size=value)


def test_the_recipe_key_is_checked_with_the_recipe():
    assert load_recipe(None, ["image_size=24"]).image_size == 24
    with pytest.raises(ValueError, match="image_size"):
        load_recipe(None, ["image_size=0"])


@pytest.mark.large
def test_the_console_script_takes_image_size_and_its_refusal_names_it(tmp_path):
    from tests.test_cli import _run

    root, _ = _mixed(tmp_path)
    refused = _run(["show-views", "--data", str(root), "--output", str(tmp_path / "a.png")])
    assert refused.returncode != 0 and "--image-size N" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not (tmp_path / "a.png").exists()
    done = _run(["show-views", "--data", str(root), "--image-size", "8", "--images", "2",
                 "--views", "2", "--output", str(tmp_path / "b.png")])
    assert done.returncode == 0, done.stderr
    assert Image.open(tmp_path / "b.png").size[0] > 0
    bad = _run(["show-views", "--data", str(root), "--image-size", "0", "--output", str(tmp_path / "c.png")])
    assert bad.returncode == 2 and "--image-size" in bad.stderr


def test_an_image_size_too_large_for_memory_is_refused_before_decoding(tmp_path, monkeypatch):
    from clzoo.data import memory_budget

    root, _ = _mixed(tmp_path)
    # 2000 B < 7 x 10 x 10 x 3
    monkeypatch.setattr(memory_budget, "process_memory", lambda: (2000, "MemAvailable 2000 B"))
    monkeypatch.setattr("clzoo.data.decode.decode_image", None)  # decoding would fail loudly
    with pytest.raises(ValueError, match=r"7 images of .* at --image-size 10 take .*choose a smaller"):
        data_source(str(root), image_size=10).load("train")


def test_airbench_views_refuse_an_image_size_they_do_not_take():
    recipe = Path(__file__).parents[2] / "recipes" / "supcon" / "cifar10_airbench.yaml"
    with pytest.raises(ValueError, match=r"image_size = 24: the airbench views take the images as they "
                                         r"are, at views.size = 32"):
        load_recipe(recipe, ["image_size=24"])
    assert load_recipe(recipe, ["image_size=32"]).image_size == 32


def test_images_that_cannot_fit_in_memory_are_refused_before_decoding(tmp_path, monkeypatch):
    """Issue 58 item 7: large images without --image-size had no memory check (the decode ran out
    of memory); the first file's header and the free memory now say so first, naming the fix."""
    from clzoo.data import checks, memory_budget

    root = write_image_folder(tmp_path / "data", classes=("a", "b"), size=(64, 64))  # 12 images
    monkeypatch.setattr(memory_budget, "process_memory", lambda: (12 * 64 * 64 * 3 - 1, "MemAvailable"))
    with pytest.raises(ValueError, match=r"64 x 64 pixels need about .* pass --image-size N"):
        checks.check_data(str(root))
    assert checks.check_data(checks.data_source(str(root), image_size=32)).class_names == ("a", "b")
    monkeypatch.setattr(memory_budget, "process_memory", lambda: (None, ""))  # unknown: no refusal
    assert checks.check_data(str(root)).class_names == ("a", "b")


def test_train_on_mixed_sizes_names_the_recipes_view_size_as_the_value_to_pass(tmp_path):
    """Issue 85 item 3: the refusal at `train` named `--image-size N` though the recipe's view size
    is known. Run as the console script: one line, naming `--image-size 8` for `views.size=8`."""
    from clzoo.data.resize import MixedImageSizes
    from tests.test_cli import _run

    root, _ = _mixed(tmp_path)
    with pytest.raises(MixedImageSizes):
        load_split(str(root))
    refused = _run(["train", "sincere_digits", "--data", str(root), "--set", "views.size=8",
                    "--set", "training.batch_size=4", "--output", str(tmp_path / "run")])
    assert refused.returncode != 0, refused.stdout
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "differ in size" in refused.stderr and "views are 8 px: --image-size 8" in refused.stderr
    streamed = _run(["train", "sincere_digits", "--data", str(root), "--set", "views.size=8",
                     "--set", "training.batch_size=4", "--output", str(tmp_path / "run2")],
                    env={**os.environ, "CLZOO_MEMORY_BUDGET": "1KiB"})  # met while a batch decodes
    assert streamed.returncode != 0 and "data: streamed" in streamed.stdout, streamed.stdout
    assert len(streamed.stderr.strip().splitlines()) == 1, streamed.stderr
    assert "differ in size" in streamed.stderr and "--image-size 8 (recipe key" in streamed.stderr
