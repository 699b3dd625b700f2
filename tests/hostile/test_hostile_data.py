"""Hostile inputs to the image-folder loader (issue 14, Data): odd image modes decode to the right
uint8 RGB pixels, folders with `@` load, links that dangle or loop are skipped or named, the decode
cache is never stale nor crashed on, and odd files are named rather than half-loaded."""

import functools
import os
import re
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

import clzoo
from clzoo.data import load_split
from clzoo.data.checks import check_data
from clzoo.data.sources import ALPHA_BACKGROUND, parse_data_spec
from tests.data.image_folders import write_image_folder

pytestmark = pytest.mark.timeout(60)  # a symlink loop must never hang the loader

CIFAR10 = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
WHITE = np.array(ALPHA_BACKGROUND)


# Smaller than the data tests' default: 2 images of 4 x 4 per class.
_folder = functools.partial(write_image_folder, per_class=2, size=(4, 4))


def _one_image(tmp_path, save, name="x.png"):
    """Load a folder whose only training image is written by `save(path)`, return its pixels."""
    for c in ("a", "b"):
        (tmp_path / "d" / "train" / c).mkdir(parents=True)
    save(tmp_path / "d" / "train" / "a" / name)
    Image.fromarray(np.zeros((2, 3, 3), np.uint8)).save(tmp_path / "d" / "train" / "b" / "y.png")
    split = load_split(str(tmp_path / "d"))
    assert split.images.dtype == np.uint8 and split.images.shape == (2, 2, 3, 3)
    return split.images[0].astype(int)


def _png16(path, array, color_type):
    """Write a 16-bit PNG by hand (grey 0, RGB 2, grey+alpha 4, RGBA 6): PIL cannot write RGB16."""
    h, w = array.shape[:2]
    raw = b"".join(b"\x00" + array[y].astype(">u2").tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", w, h, 16, color_type, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
                     + chunk(b"IEND", b""))


def _blend(rgb, alpha):
    """Exact compositing of `rgb` with `alpha` (0..255) on the documented background."""
    return (np.asarray(rgb) * alpha + WHITE * (255 - alpha) + 127) // 255


# --- 1. image modes ---------------------------------------------------------------------------

GREY16 = np.array([[0, 257, 1000], [32768, 65535, 65280]], np.uint16)


def test_grey_16bit_png_is_scaled_not_clipped(tmp_path):
    pixels = _one_image(tmp_path, lambda p: _png16(p, GREY16, 0))
    expected = [[0, 1, 4], [128, 255, 254]]  # v / 257 rounded; clipping gave 255 from 257 up
    np.testing.assert_array_equal(pixels, np.repeat(np.array(expected)[..., None], 3, -1))
    assert Image.open(tmp_path / "d/train/a/x.png").mode == "I;16"


def test_grey_16bit_png_written_by_pil_is_scaled(tmp_path):
    array = np.array([[0, 4000, 40000], [65535, 12850, 300]], np.uint16)
    pixels = _one_image(tmp_path, lambda p: Image.fromarray(array).save(p))
    np.testing.assert_array_equal(pixels[..., 0], np.round(array / 257.0))
    np.testing.assert_array_equal(pixels[..., 0], pixels[..., 2])


def test_rgb_16bit_png_is_scaled_not_wrapped(tmp_path):
    array = np.array([[[0, 255, 65535], [32768, 65280, 4096], [257, 1, 60000]]] * 2, np.uint16)
    pixels = _one_image(tmp_path, lambda p: _png16(p, array, 2))
    # Pillow keeps the high byte of each 16-bit sample: within 1 of exact scaling, never wrapped
    # (wrapping would give 255 for 255 and 0 for 65280).
    np.testing.assert_allclose(pixels, np.round(array / 257.0), atol=1)
    assert pixels[0, 0, 1] <= 1 and pixels[0, 0, 2] == 255 and pixels[0, 1, 1] >= 254


