"""Atomic file writes: a reader sees the old file or the new one, never a half-written one.

Every file clzoo saves (checkpoints, exports, run metadata, reports, the
decode cache) goes through `atomic_write`. `write_json` also keeps JSON
strict: NaN and infinity become `null`, which every JSON reader accepts.
"""

import contextlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path

from clzoo.file_lock import output_lock
from clzoo.hidden_names import sibling_prefix
from clzoo.installed import refuse_installed_packages

# Entries an operating system drops in folders: never the user's work, never a reason to refuse.
SYSTEM_FILES = frozenset({".DS_Store", "Thumbs.db", "desktop.ini", "lost+found"})


def atomic_write(path, write_fn, suffix=""):
    """Write a file through `write_fn(tmp_path)` then rename it into place.

    The temporary file sits in the destination folder so the final
    `os.replace` is atomic: readers see the old file or the new one, never a
    half-written one, even if the process is killed mid-write. An `OSError`
    without a file name (a write cut short by a full disk or a size limit)
    is raised again naming `path`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=sibling_prefix(path.name, "", room=8 + len(f".tmp{suffix}")),
                               suffix=f".tmp{suffix}", dir=path.parent)
    os.close(fd)
    try:
        write_fn(tmp)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; use the usual mode
        os.replace(tmp, path)
    except OSError as error:
        if error.filename is None and error.errno is not None:  # a write cut short: name the file
            raise OSError(error.errno, error.strerror, str(path)) from error
        raise
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path, text):
    """Atomically write a UTF-8 text file. A character UTF-8 cannot hold (a file name's byte that is
    not UTF-8, kept by Python as a lone surrogate) is written as its escape (`\\udcff`): a report
    naming such a folder is written, not lost after its work."""

    def write(tmp):
        with open(tmp, "w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(text)

    return atomic_write(path, write)


def strict_json(value):
    """`value` with every NaN / infinite float replaced by None (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value


def json_line(value):
    """One line of strict JSON (no bare NaN), for `.jsonl` files."""
    return json.dumps(strict_json(value), allow_nan=False)


def write_json(path, value):
    """Atomically write `value` as indented strict JSON."""
    return atomic_write_text(path, json.dumps(strict_json(value), indent=2, allow_nan=False) + "\n")


def check_output(path, overwrite=False, folder=False, what="--output"):
    """Refuse, before any work, to replace what is at `path` unless `overwrite`.

    Args:
        path: the file or folder a command will write.
        overwrite: the user passed `--overwrite`: an existing file, or the files
            of an existing folder, may be replaced.
        folder: `path` is a folder (an existing empty one is always fine).
        what: how the message names `path` (`"--output"`, `"--dry-run"`, ...).

    Returns:
        `Path(path)`.

    Raises:
        FileExistsError: `path` exists (a non-empty folder) and `overwrite` is
            False, or it is a file where a folder goes (or the reverse).
    """
    path = Path(path)
    refuse_installed_packages(path, what)
    if not os.path.lexists(path):
        return path
    if folder != path.is_dir():
        kind, wanted = ("a file", "a folder") if folder else ("a folder", "a file")
        raise FileExistsError(f"{what} {path} is {kind}; {wanted} is written there. "
                              "Choose another path.")
    if overwrite or (folder and not any(path.iterdir())):
        return path
    raise FileExistsError(f"{what} {path} exists already; pass --overwrite to replace it, or "
                          "choose another path.")


@contextlib.contextmanager
def locked_output(path, overwrite=False, folder=False, what="--output"):
    """Hold `path`'s one-writer lock (`clzoo.file_lock.output_lock`), then `check_output` it, for
    the block; yields `Path(path)`. The lock comes first: a second writer is refused before its
    work, and one that starts after the first has finished sees its output.

    Raises:
        FileExistsError, ValueError: as `output_lock` and `check_output`.
    """
    with output_lock(path, what):
        yield check_output(path, overwrite, folder=folder, what=what)


def refuse_working_directory(path, what="the folder"):
    """Raise `FileExistsError` when `path` is the working directory or holds it: a folder replaced
    as a whole (renamed aside, then deleted) must not be the one the process stands in.

    Example:

    >>> from clzoo.files import refuse_working_directory
    >>> refuse_working_directory("some/other/folder")
    >>> refuse_working_directory(".", "the report folder")
    Traceback (most recent call last):
    ...
    FileExistsError: the report folder . is the working directory (or holds it); ...
    """
    if Path.cwd().resolve().is_relative_to(Path(path).resolve()):
        raise FileExistsError(f"{what} {path} is the working directory (or holds it); it is "
                              "replaced as a whole: choose another folder")


def _staging_names(path):
    return (sibling_prefix(path.name, "staging-", room=8),
            sibling_prefix(path.name, "replaced-", room=8))


def _recover(path):
    """Clean up after a writer killed mid-swap: restore a replaced folder left aside, drop staging."""
    staging, replaced = _staging_names(path)
    aside = sorted(path.parent.glob(f"{replaced}*"))
    if aside and not path.exists():
        os.replace(aside.pop(), path)  # killed between the two renames: the old folder comes back
    for stale in aside + sorted(path.parent.glob(f"{staging}*")):
        shutil.rmtree(stale, ignore_errors=True)


def replace_folder(path, build_fn, owned=()):
    """Build a folder through `build_fn(staging)` beside `path`, then swap it in as a whole.

    A reader sees the old folder or the new one, never a mix of the two. Only a
    folder whose every entry the new build also writes (or `owned` names, or an
    operating system's clutter: `SYSTEM_FILES`) is replaced: files of the user's
    inside it are never deleted. A writer killed before the swap
    leaves a hidden staging folder; one killed between the swap's two renames
    leaves the old folder aside; the next call cleans up (restoring the old
    folder in the second case).

    Args:
        path: the folder to write.
        build_fn: `staging_path -> None`, writes the folder's files there.
        owned: names of entries in `path` that an earlier build of the same
            output wrote (its manifest), dropped although this build does not
            write them. Defaults to none.

    Returns:
        `Path` of `path`.

    Raises:
        FileExistsError: `path` holds entries the new build does not write
            (nothing is replaced; the message names them), or `path` is the
            working directory or holds it, or another process is writing it
            (`clzoo.file_lock.output_lock`; the message names that process).

    Example:

    >>> import tempfile
    >>> from pathlib import Path
    >>> from clzoo.files import replace_folder
    >>> out = Path(tempfile.mkdtemp()) / "preset"
    >>> _ = replace_folder(out, lambda staging: (staging / "a.json").write_text("{}"))
    >>> sorted(p.name for p in out.iterdir())
    ['a.json']
    """
    given, path = Path(path), Path(path).absolute()
    path = path.resolve() if path.is_symlink() else path  # replace the folder a link names
    refuse_working_directory(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with output_lock(path):  # one writer: _recover may then drop any staging it finds
        _recover(path)
        return _swap_in(path, build_fn, owned, given)


def _swap_in(path, build_fn, owned, given):
    staging_prefix, replaced_prefix = _staging_names(path)
    staging = Path(tempfile.mkdtemp(prefix=staging_prefix, dir=path.parent))
    os.chmod(staging, 0o777 & ~_umask())  # mkdtemp makes 0700; the folder gets the usual mode
    try:
        build_fn(staging)
        if path.exists():
            written = {p.name for p in staging.iterdir()} | set(owned) | SYSTEM_FILES
            foreign = sorted({p.name for p in path.iterdir()} - written)
            if foreign:
                raise FileExistsError(f"{path} holds files this output does not write "
                                      f"({', '.join(foreign[:3])}); they are never deleted: "
                                      "move them, or choose another folder")
            aside = Path(tempfile.mkdtemp(prefix=replaced_prefix, dir=path.parent))
            os.replace(path, aside)  # onto the empty folder mkdtemp made
            os.replace(staging, path)
            shutil.rmtree(aside, ignore_errors=True)
        else:
            os.replace(staging, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return given
