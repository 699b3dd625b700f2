"""The device stream (`clzoo.data.device_batches`): resumable, in range, airbench's flip and shift,
the crop's resize and the colour jitter against independent references, on every backend."""

import colorsys

import keras
import numpy as np
import pytest

from clzoo.data import BatchViewConfig, ViewConfig, device_batches, from_arrays
from clzoo.data import device_view_draws as draws
from clzoo.data.device_views import color_jitter, sample
from clzoo.data.streams import resolve_pipeline

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)


def _split(n=24, size=8, classes=3, seed=0):
    images = np.random.default_rng(seed).integers(0, 256, (n, size, size, 3)).astype(np.uint8)
    return from_arrays(images, np.arange(n) % classes)


def _numpy(stream):
    return [(keras.ops.convert_to_numpy(x), keras.ops.convert_to_numpy(y)) for x, y in stream]


@pytest.mark.parametrize("views", [ViewConfig(size=8), BatchViewConfig(views=2, size=8, translate=2)],
                         ids=["per_image", "airbench"])
def test_a_resumed_stream_gives_the_batches_of_an_uninterrupted_one(views):
    split = _split()
    whole = _numpy(device_batches(split, batch_size=8, epochs=3, seed=5, views=views))
    assert len(whole) == 9
    for start in (2, 3, 7):
        resumed = _numpy(device_batches(split, batch_size=8, epochs=3, seed=5, start_step=start,
                                        views=views))
        for (x, y), (x0, y0) in zip(resumed, whole[start:], strict=True):
            np.testing.assert_array_equal(x, x0)
            np.testing.assert_array_equal(y, y0)
    other = _numpy(device_batches(split, batch_size=8, epochs=3, seed=6, views=views))
    assert not np.array_equal(other[0][0], whole[0][0])  # the seed matters
    taken = _numpy(device_batches(split, batch_size=8, epochs=3, seed=5, views=views).skip(4).take(2))
    np.testing.assert_array_equal(np.stack([x for x, _ in taken]), np.stack([x for x, _ in whole[4:6]]))


@pytest.mark.parametrize("views", [ViewConfig(size=12), ViewConfig(size=6, crop_scale=(0.08, 1.0),
                                                                   solarize_p=0.5),
                                   BatchViewConfig(views=3, size=8, translate=3, flip="random")],
                         ids=["supcon_up", "simclr_down", "airbench"])
def test_views_are_float32_in_unit_range_with_their_images_labels(views):
    split = _split()
    for x, y in _numpy(device_batches(split, batch_size=6, epochs=2, views=views)):
        assert x.dtype == np.float32 and y.dtype == np.int32
        assert x.shape == (6, views.views, views.size, views.size, 3)
        assert x.min() >= 0.0 and x.max() <= 1.0 and np.isfinite(x).all()
        assert x.std() > 0.05  # not blank


def test_labels_travel_with_their_images():
    # one flat colour per image, whose value encodes its index: any view of it shows which image it is
    n = 30
    images = np.repeat((np.arange(n) * 8).astype(np.uint8)[:, None, None, None], 8, axis=1)
    images = np.repeat(np.repeat(images, 8, axis=2), 3, axis=3)
    split = from_arrays(images, np.arange(n) % 7)
    views = ViewConfig(size=8, jitter_p=0.0, grayscale_p=0.0)
    seen = []
    for x, y in _numpy(device_batches(split, batch_size=10, epochs=2, seed=1, views=views)):
        index = np.rint(x[:, 0, 4, 4, 0] * 255 / 8).astype(int)
        np.testing.assert_array_equal(y, index % 7)
        seen.append(index)
    assert sorted(np.concatenate(seen[:3])) == list(range(n))  # each epoch visits every image once


def _reference_airbench(images, seed, epoch, position, coins, config):
    """airbench's batch views from the drawn shifts by NumPy padding and slicing (not coordinates)."""
    rng = draws.batch_generator(seed, epoch, position)
    pad = config.translate
    out = []
    for view in range(config.views):
        mirrored = coins ^ bool(epoch % 2) ^ bool(view % 2)
        shifts = rng.integers(-pad, pad + 1, (len(images), 2))
        views = []
        for image, flip, (dy, dx) in zip(images, mirrored, shifts):
            image = image[:, ::-1] if flip else image
            padded = np.pad(image, ((pad, pad), (pad, pad), (0, 0)), mode="reflect")
            views.append(padded[pad - dy:pad - dy + image.shape[0], pad - dx:pad - dx + image.shape[1]])
        out.append(np.stack(views))
    return np.stack(out, axis=1).astype(np.float32) / 255.0


