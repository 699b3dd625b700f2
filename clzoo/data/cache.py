"""Where clzoo keeps decoded datasets."""

import os
import warnings
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


def read_npz(path):
    """The arrays of the cached `.npz` at `path` as a dict, or None when there is none.

    A damaged file (truncated, empty, not a zip, a member failing its CRC, or
    one holding pickled objects, which are refused) is deleted with a
    warning and None is returned, so the caller rebuilds it instead of
    crashing on it.
    """
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except FileNotFoundError:
        return None
    except Exception as error:  # BadZipFile, EOFError, ValueError, OSError, a bare .npy
        discard(path, f"{type(error).__name__}: {error}")
        return None


def discard(path, reason):
    """Delete the damaged cache file `path`, warning with `reason`."""
    warnings.warn(f"Cache file {path} is damaged ({reason}); rebuilding it.", stacklevel=3)
    Path(path).unlink(missing_ok=True)

