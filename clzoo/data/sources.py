"""Labelled image sources: an image folder, a tfds name, or the embedded digits.

Every source gives the same thing: uint8 images `(N, H, W, 3)`, int32 labels
`(N,)` and the class names. A folder is listed by `clzoo.data.folder_listing` and decoded (cached
as `.npz` under `clzoo.data.cache_dir()`; the source folder is only read) or left in its files by
`clzoo.data.folder_loading`; a tfds split is read by `clzoo.data.tfds_splits`.
"""

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clzoo.data.decode import ALPHA_BACKGROUND  # noqa: F401  (re-exported: the background's value)
from clzoo.data.folder_listing import _folder_root, _image_files, _list_folder, class_folders
from clzoo.data.folder_loading import _load_folder, _open_folder
from clzoo.data.label_sets import LABEL_SETS, derive_label_set
from clzoo.data.memory_budget import over_budget
from clzoo.data.resize import check_image_size, check_resized_memory, resize_image
from clzoo.data.split import Split
from clzoo.data.unlabelled import first_image, is_unlabelled, list_unlabelled, unlabelled_test_refusal

EMBEDDED = ("digits",)


def load_split(data, split="train", on_unreadable="error", stream=False):
    """Load a split of a dataset given by a spec string (or a `DataSource` resolved from one).

    Args:
        data: one of
            - `"digits"`: scikit-learn's handwritten digits (1,797 real 8x8
              scans shipped inside scikit-learn, no network), upscaled to
              32x32 RGB; a fixed stratified 80/20 train/test split.
            - a folder path (or `"folder:PATH"`) holding
              `PATH/{train,test}/<class>/<image>`; classes sorted by name. A
              folder with neither `train/` nor `test/` is unlabelled: its
              images at any depth are one `"train"` split with
              `labelled=False` (`clzoo.data.unlabelled`); it has no test split.
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
            from clzoo.data.tfds_splits import _load_tfds

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
        if is_unlabelled(root):
            return self._load_unlabelled(root, split, on_unreadable, stream)
        listed = _list_folder(root, split, on_unreadable)  # once, for the choice and the load
        if stream == "auto":
            stream = over_budget(self.decoded_bytes(len(listed[0]), split, first=listed[0][0]))
        if stream:
            return _open_folder(listed, on_unreadable, size)
        return _load_folder(root, split, listed, on_unreadable, size)

    @property
    def labelled(self):
        """False for an image folder without `train/` and `test/` (`clzoo.data.unlabelled`)."""
        folder = self.folder
        return folder is None or not is_unlabelled(folder.expanduser())

    def _load_unlabelled(self, root, split, on_unreadable, stream):
        """The one split of an unlabelled folder (`Split.labelled` False); it has no test split."""
        if split != "train":
            raise ValueError(unlabelled_test_refusal(self.spec))
        listed = list_unlabelled(root, on_unreadable)
        if stream == "auto":
            stream = over_budget(self.decoded_bytes(len(listed[0]), split, first=listed[0][0]))
        whole = (_open_folder(listed, on_unreadable, self.image_size) if stream else
                 _load_folder(root, "", listed, on_unreadable, self.image_size))
        return dataclasses.replace(whole, labelled=False)

    def streams(self):
        """True when this source's splits can stay where they are (`stream=True`): an image folder,
        or a tfds dataset prepared in ArrayRecord files (`clzoo.data.tfds_images`)."""
        if self.source.startswith("tfds:"):
            from clzoo.data.tfds_splits import prepared_builder

            return prepared_builder(self.source[len("tfds:"):]) is not None
        return self.folder is not None

    def decoded_bytes(self, count, split="train", first=None):
        """Bytes `count` images of `split` take decoded (uint8 RGB) at the size they would be held:
        `image_size`, else the first listed image's own size (read from its header; `first`, its
        path where the caller has listed the split, else found here); for a tfds
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

        if first is None:
            root = _folder_root(self.source.removeprefix("folder:"))  # named as given in errors
            first = first_image(root) if is_unlabelled(root) else \
                _image_files(root / split / class_folders(root, split)[0])[0][0][0]
        try:
            with Image.open(first) as image:
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


