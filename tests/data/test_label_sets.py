"""Derived label sets: CIFAR-2, CIFAR10-Coarse, CIFAR100-Coarse, fine labels kept."""

import numpy as np
import pytest

from clzoo.data import load_split
from tests.data.image_folders import write_image_folder

CIFAR10 = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def test_cifar2_keeps_cats_and_dogs_with_their_fine_labels(tmp_path):
    write_image_folder(tmp_path, classes=CIFAR10, per_class=2)
    split = load_split(f"{tmp_path}@cifar2", "train")
    assert split.class_names == ["cat", "dog"]
    assert split.labels.tolist() == [0, 0, 1, 1]
    assert split.fine_labels.tolist() == [3, 3, 5, 5]
    full = load_split(str(tmp_path), "train")
    np.testing.assert_array_equal(split.images, full.images[np.isin(full.labels, [3, 5])])


def test_cifar10_coarse_is_animals_vs_vehicles(tmp_path):
    write_image_folder(tmp_path, classes=CIFAR10, per_class=1)
    split = load_split(f"{tmp_path}@cifar10_coarse", "test")
    assert split.class_names == ["animal", "vehicle"]
    vehicles = [CIFAR10[i] for i in np.flatnonzero(split.labels == 1)]
    assert sorted(vehicles) == ["airplane", "automobile", "ship", "truck"]
    assert split.fine_labels.tolist() == list(range(10))
    assert split.fine_class_names == list(CIFAR10)


def test_cifar100_coarse_reads_tfds_coarse_labels():
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(num_examples=6, policy=tfds.testing.MockPolicy.USE_CODE):
        split = load_split("tfds:cifar100@cifar100_coarse", "train")
    assert len(split.class_names) == 20 and len(split.fine_class_names) == 100
    assert split.labels.max() < 20 and split.fine_labels.max() < 100
    assert split.images.shape == (6, 32, 32, 3)


def test_label_set_errors(tmp_path):
    write_image_folder(tmp_path, classes=("cat", "dog"), per_class=1)
    with pytest.raises(ValueError, match="Unknown label set 'cifar3'"):
        load_split(f"{tmp_path}@cifar3")
    with pytest.raises(ValueError, match="needs CIFAR-10's classes"):
        load_split(f"{tmp_path}@cifar10_coarse")
    with pytest.raises(ValueError, match="tfds:cifar100"):
        load_split(f"{tmp_path}@cifar100_coarse")
