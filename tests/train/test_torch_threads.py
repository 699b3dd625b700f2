"""A torch run on a busy CPU lowers torch's threads to the CPUs left free, says so, and keeps the
count where the user chose it (`clzoo.machine.torch_threads_for_load`)."""

import os

import pytest

pytestmark = pytest.mark.backends("torch")


@pytest.fixture
def torch_threads():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(max(2, before))
    yield torch
    torch.set_num_threads(before)


def test_a_busy_machine_lowers_torchs_threads_and_says_how_to_keep_them(torch_threads):
    from clzoo.machine import torch_threads_for_load

    default = torch_threads.get_num_threads()
    cpus = os.cpu_count()
    busy = cpus - 1.0  # every CPU but one busy with other work
    done = torch_threads_for_load(environ={}, busy=busy)
    assert done["threads"] == torch_threads.get_num_threads() == 1
    assert done["default"] == default and done["busy_cpus"] == busy
    assert "CLZOO_TORCH_THREADS=keep" in done["note"] and f"not {default}" in done["note"]


@pytest.mark.parametrize("environ, busy", [({"OMP_NUM_THREADS": "4"}, 1.5),
                                           ({"CLZOO_TORCH_THREADS": "keep"}, 1.5), ({}, 0.2)])
def test_the_count_stays_where_chosen_or_the_machine_is_idle(torch_threads, environ, busy):
    from clzoo.machine import torch_threads_for_load

    default = torch_threads.get_num_threads()
    assert torch_threads_for_load(environ=environ, busy=busy) is None
    assert torch_threads.get_num_threads() == default


def test_a_thread_count_given_is_taken_and_a_value_not_understood_is_refused(torch_threads):
    from clzoo.machine import torch_threads_for_load

    default = torch_threads.get_num_threads()
    assert torch_threads_for_load(environ={"CLZOO_TORCH_THREADS": "KEEP"}, busy=1.5) is None
    assert torch_threads.get_num_threads() == default
    done = torch_threads_for_load(environ={"CLZOO_TORCH_THREADS": "1"}, busy=0.0)  # idle: still 1
    assert done["threads"] == torch_threads.get_num_threads() == 1
    for bad in ("0", "-1", "yes", "1.5", "٣", "99999"):  # 99999 aborted libgomp
        with pytest.raises(ValueError, match="CLZOO_TORCH_THREADS = .*expected keep"):
            torch_threads_for_load(environ={"CLZOO_TORCH_THREADS": bad}, busy=1.5)


def test_a_resumed_run_takes_the_count_it_started_with(torch_threads):
    from clzoo.machine import torch_threads_for_load

    done = torch_threads_for_load(environ={}, busy=0.0, recorded={"threads": 1, "default": 2})
    assert done["threads"] == torch_threads.get_num_threads() == 1  # idle now, yet as recorded
