"""A listed image folder's split: decoded whole (cached as `.npz`), or left in its files.

The cache key hashes each file's path, size, mtime, inode and first and last bytes; a damaged
cache is deleted and rebuilt. Streamed, the split's images are a `clzoo.data.file_images.FileImages`.
"""

import functools
import hashlib
import json
import os
import warnings

import numpy as np

from clzoo.data import decode
from clzoo.data.cache import cache_dir, discard, read_npz
from clzoo.data.folder_listing import _check_every_class
from clzoo.data.resize import MixedImageSizes, check_resized_memory
from clzoo.data.split import Split
from clzoo.files import atomic_write

CACHE_FORMAT = 4  # bump when the cached arrays, their key or the decoding change (4: JPEG draft)
CACHE_SAMPLE = 4096  # bytes hashed from the start and from the end of each image file


def _sample(path, size):
    """The first and last `CACHE_SAMPLE` bytes of `path` (all of a file up to twice that)."""
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO never blocks
    except OSError:
        return b"unreadable"  # decoding names it
    try:
        if size <= 2 * CACHE_SAMPLE:
            return os.read(handle, 2 * CACHE_SAMPLE)
        return os.pread(handle, CACHE_SAMPLE, 0) + os.pread(handle, CACHE_SAMPLE, size - CACHE_SAMPLE)
    except OSError:
        return b"unreadable"
    finally:
        os.close(handle)



def _cache_key(root, split, on_unreadable, files, stats):
    """Hex key of the listed files' content: each file's path, size, mtime_ns and inode, and a hash
    of its first and last `CACHE_SAMPLE` bytes, so a same-size rewrite within the same second (or
    with its mtime put back) is seen. Not seen: an edit that keeps size, mtime_ns and inode and
    touches only the middle of a file over 8 KiB."""
    digest = hashlib.blake2b(json.dumps([CACHE_FORMAT, str(root), split, on_unreadable]).encode(),
                             digest_size=8)
    for path, info in zip(files, stats):  # serial: threads were slower (GIL) for small files
        sample = _sample(path, info.st_size)
        digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ino}\0"  # a non-UTF-8
                      f"{len(sample)}\0".encode("utf-8", "surrogateescape") + sample)  # folder name too
    return digest.hexdigest()



def _read_cached(cached, files, labels, classes, where):
    """The `Split` cached at `cached` for the listed `files`, or None when there is none; a
    damaged or inconsistent file is deleted with a warning (and then rebuilt by the caller)."""
    arrays = read_npz(cached)
    if arrays is None:
        return None
    images, kept = arrays.get("images"), arrays.get("labels")
    skipped = arrays.get("skipped")
    left_out = set() if skipped is None else set(skipped.tolist())
    paths = [str(f) for f in files if str(f) not in left_out]  # the file of each kept row
    if (images is None or kept is None or skipped is None or images.dtype != np.uint8
            or images.ndim != 4 or images.shape[-1] != 3 or kept.shape != (len(images),)
            or list(arrays.get("class_names", [])) != classes
            or len(kept) + len(skipped) != len(labels) or len(paths) != len(kept)
            or (not len(skipped) and not np.array_equal(kept, labels))):
        discard(cached, "its arrays do not match the folder")
        return None
    _warn_skipped(skipped, where, stacklevel=5)  # the same warning as when the cache was written
    return Split(images, kept.astype(np.int32), classes, paths=paths)



def _warn_skipped(skipped, where, stacklevel):
    """Warn that the images `skipped` (paths) in `where` could not be decoded; nothing if none.
    `stacklevel` counts from this function, so the warning points at the caller of `load_split`."""
    if len(skipped):
        warnings.warn(f"Skipped {len(skipped)} unreadable image(s) in {where}, e.g. {skipped[0]}",
                      stacklevel=stacklevel)



