"""Which files of a report folder a new report may replace: its manifest, checked before work.

A report (`metrics.json`, `report.md`, plots) is written as a set (`clzoo.files.replace_folder`):
the new folder replaces the old one whole, and the old one's files that the new report does
not write (plots of metrics no longer asked for) go with it, since the old report listed
them. Anything else in the folder is the user's and refuses the write.
"""

import json
from pathlib import Path

REPORT_FILES = ("metrics.json", "report.md")


def report_files(folder):
    """Names an earlier report wrote into `folder`: its `metrics.json` manifest (`files`), or,
    for a report from before the manifest, its `metrics.json`, `report.md` and PNGs. Empty for
    anything else (a run folder, a user's folder, unreadable JSON)."""
    folder = Path(folder)
    try:
        metrics = json.loads((folder / "metrics.json").read_text())
    except (OSError, ValueError):
        return set()
    if not isinstance(metrics, dict) or (folder / "recipe.yaml").exists():
        return set()
    files = metrics.get("files")
    if isinstance(files, list) and all(isinstance(name, str) for name in files):
        return set(files)
    if {"samples", "metrics", "title"} <= set(metrics):  # a report of an earlier version
        return set(REPORT_FILES) | {p.name for p in folder.glob("*.png")}
    return set()


def check_report_folder(folder):
    """Refuse, before any metric runs, a report folder holding files no earlier report wrote.

    Raises:
        FileExistsError: `folder` exists and holds entries other than an earlier
            report's (a run folder's checkpoint, the user's files); the message names them.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return
    foreign = sorted({p.name for p in folder.iterdir()} - report_files(folder) - set(REPORT_FILES))
    if foreign:
        raise FileExistsError(
            f"the report folder {folder} holds files a report does not write ({', '.join(foreign[:3])}"
            f"{', ...' if len(foreign) > 3 else ''}); a report replaces its folder as a whole and never "
            "deletes them: choose another --output")