def test_airbench_views_are_the_flipped_and_reflect_shifted_images():
    split, config = _split(n=16, size=8), BatchViewConfig(views=2, size=8, translate=2)
    coins = draws.image_coins(16, 3)
    stream = _numpy(device_batches(split, batch_size=8, epochs=2, seed=3, shuffle=False, views=config))
    for step, (x, _) in enumerate(stream):
        epoch, position = divmod(step * 8, 16)
        index = np.arange(position, position + 8)
        expected = _reference_airbench(split.images[index], 3, epoch, position, coins[index], config)
        np.testing.assert_allclose(x, expected, atol=1e-6)


@pytest.mark.parametrize("flip", ["alternating", "random"])
def test_odd_views_mirror_view_zero(flip):
    split = _split(n=64, size=8)
    config = BatchViewConfig(views=2, size=8, translate=0, flip=flip)
    for x, _ in _numpy(device_batches(split, batch_size=32, epochs=2, views=config)):
        np.testing.assert_allclose(x[:, 1], x[:, 0, :, ::-1], atol=1e-6)


def test_the_airbench_flip_alternates_across_epochs():
    split = _split(n=32, size=8)
    config = BatchViewConfig(views=1, size=8, translate=0)
    stream = _numpy(device_batches(split, batch_size=32, epochs=3, shuffle=False, views=config))
    original = split.images.astype(np.float32) / 255.0
    # (XLA may divide by 255 as a product with its inverse: a last-bit difference)
    mirrored = [np.all(abs(x[:, 0] - original[:, :, ::-1]) < 1e-6, axis=(1, 2, 3)) for x, _ in stream]
    plain = [np.all(abs(x[:, 0] - original) < 1e-6, axis=(1, 2, 3)) for x, _ in stream]
    assert all((m | p).all() for m, p in zip(mirrored, plain))  # nothing but flips
    np.testing.assert_array_equal(mirrored[1], ~mirrored[0])  # every image flips every other epoch
    np.testing.assert_array_equal(mirrored[2], mirrored[0])
    assert 8 <= mirrored[0].sum() <= 24  # a random half each epoch


@pytest.mark.parametrize("box,size", [((1, 2, 5, 4), 9), ((0, 0, 8, 8), 3), ((3, 1, 2, 6), 4)])
def test_the_crop_is_a_bilinear_resize_of_the_box(box, size):
    images = np.random.default_rng(0).random((1, 8, 8, 3)).astype(np.float32)
    top, left, h, w = box
    rows = draws.resize_coordinates(np.array([top]), np.array([h]), size)
    cols = draws.resize_coordinates(np.array([left]), np.array([w]), size)
    got = keras.ops.convert_to_numpy(sample(keras.ops.convert_to_tensor(images), rows, cols))
    crop = images[:, top:top + h, left:left + w]
    expected = keras.ops.convert_to_numpy(keras.ops.image.resize(crop, (size, size), antialias=False))
    np.testing.assert_allclose(got, expected, atol=1e-5)


def _jitter_reference(image, which, factor):
    gray = image @ np.array([0.2989, 0.5870, 0.1140], np.float32)
    if which == 0:
        return np.clip(image * factor, 0, 1)
    if which == 1:
        return np.clip((image - gray.mean()) * factor + gray.mean(), 0, 1)
    if which == 2:
        return np.clip(gray[..., None] + (image - gray[..., None]) * factor, 0, 1)
    shifted = [colorsys.hsv_to_rgb((h + factor) % 1.0, s, v)
               for h, s, v in (colorsys.rgb_to_hsv(*p) for p in image.reshape(-1, 3))]
    return np.array(shifted, np.float32).reshape(image.shape)


@pytest.mark.parametrize("which,factor", [(0, 1.3), (0, 0.6), (1, 1.4), (1, 0.7), (2, 1.35), (2, 0.0),
                                          (3, 0.08), (3, -0.1)])
def test_each_colour_adjustment_matches_its_definition(which, factor):
    images = np.random.default_rng(which).random((2, 4, 4, 3)).astype(np.float32)
    factors = np.zeros((2, 4), np.float32)
    factors[:, which] = factor
    order = np.array([[which, *(w for w in range(4) if w != which)]] * 2, np.int32)  # `which` alone
    strengths = tuple(float(w == which) for w in range(4))
    got = keras.ops.convert_to_numpy(color_jitter(keras.ops.convert_to_tensor(images),
                                                  keras.ops.convert_to_tensor(factors), order, strengths))
    for image, out in zip(images, got):
        np.testing.assert_allclose(out, _jitter_reference(image, which, factor), atol=2e-5)


