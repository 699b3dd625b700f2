"""tests/xla_flags.py: the jax lane's fast-compile flags are probed before use and a user's own
XLA_FLAGS win over them."""

import pytest

from tests import xla_flags

pytestmark = pytest.mark.backends("jax")  # the lane these flags are for (tests/conftest.py)


def test_an_unknown_flag_is_caught_by_the_probe_not_by_an_abort():
    pytest.importorskip("jax")
    assert not xla_flags.accepted(("--xla_clzoo_no_such_flag=1",))
    assert xla_flags.accepted(xla_flags.FAST_COMPILE[:1])


def test_the_callers_flags_come_last_so_they_win(monkeypatch):
    monkeypatch.delenv("CLZOO_TEST_XLA_DEFAULT", raising=False)
    monkeypatch.setenv(xla_flags.ACCEPTED, "--xla_backend_optimization_level=0")
    assert xla_flags.for_tests("--xla_backend_optimization_level=3") == (
        "--xla_backend_optimization_level=0 --xla_backend_optimization_level=3")
    monkeypatch.setenv("CLZOO_TEST_XLA_DEFAULT", "1")
    assert xla_flags.for_tests("--xla_force_host_platform_device_count=2") == (
        "--xla_force_host_platform_device_count=2")


def test_the_probe_runs_once_and_its_answer_is_inherited(monkeypatch):
    calls = []
    monkeypatch.delenv("CLZOO_TEST_XLA_DEFAULT", raising=False)
    monkeypatch.delenv(xla_flags.ACCEPTED, raising=False)
    monkeypatch.setattr(xla_flags, "accepted", lambda flags: calls.append(flags) or len(flags) == 1)
    # Both together refused, each alone accepted: each kept, from three probes, then none.
    assert xla_flags.fast_compile_flags() == xla_flags.FAST_COMPILE
    assert xla_flags.fast_compile_flags() == xla_flags.FAST_COMPILE
    assert len(calls) == 3
