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

import importlib.util
import json
import os
import sys
import zlib
from importlib import metadata
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
# torch's thread count follows the machine's load (clzoo.machine.torch_threads_for_load), and the
# count can change a result's last digits: runs a test compares keep torch's own count
os.environ.setdefault("CLZOO_TORCH_THREADS", "keep")
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


def _jax_fast_compiles():
    """Compile this process's JAX programs with `tests/xla_flags.py`'s fast-compile flags; child
    processes get the user's XLA_FLAGS back (the JAX child checks set their own)."""
    from tests.xla_flags import for_tests

    given = os.environ.get("XLA_FLAGS")
    os.environ["XLA_FLAGS"] = for_tests(*([given] if given else []))
    import jax

    jax.devices()  # the CPU client reads XLA_FLAGS once, here
    if given is None:
        del os.environ["XLA_FLAGS"]
    else:
        os.environ["XLA_FLAGS"] = given


if os.environ.get("KERAS_BACKEND") == "jax":
    _jax_fast_compiles()
elif importlib.util.find_spec("jax") is not None:
    from tests.xla_flags import fast_compile_flags

    fast_compile_flags()  # probed once here; the tensorflow lane's JAX child checks inherit it

import keras  # noqa: E402
import numpy as np  # noqa: E402

BACKENDS = ("tensorflow", "jax", "torch")
LANE = keras.backend.backend()


TIERS = ("large", "slow")


def pytest_addoption(parser):
    parser.addoption("--run-large", action="store_true", default=False,
                     help="also run the tests marked large (the large tier; `-m large` runs only them)")
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run the tests marked slow (the slow tier; `-m slow` runs only them)")


def runs_tier(config, tier):
    """Three tiers, as keras-hub's `--run_large`: a `large` or `slow` test runs with `--run-large` /
    `--run-slow` or when the `-m` expression names its tier (`-m large` is the large tier alone);
    otherwise it is deselected. CI runs the default and large tiers, not the slow one."""
    expression = config.option.markexpr or ""
    named = tier in expression and f"not {tier}" not in expression
    return config.getoption(f"run_{tier}") or named


def _named(config):
    """Test ids given on the command line (`file.py::test`), relative to the root: a large test
    named this way runs without `--run-large`."""
    named = set()
    for arg in config.args:
        path, sep, rest = arg.partition("::")
        if sep:
            relative = os.path.relpath(os.path.abspath(path), str(config.rootpath))
            named.add(f"{Path(relative).as_posix()}::{rest}")
    return named


def pytest_report_header(config):
    kind = "installed wheel" if INSTALLED_WHEEL else "source tree / editable install"
    return [f"clzoo {clzoo.__version__} from {CLZOO_FROM} ({kind})",
            f"lane: KERAS_BACKEND={LANE} (tests marked backends(..., {LANE!r}, ...)"
            + (" and all unmarked tests)" if LANE == "tensorflow" else " only)"),
            "tiers: default" + "".join(f", {tier}" for tier in TIERS if runs_tier(config, tier))
            + " (--run-large / --run-slow or -m large / -m slow add the others)"]


def backends_of(item):
    """The lanes a test runs on: its closest `backends` marker, else the tensorflow lane only."""
    marker = item.get_closest_marker("backends")
    names = marker.args if marker else ("tensorflow",)
    unknown = set(names) - set(BACKENDS)
    if not names or unknown:
        raise pytest.UsageError(f"{item.nodeid}: backends{names} must name some of {BACKENDS}")
    return names


def _check_groups_hold(config, items):
    """Tests sharing an expensive module fixture carry one `xdist_group`; `--dist loadgroup`
    keeps them on one worker by suffixing their node ids. Where the installed pytest ignores the
    suffix (pytest 9 with pytest-xdist 3.8, pytest-xdist #1386), every worker builds the fixture
    again: refuse instead of running slowly without a word."""
    if getattr(config.option, "loadgroup", False):
        grouped = [item for item in items if item.get_closest_marker("xdist_group")]
        if grouped and "@" not in grouped[0].nodeid:
            raise pytest.UsageError(f"--dist loadgroup has no effect with pytest {pytest.__version__} "
                                    "(pytest-xdist #1386): pip install 'pytest<9'")


@pytest.hookimpl(trylast=True)  # after folder rules (tests/losses/conftest.py) have marked their items
def pytest_collection_modifyitems(config, items):
    _check_groups_hold(config, items)
    tiers, named = {tier for tier in TIERS if runs_tier(config, tier)}, _named(config)
    kept, dropped = [], []
    for item in items:
        base = item.nodeid.split("@")[0]  # without the `--dist loadgroup` suffix
        chosen = all(tier in tiers or item.get_closest_marker(tier) is None for tier in TIERS) or any(
            base == name or base.startswith(name + "[") for name in named)
        wanted = LANE in backends_of(item) and chosen
        (kept if wanted else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    # Large tests first (a stable sort: each module's order holds): xdist then hands out the long
    # runs while there is short work left to balance them, instead of one worker finishing alone.
    items[:] = sorted(kept, key=lambda item: not any(item.get_closest_marker(tier) for tier in TIERS))


def pytest_runtest_logreport(report):
    """With `CLZOO_TEST_DURATIONS=<file>`, each test phase's seconds are appended there as a JSON
    line (lane, test, phase, seconds), by the controller alone under xdist: `.ci/slowest.py` prints
    the slowest tests of a whole CI run, across its lanes and tiers."""
    target = os.environ.get("CLZOO_TEST_DURATIONS")
    if not target or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    line = {"lane": LANE, "test": report.nodeid.split("@")[0], "phase": report.when,
            "seconds": round(report.duration, 3)}
    with open(target, "a") as file:
        file.write(json.dumps(line) + "\n")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own clzoo cache, so none writes to the user's."""
    monkeypatch.setenv("CLZOO_CACHE", str(tmp_path / "clzoo-cache"))


SHARED_RNG_MODULES = ("tests.hostile._util",)


@pytest.fixture(autouse=True)
def _order_free_data(request):
    """Give each test its own seed for its module's `RNG` (and the shared helpers' one).

    A module-wide generator hands a test whichever numbers the tests xdist ran before it on the
    same worker left over, so a tolerance could pass here and fail on another schedule (stop 34).
    The seed is the test's name, not its node id, which `--dist loadgroup` suffixes.
    """
    seed = zlib.crc32(f"{request.node.path.name}::{request.node.name}".encode())
    for module in (request.module, *(sys.modules.get(name) for name in SHARED_RNG_MODULES)):
        if isinstance(getattr(module, "RNG", None), np.random.Generator):
            module.RNG = np.random.default_rng(seed)
