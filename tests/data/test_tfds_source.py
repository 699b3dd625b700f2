"""A tfds split read into one array (tfds' own mock data: no download): shapes, labels, the resize."""

import numpy as np
import pytest

tfds = pytest.importorskip("tensorflow_datasets")


def test_a_tfds_split_is_read_into_one_uint8_array_with_its_labels():
    from clzoo.data.tfds_splits import _load_tfds

    with tfds.testing.mock_data(num_examples=12):
        split = _load_tfds("cifar10", "train")
        resized = _load_tfds("cifar10", "test", image_size=16)
        reference = [example["image"] for example in tfds.as_numpy(tfds.load("cifar10", split="train"))]
    assert split.images.shape == (12, 32, 32, 3) and split.images.dtype == np.uint8
    np.testing.assert_array_equal(split.images, np.stack(reference))  # every row in order
    assert split.labels.dtype == np.int32 and 0 <= split.labels.min() and split.labels.max() < 10
    assert resized.images.shape == (12, 16, 16, 3)