def test_grey_alpha_16bit_png_on_background(tmp_path):
    array = np.array([[[65535, 0], [0, 65535], [32896, 65535]]] * 2, np.uint16)
    pixels = _one_image(tmp_path, lambda p: _png16(p, array, 4))
    np.testing.assert_array_equal(pixels[0], [WHITE, [0, 0, 0], [128, 128, 128]])


def test_palette_png_gives_palette_colours(tmp_path):
    def save(path):
        image = Image.new("P", (3, 2))
        image.putpalette([10, 20, 30, 200, 100, 50, 1, 2, 3] + [0] * 759)
        for x in range(3):
            image.putpixel((x, 0), x)
            image.putpixel((x, 1), 2 - x)
        image.save(path)

    pixels = _one_image(tmp_path, save)
    np.testing.assert_array_equal(pixels[0], [[10, 20, 30], [200, 100, 50], [1, 2, 3]])
    np.testing.assert_array_equal(pixels[1], [[1, 2, 3], [200, 100, 50], [10, 20, 30]])


def test_palette_png_with_transparent_index_on_background(tmp_path):
    def save(path):
        image = Image.new("P", (3, 2))
        image.putpalette([0, 0, 0, 200, 100, 50, 9, 9, 9] + [0] * 759)
        image.putpixel((1, 0), 1)
        image.putpixel((2, 0), 2)
        image.save(path, transparency=0)  # index 0 (black) is fully transparent

    pixels = _one_image(tmp_path, save)
    np.testing.assert_array_equal(pixels[0], [WHITE, [200, 100, 50], [9, 9, 9]])


def test_rgba_png_composited_on_documented_background(tmp_path):
    rgba = np.array([[[200, 10, 60, 0], [200, 10, 60, 255], [200, 10, 60, 128]]] * 2, np.uint8)
    pixels = _one_image(tmp_path, lambda p: Image.fromarray(rgba, "RGBA").save(p))
    np.testing.assert_array_equal(pixels[0, 0], WHITE)  # alpha 0: background, not hidden colour
    np.testing.assert_array_equal(pixels[0, 1], [200, 10, 60])
    np.testing.assert_array_equal(pixels[0, 2], _blend([200, 10, 60], 128))


def test_grey_alpha_png_on_background(tmp_path):
    la = np.array([[[0, 0], [0, 255], [100, 64]]] * 2, np.uint8)
    pixels = _one_image(tmp_path, lambda p: Image.fromarray(la, "LA").save(p))
    np.testing.assert_array_equal(pixels[0], [WHITE, [0, 0, 0], _blend([100] * 3, 64)])


def test_one_bit_png_is_black_and_white(tmp_path):
    def save(path):
        image = Image.new("1", (3, 2), 0)
        image.putpixel((1, 0), 1)
        image.putpixel((2, 1), 1)
        image.save(path)

    pixels = _one_image(tmp_path, save)
    np.testing.assert_array_equal(pixels[..., 0], [[0, 255, 0], [0, 0, 255]])
    np.testing.assert_array_equal(pixels[..., 0], pixels[..., 1])


def test_cmyk_jpeg_becomes_rgb(tmp_path):
    def save(path):
        image = Image.new("CMYK", (3, 2), (0, 0, 0, 0))  # white
        image.paste((0, 255, 255, 0), (1, 0, 2, 2))  # red
        image.paste((0, 0, 0, 255), (2, 0, 3, 2))  # black
        image.save(path, quality=100)

    pixels = _one_image(tmp_path, save, name="x.jpg")
    np.testing.assert_allclose(pixels[0], [[255, 255, 255], [255, 0, 0], [0, 0, 0]], atol=12)
    assert Image.open(tmp_path / "d/train/a/x.jpg").mode == "CMYK"


def test_grey_png_repeated_to_rgb(tmp_path):
    grey = np.array([[0, 17, 255], [128, 1, 254]], np.uint8)
    pixels = _one_image(tmp_path, lambda p: Image.fromarray(grey, "L").save(p))
    np.testing.assert_array_equal(pixels, np.repeat(grey[..., None], 3, -1))


