"""Labelled image sources: an image folder, a tfds name, or the embedded digits.

Every source gives the same thing: uint8 images `(N, H, W, 3)`, int32 labels
`(N,)` and the class names. Decoded folders are cached as `.npz` under
`clzoo.data.cache_dir()`; the source folder is only read.
"""

import functools
import hashlib
import json
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clzoo.data.cache import atomic_write, cache_dir

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp")
EMBEDDED = ("digits",)


@dataclass
class Split:
    """One split of a labelled image dataset.

    Attributes:
        images: uint8 array `(N, H, W, 3)`.
        labels: int32 array `(N,)`, values in `[0, len(class_names))`.
        class_names: list of class names, index = label.
        fine_labels: for a derived coarse label set, the original labels
            `(N,)`; else None.
        fine_class_names: names of the fine labels, or None.
    """

    images: np.ndarray
    labels: np.ndarray
    class_names: list
    fine_labels: np.ndarray = None
    fine_class_names: list = None

    def __len__(self):
        return len(self.labels)

    def as_dataset(self):
        """`tf.data.Dataset` of `(uint8 (H, W, 3) image, int32 label)` pairs (class names: `class_names`)."""
        import tensorflow as tf

        return tf.data.Dataset.from_tensor_slices((self.images, self.labels))


def from_arrays(images, labels, class_names=None):
    """A `Split` from in-memory arrays, checked.

    Args:
        images: uint8 `(N, H, W, 3)` (or `(N, H, W)` / `(N, H, W, 1)` grey,
            repeated to RGB).
        labels: int `(N,)` in `[0, len(class_names))`.
        class_names: Defaults to `["0", "1", ...]` up to the largest label.

    Raises:
        ValueError: wrong dtype or rank, label/image count mismatch, labels
            out of range.

    Example:

    >>> import numpy as np, clzoo
    >>> split = clzoo.data.from_arrays(np.zeros((2, 8, 8, 3), np.uint8), [0, 1])
    >>> len(split), split.class_names
    (2, ['0', '1'])
    """
    images = np.asarray(images)
    if images.dtype != np.uint8:
        raise ValueError(f"`images` must be uint8 in [0, 255]. Received: dtype={images.dtype}")
    if images.ndim == 3:
        images = images[..., None]
    if images.ndim != 4 or images.shape[-1] not in (1, 3):
        raise ValueError(f"`images` must have shape (N, H, W, 3). Received: shape={images.shape}")
    if images.shape[-1] == 1:
        images = np.repeat(images, 3, axis=-1)
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"`labels` must be integers of shape (N,). Received: {labels.dtype} {labels.shape}")
    if len(labels) != len(images):
        raise ValueError(f"{len(images)} images but {len(labels)} labels.")
    classes = list(class_names) if class_names is not None else [
        str(i) for i in range(int(labels.max()) + 1 if labels.size else 0)]
    if labels.size and (labels.min() < 0 or labels.max() >= len(classes)):
        raise ValueError(
            f"Labels must lie in [0, {len(classes)}) (one per class name). "
            f"Received: min={labels.min()}, max={labels.max()}"
        )
    return Split(images, labels.astype(np.int32), classes)


def load_split(data, split="train", on_unreadable="error"):
    """Load a split of a dataset given by a spec string.

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
            first file that cannot be decoded and names it; `"skip"` leaves
            such files out and warns with their count.

    Returns:
        `Split` with uint8 images `(N, H, W, 3)` and int32 labels `(N,)`.

    Raises:
        ValueError: when the path does not exist, a split or class folder is
            missing or empty, images differ in size, or a file is unreadable.

    Example:

    >>> import clzoo
    >>> train = clzoo.data.load_split("digits", "train")
    >>> train.images.shape[1:], train.images.dtype
    ((32, 32, 3), dtype('uint8'))
    """
    if split not in ("train", "test"):
        raise ValueError(f"`split` must be 'train' or 'test'. Received: split={split!r}")
    if on_unreadable not in ("error", "skip"):
        raise ValueError(f"`on_unreadable` must be 'error' or 'skip'. Received: {on_unreadable!r}")
    source, label_set = parse_data_spec(data)
    if label_set == "cifar100_coarse":
        return _load_tfds("cifar100", split, coarse_key="coarse_label")
    if label_set is not None:
        from clzoo.data.label_sets import derive_label_set

        return derive_label_set(load_split(source, split, on_unreadable), label_set)
    if source in EMBEDDED:
        return _load_digits(split)
    if source.startswith("tfds:"):
        return _load_tfds(source[len("tfds:"):], split)
    return _load_folder(source.removeprefix("folder:"), split, on_unreadable)


def parse_data_spec(data):
    """Split a data spec into `(source, label_set or None)`.

    `@NAME` at the end names a label set when NAME is one of
    `clzoo.data.label_sets.LABEL_SETS`; an existing path is always a folder,
    so folders whose names contain `@` load as they are.

    Raises:
        ValueError: for an unknown label set, or `cifar100_coarse` on
            anything but `tfds:cifar100`.

    Example:

    >>> from clzoo.data.sources import parse_data_spec
    >>> parse_data_spec("tfds:cifar10@cifar2"), parse_data_spec("digits")
    (('tfds:cifar10', 'cifar2'), ('digits', None))
    """
    from clzoo.data.label_sets import LABEL_SETS

    data = str(data)
    if "@" not in data or Path(data.removeprefix("folder:")).expanduser().exists():
        return data, None
    source, label_set = data.rsplit("@", 1)
    if label_set not in LABEL_SETS:
        raise ValueError(f"Unknown label set {label_set!r} in data={data!r}. Choose from: "
                         f"{', '.join(LABEL_SETS)} (or give an existing folder).")
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


