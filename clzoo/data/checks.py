"""Check a data spec before any image is decoded: both splits exist, classes match by name.

`check_data` reads only folder listings (or a dataset's metadata), so a
recipe with a bad `data` entry fails in well under a second, before a run
folder is written.
"""

from dataclasses import dataclass

from clzoo.data.folder_listing import _folder_root, _list_folder
from clzoo.data.memory_budget import over_memory, size_text
from clzoo.data.sources import EMBEDDED, data_source
from clzoo.data.tfds_splits import tfds_missing
from clzoo.data.unlabelled import UNLABELLED, list_unlabelled

DIGITS_TRAIN_IMAGES = 1437  # the fixed 80% stratified split of scikit-learn's 1,797 digits
DEFAULT_KS = (1, 5, 20, 200)  # kNN sizes of `clzoo eval`; 200 is Wu et al. 2018's


@dataclass(frozen=True)
class DataSummary:
    """What `check_data` found: the spec's source, label set, class names (index = label) and
    the number of training images (None where only loading can tell); `labelled` False for an
    unlabelled folder (`clzoo.data.unlabelled`: one split, one class name, no test split)."""

    source: str
    label_set: str
    class_names: tuple
    train_images: int = None
    labelled: bool = True


def check_data(data, loading="memory"):
    """Check that `data` names a dataset clzoo can train and evaluate on.

    Args:
        data: a `clzoo.data.load_split` spec: `"digits"`, a folder,
            `"tfds:NAME"`, optionally ending in `@LABEL_SET`; or the
            `clzoo.data.sources.DataSource` resolved from one.
        loading: how the splits will be read, `"memory"` (default), `"stream"` or
            `"auto"` (recipe key `data_loading`): only a split held in memory must fit
            in the memory free now; `auto` streams one that would not.

    Returns:
        `DataSummary`.

    Raises:
        ValueError: the path does not exist; the folder has no `train` or no
            `test` split; the test split's class names differ from the
            training ones (they are matched by name, never by position); fewer
            than two classes; an unknown label set; a tfds name that is empty,
            unknown or has no (image, label) pairs or no train / test split; a
            class folder holding a sub-folder; a label set on an unlabelled folder. An
            unlabelled folder (neither `train/` nor `test/`) is not refused: its summary has
            `labelled=False`.

    Example:

    >>> from clzoo.data.checks import check_data
    >>> len(check_data("digits").class_names)
    10
    """
    resolved = data_source(data)
    data, source, label_set = resolved.spec, resolved.source, resolved.label_set
    if not resolved.labelled:
        return _unlabelled_summary(resolved, loading)
    count = None
    if source in EMBEDDED:
        names, count = tuple(str(i) for i in range(10)), DIGITS_TRAIN_IMAGES
    elif source.startswith("tfds:"):
        names = _tfds_class_names(source[len("tfds:"):], data)
    else:
        names, count = _folder_class_names(source.removeprefix("folder:"), data, resolved.image_size,
                                           held=loading == "memory")
    if label_set is not None and names:
        names = _label_set_names(names, label_set, data)
    if names is not None and len(names) < 2:
        raise ValueError(f"data={data!r} has {len(names)} class ({', '.join(names)}); contrastive "
                         "training and its evaluation need at least two.")
    return DataSummary(source, label_set, names, None if label_set else count)


def knn_ks(ks, train_images, name="ks"):
    """The kNN neighbourhood sizes to use with `train_images` training images (the kNN memory).

    Here, not in `clzoo.eval`, so that the CLI refuses a bad `--k` before Keras is imported.

    Args:
        ks: the sizes asked for, or None for `DEFAULT_KS`.
        train_images: the number of training images.
        name: how the error names `ks` (`"--k"` on the command line).

    Returns:
        `(kept, dropped)`: `ks` itself and `()`; for `ks=None`, the default sizes
        that fit and those that do not (the caller says so).

    Raises:
        ValueError: an explicit k above `train_images` (or below 1).
    """
    if ks is None:
        kept = tuple(k for k in DEFAULT_KS if k <= train_images)
        return kept, DEFAULT_KS[len(kept):]
    ks = tuple(int(k) for k in ks)
    bad = [k for k in ks if not 1 <= k <= train_images]
    if bad:
        raise ValueError(f"{name}: k = {bad[0]} is not in [1, {train_images}], the {train_images:,} "
                         "training images the kNN takes its neighbours from. Received: "
                         f"{name}={','.join(map(str, ks))}")
    return ks, ()


def dropped_ks_note(dropped, train_images):
    """The one line that says which default kNN sizes `knn_ks` left out, and why."""
    return (f"note: kNN k = {', '.join(map(str, dropped))} left out of the default k "
            f"({', '.join(map(str, DEFAULT_KS))}): more than the {train_images:,} training images")