def test_sixteen_and_eight_bit_copies_load_alike(tmp_path):
    root = _folder(tmp_path / "d", per_class=1, size=(3, 3), splits=("train",))
    grey8 = np.array([[0, 51, 102], [153, 204, 255], [1, 2, 3]], np.uint8)
    Image.fromarray(grey8, "L").save(root / "train" / "cat" / "0.png")
    _png16(root / "train" / "dog" / "0.png", grey8.astype(np.uint16) * 257, 0)
    images = load_split(str(root)).images
    np.testing.assert_array_equal(images[0], images[1])


def test_out_of_range_modes_refused():
    from clzoo.data.decode import to_rgb

    np.testing.assert_array_equal(to_rgb(Image.fromarray(np.array([[0, 65535]], np.int32)))[0, 1],
                                  [255, 255, 255])
    with pytest.raises(ValueError, match="32-bit"):
        to_rgb(Image.fromarray(np.array([[0, 70000]], np.int32)))
    with pytest.raises(ValueError, match="mode 'F'"):
        to_rgb(Image.fromarray(np.zeros((2, 2), np.float32)))


# --- 2. `@` in paths --------------------------------------------------------------------------


def test_folder_with_at_sign_loads(tmp_path):
    root = _folder(tmp_path / "my@data")
    for spec in (str(root), str(root) + "/", f"folder:{root}"):
        split = load_split(spec, "test")
        assert split.class_names == ["cat", "dog"] and len(split) == 4
    assert parse_data_spec(str(root)) == (str(root), None)
    assert check_data(str(root)).class_names == ("cat", "dog")


def test_folder_with_at_sign_and_label_set(tmp_path):
    root = _folder(tmp_path / "my@data", classes=CIFAR10, per_class=1)
    split = load_split(f"{root}@cifar2", "train")
    assert split.class_names == ["cat", "dog"] and split.fine_class_names == list(CIFAR10)
    assert check_data(f"{root}@cifar10_coarse").class_names == ("animal", "vehicle")


def test_label_set_on_a_folder_without_its_classes_is_named(tmp_path):
    root = _folder(tmp_path / "my@data")
    with pytest.raises(ValueError, match="cifar2.*missing"):
        load_split(f"{root}@cifar2")


def test_missing_folder_with_at_sign_says_no_such_folder(tmp_path):
    with pytest.raises(ValueError, match=r"Unknown label set 'dta'.*my@dta'.*not an existing folder"):
        load_split(str(tmp_path / "my@dta"))
    with pytest.raises(ValueError, match="my@dta', which is not an existing folder"):  # my@dta is missing
        load_split(str(tmp_path / "my@dta@cifar2"))


def test_mistyped_label_set_suffix_is_named(tmp_path):
    root = _folder(tmp_path / "my@data")
    with pytest.raises(ValueError, match=r"Unknown label set 'cifar3'.*cifar2"):
        load_split(f"{root}@cifar3")
    with pytest.raises(ValueError, match=r"Unknown label set 'cifar2/'"):
        load_split(f"{root}@cifar2/")


# --- 3. symlinks ------------------------------------------------------------------------------


def _assert_named_then_skipped(root, bad, kind, n_left):
    with pytest.raises(ValueError, match=f"(?s)(?=.*{re.escape(bad.name)})(?=.*{kind})"):
        load_split(str(root))
    with pytest.warns(UserWarning, match=f"Skipped .*{bad.name}"):
        split = load_split(str(root), on_unreadable="skip")
    assert len(split) == n_left
    return split


@pytest.mark.parametrize("name, target, kind", [
    ("gone.png", lambda root: root.parent / "nowhere.png", "dangling"),
    ("loop.png", lambda root: root / "train" / "cat" / "loop.png", "loop"),
    ("up.png", lambda root: root / "train", "not a file"),
], ids=["dangling", "looping", "to_a_directory_cycle"])
def test_broken_image_link(tmp_path, name, target, kind):
    root = _folder(tmp_path / "d")
    bad = root / "train" / "cat" / name
    bad.symlink_to(target(root))
    _assert_named_then_skipped(root, bad, kind, 4)


