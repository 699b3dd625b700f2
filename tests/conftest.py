"""Test what users install, one lane per Keras backend.

Lanes: the backend is fixed per process, so the suite runs once per `KERAS_BACKEND`
(`tests/lanes.py` runs the three in turn). The tensorflow lane runs every test; the
jax and torch lanes run the tests marked `backends(...)` with their name (a module's
`pytestmark`, or a folder rule such as `tests/losses/conftest.py`); the rest are
deselected there. A test's closest `backends` marker wins, so one test in an
every-backend module can stay on one lane.

`clzoo` comes from the installed wheel when there is one.

`python -m pytest` and pytest's rootdir insertion put this source tree first on
`sys.path`, where its `clzoo/` would shadow the installed package, so a wheel
that lacks a module (or a preset file) would still pass. The tree is moved to
the end of `sys.path` here, and child Python processes get `PYTHONSAFEPATH`, so
the installed package wins; with a non-editable install, importing `clzoo` from
the tree is an error.
"""

import json
import os
import sys
from importlib import metadata
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ["PYTHONSAFEPATH"] = "1"  # children: no cwd / script folder ahead of site-packages

ROOT = Path(__file__).resolve().parents[1]


def _is_tree(entry):
    return Path(entry or os.getcwd()).resolve() == ROOT


_tree = [entry for entry in sys.path if _is_tree(entry)]
sys.path[:] = [entry for entry in sys.path if not _is_tree(entry)] + (_tree or [str(ROOT)])

import pytest  # noqa: E402


def _installed_wheel():
    """True when clzoo is pip-installed from a wheel (not `pip install -e`)."""
    try:
        dist = metadata.distribution("clzoo")
    except metadata.PackageNotFoundError:
        return False
    direct = dist.read_text("direct_url.json")
    return not (direct and json.loads(direct).get("dir_info", {}).get("editable"))


import clzoo  # noqa: E402

CLZOO_FROM = Path(clzoo.__file__).resolve().parent
INSTALLED_WHEEL = _installed_wheel()
if INSTALLED_WHEEL and CLZOO_FROM == ROOT / "clzoo":  # (a .venv inside ROOT is fine)
    raise pytest.UsageError(f"clzoo is installed from a wheel but was imported from the source tree "
                            f"{CLZOO_FROM}; the suite must test the installed package.")


import keras  # noqa: E402

BACKENDS = ("tensorflow", "jax", "torch")
LANE = keras.backend.backend()


def pytest_report_header(config):
    kind = "installed wheel" if INSTALLED_WHEEL else "source tree / editable install"
    return [f"clzoo {clzoo.__version__} from {CLZOO_FROM} ({kind})",
            f"lane: KERAS_BACKEND={LANE} (tests marked backends(..., {LANE!r}, ...)"
            + (" and all unmarked tests)" if LANE == "tensorflow" else " only)")]


def backends_of(item):
    """The lanes a test runs on: its closest `backends` marker, else the tensorflow lane only."""
    marker = item.get_closest_marker("backends")
    names = marker.args if marker else ("tensorflow",)
    unknown = set(names) - set(BACKENDS)
    if not names or unknown:
        raise pytest.UsageError(f"{item.nodeid}: backends{names} must name some of {BACKENDS}")
    return names


@pytest.hookimpl(trylast=True)  # after folder rules (tests/losses/conftest.py) have marked their items
def pytest_collection_modifyitems(config, items):
    kept = [item for item in items if LANE in backends_of(item)]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if LANE not in backends_of(item)])
        items[:] = kept


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own clzoo cache, so none writes to the user's."""
    monkeypatch.setenv("CLZOO_CACHE", str(tmp_path / "clzoo-cache"))