@pytest.mark.parametrize("on_host", [True, False])
@pytest.mark.parametrize("strengths", [(0.4, 0.4, 0.4, 0.1), (0.4, 0.0, 0.4, 0.0), (0.0, 0.0, 0.0, 0.1)])
def test_the_jitter_applies_each_images_adjustments_in_its_own_order(on_host, strengths):
    rng = np.random.default_rng(7)
    images = rng.random((12, 4, 4, 3)).astype(np.float32)
    factors = np.stack([rng.uniform(0.6, 1.4, 12), rng.uniform(0.6, 1.4, 12), rng.uniform(0.6, 1.4, 12),
                        rng.uniform(-0.1, 0.1, 12)], axis=1).astype(np.float32)
    order = np.argsort(rng.random((12, 4)), axis=1).astype(np.int32)
    got = keras.ops.convert_to_numpy(color_jitter(
        keras.ops.convert_to_tensor(images), keras.ops.convert_to_tensor(factors),
        order if on_host else keras.ops.convert_to_tensor(order), strengths))
    for image, out, factor, steps in zip(images, got, factors, order):
        expected = image
        for which in steps:
            if strengths[which]:
                expected = _jitter_reference(expected, which, factor[which])
        np.testing.assert_allclose(out, expected, atol=5e-5)


def test_the_crop_draws_follow_torchvision_rules():
    rng = draws.generator(0, 9)
    boxes = draws.crop_boxes(rng, 4000, 32, 24, (0.2, 1.0), (3 / 4, 4 / 3))
    top, left, h, w = boxes.T
    assert (top >= 0).all() and (left >= 0).all() and (top + h <= 32).all() and (left + w <= 24).all()
    area = h * w / (32 * 24)
    assert area.min() >= 0.18 and area.max() <= 1.0
    assert 0.4 < np.median(area) < 0.65  # U[0.2, 1] of the area, less the draws that do not fit


def test_settings_without_a_device_form_are_refused_in_one_line():
    split = _split()
    with pytest.raises(ValueError, match="randaugment_ops.*tf_data"):
        device_batches(split, views=ViewConfig(size=8, randaugment_ops=2), batch_size=4)
    with pytest.raises(ValueError, match="blur_p"):
        device_batches(split, views=ViewConfig(size=8, per_view=({}, {"blur_p": 0.5})), batch_size=4)
    with pytest.raises(ValueError, match="kind 'soft_targets' has no device form"):
        device_batches(split, "soft_targets", batch_size=4)
    with pytest.raises(ValueError, match="batch_size"):  # the tf.data stream's own checks
        device_batches(split, batch_size=25)


def test_auto_chooses_the_device_stream_off_tensorflow(monkeypatch):
    assert resolve_pipeline("auto", "views", ViewConfig(), "jax") == "device"
    assert resolve_pipeline("auto", "views", ViewConfig(), "torch") == "device"
    assert resolve_pipeline("auto", "views", ViewConfig(), "tensorflow") == "tf_data"
    assert resolve_pipeline("auto", "views", ViewConfig(randaugment_ops=1), "jax") == "tf_data"
    assert resolve_pipeline("auto", "soft_targets", ViewConfig(views=1), "jax") == "tf_data"
    assert resolve_pipeline("device", "views", BatchViewConfig(), "tensorflow") == "device"
    with pytest.raises(ValueError, match="training.pipeline = device: views.randaugment_ops"):
        resolve_pipeline("device", "views", ViewConfig(randaugment_ops=1), "jax")
    monkeypatch.setattr("clzoo.data.device_stream.tensorflow_installed", lambda: False)
    with pytest.raises(ValueError, match="auto: no stream can serve this run .device: views.blur_p.*"
                                         "tf_data: it needs TensorFlow"):
        resolve_pipeline("auto", "views", ViewConfig(blur_p=0.5), "jax")


def test_fit_takes_the_stream_as_it_is_one_epoch_of_it_per_epoch():
    import clzoo

    keras.utils.set_random_seed(0)
    encoder = clzoo.models.get_encoder("resnet8", input_shape=(8, 8, 3))
    model = clzoo.models.ContrastiveModel(encoder, clzoo.models.ProjectionHead((16,), 8))
    model.compile(optimizer="sgd", loss=clzoo.losses.SupConLoss())
    stream = device_batches(_split(), batch_size=8, epochs=2, views=ViewConfig(size=8))
    history = model.fit(stream, epochs=2, verbose=0)  # no steps_per_epoch: the stream's epochs
    assert len(history.history["loss"]) == 2
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 6
    with pytest.raises(ValueError, match=r"fit asks for 9 steps .* holds 6 .*epochs=3"):
        model.fit(stream, epochs=3, verbose=0, steps_per_epoch=None)  # None: Keras' own default
    with pytest.raises(ValueError, match=r"holds 4 .*epochs=3"):  # started at step 2 of 3 per epoch
        model.fit(stream.skip(2), epochs=2, verbose=0)