def test_valid_links_still_load(tmp_path):
    root = _folder(tmp_path / "d", splits=("train",))
    elsewhere = _folder(tmp_path / "other", classes=("eel",), splits=("train",))
    (root / "train" / "eel").symlink_to(elsewhere / "train" / "eel")
    (root / "train" / "dog" / "link.png").symlink_to(root / "train" / "cat" / "0.png")
    split = load_split(str(root))
    assert split.class_names == ["cat", "dog", "eel"] and len(split) == 7


@pytest.mark.parametrize("name, target, kind", [
    ("cow", lambda root: root.parent / "no-cows", "dangling"),
    ("loop", lambda root: root / "train" / "loop", "loop"),
    ("up", lambda root: root, "loop"),
], ids=["dangling", "looping", "back_to_an_ancestor"])
def test_broken_class_link(tmp_path, name, target, kind):
    root = _folder(tmp_path / "d")
    bad = root / "train" / name
    bad.symlink_to(target(root))
    split = _assert_named_then_skipped(root, bad, kind, 4)
    assert split.class_names == ["cat", "dog"]
    with pytest.raises(ValueError, match=f"{name}.*{kind}"):  # reported before training, too
        check_data(str(root))


def test_root_and_split_links_that_loop_or_dangle(tmp_path):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(ValueError, match="loop.*symlink"):
        load_split(str(tmp_path / "loop"))
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="dangling.*symlink"):
        load_split(str(tmp_path / "dangling"))
    root = _folder(tmp_path / "d", splits=("test",))
    (root / "train").symlink_to(root / "train")
    with pytest.raises(ValueError, match="'train' sub-folder"):
        load_split(str(root), on_unreadable="skip")


# --- 4. the decode cache ----------------------------------------------------------------------


def _replace_in_place(path, pixels):
    """Overwrite `path` with other pixels of the same byte size, keeping its inode and mtime_ns."""
    before = os.stat(path)
    Image.fromarray(pixels).save(tmp := path.with_name("tmp.bmp"))
    data = tmp.read_bytes()
    tmp.unlink()
    assert len(data) == before.st_size
    with open(path, "r+b") as handle:
        handle.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size, before.st_mtime_ns, before.st_ino)


def _bmp_folder(root):
    for name in ("cat", "dog"):
        (root / "train" / name).mkdir(parents=True)
        Image.fromarray(np.full((4, 4, 3), 10, np.uint8)).save(root / "train" / name / "0.bmp")
    return root


def test_cache_sees_a_same_size_same_mtime_same_inode_rewrite(tmp_path):
    root = _bmp_folder(tmp_path / "d")
    assert load_split(str(root)).images[0].max() == 10
    _replace_in_place(root / "train" / "cat" / "0.bmp", np.full((4, 4, 3), 99, np.uint8))
    assert load_split(str(root)).images[0].min() == 99


def test_cache_sees_a_same_size_replacement_within_the_second(tmp_path):
    root = _bmp_folder(tmp_path / "d")
    target = root / "train" / "dog" / "0.bmp"
    load_split(str(root))
    mtime = os.stat(target).st_mtime
    Image.fromarray(np.full((4, 4, 3), 77, np.uint8)).save(new := root / "new.bmp")
    os.utime(new, (mtime, mtime))  # same whole second, as the old key saw it
    os.replace(new, target)
    assert load_split(str(root)).images[1].min() == 77


