"""Every named view recipe: shapes, dtype, range, per-image / per-view randomness, seeds; show-views."""

import numpy as np
import pytest

from clzoo import cli
from clzoo.data import VIEW_RECIPES, ViewConfig, batches, show_views, view_recipe
from clzoo.data.split import Split

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

# The views are built in tf.data whatever KERAS_BACKEND is; the other lanes check that Keras's
# augmentation layers switch to TensorFlow there on two recipes (plain ops and RandAugment), the
# tensorflow lane checks every recipe.
EVERY_LANE = ("randaugment", "simclr")


def _recipes():
    return [name if name in EVERY_LANE else pytest.param(name, marks=pytest.mark.backends("tensorflow"))
            for name in sorted(VIEW_RECIPES)]


def _split(n=8, size=32):
    rng = np.random.default_rng(1)
    return Split(rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8),
                 (np.arange(n) % 2).astype(np.int32), ["a", "b"])


def _batch(split, config, seed=0):
    x, _ = next(iter(batches(split, "views", len(split), seed=seed, views=config, shuffle=False)))
    return x.numpy()


@pytest.mark.large
@pytest.mark.parametrize("name", _recipes())
def test_recipe_shapes_range_randomness_and_seed(name):
    config = view_recipe(name, size=24, views=2)
    same = Split(np.repeat(_split(1).images, 4, axis=0), np.zeros(4, np.int32), ["a"])
    x = _batch(same, config)
    assert x.shape == (4, 2, 24, 24, 3) and x.dtype == np.float32
    assert x.min() >= 0.0 and x.max() <= 1.0
    assert not np.allclose(x[0, 0], x[0, 1])  # two views of one image differ
    assert not np.allclose(x[0, 0], x[1, 0])  # identical images get different views
    np.testing.assert_array_equal(x, _batch(same, config, seed=0))  # repeatable
    assert not np.array_equal(x, _batch(same, config, seed=1))


def test_simclr_blurs_only_from_96_px():
    assert view_recipe("simclr", size=32).blur_p == 0.0
    assert view_recipe("simclr", size=96).blur_p == 0.5


def test_asymmetric_views_follow_their_own_settings():
    config = view_recipe("asymmetric")
    assert config.for_view(0).blur_p == 1.0 and config.for_view(1).solarize_p == 0.2
    assert config.for_view(2).blur_p == 1.0  # cycles
    # Solarize only: every pixel of view 2 is x or 1 - x of the unsolarized view.
    plain = ViewConfig(jitter_p=0, grayscale_p=0, flip=False, crop_scale=(1.0, 1.0),
                       crop_ratio=(1.0, 1.0), per_view=({}, {"solarize_p": 1.0}))
    x = _batch(_split(2), plain)
    np.testing.assert_allclose(x[:, 1], np.where(x[:, 0] < 0.5, x[:, 0], 1 - x[:, 0]), atol=1e-6)


def test_bad_view_settings():
    with pytest.raises(ValueError, match="Unknown view recipe"):
        view_recipe("autoaugment")
    with pytest.raises(ValueError, match="per_view"):
        ViewConfig(per_view=({"views": 3},))
    with pytest.raises(ValueError, match="blur_p"):
        ViewConfig(per_view=({"blur_p": 2.0},))
    with pytest.raises(ValueError, match="randaugment"):
        ViewConfig(randaugment_magnitude=40)


def test_show_views_writes_a_png(tmp_path):
    path = show_views(_split(), tmp_path / "views.png", recipe="simclr", images=3, views=2)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert cli.main(["show-views", "--data", "digits", "--images", "2", "--views", "2",
                     "--output", str(tmp_path / "d.png")]) == 0
    assert (tmp_path / "d.png").stat().st_size > 1000


def test_recipe_views_section_accepts_a_named_recipe_with_overrides():
    from clzoo.train.runner import views_from_config

    config = views_from_config({"recipe": "simclr", "size": 96, "grayscale_p": 0.0})
    assert config.crop_scale == (0.08, 1.0) and config.blur_p == 0.5 and config.grayscale_p == 0.0
    assert views_from_config({}) == ViewConfig()


def test_digits_recipe_is_the_quickstart_views():
    """The quickstart recipe names `digits`; it resolves to the settings it spelled out before."""
    from pathlib import Path

    from clzoo.train import load_recipe
    from clzoo.train.builders import views_from_config

    spelled_out = ViewConfig(size=16, flip=False, crop_scale=(0.8, 1.0), jitter=(0.4, 0.4, 0.0, 0.0),
                             grayscale_p=0.0)
    recipe = load_recipe(Path(__file__).resolve().parents[2] / "recipes" / "sincere_digits.yaml")
    assert recipe.views == {"recipe": "digits"}
    assert views_from_config(recipe.views) == spelled_out
    assert view_recipe("digits") == spelled_out
    assert view_recipe("digits", size=24).size == 24  # the caller's size wins
    assert views_from_config({"recipe": "digits", "size": 20}).size == 20
    assert view_recipe("supcon").size == 32


def test_show_views_on_the_device_stream_names_its_own_option_for_a_setting_without_a_device_form(tmp_path):
    """Hostile pass: the refusal pointed at training.pipeline, not show-views' own `stream`."""
    with pytest.raises(ValueError, match="--stream tf_data"):
        show_views(_split(size=96), tmp_path / "views.png", recipe="simclr", images=2, views=2,
                   stream="device")
    assert not (tmp_path / "views.png").exists()