def _load_tfds(name, split, coarse_key=None):
    try:
        import tensorflow_datasets as tfds
    except ImportError as error:
        raise ImportError(
            "Reading a tfds dataset needs tensorflow-datasets: "
            "pip install 'clzoo[tfds]'"
        ) from error
    dataset, info = tfds.load(name, split=split, with_info=True)
    image_key, label_key = info.supervised_keys
    images, labels, coarse = [], [], []
    for example in tfds.as_numpy(dataset):
        images.append(example[image_key])
        labels.append(example[label_key])
        if coarse_key:
            coarse.append(example[coarse_key])
    if not images:
        raise ValueError(f"tfds dataset {name!r} has no examples in split {split!r}.")
    shapes = {image.shape for image in images}
    if len(shapes) > 1:
        raise ValueError(
            f"tfds dataset {name!r} has images of several sizes {sorted(shapes)[:3]}...; "
            "clzoo needs one size per dataset."
        )
    images = np.stack(images)
    if images.shape[-1] == 1:
        images = np.repeat(images, 3, axis=-1)
    label_feature = info.features[info.supervised_keys[1]]
    names = list(getattr(label_feature, "names", None) or
                 [str(i) for i in range(int(np.max(labels)) + 1)])
    if coarse_key:
        coarse_names = list(info.features[coarse_key].names)
        return Split(images.astype(np.uint8), np.asarray(coarse, np.int32), coarse_names,
                     fine_labels=np.asarray(labels, np.int32), fine_class_names=names)
    return Split(images.astype(np.uint8), np.asarray(labels, np.int32), names)


def _visible(folder):
    """Entries of `folder` that are not hidden (`.ipynb_checkpoints`, `.DS_Store`, `._x.png`)."""
    return sorted((p for p in folder.iterdir() if not p.name.startswith(".")), key=lambda p: p.name)


def class_folders(root, split):
    """Sorted class names of `root/split/<class>/`, hidden folders left out.

    Raises:
        ValueError: when the split folder is missing or holds no class folder.
    """
    split_dir = Path(root) / split
    if not split_dir.is_dir():
        raise ValueError(
            f"Expected an image folder with a '{split}' sub-folder of class "
            f"folders ({root}/{split}/<class>/<image>). Received: data={str(root)!r}"
        )
    classes = [p.name for p in _visible(split_dir) if p.is_dir()]
    if not classes:
        raise ValueError(
            f"No class folders in {split_dir}: expected {split_dir}/<class>/<image>."
        )
    return classes


def _list_folder(root, split):
    classes = class_folders(root, split)
    split_dir = root / split
    files, labels = [], []
    for label, name in enumerate(classes):
        found = [f for f in _visible(split_dir / name) if f.suffix.lower() in IMAGE_EXTENSIONS]
        if not found:
            raise ValueError(
                f"Class folder {split_dir / name} holds no images "
                f"({', '.join(IMAGE_EXTENSIONS)})."
            )
        files += found
        labels += [label] * len(found)
    return files, np.asarray(labels, np.int32), classes


def _decode(path, skip=False):
    from PIL import Image

    try:
        with Image.open(path) as image:
            return np.asarray(image.convert("RGB"), dtype=np.uint8)
    except Exception as error:  # PIL raises several types for bad files.
        if skip:
            return None
        raise ValueError(
            f"Cannot read image {path}: {error} (load_split(..., on_unreadable='skip') leaves such "
            "files out)"
        ) from error


def _load_folder(path, split, on_unreadable="error"):
    root = Path(path).expanduser()
    if not root.exists():
        raise ValueError(
            "`data` must be 'digits', 'tfds:<name>' or an existing image "
            f"folder. Received: data={path!r} (no such path)"
        )
    root = root.resolve()
    files, labels, classes = _list_folder(root, split)
    stats = [(str(f.relative_to(root)), f.stat().st_size, int(f.stat().st_mtime)) for f in files]
    key = hashlib.sha256(json.dumps([str(root), split, stats, on_unreadable]).encode()).hexdigest()[:16]
    cached = cache_dir("datasets") / f"{root.name}-{split}-{key}.npz"
    if cached.exists():
        with np.load(cached, allow_pickle=False) as archive:
            return Split(archive["images"], archive["labels"], list(archive["class_names"]))

    from tqdm.auto import tqdm

    from clzoo._console import tqdm_disable

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        decode = functools.partial(_decode, skip=on_unreadable == "skip")
        images = list(tqdm(pool.map(decode, files, chunksize=256), total=len(files),
                           desc=f"decoding {root.name}/{split}", unit="img",
                           disable=tqdm_disable()))
    unreadable = [f for f, image in zip(files, images) if image is None]
    if unreadable:
        warnings.warn(f"Skipped {len(unreadable)} unreadable image(s) in {root / split}, "
                      f"e.g. {unreadable[0]}", stacklevel=3)
        keep = [i for i, image in enumerate(images) if image is not None]
        files, images, labels = [files[i] for i in keep], [images[i] for i in keep], labels[keep]
        if not images:
            raise ValueError(f"No readable images in {root / split}.")
    shapes = {image.shape for image in images}
    if len(shapes) > 1:
        first = images[0].shape
        odd = next(f for f, image in zip(files, images) if image.shape != first)
        raise ValueError(
            f"Images in {root / split} differ in size: {files[0].name} is "
            f"{first[:2]}, {odd} is {next(s for s in shapes if s != first)[:2]}. "
            "Resize them to one size first."
        )
    images = np.stack(images)

    def write(tmp):
        with open(tmp, "wb") as handle:
            np.savez(handle, images=images, labels=labels, class_names=np.array(classes))

    atomic_write(cached, write)
    return Split(images, labels, classes)