def _readable_prefix(name, limit=64):
    """The start of a folder's name for a cache file name: at most `limit` UTF-8 bytes, since a
    file name holds 255 (the cache key, a hash, keeps names of long folders apart)."""
    return name.encode("utf-8")[:limit].decode("utf-8", errors="ignore")



def _open_folder(listed, on_unreadable="error", image_size=None):
    """The split of a listed image folder (`_list_folder`) with its images left in their files."""
    from clzoo.data.file_images import FileImages

    files, _, labels, classes = listed
    images = FileImages(files, image_size, on_unreadable, labels=labels)  # a skip keeps the class
    return Split(images, labels, classes, paths=images.paths)



def _load_folder(root, split, listed, on_unreadable="error", image_size=None):
    """The split of a listed image folder (`_list_folder` of the resolved `root`), decoded, or read
    from its decode cache."""
    files, stats, labels, classes = listed
    key = _cache_key(root, split, on_unreadable, files, stats)
    resized = "" if image_size is None else f"-{image_size}px"
    if image_size is not None:
        check_resized_memory(len(files), image_size, root / split)
    cached = cache_dir("datasets") / f"{_readable_prefix(root.name)}-{split}-{key}{resized}.npz"
    split_data = _read_cached(cached, files, labels, classes, root / split)
    if split_data is not None:
        return split_data

    images, unreadable = _decode_all(files, on_unreadable, image_size, f"{root.name}/{split}",
                                     root / split)
    _warn_skipped(unreadable, root / split, stacklevel=4)
    if unreadable:
        left_out = set(unreadable)
        keep = [i for i, f in enumerate(files) if f not in left_out]
        files, images, labels = [files[i] for i in keep], images[keep], labels[keep]
        _check_every_class(labels, classes, root / split)

    def write(tmp):
        with open(tmp, "wb") as handle:
            np.savez(handle, images=images, labels=labels, class_names=np.array(classes),
                     skipped=np.array([str(f) for f in unreadable], dtype=str))

    atomic_write(cached, write)
    return Split(images, labels, classes, paths=[str(f) for f in files])



def _decode_all(files, on_unreadable, image_size, what, where):
    """`(uint8 (N, H, W, 3) images, unreadable paths)`: every file decoded in a thread pool straight
    into one array (no list of images beside it: the split's size in memory once, not twice); the
    rows of unreadable files (when skipping) are left black, for the caller to drop.

    Raises:
        ValueError: images of different sizes (without `image_size`), naming two files.
    """
    from tqdm.auto import tqdm

    from clzoo.console import tqdm_disable
    from clzoo.data.file_images import decode_pool

    decode_one = functools.partial(decode.decode_image, skip=on_unreadable == "skip", size=image_size)
    images, first, unreadable = None, None, []
    results = decode_pool().map(decode_one, files)
    try:
        decoded = tqdm(results, total=len(files), desc=f"decoding {what}", unit="img",
                       disable=tqdm_disable())
        for row, (path, pixels) in enumerate(zip(files, decoded)):
            if pixels is None:
                unreadable.append(path)
                continue
            if images is None:
                images, first = np.zeros((len(files), *pixels.shape), np.uint8), path
            if pixels.shape != images.shape[1:]:
                _refuse_sizes(where, first, images.shape[1:], path, pixels.shape)
            images[row] = pixels
    finally:  # an error cancels the decodes not yet started (Executor.map's generator closed)
        results.close()
    if images is None:  # every file skipped: `_check_every_class` names a class
        images = np.zeros((len(files), 1, 1, 3), np.uint8)
    return images, unreadable



def _refuse_sizes(where, first, first_shape, odd, odd_shape):
    size = "{1}x{0} (width x height, as PIL's Image.size gives it)".format
    raise MixedImageSizes(
        f"Images in {where} differ in size: {first} is {size(*first_shape[:2])}, {odd} is "
        f"{size(*odd_shape[:2])}. Resize them on load with --image-size N (recipe key "
        "image_size; sizes are read after the EXIF orientation tag is applied: a rotated "
        "photo counts as its upright size)."
    )
