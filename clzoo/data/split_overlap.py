"""Train and test apart: a test image that is also a training image inflates every kNN and probe figure.

Image folders are compared by file: one file in both splits (a hard link, a link of one image) or in
two classes is refused; a test file that is a copy of a training file (the same size and the same
first and last `SAMPLE` bytes, the decode cache's own content sample) is counted and warned about,
since real datasets hold a few (so a copy is not refused). Held arrays (digits, tfds, the Python
API's arrays) are compared by their pixels.
"""

import hashlib
import os
import warnings
import weakref

import numpy as np

from clzoo.data.folder_loading import _sample

_CHECKED = []  # weak references to the last pairs checked: one check per pair, nothing kept alive


def check_splits_apart(train, test, where):
    """The number of test images that are copies of training images (0 when none); warns when any.

    Args:
        train, test: `clzoo.data.Split`s; folder splits (with `paths`) are compared by file,
            splits held in memory by pixels; others (a file-backed split without paths) are not.
        where: the data, for the messages.

    Raises:
        ValueError: one file (the same inode, through a hard or symbolic link) in both splits,
            or in two classes of one split.
    """
    for first, second, copies in _CHECKED:
        if first() is train and second() is test:
            return copies  # `clzoo compare` evaluates one pair twice
    if train.paths is not None and test.paths is not None:
        copies, example = _file_copies(train, test, where)
    elif isinstance(train.images, np.ndarray) and isinstance(test.images, np.ndarray):
        copies, example = _pixel_copies(train.images, test.images)
    else:
        return 0
    _CHECKED[:] = [*_CHECKED[-3:], (weakref.ref(train), weakref.ref(test), copies)]
    if copies:
        warnings.warn(f"{copies:,} of the {len(test):,} test images of {where} are copies of training "
                      f"images (e.g. {example}): kNN and probe accuracies count them as seen. Remove "
                      "them from test/ for a clean test.", stacklevel=2)
    return copies


def _file_copies(train, test, where):
    train_stats = [os.stat(path) for path in train.paths]
    test_stats = [os.stat(path) for path in test.paths]
    _refuse_shared_files(train, train_stats, test, test_stats, where)
    sizes = {info.st_size for info in test_stats}
    seen = {}
    for path, info in zip(train.paths, train_stats):
        if info.st_size in sizes:  # only files of a test file's size can be its copy
            seen.setdefault(sample_digest(path, info.st_size), path)
    found = [(path, seen[digest]) for path, info in zip(test.paths, test_stats)
             if (digest := sample_digest(path, info.st_size)) in seen]
    return len(found), (f"{found[0][0]} = {found[0][1]}" if found else None)


def _refuse_shared_files(train, train_stats, test, test_stats, where):
    owner = {}
    for name, split, stats in (("train", train, train_stats), ("test", test, test_stats)):
        for path, label, info in zip(split.paths, split.labels, stats):
            key = (info.st_dev, info.st_ino)
            if key in owner and owner[key][1:] != (name, label):
                first = owner[key][0]
                kind = "both splits" if owner[key][1] != name else "two classes"
                raise ValueError(f"{path} and {first} are one file (a hard or symbolic link), in "
                                 f"{kind} of {where}: a test image must not be a training image, "
                                 "nor an image two labels. Make them separate files, or drop one.")
            owner.setdefault(key, (path, name, label))


def sample_digest(path, size):
    """`(size, 16-byte digest)` of the decode cache's content sample of a file: its first and last
    `SAMPLE` bytes, all of a small one (`folder_loading._sample`)."""
    return size, hashlib.blake2b(_sample(path, size), digest_size=16).digest()


def _pixel_copies(train, test):
    if train.shape[1:] != test.shape[1:]:
        return 0, None
    seen = {_row_digest(row): i for i, row in enumerate(train)}
    found = [(j, seen[d]) for j, row in enumerate(test) if (d := _row_digest(row)) in seen]
    return len(found), (f"test row {found[0][0]} = train row {found[0][1]}" if found else None)


def _row_digest(row):
    return hashlib.blake2b(row.tobytes(), digest_size=16).digest()
