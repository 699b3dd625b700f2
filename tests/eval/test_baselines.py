"""Raw-pixel and random-init baselines: the same kNN / probe as the trained encoder, on the same split."""

import keras
import numpy as np
import pytest

from clzoo.data import from_arrays
from clzoo.eval.baselines import baseline_metrics, raw_pixel_features
from clzoo.eval.knn import knn_predictions


def _two_blobs(n, seed):
    """Class 0: dark images, class 1: bright ones (raw pixels separate them perfectly)."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 2
    images = np.where(labels[:, None, None, None] == 1, 200, 30) + rng.integers(0, 40, (n, 4, 4, 3))
    images[:, :2] = rng.integers(0, 255, (n, 2, 4, 3))  # half of each image is noise
    return from_arrays(images.astype(np.uint8), labels, ["dark", "bright"])


def test_raw_pixel_features_are_flattened_unit_range():
    images = np.arange(2 * 2 * 2 * 3, dtype=np.uint8).reshape(2, 2, 2, 3)
    features = raw_pixel_features(images)
    assert features.shape == (2, 12) and features.dtype == np.float32
    np.testing.assert_allclose(features[1], images[1].reshape(-1) / 255.0)
    assert raw_pixel_features(np.zeros((3, 4, 4, 3), np.uint8), size=8).shape == (3, 8 * 8 * 3)


def test_raw_pixel_features_refuse_float_images():
    with pytest.raises(ValueError, match="uint8"):
        raw_pixel_features(np.zeros((2, 4, 4, 3), np.float32))


def test_raw_pixel_row_equals_a_knn_on_the_pixels():
    train, test = _two_blobs(40, 0), _two_blobs(20, 1)
    rows = baseline_metrics(train, test, ks=(1, 5), probe=True)
    x = raw_pixel_features(train.images)
    y = raw_pixel_features(test.images)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    expected = knn_predictions(x, train.labels, y, (1, 5), 2)
    for k in (1, 5):
        assert rows["raw_pixels"].knn[f"k{k}"] == np.mean(expected[k] == test.labels)
    assert rows["raw_pixels"].probe == 1.0
    assert "random_init" not in rows


def test_random_init_row_uses_the_given_encoder():
    train, test = _two_blobs(40, 0), _two_blobs(20, 1)
    inputs = keras.Input((4, 4, 3))
    constant = keras.Model(inputs, keras.ops.ones_like(keras.layers.Flatten()(inputs))[:, :3])
    rows = baseline_metrics(train, test, constant, ks=(1,), probe=False, size=4)
    # Identical features for every image: no better than the class prior.
    assert rows["random_init"].knn["k1"] <= 0.5 + 1e-9
    assert rows["random_init"].probe is None
