"""Where clzoo never writes: the folders of installed Python packages (issue 58 item 2) and of the
Python environment itself (issue 72 items 19-20).

An output written into site-packages could replace a package's files (a built-in preset, whose
checksums then fail on every later load), one written into the environment's scripts folder its
`activate` script or `python`; every writer checks its path here before any work.
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


@functools.cache
def environment_folders():
    """`(folder, what)` pairs of this interpreter's environment that hold no user output, existing
    or not: its scripts (`bin` / `Scripts`: `activate`, `python`), standard library and headers,
    and the user site-packages and scripts, which Python puts on `sys.path` / `PATH` once they
    exist (so a folder clzoo created there would change every later interpreter).

    Returns:
        A tuple of `(pathlib.Path, str)` pairs, resolved, sorted by path; `str` is one of
        "scripts", "standard library", "headers", "packages".

    Example:

    >>> import sysconfig
    >>> from pathlib import Path
    >>> from clzoo.installed import environment_folders
    >>> dict(environment_folders())[Path(sysconfig.get_paths()["scripts"]).resolve()]
    'scripts'
    """
    import sysconfig

    names = {"scripts": "scripts", "stdlib": "standard library", "platstdlib": "standard library",
             "include": "headers", "platinclude": "headers", "purelib": "packages", "platlib": "packages"}
    schemes = [sysconfig.get_paths()]
    with contextlib.suppress(KeyError, AttributeError):
        schemes.append(sysconfig.get_paths(scheme=sysconfig.get_preferred_scheme("user")))
    pairs = {Path(paths[key]).resolve(): what for paths in schemes for key, what in names.items()
             if paths.get(key)}
    return tuple(sorted(pairs.items()))


def _inside(place, folder):
    return place == folder or folder in place.parents


# what a virtual environment (venv, virtualenv, conda) keeps at its top level; a project where
# `python -m venv .` was run keeps its own files beside them, so only these names are refused
_ENVIRONMENT_ENTRIES = ("pyvenv.cfg", "bin", "Scripts", "lib", "lib64", "Lib", "include", "Include",
                        "conda-meta")


def _environment_entry(places):
    """The refusal when one of `places` is `sys.prefix` itself or one of its environment's
    top-level entries (`pyvenv.cfg`, whose loss unmakes the virtual environment), else None."""
    import sys

    prefix = Path(sys.prefix).resolve()
    for place in places:
        if place == prefix:
            return f"is the Python environment {prefix} itself"
        if place.parent == prefix and place.name in _ENVIRONMENT_ENTRIES:
            return f"is the Python environment's own {place.name} (in {prefix})"
    return None


def refuse_installed_packages(path, what="--output"):
    """Raise `ValueError` when `path` lies inside an installed package's folder
    (`installed_package_folders`): an output written there could replace a package's files,
    e.g. a built-in preset, and break every later import or load; or inside the environment's
    scripts, standard library, headers or user site, existing or not (`environment_folders`);
    or `sys.prefix` itself or one of its environment's top-level entries (`pyvenv.cfg`, `bin`,
    `lib`, ...: `--output .venv/pyvenv.cfg`).

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
        if _inside(target, folder):
            maintainers = (" (rebuilding a built-in preset from a source checkout: "
                           "build_preset(..., builtin=True))"
                           if target.parent == BUILTIN_PRESETS else "")  # a preset folder itself
            raise ValueError(f"{what} {target} is inside the installed packages' folder {folder}; "
                             f"clzoo writes no output there: choose another path{maintainers}")
    here = Path(path).absolute().parent.resolve() / Path(path).name  # a link's own place (`bin/python`)
    entry = _environment_entry((target, here))
    if entry:
        raise ValueError(f"{what} {target} {entry}; clzoo writes no output there: choose another path")
    inside = [(len(folder.parts), folder, kind) for folder, kind in environment_folders()
              if _inside(target, folder) or _inside(here, folder)]
    if inside:  # the innermost names it: site-packages, not the lib/pythonX.Y around it
        _, folder, kind = max(inside)
        raise ValueError(f"{what} {target} is inside the Python environment's {kind} folder "
                         f"{folder}; clzoo writes no output there: choose another path")
