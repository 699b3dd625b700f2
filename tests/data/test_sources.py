import numpy as np
import pytest
from PIL import Image

import clzoo
from clzoo.data import DataSource, data_source, load_split
from tests.data.image_folders import write_image_folder


def test_digits_is_real_and_split():
    train, test = load_split("digits", "train"), load_split("digits", "test")
    assert train.images.shape == (1437, 32, 32, 3) and train.images.dtype == np.uint8
    assert test.images.shape == (360, 32, 32, 3)
    assert set(np.unique(train.labels)) == set(range(10))
    assert train.images.max() == 255 and train.images.min() == 0
    # Stratified: every class in the test split with 35-37 images.
    assert np.all(np.bincount(test.labels) >= 35)


def test_image_folder_reads_labels_by_sorted_class_name(tmp_path):
    root = write_image_folder(tmp_path / "data", classes=("zebra", "ant"))
    split = load_split(str(root), "train")
    assert split.class_names == ["ant", "zebra"]
    assert split.images.shape == (6, 8, 8, 3)
    np.testing.assert_array_equal(split.labels, [0, 0, 0, 1, 1, 1])
    first = np.asarray(Image.open(root / "train" / "ant" / "0.png"))
    np.testing.assert_array_equal(split.images[0], first)


def test_image_folder_is_cached_outside_the_source(tmp_path, monkeypatch):
    root = write_image_folder(tmp_path / "data")
    before = sorted(p for p in root.rglob("*"))
    load_split(f"folder:{root}", "train")
    cached = list(clzoo.data.cache_dir("datasets").glob("*.npz"))
    assert len(cached) == 1
    assert sorted(p for p in root.rglob("*")) == before  # nothing written in the source
    # Second load reads the cache: it still works with the images unreadable.
    monkeypatch.setattr("clzoo.data.decode.decode_image", lambda path: 1 / 0)
    again = load_split(str(root), "train")
    assert again.images.shape == (6, 8, 8, 3)


def test_folders_with_long_names_are_cached_apart(tmp_path):
    """Issue 58 item 5: a 220-character folder name ("File name too long" in the cache before);
    two such folders sharing their first 200 characters keep their own cache files."""
    roots = [write_image_folder(tmp_path / ("d" * 200 + tail), classes=classes)
             for tail, classes in (("x" * 20, ("a", "b")), ("y" * 20, ("b", "c")))]
    for root, names in zip(roots, (["a", "b"], ["b", "c"])):
        assert load_split(str(root), "train").class_names == names
    cached = sorted(clzoo.data.cache_dir("datasets").glob("d*.npz"))
    assert len(cached) == 2 and all(len(p.name.encode()) < 255 for p in cached)
    assert [load_split(str(root), "train").class_names for root in roots] == [["a", "b"], ["b", "c"]]


def test_missing_path(tmp_path):
    with pytest.raises(ValueError, match=r"Received: data='.*nowhere' \(no such path\)"):
        load_split(str(tmp_path / "nowhere"))


def test_folder_without_split(tmp_path):
    (tmp_path / "data").mkdir()  # read as unlabelled (no train/ or test/): no image is refused
    with pytest.raises(ValueError, match=r"No images in .* A labelled dataset is .*/train/<class>/<image>"):
        load_split(str(tmp_path / "data"))
    (tmp_path / "data" / "test").mkdir()  # a test split without its train split is the old refusal
    with pytest.raises(ValueError, match="'train' sub-folder"):
        load_split(str(tmp_path / "data"))


def test_empty_class_folder(tmp_path):
    root = write_image_folder(tmp_path / "data")
    (root / "train" / "empty").mkdir()
    with pytest.raises(ValueError, match="empty holds no images"):
        load_split(str(root))


def test_no_class_folders(tmp_path):
    (tmp_path / "data" / "train").mkdir(parents=True)
    with pytest.raises(ValueError, match="No class folders"):
        load_split(str(tmp_path / "data"))


def test_unreadable_image_is_named(tmp_path):
    root = write_image_folder(tmp_path / "data")
    (root / "train" / "cat" / "broken.png").write_bytes(b"not an image")
    with pytest.raises(ValueError, match="broken.png"):
        load_split(str(root))
    with pytest.warns(UserWarning, match="Skipped 1 unreadable image"):
        split = load_split(str(root), on_unreadable="skip")
    assert len(split) == 6 and split.labels.tolist() == [0, 0, 0, 1, 1, 1]
    with pytest.raises(ValueError, match="broken.png"):  # the skipping cache is not reused
        load_split(str(root))


def test_folder_split_names_the_file_of_each_row_fresh_and_cached(tmp_path, monkeypatch):
    root = write_image_folder(tmp_path / "data")
    (root / "train" / "cat" / "broken.png").write_bytes(b"not an image")
    expected = [str(root.resolve() / "train" / c / f"{i}.png") for c in ("cat", "dog") for i in range(3)]
    with pytest.warns(UserWarning, match="Skipped 1 unreadable image"):
        assert load_split(str(root), on_unreadable="skip").paths == expected
    monkeypatch.setattr("clzoo.data.decode.decode_image", lambda *args, **kwargs: 1 / 0)
    with pytest.warns(UserWarning, match="Skipped 1 unreadable image"):  # from the cache
        assert load_split(str(root), on_unreadable="skip").paths == expected
    assert load_split("digits", "test").paths is None


