"""Labelled image sources: an image folder, a tfds name, or the embedded digits.

Every source gives the same thing: uint8 images `(N, H, W, 3)`, int32 labels
`(N,)` and the class names. Decoded folders are cached as `.npz` under
`clzoo.data.cache_dir()`; the source folder is only read.
"""

import dataclasses
import errno
import functools
import hashlib
import json
import os
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clzoo.data import decode
from clzoo.data.cache import cache_dir, discard, read_npz
from clzoo.data.decode import ALPHA_BACKGROUND  # noqa: F401  (re-exported: the background's value)
from clzoo.data.label_sets import LABEL_SETS, derive_label_set
from clzoo.data.resize import check_image_size, check_resized_memory, resize_image
from clzoo.data.split import Split
from clzoo.files import atomic_write

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp")
EMBEDDED = ("digits",)
CACHE_FORMAT = 4  # bump when the cached arrays, their key or the decoding change (4: JPEG draft)
CACHE_SAMPLE = 4096  # bytes hashed from the start and from the end of each image file


def load_split(data, split="train", on_unreadable="error", stream=False):
    """Load a split of a dataset given by a spec string (or a `DataSource` resolved from one).

    Args:
        data: one of
            - `"digits"`: scikit-learn's handwritten digits (1,797 real 8x8
              scans shipped inside scikit-learn, no network), upscaled to
              32x32 RGB; a fixed stratified 80/20 train/test split.
            - a folder path (or `"folder:PATH"`) holding
              `PATH/{train,test}/<class>/<image>`; classes sorted by name.
            - `"tfds:NAME"` (e.g. `"tfds:cifar10"`): a TensorFlow Datasets
              name with `train` and `test` splits (downloads on first use).
            Any of them may end in `@LABEL_SET` for a derived label set:
            `@cifar2`, `@cifar10_coarse` (CIFAR-10 by class name) or
            `tfds:cifar100@cifar100_coarse` (`clzoo.data.label_sets`).
        split: `"train"` or `"test"`. Defaults to `"train"`.
        on_unreadable: for image folders, `"error"` (default) stops at the
            first entry that cannot be used and names it (an undecodable or
            empty image file, a directory named like an image, a dangling or
            looping symlink as image or class folder); `"skip"` leaves such
            entries out and warns with their count. Odd image modes are
            converted, not refused: 16-bit scaled to 8-bit, alpha composited
            on `ALPHA_BACKGROUND` (white), palette/1-bit/grey/CMYK to RGB; an
            EXIF orientation tag is applied (`PIL.ImageOps.exif_transpose`).
        stream: for image folders, keep the images in their files: the split's
            `images` is a `clzoo.data.file_images.FileImages`, decoded batch by
            batch when indexed (data larger than memory); the listing checks
            are the same, an unreadable file is met when its batch decodes it.
            `"auto"`: stream when the split, decoded, exceeds the memory budget
            (`clzoo.data.memory_budget.memory_budget`: `CLZOO_MEMORY_BUDGET`, or
            half of the cgroup limit or `MemAvailable`). Defaults to `False`
            (decode all, cached as `.npz`).

    Returns:
        `Split` with uint8 images `(N, H, W, 3)` and int32 labels `(N,)`.

    Raises:
        ValueError: when the path does not exist (or is a broken link), a
            split or class folder is missing or empty (or, when skipping, kept
            no readable image), images differ in size, or an entry is unusable.

    Example:

    >>> import clzoo
    >>> train = clzoo.data.load_split("digits", "train")
    >>> train.images.shape[1:], train.images.dtype
    ((32, 32, 3), dtype('uint8'))
    """
    return data_source(data).load(split, on_unreadable, stream)


