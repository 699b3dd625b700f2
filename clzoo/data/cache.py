"""Where clzoo keeps decoded datasets."""

import os
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




from clzoo.files import atomic_write, atomic_write_text  # noqa: E402,F401  (old import path)