def _folder_class_names(path, data, image_size=None, held=True):
    """Class names and training-image count, from the loader's own listing of both splits."""
    root = _folder_root(path)
    train_files, _, _, train = _list_folder(root, "train")
    test_files, _, _, test = _list_folder(root, "test")
    if train != test:
        only_train = sorted(set(train) - set(test))
        only_test = sorted(set(test) - set(train))
        raise ValueError(
            f"The test classes of data={data!r} differ from its training classes (matched by "
            f"name): only in train: {only_train or 'none'}; only in test: {only_test or 'none'}.")
    if held:  # a streamed split decodes a batch at a time
        _check_decoded_size(train_files, len(train_files) + len(test_files), image_size, data)
    return tuple(train), len(train_files)


def _unlabelled_summary(resolved, loading):
    """The `DataSummary` of an unlabelled folder, from its listing; a label set is refused."""
    if resolved.label_set is not None:
        raise ValueError(f"the label set @{resolved.label_set} maps class names, and an unlabelled "
                         "folder (no train/ or test/ sub-folders) has none.")
    files = list_unlabelled(_folder_root(resolved.source.removeprefix("folder:")))[0]
    if loading == "memory":
        _check_decoded_size(files, len(files), resolved.image_size, resolved.spec)
    return DataSummary(resolved.source, None, (UNLABELLED,), len(files), labelled=False)


def _tfds_class_names(name, data):
    """Class names from the dataset's metadata (None when it has none); nothing is downloaded.

    Raises:
        ValueError: an empty or unknown name (with a did-you-mean), a config or version tfds
            cannot build, a dataset without (image, label) supervised keys or without
            train and test splits.
        ImportError: tensorflow-datasets is not installed.
    """
    if not name.strip():
        raise ValueError("no dataset name after 'tfds:'; write tfds:NAME, e.g. tfds:cifar10")
    try:
        import tensorflow_datasets as tfds
    except ImportError:
        raise ImportError(tfds_missing()) from None
    try:
        info = tfds.builder(name).info
    except Exception as error:  # DatasetNotFoundError, a bad config or version
        if type(error).__name__ == "DatasetNotFoundError":
            from clzoo.registry import did_you_mean

            known = tfds.list_builders(with_community_datasets=False)
            raise ValueError(f"{name!r} is not a TensorFlow Datasets name (catalog: "
                             "https://www.tensorflow.org/datasets/catalog/overview)."
                             + did_you_mean(name.split(":")[0].split("/")[0].lower(), known)) from None
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ValueError(f"tfds cannot build {name!r}: {reason[:200]}") from None
    keys = info.supervised_keys
    if not keys or len(keys) != 2 or not all(isinstance(k, str) for k in keys):
        raise ValueError(f"tfds dataset {name!r} has no (image, label) supervised keys; clzoo "
                         "needs labelled images")
    if info.splits and not {"train", "test"} <= set(info.splits):
        raise ValueError(f"tfds dataset {name!r} has the splits {sorted(info.splits)}; clzoo needs "
                         "'train' and 'test'")
    names = getattr(info.features[keys[1]], "names", None)
    return tuple(names) if names else None


def _label_set_names(names, label_set, data):
    from clzoo.data.label_sets import CIFAR10_COARSE

    if label_set == "cifar100_coarse":
        return None  # read from tfds's coarse_label feature at load time
    missing = sorted(set(CIFAR10_COARSE) - set(names))
    if missing:
        raise ValueError(f"The {label_set} label set needs CIFAR-10's class names; "
                         f"data={data!r} lacks {missing}.")
    if label_set == "cifar2":
        return ("cat", "dog")
    return tuple(sorted(set(CIFAR10_COARSE.values())))


def _check_decoded_size(files, images, image_size, data):
    """Refuse a folder whose decoded uint8 images (the first file's size for all of them, or
    `image_size` squared) exceed the memory this process may use, before any is decoded. A first file
    whose header cannot be read (damaged, a decompression bomb) is left to the decode to name."""
    if not files:
        return
    if image_size is None:
        from PIL import Image

        try:
            with Image.open(files[0]) as image:  # the header only: nothing is decoded
                width, height = image.size
        except Exception:  # damaged, or a decompression bomb (not an OSError): the loader's
            return  # decode names the file in one line, with its own rule for it
    else:
        width = height = image_size
    needed = images * width * height * 3
    if over := over_memory(needed):  # the same figure as a cgroup's OOM kill (issue 86)
        raise ValueError(
            f"data={data!r}, data_loading: memory: {images:,} images of {width} x {height} pixels "
            f"need about {size_text(needed)} decoded, {over}: use data_loading: auto or stream "
            "(decoded a batch at a time), pass --image-size N (recipe key image_size; each image "
            "is resized as it is decoded), or use fewer images")