@dataclass(frozen=True)
class DataSource:
    """A data spec resolved once: what `load_split` reads, kept by a command and passed down.

    Build it with `data_source(spec)` (which raises for a bad spec, as
    `parse_data_spec`); every later `load` reads the same source without
    parsing the spec again.

    Attributes:
        spec: the spec as given (str), for messages and reports.
        source: `"digits"`, `"tfds:NAME"` or a folder path (`"folder:PATH"` kept as given).
        label_set: a name of `clzoo.data.label_sets.LABEL_SETS`, or None.
        image_size: resize every image to this square size on load (`clzoo.data.resize`),
            or None to keep their own size (which must then be one size).
    """

    spec: str
    source: str
    label_set: str = None
    image_size: int = None

    def __str__(self):
        return self.spec if self.image_size is None else (
            f"{self.spec} (resized to {self.image_size}x{self.image_size})")

    @property
    def folder(self):
        """The image folder this source reads (a `Path`), or None for digits and tfds datasets."""
        if self.source in EMBEDDED or self.source.startswith("tfds:"):
            return None
        return Path(self.source.removeprefix("folder:"))

    def load(self, split="train", on_unreadable="error", stream=False):
        """The `Split` named `split` (`"train"` or `"test"`); arguments and errors as `load_split`."""
        if split not in ("train", "test"):
            raise ValueError(f"`split` must be 'train' or 'test'. Received: split={split!r}")
        if on_unreadable not in ("error", "skip"):
            raise ValueError(f"`on_unreadable` must be 'error' or 'skip'. Received: {on_unreadable!r}")
        size = self.image_size
        if self.label_set == "cifar100_coarse":
            return _load_tfds("cifar100", split, coarse_key="coarse_label", image_size=size)
        if self.label_set is not None:
            whole = data_source(self.source, image_size=size).load(split, on_unreadable, stream)
            return derive_label_set(whole, self.label_set)
        if self.source.startswith("tfds:"):
            from clzoo.data.tfds_splits import load_tfds_split

            return load_tfds_split(self, split, stream)
        if stream == "auto" and self.folder is None:
            stream = False  # the digits are held
        if stream and self.folder is None:
            raise ValueError(f"streaming reads image folders and tfds splits in ArrayRecord files; "
                             f"{self.source} is held in memory (data_loading: memory or auto)")
        if self.source in EMBEDDED:
            digits = _load_digits(split)
            return digits if size is None else _resized(digits, size)
        root = _folder_root(self.source.removeprefix("folder:"))  # named as given in errors
        listed = _list_folder(root, split, on_unreadable)  # once, for the choice and the load
        if stream == "auto":
            stream = _over_budget(self.decoded_bytes(len(listed[0]), split))
        if stream:
            return _open_folder(listed, on_unreadable, size)
        return _load_folder(root, split, listed, on_unreadable, size)

    def streams(self):
        """True when this source's splits can stay where they are (`stream=True`): an image folder,
        or a tfds dataset prepared in ArrayRecord files (`clzoo.data.tfds_images`)."""
        if self.source.startswith("tfds:"):
            from clzoo.data.tfds_splits import prepared_builder

            return prepared_builder(self.source[len("tfds:"):]) is not None
        return self.folder is not None

    def decoded_bytes(self, count, split="train"):
        """Bytes `count` images of `split` take decoded (uint8 RGB) at the size they would be held:
        `image_size`, else the first listed image's own size (read from its header); for a tfds
        dataset prepared in ArrayRecord files, its split's size from its info (`count` None); None
        for the digits and where the size is unknown (held in memory)."""
        if self.source.startswith("tfds:"):
            from clzoo.data.tfds_splits import decoded_bytes

            return decoded_bytes(self.source[len("tfds:"):], split, self.image_size)
        if self.folder is None:
            return None
        if self.image_size is not None:
            return count * self.image_size ** 2 * 3
        from PIL import Image

        root = _folder_root(self.source.removeprefix("folder:"))  # named as given in errors
        first = class_folders(root, split)[0]
        found = _image_files(root / split / first)[0]
        try:
            with Image.open(found[0][0]) as image:
                width, height = image.size
        except Exception:  # unreadable, or a decompression bomb: the decode names the file
            return None
        return count * width * height * 3


def data_source(data, image_size=None):
    """Resolve a data spec (as `load_split` takes it) to a `DataSource`; a `DataSource` is returned
    as is, or with `image_size` when one is given.

    Args:
        data: a data spec or a `DataSource`.
        image_size: resize every image to this square size on load (for image sets of mixed
            sizes, as `image_dataset_from_directory(image_size=...)`); None keeps their size.

    Raises:
        ValueError: as `parse_data_spec`; an `image_size` that is not 1-4096 pixels.

    Example:

    >>> from clzoo.data.sources import data_source
    >>> source = data_source("digits")
    >>> source.label_set is None, source.load("test").images.shape
    (True, (360, 32, 32, 3))
    """
    image_size = check_image_size(image_size)
    if isinstance(data, DataSource):
        return data if image_size is None else dataclasses.replace(data, image_size=image_size)
    source, label_set = parse_data_spec(data)
    return DataSource(str(data), source, label_set, image_size)


