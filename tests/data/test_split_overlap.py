"""Issue 72 item 8: test images hard-linked to, or copied from, train/ were evaluated silently (kNN
k=1 100% on random features); one file in two classes through a link was accepted."""

import os
import shutil
import warnings

import numpy as np
import pytest

from clzoo.data import from_arrays, load_split
from clzoo.data.split_overlap import check_splits_apart
from clzoo.eval.splits import resolve_data
from tests.train.tiny_data import write_tiny_digits


def _splits(root, stream=False):
    return load_split(root, "train", stream=stream), load_split(root, "test", stream=stream)


@pytest.mark.parametrize("stream", [False, True])
def test_separate_splits_pass_without_a_warning(tmp_path, stream):
    root = write_tiny_digits(tmp_path / "d", train=40, test=12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_splits_apart(*_splits(root, stream), root) == 0


@pytest.mark.parametrize("link", [os.link, os.symlink])
def test_a_test_image_that_is_a_training_file_is_refused(tmp_path, link):
    root = write_tiny_digits(tmp_path / "d", train=40, test=12)
    victim = tmp_path / "d" / "test" / "0" / "extra.png"
    link(sorted((tmp_path / "d" / "train" / "0").iterdir())[0], victim)
    with pytest.raises(ValueError, match=r"are one file \(a hard or symbolic link\), in both splits"):
        check_splits_apart(*_splits(root), root)


def test_one_file_in_two_classes_is_refused(tmp_path):
    root = write_tiny_digits(tmp_path / "d", train=40, test=12)
    first = sorted((tmp_path / "d" / "train" / "0").iterdir())[0]
    os.symlink(first, tmp_path / "d" / "train" / "1" / "linked.png")
    with pytest.raises(ValueError, match="in two classes"):
        check_splits_apart(*_splits(root, stream=True), root)


def test_copied_test_images_are_counted_and_warned_about(tmp_path):
    root = write_tiny_digits(tmp_path / "d", train=40, test=12)
    for i, image in enumerate(sorted((tmp_path / "d" / "train" / "1").iterdir())[:3]):
        shutil.copy(image, tmp_path / "d" / "test" / "1" / f"copy{i}.png")
    with pytest.warns(UserWarning, match=r"3 of the 15 test images of .* are copies of training images"):
        assert check_splits_apart(*_splits(root), root) == 3
    with pytest.warns(UserWarning, match="3 of the 15"):  # the evaluation's own loading checks too
        resolve_data(root)


def test_held_arrays_are_compared_by_pixels():
    rng = np.random.default_rng(0)
    images = rng.integers(0, 255, (10, 4, 4, 3), dtype=np.uint8)
    train = from_arrays(images, np.arange(10) % 2)
    test = from_arrays(np.concatenate([images[:2], images[:3] ^ 1]), np.zeros(5, int))
    with pytest.warns(UserWarning, match=r"2 of the 5 test images .* test row 0 = train row 0"):
        assert check_splits_apart(train, test, "arrays") == 2
