"""Unlabelled image folders: images at any depth, no `train/<class>/` folders, for self-supervised runs.

A folder is unlabelled when it holds neither a `train` nor a `test` sub-folder. Every image file
under it (sub-folders at any depth, hidden entries left out, links not followed into folders; a
link to an image file is read, so an image linked twice counts twice) is one row of a single
split; its label is 0 and `Split.labelled` is False. Losses that read labels are refused on it
(`clzoo.train`), and a run reports the metrics that need none (`clzoo.eval.label_free`). Entries
are checked as `clzoo.data.folder_listing` checks a class folder's.
"""

import os
from pathlib import Path

import numpy as np

from clzoo.data.folder_listing import IMAGE_EXTENSIONS, _image_files, _report

UNLABELLED = "(unlabelled)"  # the one class name of an unlabelled split


def is_unlabelled(root):
    """True when the folder `root` has no `train` and no `test` sub-folder (a dataset folder in
    clzoo's `train/<class>/` layout has them), so its images are read as one unlabelled split."""
    root = Path(root)  # lexists: a broken `train` link is a labelled folder's, named as such
    return root.is_dir() and not any(os.path.lexists(root / split) for split in ("train", "test"))


def _walk(root):
    """`(images, problems)` of `root` and of every folder below it, depth first in name order, as
    `_image_files` lists each folder (once: its sub-folders come from the same listing); hidden
    folders are left out, links to folders not followed (a link could lead back up and repeat
    images)."""
    pending = [str(root)]
    while pending:
        images, problems, nested = _image_files(pending.pop())
        yield images, problems
        pending += [folder for folder in reversed(nested) if not os.path.islink(folder)]


def list_unlabelled(root, on_unreadable="error"):
    """`(files, stats, labels, classes)` of every image under `root`, as `_list_folder` gives them
    for one split: labels all 0, the class names `[UNLABELLED]`.

    Raises:
        ValueError: no image file under `root` (naming the extensions read), or (unless
            `on_unreadable="skip"`) the first unusable entry, as for a class folder.
    """
    root = Path(root)
    _refuse_split_lookalikes(root)
    found, problems = [], []
    for images, bad in _walk(root):
        found += images
        problems += bad
    _report(problems, "image", root, on_unreadable)
    if not found:
        raise ValueError(
            f"No images in {root} or its sub-folders ({', '.join(IMAGE_EXTENSIONS)}). A labelled "
            f"dataset is {root}/train/<class>/<image> and {root}/test/<class>/<image>; an "
            "unlabelled one holds image files at any depth.")
    files = [path for path, _ in found]
    return files, [info for _, info in found], np.zeros(len(files), np.int32), [UNLABELLED]


def first_image(root):
    """The path of the first image `list_unlabelled` would list (for its size), found without
    listing the rest; None when there is none."""
    return next((images[0][0] for images, _ in _walk(root) if images), None)


def _refuse_split_lookalikes(root):
    """A `Train/` or `TEST/` folder is refused: read as unlabelled, its test images would be
    training images (and on a case-insensitive file system the folder would read as labelled)."""
    for entry in sorted(os.listdir(root)):
        if entry.lower() in ("train", "test") and (root / entry).is_dir():
            raise ValueError(
                f"{root / entry} looks like a split folder: clzoo reads a labelled dataset from "
                "train/ and test/ (lower case), and a folder with neither as unlabelled images at "
                f"any depth, {entry}/ included. Rename it {entry.lower()}/ for a labelled dataset, "
                "or move the images out of it.")


def unlabelled_test_refusal(root):
    """The one line for asking an unlabelled folder for its test split."""
    return (f"{root} is an unlabelled folder (no train/ or test/ sub-folders): it has one split of "
            "images and no test split. kNN, probes and every metric that compares labels need a "
            "labelled folder (train/<class>/<image> and test/<class>/<image>).")