def _resized(split, size):
    check_resized_memory(len(split), size, "the data")
    images = np.stack([resize_image(image, size) for image in split.images])
    return dataclasses.replace(split, images=images)


def parse_data_spec(data):
    """Split a data spec into `(source, label_set or None)`.

    `@NAME` at the end names a label set when NAME is one of
    `clzoo.data.label_sets.LABEL_SETS`; an existing path is always a folder,
    so folders whose names contain `@` load as they are.

    Raises:
        ValueError: for a spec that is neither an existing path nor ends in a
            known label set (`my@data` with no such folder, `x@cifar3`,
            `x@cifar2/`), or `cifar100_coarse` on anything but `tfds:cifar100`.

    Example:

    >>> from clzoo.data.sources import parse_data_spec
    >>> parse_data_spec("tfds:cifar10@cifar2"), parse_data_spec("digits")
    (('tfds:cifar10', 'cifar2'), ('digits', None))
    """
    data = str(data)
    if "@" not in data or Path(data.removeprefix("folder:")).expanduser().exists():
        return data, None
    source, label_set = data.rsplit("@", 1)
    if label_set not in LABEL_SETS:
        folder = "" if source in EMBEDDED or source.startswith("tfds:") else \
            ", which is not an existing folder either"
        raise ValueError(f"Unknown label set {label_set!r} (the part after the last '@') in "
                         f"data={data!r}{folder}. Choose from: {', '.join(LABEL_SETS)}.")
    if label_set == "cifar100_coarse" and source != "tfds:cifar100":
        raise ValueError("The cifar100_coarse label set reads tfds:cifar100's coarse labels. "
                         f"Received: data={data!r}")
    return source, label_set


def _load_digits(split):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    # 0..16 ink levels -> 0..255, 8x8 -> 32x32 by pixel replication, grey -> RGB.
    images = np.round(digits.images * (255.0 / 16.0)).astype(np.uint8)
    images = np.kron(images, np.ones((1, 4, 4), dtype=np.uint8))
    images = np.repeat(images[..., None], 3, axis=-1)
    labels = digits.target.astype(np.int32)
    index = np.arange(len(labels))
    train_idx, test_idx = train_test_split(
        index, test_size=0.2, stratify=labels, random_state=0
    )
    idx = np.sort(train_idx if split == "train" else test_idx)
    return Split(images[idx], labels[idx], [str(i) for i in range(10)])


def tfds_missing():
    """The one line for a `tfds:` spec where tensorflow-datasets (or TensorFlow under it) is missing."""
    from clzoo.data.device_stream import tensorflow_installed

    needs = "tensorflow-datasets importlib_resources" + ("" if tensorflow_installed() else " tensorflow")
    return (f"Reading a tfds dataset needs {needs.replace(' ', ', ')}: pip install {needs}; or pass "
            "--data <image folder> (<folder>/{train,test}/<class>/<image>)")


