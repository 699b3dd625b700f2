"""Where clzoo never writes: the folders of installed Python packages (issue 58 item 2).

An output written into site-packages could replace a package's files (a built-in preset, whose
checksums then fail on every later load); every writer checks its path here before any work.
"""

import contextlib
import contextvars
import functools
from pathlib import Path

BUILTIN_PRESETS = Path(__file__).resolve().parent / "presets" / "builtin"
_ALLOWED = contextvars.ContextVar("clzoo_allowed_package_folder", default=None)


@contextlib.contextmanager
def writing_builtin_presets():
    """Let the block write into clzoo's built-in preset folder (`build_preset(..., builtin=True)`,
    the maintainers' command); everything else in an installed package stays refused."""
    token = _ALLOWED.set(BUILTIN_PRESETS)
    try:
        yield
    finally:
        _ALLOWED.reset(token)


@functools.cache  # the interpreter's install layout does not change while it runs
def installed_package_folders():
    """Folders that hold installed Python packages: this interpreter's site-packages (system,
    virtual environment and user) and clzoo's own package folder (an editable install's too)."""
    import site
    import sysconfig

    folders = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    # site-packages / dist-packages only: on Windows getsitepackages() also lists sys.prefix,
    # which holds a project where `python -m venv .` was run
    folders.update(folder for folder in (site.getsitepackages() if hasattr(site, "getsitepackages")
                                         else []) if Path(folder).name in ("site-packages", "dist-packages"))
    folders.add(site.getusersitepackages())
    folders.add(str(Path(__file__).parent))
    return tuple(sorted({Path(folder).resolve() for folder in folders if folder and Path(folder).is_dir()}))


def refuse_installed_packages(path, what="--output"):
    """Raise `ValueError` when `path` lies inside an installed package's folder
    (`installed_package_folders`): an output written there could replace a package's files,
    e.g. a built-in preset, and break every later import or load.

    Example:

    >>> import sysconfig
    >>> from clzoo.installed import refuse_installed_packages
    >>> refuse_installed_packages("runs/sincere")
    >>> refuse_installed_packages(sysconfig.get_paths()["purelib"] + "/x.npz")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: --output .../x.npz is inside the installed packages' folder ...
    """
    target = Path(path).resolve()
    allowed = _ALLOWED.get()
    if allowed is not None and allowed in target.parents:
        return
    for folder in installed_package_folders():
        if target == folder or folder in target.parents:
            maintainers = (" (rebuilding a built-in preset from a source checkout: "
                           "build_preset(..., builtin=True))"
                           if target.parent == BUILTIN_PRESETS else "")  # a preset folder itself
            raise ValueError(f"{what} {target} is inside the installed packages' folder {folder}; "
                             f"clzoo writes no output there: choose another path{maintainers}")
