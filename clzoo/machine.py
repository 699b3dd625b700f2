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


def chosen_threads(text):
    """`CLZOO_TORCH_THREADS` read: None (unset), `"keep"` (any case), or a whole number >= 1.

    Raises:
        ValueError: anything else, in one line naming the variable.
    """
    text = text.strip()
    if not text:
        return None
    if text.lower() == "keep":
        return "keep"
    most = 4 * (os.cpu_count() or 1)  # past that, threads only contend (99999 aborted libgomp)
    if text.isdigit() and text.isascii() and 1 <= int(text) <= most:
        return int(text)
    raise ValueError(f"CLZOO_TORCH_THREADS = {text!r}: expected keep (torch's own count) or a whole "
                     f"number of threads from 1 to {most} (4 per CPU of this machine)")


def torch_threads_for_load(environ=None, busy=None, recorded=None):
    """On a torch run on the CPU of a busy machine, lower torch's intra-op threads to the CPUs left
    free; returns what was done (for `environment.json` and one printed line), else None.

    torch's threads slow down several times when they share cores with other work
    (`OMP_NUM_THREADS=1` ran the quickstart 2.3-2.8x faster beside one busy core; alone it costs
    about a fifth: benchmarks/README.md, "device_stream.py"), so the count follows the load. A
    thread count may change a reduction's order, hence the last digits of a result: a run records
    it. `OMP_NUM_THREADS` set, or `CLZOO_TORCH_THREADS=keep`, keeps the count as it is;
    `CLZOO_TORCH_THREADS=N` sets N threads whatever the load.

    Args:
        environ: the environment to read. Defaults to `os.environ`.
        busy: CPUs busy with other work (tests); None measures it (`busy_cpus`, 0.2 s).
        recorded: what the run recorded when it started (`environment.json`'s `torch_threads`):
            a resumed run takes that count again, whatever the load now.

    Returns:
        None, or `{"threads": int, "default": int, "busy_cpus": float or None, "note": str}`.

    Raises:
        ValueError: `CLZOO_TORCH_THREADS` is neither `keep` nor a whole number >= 1.
    """
    import keras

    environ = os.environ if environ is None else environ
    chosen = chosen_threads(environ.get("CLZOO_TORCH_THREADS", ""))
    if keras.backend.backend() != "torch" or "OMP_NUM_THREADS" in environ or chosen == "keep":
        return None
    import torch

    default = torch.get_num_threads()
    if isinstance(recorded, dict) and isinstance(recorded.get("threads"), int) and chosen is None:
        torch.set_num_threads(recorded["threads"])  # a resumed run keeps its count: its digits
        return {**recorded, "note": f"torch: {recorded['threads']} CPU threads, as the run started with"}
    if chosen is not None:  # a count the user gave: that, whatever the load
        torch.set_num_threads(chosen)
        return {"threads": chosen, "default": default, "busy_cpus": None,
                "note": f"torch: {chosen} CPU thread{'s' if chosen > 1 else ''} (CLZOO_TORCH_THREADS)"}
    if torch.cuda.is_available() or default < 2:
        return None
    busy = busy_cpus() if busy is None else busy
    if busy is None or busy < 0.5:
        return None
    threads = max(1, min(default, int((os.cpu_count() or 1) - busy + 0.5)))
    if threads == default:
        return None
    torch.set_num_threads(threads)
    return {"threads": threads, "default": default, "busy_cpus": round(busy, 2),
            "note": (f"torch: {threads} CPU thread{'s' if threads > 1 else ''}, not {default}: other "
                     f"work keeps {busy:.1f} of this machine's {os.cpu_count()} CPUs busy, and torch's "
                     "threads slow down several times when they share cores (CLZOO_TORCH_THREADS=keep "
                     "or OMP_NUM_THREADS keeps the count)")}