def _load_tfds(name, split, coarse_key=None, image_size=None):
    try:
        import tensorflow_datasets as tfds
    except ImportError as error:
        raise ImportError(tfds_missing()) from error
    _refuse_a_download_offline(tfds, name)
    try:
        dataset, info = tfds.load(name, split=split, with_info=True)
    except Exception as error:  # download, preparation or name errors come in many types
        reason = (str(error).strip().splitlines() or [""])[0][:200]
        raise ValueError(f"tfds dataset {name!r} (split {split!r}) could not be loaded: "
                         f"{type(error).__name__}: {reason}") from None
    image_key, label_key = info.supervised_keys
    count = _example_count(dataset, info, split)
    if image_size is not None:
        check_resized_memory(count, image_size, f"tfds:{name} {split}")
    images, labels, coarse = None, [], []
    for row, example in enumerate(tfds.as_numpy(dataset)):
        image = example[image_key]
        image = np.repeat(image, 3, axis=-1) if image.shape[-1] == 1 else image
        image = image if image_size is None else resize_image(image.astype(np.uint8), image_size)
        if images is None:  # one array filled in place: the split in memory once, not twice
            images = np.zeros((count, *image.shape), np.uint8)
        if row >= count:
            raise ValueError(f"tfds dataset {name!r} holds more examples than its {count} in split "
                             f"{split!r}")
        if image.shape != images.shape[1:]:
            raise ValueError(f"tfds dataset {name!r} has images of several sizes ({images.shape[1:]}, "
                             f"{image.shape}, ...); resize them on load with --image-size N (recipe "
                             "key image_size).")
        images[row] = image
        labels.append(example[label_key])
        if coarse_key:
            coarse.append(example[coarse_key])
    if images is None or not labels:
        raise ValueError(f"tfds dataset {name!r} has no examples in split {split!r}.")
    images = images[:len(labels)]
    label_feature = info.features[info.supervised_keys[1]]
    names = list(getattr(label_feature, "names", None) or
                 [str(i) for i in range(int(np.max(labels)) + 1)])
    if coarse_key:
        coarse_names = list(info.features[coarse_key].names)
        return Split(images.astype(np.uint8), np.asarray(coarse, np.int32), coarse_names,
                     fine_labels=np.asarray(labels, np.int32), fine_class_names=names)
    return Split(images.astype(np.uint8), np.asarray(labels, np.int32), names)


TFDS_HOST = ("storage.googleapis.com", 443)  # TFDS' mirror of the datasets it prepares