def _cache_file():
    (cached,) = clzoo.data.cache_dir("datasets").glob("*.npz")
    return cached


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "wrong_arrays"])
def test_damaged_cache_is_rebuilt(tmp_path, monkeypatch, damage):
    root = _folder(tmp_path / "d", splits=("train",))
    first = load_split(str(root))
    cached = _cache_file()
    data = cached.read_bytes()
    if damage == "truncate":
        cached.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        cached.write_bytes(b"\x00garbage" * 100)
    elif damage == "empty":
        cached.write_bytes(b"")
    else:
        np.savez(cached, images=np.zeros((1, 4, 4, 3), np.uint8), labels=np.zeros(3, np.int32),
                 class_names=np.array(["cat", "dog"]))
    with pytest.warns(UserWarning, match="rebuilding"):
        again = load_split(str(root))
    np.testing.assert_array_equal(again.images, first.images)
    np.testing.assert_array_equal(again.labels, first.labels)
    assert again.class_names == first.class_names
    monkeypatch.setattr("clzoo.data.decode.decode_image", lambda *a, **k: 1 / 0)
    np.testing.assert_array_equal(load_split(str(root)).images, first.images)  # rebuilt whole


# --- 5. odd files -----------------------------------------------------------------------------


def _half_of_a_png(bad):
    good = bad.with_name("0.png").read_bytes()
    bad.write_bytes(good[: len(good) // 2])


@pytest.mark.parametrize("name, write, kind", [
    ("empty.jpg", lambda bad: bad.write_bytes(b""), "empty"),
    ("notes.jpeg", lambda bad: bad.write_text("these are my notes\n" * 50), "Cannot read image"),
    ("cut.png", _half_of_a_png, "Cannot read image"),
    ("x.png", lambda bad: bad.mkdir(), "not a file"),
], ids=["empty_file", "text_file_named_jpeg", "truncated_png", "directory_named_png"])
def test_odd_image_file(tmp_path, name, write, kind):
    root = _folder(tmp_path / "d")
    bad = root / "train" / "dog" / name
    write(bad)
    _assert_named_then_skipped(root, bad, kind, 4)


def test_upper_case_extensions_load(tmp_path):
    root = _folder(tmp_path / "d", splits=("train",))
    pixels = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)
    Image.fromarray(pixels).save(root / "train" / "cat" / "UP.PNG")
    Image.fromarray(pixels).save(root / "train" / "dog" / "up.Bmp")
    split = load_split(str(root))
    assert len(split) == 6
    np.testing.assert_array_equal(split.images[2], pixels)  # sorted: 0.png, 1.png, UP.PNG
    np.testing.assert_array_equal(split.images[5], pixels)


def test_other_files_in_class_folders_are_ignored_but_nested_folders_refused(tmp_path):
    root = _folder(tmp_path / "d", splits=("train",))
    (root / "train" / "cat" / "README.txt").write_text("not an image")
    (root / "train" / "notes.md").write_text("split-level file, not a class")
    split = load_split(str(root))
    assert split.class_names == ["cat", "dog"] and len(split) == 4
    (root / "train" / "cat" / "sub").mkdir()  # its images would be ignored silently (issue 23)
    with pytest.raises(ValueError, match="sub is a folder inside the class folder"):
        load_split(str(root))


def test_class_with_no_readable_image_is_named_even_when_skipping(tmp_path):
    root = _folder(tmp_path / "d", splits=("train",))
    for f in (root / "train" / "dog").iterdir():
        f.write_bytes(b"")
    with pytest.raises(ValueError, match="dog.*no readable image"), \
            pytest.warns(UserWarning, match="Skipped 2 .*empty file"):
        load_split(str(root), on_unreadable="skip")


def test_skipped_files_are_reported_again_from_the_cache(tmp_path, monkeypatch):
    root = _folder(tmp_path / "d", splits=("train",))
    (root / "train" / "cat" / "bad.png").write_text("not a png")
    with pytest.warns(UserWarning, match="Skipped 1 .*bad.png"):
        first = load_split(str(root), on_unreadable="skip")
    monkeypatch.setattr("clzoo.data.decode.decode_image", lambda *a, **k: 1 / 0)  # cache only
    with pytest.warns(UserWarning, match="Skipped 1 .*bad.png"):
        again = load_split(str(root), on_unreadable="skip")
    np.testing.assert_array_equal(again.images, first.images)
    assert again.labels.tolist() == [0, 0, 1, 1]
