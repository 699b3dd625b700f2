"""What an image folder holds: its class folders and image files, each entry checked as it is listed.

`FOLDER/<split>/<class>/<image>`, classes sorted by name, hidden entries left out; a broken link,
a link loop, a name that is not UTF-8, an empty or non-regular image file, a nested folder, or a
split that links into the other is refused in one line naming it (or, under `skip`, left out
with a warning). Decoding is `clzoo.data.folder_loading`'s.
"""

import errno
import os
import stat
import warnings
from pathlib import Path

import numpy as np

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp")


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
            + _why_labelled(Path(root)))
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



def _why_labelled(root):
    """Why `root` was read as a labelled dataset (a file, or a `train` / `test` entry), for the
    missing-split refusal; a folder with neither is read as unlabelled (`clzoo.data.unlabelled`)."""
    if not root.is_dir():
        return f" ({root} is a file, not a folder)"
    held = [name for name in ("train", "test") if os.path.lexists(root / name)]
    kinds = ", ".join(f"{name}/" if (root / name).is_dir() else f"{name} (not a folder)" for name in held)
    return (f" ({root} holds {kinds}, so it is read as a labelled dataset; a folder with neither "
            "train nor test is read as unlabelled images at any depth)") if held else ""


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