def _refuse_a_download_offline(tfds, name):
    """A tfds dataset not yet prepared here is downloaded first; without a network that took
    3 min 40 s of retries and progress bars, then an error cut off mid-word. Refused at once, in
    one line, when TFDS' host cannot be reached (checked only without an HTTP proxy, which a
    direct connection would not use)."""
    import socket

    try:
        builder = tfds.builder(name)
        prepared = os.path.isfile(os.path.join(builder.data_dir, "dataset_info.json"))
    except Exception:  # a name tfds cannot build: `tfds.load` gives its own reason
        return
    # tfds.testing.mock_data replaces the download with generated examples: nothing to fetch
    download = getattr(type(builder), "download_and_prepare", None)
    prepared = prepared or "mock" in getattr(download, "__qualname__", "")
    proxied = any(os.environ.get(key) for key in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"))
    if prepared or proxied:
        return
    try:
        socket.create_connection(TFDS_HOST, timeout=5).close()
    except OSError as error:
        raise ValueError(f"tfds:{name} is not prepared in {builder.data_dir} and this machine cannot "
                         f"reach {TFDS_HOST[0]} to download it ({error.strerror or error}): prepare "
                         "it where there is a network (copy the folder over), or give an image folder"
                         ) from None


def _example_count(dataset, info, split):
    """Examples in a tfds split: tf.data's cardinality, else the dataset info's count."""
    count = int(dataset.cardinality())
    if count >= 0:
        return count
    try:
        return info.splits[split].num_examples
    except KeyError:
        raise ValueError(f"tfds dataset {info.name!r} does not say how many examples split "
                         f"{split!r} holds") from None


def _visible(folder):
    """Entries of `folder` that are not hidden (`.ipynb_checkpoints`, `.DS_Store`, `._x.png`)."""
    return sorted((p for p in folder.iterdir() if not p.name.startswith(".")), key=lambda p: p.name)


def _broken(path, error):
    """Why `path` could not be followed: a symlink loop, a dangling symlink, or the OS's reason."""
    if error.errno == errno.ELOOP:
        return "symlink loop"
    if os.path.islink(path):
        return f"dangling symlink (to {os.readlink(path)})"
    return f"unreadable ({error.strerror or error})"


def _report(problems, what, where, on_unreadable):
    """Raise a ValueError naming the first of `problems` (`(path, reason)` pairs), or warn with
    their count when `on_unreadable="skip"`."""
    if not problems:
        return
    path, reason = problems[0]
    if on_unreadable == "error":
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ValueError(f"Cannot read {what} {path}: {reason}{more}. "
                         "load_split(..., on_unreadable='skip') leaves such entries out.")
    warnings.warn(f"Skipped {len(problems)} unreadable {what}(s) in {where}, e.g. {path} "
                  f"({reason}).", stacklevel=4)


def _class_entry(entry, split_dir):
    """`(is_class, problem)` for one entry of a split folder: directories are classes; links that
    dangle, loop, or lead back to the split folder or a parent of it are problems; files are
    neither."""
    try:
        info = entry.stat()
    except OSError as error:
        return False, _broken(entry, error)
    if not stat.S_ISDIR(info.st_mode):
        return False, None
    if entry.is_symlink():
        target = entry.resolve()
        if split_dir.resolve().is_relative_to(target):
            return False, f"symlink loop (links back to {target})"
    return True, None


def class_folders(root, split, on_unreadable="error"):
    """Sorted class names of `root/split/<class>/`, hidden folders left out.

    Files beside the class folders are ignored. A class entry that is a
    dangling symlink, a symlink loop, or a link back to the split folder or
    one of its parents is refused, or left out with a warning when
    `on_unreadable="skip"`. Only the split folder is listed; class entries
    are stat'ed, not listed (`clzoo.data.checks.check_data` uses this before decoding).

    Args:
        root: the dataset folder (`str` or `Path`).
        split: `"train"` or `"test"`, the sub-folder of `root` to list.
        on_unreadable: `"error"` or `"skip"`, as in `load_split`.

    Returns:
        list of str: the class names; a class's label is its index here.

    Raises:
        ValueError: when the split folder is missing or holds no class
            folder, or (unless skipping) names the first broken class entry.
    """
    split_dir = Path(root) / split
    if not split_dir.is_dir():
        raise ValueError(
            f"Expected an image folder with a '{split}' sub-folder of class "
            f"folders ({root}/{split}/<class>/<image>). Received: data={str(root)!r}"
        )
    classes, problems = [], []
    for entry in _visible(split_dir):
        is_class, problem = _class_entry(entry, split_dir)
        if is_class and not _utf8(entry.name):  # class names are written to JSON, CSV, reports
            is_class, problem, entry = False, "folder name is not valid UTF-8: rename it", printable(entry)
        if problem:
            problems.append((entry, problem))
        elif is_class:
            classes.append(entry.name)
    _report(problems, "class folder", split_dir, on_unreadable)
    if not classes:
        raise ValueError(
            f"No class folders in {split_dir}: expected {split_dir}/<class>/<image>."
        )
    return classes


def _utf8(name):
    """False for a file name that is not valid UTF-8 (its bytes kept as surrogates by Python):
    it cannot be written to a cache key, a report or a CSV, and stopped a run with only
    "'utf-8' codec can't encode ..."."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(path):
    """`path` as a str that can be printed and written anywhere: bytes that are not UTF-8 in its
    name shown as `\\xff`."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _is_dir(entry):
    """`entry.is_dir()`, False for a looping link (its ELOOP is reported with the file, by name)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _image_files(folder):
    """`(found, problems, nested)` for a class folder: `found` holds `(path str, os.stat_result)`
    of image-named regular non-empty files; dangling or looping links, directories and empty files
    named like images are `(path, reason)` problems; `nested` lists the other sub-folders (paths).
    Other file names are ignored."""
    found, problems = [], []
    try:
        with os.scandir(folder) as listing:  # faster than Path.iterdir for 60k files
            entries = sorted((e.name, _is_dir(e)) for e in listing if not e.name.startswith("."))
    except OSError as error:
        return [], [(folder, _broken(folder, error))], []
    names = [name for name, _ in entries]
    nested = [os.path.join(folder, name) for name, is_dir in entries
              if is_dir and os.path.splitext(name)[1].lower() not in IMAGE_EXTENSIONS]
    for name in names:
        if os.path.splitext(name)[1].lower() not in IMAGE_EXTENSIONS:
            continue
        path = os.path.join(folder, name)  # a str: Path objects cost ~1 s per 100k files
        if not _utf8(name):
            problems.append((printable(path), "file name is not valid UTF-8: rename it"))
            continue
        try:
            info = os.stat(path)
        except OSError as error:
            problems.append((path, _broken(path, error)))
            continue
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a device, pipe or socket"
            problems.append((path, f"not a file ({kind})"))
        elif info.st_size == 0:
            problems.append((path, "empty file"))
        else:
            found.append((path, info))
    return found, problems, nested


def _list_folder(root, split, on_unreadable="error"):
    """`(files, stats, labels, classes)` of `root/split`, broken entries reported by `_report`.

    Raises:
        ValueError: a class folder holding a sub-folder (its images would be
            ignored), with no image-named file, or (when skipping) with no
            usable one; see also `class_folders`.
    """
    classes = class_folders(root, split, on_unreadable)
    split_dir = root / split
    _refuse_links_into_the_other_split(root, split, classes)
    found, problems = [], []
    for label, name in enumerate(classes):
        images, bad, nested = _image_files(split_dir / name)
        if nested:
            more = f" (and {len(nested) - 1} more)" if len(nested) > 1 else ""
            raise ValueError(
                f"{nested[0]} is a folder inside the class folder {split_dir / name}{more}: clzoo "
                f"reads {split}/<class>/<image>, one level deep, and would ignore the images in it. "
                f"Move them into {split_dir / name} or remove the folder.")
        if not images and not bad:
            raise ValueError(
                f"Class folder {split_dir / name} holds no images "
                f"({', '.join(IMAGE_EXTENSIONS)})."
            )
        found += [(path, info, label) for path, info in images]
        problems += bad
    _report(problems, "image", split_dir, on_unreadable)
    labels = np.asarray([label for _, _, label in found], np.int32)
    _check_every_class(labels, classes, split_dir)
    return [f for f, _, _ in found], [i for _, i, _ in found], labels, classes


def _refuse_links_into_the_other_split(root, split, classes):
    """A split (or one of its class folders) that is a link into the other split would make test
    images training images and inflate every metric: refused, naming the link."""
    other = root / ("test" if split == "train" else "train")
    if not other.is_dir():
        return
    try:  # the other split's class folders too: both may link to one folder elsewhere
        theirs = [other] + [Path(e.path) for e in os.scandir(other) if e.is_dir()]
    except OSError:  # that split's own read reports it
        theirs = [other]
    theirs = {entry.resolve(): entry for entry in theirs}
    above = {parent: named for folder, named in theirs.items() for parent in folder.parents}
    for entry in [root / split] + [root / split / name for name in classes]:
        target = entry.resolve()  # one set lookup per ancestor: linear in the classes, not quadratic
        folder = next((f for f in (target, *target.parents) if f in theirs), None)
        named = theirs.get(folder) or above.get(target)
        if named is not None:
            raise ValueError(f"{entry} and {named} lead to one folder ({folder or target}, through a "
                             "link): the train and test splits would share images and every metric "
                             "would be inflated. Make them separate folders.")


def _check_every_class(labels, classes, split_dir):
    """Refuse a split where a class kept no image (all of its files were skipped)."""
    missing = sorted(set(range(len(classes))) - set(np.unique(labels).tolist()))
    if missing:
        raise ValueError(f"Class folder {split_dir / classes[missing[0]]} has no readable image "
                         f"left after skipping unreadable files ({len(missing)} such class(es)).")


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


def _folder_root(path):
    """The resolved folder `path`; a missing path, a dangling link or a link loop is refused."""
    root = Path(path).expanduser()
    try:
        os.stat(root)
    except OSError as error:
        reason = _broken(root, error) if error.errno != errno.ENOENT or root.is_symlink() \
            else "no such path"
        raise ValueError(
            "`data` must be 'digits', 'tfds:<name>' or an existing image "
            f"folder. Received: data={path!r} ({reason})"
        ) from None
    return root.resolve()


def _readable_prefix(name, limit=64):
    """The start of a folder's name for a cache file name: at most `limit` UTF-8 bytes, since a
    file name holds 255 (the cache key, a hash, keeps names of long folders apart)."""
    return name.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


def _over_budget(decoded_bytes):
    """True when a split of `decoded_bytes` (None: unknown) exceeds the memory budget
    (`clzoo.data.memory_budget`)."""
    from clzoo.data.memory_budget import choose_loading, memory_budget

    return choose_loading("auto", decoded_bytes, memory_budget())[0] == "stream"


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
    raise ValueError(
        f"Images in {where} differ in size: {first} is {size(*first_shape[:2])}, {odd} is "
        f"{size(*odd_shape[:2])}. Resize them on load with --image-size N (recipe key "
        "image_size; sizes are read after the EXIF orientation tag is applied: a rotated "
        "photo counts as its upright size)."
    )
