"""airbench's batch-wise views: every view is a reflect-shifted (and maybe mirrored) image, the
flip alternates across epochs per image, and the stream resumes by step."""

import numpy as np
import pytest

import clzoo
from clzoo.data import BatchViewConfig
from clzoo.train.builders import views_from_config

N, SIZE = 24, 8
IMAGES = (np.random.default_rng(0).random((N, SIZE, SIZE, 3)) * 255).astype("uint8")
SPLIT = clzoo.data.from_arrays(IMAGES, np.arange(N) % 3)


def _shifted(image, dy, dx, pad):
    padded = np.pad(image, [(pad, pad), (pad, pad), (0, 0)], mode="reflect")
    return padded[pad - dy:pad - dy + SIZE, pad - dx:pad - dx + SIZE]


def _explain(view, image, pad):
    """(mirrored, dy, dx) that turn `image` into `view`, or None."""
    for mirrored in (False, True):
        source = image[:, ::-1] if mirrored else image
        for dy in range(-pad, pad + 1):
            for dx in range(-pad, pad + 1):
                if np.array_equal(_shifted(source, dy, dx, pad), view):
                    return mirrored, dy, dx
    return None


def _run(config, epochs=2, batch_size=8, start_step=0, seed=0):
    stream = clzoo.data.batches(SPLIT, "views", batch_size=batch_size, epochs=epochs, seed=seed,
                                start_step=start_step, views=config)
    return [(x.numpy(), y.numpy()) for x, y in stream]


def _flips_by_image(config):
    """{image index: [mirrored in epoch 0, in epoch 1]} read off the batches (labels locate images)."""
    flips = {}
    for x, _ in _run(config):
        for views in x:
            image = np.round(views[0] * 255).astype("uint8")
            matches = [i for i in range(N) if _explain(image, IMAGES[i], config.translate)]
            assert len(matches) == 1
            flips.setdefault(matches[0], []).append(_explain(image, IMAGES[matches[0]],
                                                             config.translate)[0])
    return flips


def test_every_view_is_a_shifted_possibly_mirrored_image_within_translate():
    config = BatchViewConfig(views=2, size=SIZE, translate=2)
    shifts = set()
    for x, _ in _run(config, epochs=1):
        assert x.shape == (8, 2, SIZE, SIZE, 3) and x.dtype == np.float32
        for views in x:
            found = [next(e for i in range(N) if (e := _explain(
                np.round(v * 255).astype("uint8"), IMAGES[i], 2))) for v in views]
            assert found[0][0] != found[1][0]  # the second view is mirrored when the first is not
            shifts.update((dy, dx) for _, dy, dx in found)
    assert len(shifts) > 10  # shifts are drawn per image and view, not once per batch


def test_alternating_flip_mirrors_each_image_in_every_other_epoch():
    flips = _flips_by_image(BatchViewConfig(size=SIZE, translate=1, flip="alternating"))
    assert len(flips) == N and all(len(f) == 2 for f in flips.values())
    assert all(first != second for first, second in flips.values())
    assert 4 <= sum(first for first, _ in flips.values()) <= N - 4  # a random half per epoch
    none = _flips_by_image(BatchViewConfig(size=SIZE, translate=1, flip="none"))
    assert not any(any(f) for f in none.values())


def test_the_stream_resumes_by_step_and_follows_the_seed():
    config = BatchViewConfig(views=2, size=SIZE)
    whole = _run(config, epochs=3)
    resumed = _run(config, epochs=3, start_step=4)
    assert len(whole) == 9 and len(resumed) == 5
    for (x, y), (x2, y2) in zip(whole[4:], resumed):
        np.testing.assert_array_equal(x, x2)
        np.testing.assert_array_equal(y, y2)
    other = _run(config, epochs=3, seed=1)
    assert not np.array_equal(whole[0][0], other[0][0])


def test_batch_views_are_refused_where_they_cannot_work():
    with pytest.raises(ValueError, match="does not resize"):
        clzoo.data.batches(SPLIT, "views", batch_size=8, views=BatchViewConfig(size=32))
    with pytest.raises(ValueError, match="kind='views' only"):
        clzoo.data.batches(SPLIT, "soft_targets", batch_size=8, views=BatchViewConfig(size=SIZE))
    with pytest.raises(ValueError, match="`flip` must be one of"):
        BatchViewConfig(flip="sometimes")
    with pytest.raises(ValueError, match="below the image size"):
        BatchViewConfig(size=4, translate=4)


def test_recipe_views_airbench_builds_batch_views():
    config = views_from_config({"recipe": "airbench", "translate": 1, "views": 2})
    assert config == BatchViewConfig(views=2, translate=1)
    with pytest.raises(ValueError, match="crop_scale"):
        views_from_config({"recipe": "airbench", "crop_scale": [0.5, 1.0]})


EVERY_LANE = pytest.mark.backends("tensorflow", "jax", "torch")


@pytest.mark.parametrize("stream", [pytest.param("device", marks=EVERY_LANE), "tf_data"])
def test_show_views_draws_airbench_views_epoch_by_epoch(tmp_path, stream):
    from clzoo.data import preview

    draw = preview._device_views if stream == "device" else preview._tf_data_views
    chosen = [0, 1, 2]
    epochs = draw(IMAGES[chosen], chosen, N, BatchViewConfig(size=SIZE, translate=0), 3, 0, True)
    assert epochs.shape == (3, 3, SIZE, SIZE, 3)
    for view, image in zip(np.round(epochs[:, 0] * 255), IMAGES[chosen]):  # the image or its mirror
        assert np.array_equal(view, image) or np.array_equal(view, image[:, ::-1])
    np.testing.assert_array_equal(epochs[:, 1], epochs[:, 0, :, ::-1])  # mirrored every other epoch
    np.testing.assert_array_equal(epochs[:, 2], epochs[:, 0])
    path = clzoo.data.show_views(SPLIT, tmp_path / "views.png", recipe="airbench", images=3, views=2,
                                 stream=stream)
    assert path.read_bytes().startswith(b"\x89PNG")