def test_from_arrays_checks_and_wraps_in_tf_data():
    from clzoo.data import from_arrays

    split = from_arrays(np.zeros((3, 4, 4), np.uint8), [0, 2, 1], ["a", "b", "c"])
    assert split.images.shape == (3, 4, 4, 3)
    image, label = next(iter(split.as_dataset()))
    assert image.dtype.name == "uint8" and int(label) == 0
    with pytest.raises(ValueError, match="Labels must lie in \\[0, 2\\)"):
        from_arrays(np.zeros((2, 4, 4, 3), np.uint8), [0, 2], ["a", "b"])
    with pytest.raises(ValueError, match="uint8"):
        from_arrays(np.zeros((2, 4, 4, 3)), [0, 1])
    with pytest.raises(ValueError, match="2 images but 3 labels"):
        from_arrays(np.zeros((2, 4, 4, 3), np.uint8), [0, 1, 1])


def test_mixed_sizes(tmp_path):
    root = write_image_folder(tmp_path / "data")
    Image.fromarray(np.zeros((9, 9, 3), np.uint8)).save(root / "train" / "dog" / "odd.png")
    with pytest.raises(ValueError, match="differ in size"):
        load_split(str(root))


def test_mixed_sizes_name_each_file_with_its_own_size_as_pil_reads_it(tmp_path):
    """Issue 57 item 7: the refusal paired one file with another's size, printed (H, W) and named
    one file by its base name; three sizes here, each file full-path with its width x height."""
    root = write_image_folder(tmp_path / "data", size=(8, 6))  # H 8, W 6: PIL's size (6, 8)
    Image.fromarray(np.zeros((5, 7, 3), np.uint8)).save(root / "train" / "cat" / "3.png")
    Image.fromarray(np.zeros((9, 9, 3), np.uint8)).save(root / "train" / "dog" / "3.png")
    with pytest.raises(ValueError) as error:
        load_split(str(root))
    message = str(error.value)
    assert f"{root / 'train' / 'cat' / '0.png'} is 6x8 (width x height" in message
    assert f"{root / 'train' / 'cat' / '3.png'} is 7x5 (width x height" in message


def test_bad_split_name():
    with pytest.raises(ValueError, match="split='val'"):
        load_split("digits", "val")


def test_a_data_source_is_resolved_once_and_loads_what_load_split_loads(tmp_path, monkeypatch):
    root = write_image_folder(tmp_path / "data")
    source = data_source(str(root))
    assert source == DataSource(str(root), str(root), None) and data_source(source) is source
    monkeypatch.setattr(clzoo.data.sources, "parse_data_spec", None)  # no second parse from here on
    np.testing.assert_array_equal(source.load("train").images, load_split(source, "train").images)
    assert source.load("test").class_names == ["cat", "dog"] and str(source) == str(root)
    with pytest.raises(ValueError, match="split='val'"):
        source.load("val")


def test_a_bad_spec_fails_as_it_does_in_load_split(tmp_path):
    for spec in (str(tmp_path / "my@dta"), "digits@cifar3"):
        with pytest.raises(ValueError) as resolved:
            data_source(spec)
        with pytest.raises(ValueError) as loaded:
            load_split(spec)
        assert str(resolved.value) == str(loaded.value)


def test_tfds_name_offline_with_mock_data():
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(num_examples=12):
        split = load_split("tfds:cifar10", "test")
    assert split.images.shape == (12, 32, 32, 3) and split.images.dtype == np.uint8
    assert len(split.class_names) == 10  # from the cifar10 label feature
    assert split.labels.min() >= 0 and split.labels.max() < 10


def test_exif_orientation_is_applied(tmp_path):
    """A phone photo: pixels stored as the sensor read them, the rotation in the EXIF tag (issue 44)."""
    from PIL import Image

    stored = np.zeros((4, 8, 3), np.uint8)  # 4 rows x 8 columns as stored
    stored[0, :, 0] = 255  # the stored top row red
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation 6: rotate 90 degrees clockwise to display
    for split in ("train", "test"):
        (tmp_path / split / "a").mkdir(parents=True)
        Image.fromarray(stored).save(tmp_path / split / "a" / "0.png", exif=exif)
    images = clzoo.data.load_split(str(tmp_path), "train").images
    assert images.shape == (1, 8, 4, 3)  # upright: 8 rows x 4 columns
    np.testing.assert_array_equal(images[0], np.rot90(stored, k=-1))  # the red row is now the right column
    assert images[0, :, -1, 0].tolist() == [255] * 8


def test_the_tfds_hint_names_what_to_install_and_the_folder_alternative(monkeypatch):
    from clzoo.data.tfds_splits import tfds_missing

    assert "pip install tensorflow-datasets importlib_resources;" in tfds_missing()
    assert "--data <image folder>" in tfds_missing() and "clzoo[tfds]" not in tfds_missing()
    monkeypatch.setattr("clzoo.data.device_stream.tensorflow_installed", lambda: False)
    assert "pip install tensorflow-datasets importlib_resources tensorflow;" in tfds_missing()


@pytest.mark.parametrize("link", ["split", "class", "both_outside"])
def test_a_test_split_linked_into_train_is_refused(tmp_path, link):
    """Issue 58 item 6: test/ (or a class of it) linking into train/ was read silently, so test
    images were training images and every metric inflated."""
    import shutil

    root = write_image_folder(tmp_path / "data", classes=("a", "b"))
    if link == "split":
        shutil.rmtree(root / "test")
        (root / "test").symlink_to(root / "train")
    elif link == "class":
        shutil.rmtree(root / "test" / "b")
        (root / "test" / "b").symlink_to(root / "train" / "b")
    else:  # both splits' class "b" link to one folder elsewhere
        shutil.move(root / "train" / "b", tmp_path / "b_images")
        shutil.rmtree(root / "test" / "b")
        (root / "train" / "b").symlink_to(tmp_path / "b_images")
        (root / "test" / "b").symlink_to(tmp_path / "b_images")
    with pytest.raises(ValueError, match="lead to one folder .*through a link"):
        load_split(str(root), "test")
