"""How busy this machine's CPUs are (a note for torch runs on a shared CPU). The memory checks
take `clzoo.data.memory_budget.process_memory` (a cgroup limit counts), not the physical memory."""

import os


def busy_cpus(seconds=0.2):
    """CPUs kept busy by every process over the next `seconds` (from `/proc/stat`; may count a
    container's neighbours), or None where the OS does not say.

    Returns:
        float in `[0, os.cpu_count()]` (1.0: one CPU's worth of work), or None; sleeps `seconds`.
    """
    import time

    def ticks():
        with open("/proc/stat") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
        return sum(fields), fields[3] + fields[4]  # all, idle + iowait

    try:
        total, idle = ticks()
        time.sleep(seconds)
        total_after, idle_after = ticks()
    except (OSError, ValueError, IndexError):
        return None
    elapsed = total_after - total
    if elapsed <= 0:
        return None
    return (1 - (idle_after - idle) / elapsed) * (os.cpu_count() or 1)


def torch_thread_note():
    """A note for a torch run on the CPU of a busy machine, else None: torch's threads slow down
    several times when they share cores with other work (benchmarks/README.md, "device_stream.py")."""
    import keras

    if keras.backend.backend() != "torch" or "OMP_NUM_THREADS" in os.environ:
        return None
    import torch

    if torch.cuda.is_available() or torch.get_num_threads() < 2:
        return None
    busy = busy_cpus()
    if busy is None or busy < 0.5:
        return None
    return (f"note: other work keeps {busy:.1f} of this machine's {os.cpu_count()} CPUs busy; torch's "
            f"{torch.get_num_threads()} CPU threads slow down several times when they share cores "
            "(OMP_NUM_THREADS=1 ran the quickstart 2.3-2.8x faster beside one busy core: "
            "benchmarks/README.md)")
