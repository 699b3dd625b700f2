"""Where clzoo keeps decoded datasets, and atomic file writes."""

import os
import tempfile
from pathlib import Path


def cache_dir(*parts):
    """Return (and create) the clzoo cache directory, or a folder inside it.

    Order: `$CLZOO_CACHE`, then `$XDG_CACHE_HOME/clzoo`, then `~/.cache/clzoo`.
    """
    root = os.environ.get("CLZOO_CACHE")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
            os.path.expanduser("~"), ".cache"
        )
        root = os.path.join(base, "clzoo")
    path = Path(root, *parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def atomic_write(path, write_fn, suffix=""):
    """Write a file through `write_fn(tmp_path)` then rename it into place.

    The temporary file sits in the destination folder so the final
    `os.replace` is atomic: readers see the old file or the new one, never a
    half-written one, even if the process is killed mid-write.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=f".tmp{suffix}", dir=path.parent
    )
    os.close(fd)
    try:
        write_fn(tmp)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; use the usual mode
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path, text):
    """Atomically write a UTF-8 text file."""

    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)

    return atomic_write(path, write)
