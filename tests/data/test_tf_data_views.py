import numpy as np
import pytest

from clzoo.data import ViewConfig, batches, load_split
from clzoo.data.split import Split

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)


def _split(n=16, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 32, 32, 3), dtype=np.uint8)
    return Split(images, (np.arange(n) % 4).astype(np.int32), ["a", "b", "c", "d"])


def _first_batch(split, config=None, **kwargs):
    x, y = next(iter(batches(split, "views", views=config, **kwargs)))
    return x.numpy(), y.numpy()


def test_shapes_dtypes_range():
    x, y = _first_batch(_split(), config=ViewConfig(views=3, size=24), batch_size=8)
    assert x.shape == (8, 3, 24, 24, 3) and x.dtype == np.float32
    assert y.shape == (8,) and y.dtype == np.int32
    assert x.min() >= 0.0 and x.max() <= 1.0


def test_views_differ_per_image_and_per_view():
    same = np.repeat(_split(1).images, 8, axis=0)
    split = Split(same, np.zeros(8, np.int32), ["a"])
    x, _ = _first_batch(split, batch_size=8, shuffle=False)
    # Two views of one image differ, and identical images get different views.
    assert not np.allclose(x[0, 0], x[0, 1])
    assert not np.allclose(x[0, 0], x[1, 0])
    flat = x.reshape(16, -1)
    assert len({row.tobytes() for row in flat}) == 16


def test_seed_makes_views_repeatable():
    split = _split()
    a, ya = _first_batch(split, batch_size=8, seed=3)
    b, yb = _first_batch(split, batch_size=8, seed=3)
    c, _ = _first_batch(split, batch_size=8, seed=4)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ya, yb)
    assert not np.allclose(a, c)


def test_identity_config_reproduces_the_image():
    split = _split(4)
    config = ViewConfig(crop_scale=(1.0, 1.0), crop_ratio=(1.0, 1.0), flip=False,
                        jitter_p=0.0, grayscale_p=0.0)
    x, y = _first_batch(split, config=config, batch_size=4, shuffle=False)
    np.testing.assert_allclose(x[:, 0], split.images / 255.0, atol=1e-6)


def test_grayscale_always():
    config = ViewConfig(jitter_p=0.0, grayscale_p=1.0)
    x, _ = _first_batch(_split(), config=config, batch_size=8)
    np.testing.assert_allclose(x[..., 0], x[..., 1], atol=1e-6)
    np.testing.assert_allclose(x[..., 1], x[..., 2], atol=1e-6)


def test_flip_only_mirrors():
    split = _split(16)
    config = ViewConfig(crop_scale=(1.0, 1.0), crop_ratio=(1.0, 1.0), flip=True,
                        jitter_p=0.0, grayscale_p=0.0)
    x, _ = _first_batch(split, config=config, batch_size=16, shuffle=False)
    original = split.images / 255.0
    mirrored = original[:, :, ::-1]
    flipped = [np.allclose(x[i, v], mirrored[i], atol=1e-6) for i in range(16) for v in range(2)]
    kept = [np.allclose(x[i, v], original[i], atol=1e-6) for i in range(16) for v in range(2)]
    assert all(f or k for f, k in zip(flipped, kept))
    assert 4 <= sum(flipped) <= 28  # p = 0.5 over 32 views


def test_crop_scale_zooms_in():
    # A tiny crop area of a half-black, half-white image is usually uniform.
    image = np.zeros((1, 32, 32, 3), np.uint8)
    image[:, :, 16:] = 255
    split = Split(np.repeat(image, 8, 0), np.zeros(8, np.int32), ["a"])
    config = ViewConfig(crop_scale=(0.04, 0.06), flip=False, jitter_p=0.0, grayscale_p=0.0)
    x, _ = _first_batch(split, config=config, batch_size=8)
    spread = x.reshape(16, -1).std(axis=1)
    assert np.mean(spread < 0.2) > 0.5


def test_digits_pipeline_works():
    x, _ = _first_batch(load_split("digits"), batch_size=32)
    assert x.shape == (32, 2, 32, 32, 3)


@pytest.mark.parametrize("kwargs, match", [
    ({"views": 0}, "views=0"),
    ({"crop_scale": (0.0, 1.0)}, "crop_scale"),
    ({"jitter_p": 1.5}, "jitter_p=1.5"),
    ({"jitter": (0.4, 0.4, 0.4, 0.9)}, "jitter"),
])
def test_bad_view_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ViewConfig(**kwargs)


def test_batch_larger_than_dataset():
    with pytest.raises(ValueError, match="batch_size"):
        batches(_split(4), "views", batch_size=8)


@pytest.mark.large
def test_view_ops_are_traced_once_per_settings_and_give_the_uncached_batches(monkeypatch):
    import tensorflow as tf

    from clzoo.data import tf_data_views as V

    # This test's own settings (no other test traces them), with every optional op on.
    config = ViewConfig(size=16, randaugment_ops=2, blur_p=0.5, solarize_p=0.37)
    traced = V._view_function(config)
    split = _split()

    def run(start_step):
        return _first_batch(split, config=config, batch_size=8, seed=3, epochs=2,
                            start_step=start_step)[0]

    cached = [run(0), run(1)]  # two pipelines of two views each
    assert traced.experimental_get_tracing_count() == 1
    assert V._view_function(ViewConfig(size=16, randaugment_ops=2, blur_p=0.5,
                                       solarize_p=0.37)) is traced  # equal settings, one function
    for other in (ViewConfig(size=16, randaugment_ops=2, blur_p=0.5, solarize_p=0.38),
                  ViewConfig(size=16, randaugment_ops=2, blur_p=0.5, solarize_p=np.float32(0.37))):
        assert V._view_function(other) is not traced  # np.float32(0.37) rounds otherwise
    # The old path: the ops traced afresh into each pipeline's map function.
    monkeypatch.setattr(V, "_view_function",
                        lambda c: lambda image, seed: V._augment_view(image, seed, c))
    for start_step, batch in zip((0, 1), cached):
        np.testing.assert_array_equal(run(start_step), batch)
    eager = V.augment_view(tf.constant(split.images[0]), tf.constant([5, 7], tf.int64), config)
    assert eager.shape == (16, 16, 3)  # eagerly: op by op, no trace
    assert traced.experimental_get_tracing_count() == 1
