"""Which files of a report folder a new report may replace: its manifest, checked before work.

A report (`metrics.json`, `report.md`, plots) is written as a set (`clzoo.files.replace_folder`):
the new folder replaces the old one whole, and the old one's files that the new report does
not write (plots of metrics no longer asked for) go with it, since the old report listed
them. Anything else in the folder (another program's `metrics.json` included) is the user's
and refuses the write. Where the folder cannot be swapped (a mount point, a parent the user
may not write) the report's files are replaced one by one in place instead.
"""

import json
import os
from pathlib import Path

from clzoo.files import SYSTEM_FILES, refuse_working_directory

REPORT_FILES = ("metrics.json", "report.md")
_SIGNATURE = {"title", "samples", "metrics"}  # keys every clzoo report's metrics.json has


def report_files(folder):
    """Names an earlier clzoo report wrote into `folder`: its manifest (`metrics.json` -> `files`)
    or, for a report of an earlier version, its `metrics.json`, `report.md` and PNGs. Empty for
    anything else (a run folder, another program's `metrics.json`, unreadable JSON).

    Example:

    >>> import json, tempfile, pathlib
    >>> from clzoo.eval.report_folder import report_files
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "metrics.json").write_text(json.dumps(
    ...     {"title": "t", "samples": {}, "metrics": [], "files": ["metrics.json", "knn.png"]}))
    >>> sorted(report_files(folder))
    ['knn.png', 'metrics.json', 'report.md']
    >>> _ = (folder / "metrics.json").write_text('{"files": ["train.csv"]}')  # not a report
    >>> report_files(folder)
    set()
    """
    folder = Path(folder)
    try:
        metrics = json.loads((folder / "metrics.json").read_text())
    except (OSError, ValueError):
        return set()
    if not isinstance(metrics, dict) or not _SIGNATURE <= set(metrics):
        return set()
    files = metrics.get("files")
    if isinstance(files, list) and all(isinstance(name, str) for name in files):
        return set(files) | set(REPORT_FILES)
    return set(REPORT_FILES) | {p.name for p in folder.glob("*.png")}


def swappable(folder):
    """Whether `folder` can be replaced by renaming a sibling onto it: not a mount point, and its
    parent writable (a symbolic link is followed to the folder it names)."""
    folder = Path(folder).resolve()
    if folder.exists() and os.path.ismount(folder):
        return False
    return _writable(folder.parent)


def _writable(path):
    """Whether files can be created in `path`, or in its nearest existing ancestor (created
    folders inherit that)."""
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    return os.access(path, os.W_OK | os.X_OK)


def check_report_folder(folder):
    """Refuse, before any metric runs, a report folder holding files no earlier report wrote, or
    the working directory.

    Raises:
        FileExistsError: `folder` holds entries other than an earlier clzoo report's (a run
            folder's checkpoint, the user's files, another program's `metrics.json`), or it is
            the working directory or holds it; the message names them.
        PermissionError: neither the folder nor its parent may be written.
    """
    folder = Path(folder)
    refuse_working_directory(folder, "the report folder")
    if not swappable(folder) and not _writable(folder):
        raise PermissionError(f"the report folder {folder} cannot be written (no write permission "
                              "there): choose another --output")
    if not folder.is_dir():
        return
    foreign = sorted({p.name for p in folder.iterdir()} - report_files(folder) - SYSTEM_FILES)
    if foreign:
        raise FileExistsError(
            f"the report folder {folder} holds files a report does not write ({', '.join(foreign[:3])}"
            f"{', ...' if len(foreign) > 3 else ''}); a report replaces its folder as a whole and never "
            "deletes them: choose another --output")
