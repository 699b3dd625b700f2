"""Unlabelled image folders (`clzoo.data.unlabelled`): images at any depth and of any size, one split."""

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from clzoo.data import data_source, load_split
from clzoo.data.checks import check_data
from clzoo.data.unlabelled import UNLABELLED, is_unlabelled, list_unlabelled
from tests.data.image_folders import write_image_folder


def write_unlabelled(root, count=9, seed=0):
    """`count` random photos of several sizes, nested up to two folders deep (and a hidden folder
    and a text file that are not images); returns `(root, {relative path: pixels})`."""
    rng = np.random.default_rng(seed)
    written = {}
    for i in range(count):
        folder = root / ["", "trip", "trip/day"][i % 3]
        folder.mkdir(parents=True, exist_ok=True)
        pixels = rng.integers(0, 256, (6 + i, 9 + i % 4, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"p{i}.png")
        written[str((folder / f"p{i}.png").relative_to(root))] = pixels
    (root / ".thumbnails").mkdir()
    Image.fromarray(pixels).save(root / ".thumbnails" / "hidden.png")
    (root / "trip" / "notes.txt").write_text("not an image")
    return root, written


def test_a_folder_without_train_and_test_is_unlabelled(tmp_path):
    root, written = write_unlabelled(tmp_path / "photos")
    labelled = write_image_folder(tmp_path / "labelled")
    assert is_unlabelled(root) and not is_unlabelled(labelled)
    assert not data_source(str(root)).labelled and data_source(str(labelled)).labelled
    assert data_source("digits").labelled
    files, _, labels, classes = list_unlabelled(root)
    # every image at any depth, sorted by folder then name; hidden folders and other files left out
    assert sorted(str(Path(f).relative_to(root)) for f in files) == sorted(written)
    assert labels.dtype == np.int32 and not labels.any() and classes == [UNLABELLED]


@pytest.mark.parametrize("stream", [False, True])
def test_any_sizes_load_resized_as_one_unlabelled_split(tmp_path, stream):
    root, written = write_unlabelled(tmp_path / "photos")
    split = data_source(str(root), image_size=5).load("train", stream=stream)
    assert not split.labelled and split.class_names == [UNLABELLED] and len(split) == len(written)
    images = np.asarray(split.images[np.arange(len(split))])
    assert images.shape == (len(written), 5, 5, 3)
    for row, path in enumerate(split.paths):
        pixels = written[str(Path(path).relative_to(root))]
        expected = np.asarray(Image.fromarray(pixels).resize((5, 5), Image.Resampling.BILINEAR))
        np.testing.assert_array_equal(images[row], expected)


def test_without_image_size_mixed_sizes_are_refused_naming_the_option(tmp_path):
    root, _ = write_unlabelled(tmp_path / "photos")
    with pytest.raises(ValueError, match=r"differ in size.*--image-size N"):
        load_split(str(root))


def test_it_has_no_test_split_and_says_what_needs_labels(tmp_path):
    root, _ = write_unlabelled(tmp_path / "photos")
    with pytest.raises(ValueError, match=r"unlabelled folder .* no test split\. kNN, probes"):
        data_source(str(root), image_size=5).load("test")


def test_the_check_before_work_counts_it_and_refuses_a_label_set(tmp_path):
    root, written = write_unlabelled(tmp_path / "photos")
    summary = check_data(data_source(str(root), image_size=5))
    assert not summary.labelled and summary.train_images == len(written)
    assert summary.class_names == (UNLABELLED,)
    with pytest.raises(ValueError, match="unlabelled folder"):
        check_data(f"{root}@cifar2")


def test_a_folder_without_images_is_refused_naming_both_layouts(tmp_path):
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"No images in .*train/<class>/<image>.*any depth"):
        load_split(str(tmp_path / "empty"))


def test_an_unreadable_entry_is_named_or_skipped(tmp_path):
    root, written = write_unlabelled(tmp_path / "photos")
    (root / "trip" / "day" / "broken.png").symlink_to(tmp_path / "nowhere.png")
    with pytest.raises(ValueError, match=r"broken\.png: dangling symlink"):
        list_unlabelled(root)
    with pytest.warns(UserWarning, match="Skipped 1 unreadable image"):
        assert len(list_unlabelled(root, on_unreadable="skip")[0]) == len(written)


def test_a_split_folder_in_another_case_is_refused_not_read_as_images(tmp_path):
    root = write_image_folder(tmp_path / "odd", splits=("Train", "Test"))
    with pytest.raises(ValueError, match=r"Test looks like a split folder.*Rename it test/"):
        load_split(str(root))
    with pytest.raises(ValueError, match="looks like a split folder"):
        check_data(str(root))


@pytest.mark.parametrize("entry, said", [("file", r"train \(not a folder\), so it is read as a labelled"),
                                         ("test", r"holds test/, so it is read as a labelled")])
def test_the_missing_split_refusal_says_why_the_folder_is_labelled(tmp_path, entry, said):
    root = tmp_path / "photos"
    root.mkdir()
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(root / "a.png")
    if entry == "file":
        (root / "train").write_text("")
    else:
        (root / "test" / "cat").mkdir(parents=True)
    with pytest.raises(ValueError, match=said + ".*unlabelled images at any depth"):
        load_split(str(root))
    with pytest.raises(ValueError, match=r"a\.png is a file, not a folder"):
        load_split(str(root / "a.png"))
