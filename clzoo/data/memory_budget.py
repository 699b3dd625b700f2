"""How much memory a training split may take when held decoded, and whether to stream it instead.

The budget is half of the memory this process may use: the smaller of the machine's
`MemAvailable` and a cgroup limit (a container or a Slurm job is killed at its cgroup's
limit while `/proc/meminfo` shows the host's), or the environment variable
`CLZOO_MEMORY_BUDGET` (bytes, or with a unit: `512MB`, `2GB`, `1.5GiB`). `data_loading:
auto` holds a split in memory when its decoded size fits the budget and streams it from
its files otherwise (`choose_loading`).
"""

import os
import re
from pathlib import Path

BUDGET_FRACTION = 0.5  # of the memory the process may use; the rest: decoding, the model, the step
LOADINGS = ("auto", "memory", "stream")
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
_NO_LIMIT = 2**60  # cgroup v1 writes a huge number for "no limit"


def parse_bytes(text, name="CLZOO_MEMORY_BUDGET"):
    """`text` (`"2000000"`, `"512MB"`, `"2GB"`, `"1.5GiB"`; K/M/G are binary) as an int of bytes.

    Raises:
        ValueError: one line naming `name`, the value and the accepted forms.

    Example:

    >>> from clzoo.data.memory_budget import parse_bytes
    >>> parse_bytes("512MB"), parse_bytes("2GiB"), parse_bytes("1000")
    (512000000, 2147483648, 1000)
    """
    match = re.fullmatch(r"\s*([0-9]{1,30}(?:\.[0-9]{1,30})?)\s*([A-Za-z]*)\s*", str(text))
    unit = match and match.group(2).upper()
    if not match or unit not in _UNITS or float(match.group(1)) * _UNITS[unit] < 1:
        raise ValueError(f"{name} = {text!r}: expected a positive size in bytes, e.g. 2000000000, "
                         "512MB, 2GB or 1.5GiB")
    return int(float(match.group(1)) * _UNITS[unit])


def cgroup_limit(root="/sys/fs/cgroup", membership="/proc/self/cgroup"):
    """The smallest memory limit on this process's cgroup and its parents, in bytes (v2
    `memory.max`, v1 `memory/memory.limit_in_bytes`), or None where there is none or it cannot
    be read. The process's cgroup is read from `membership` (a Slurm job's sits below the root)."""
    limits = [_limit(path) for path in _cgroup_files(Path(root), membership)]
    limits = [limit for limit in limits if limit is not None]
    return min(limits) if limits else None


def _cgroup_files(root, membership):
    """The memory-limit files of the process's cgroup and every parent up to `root`."""
    try:
        lines = Path(membership).read_text().splitlines()
    except OSError:
        lines = []
    found = []
    for line in lines:  # "0::/a/b" (v2), "4:memory:/a/b" (v1)
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        folder, name = (root, "memory.max") if controllers == "" else (
            (root / "memory", "memory.limit_in_bytes") if "memory" in controllers.split(",")
            else (None, None))
        if folder is None:
            continue
        parts = [p for p in path.strip().split("/") if p and p != ".."]
        found += [folder.joinpath(*parts[:depth]) / name for depth in range(len(parts), -1, -1)]
    return found or [root / "memory.max", root / "memory" / "memory.limit_in_bytes"]


def _limit(path):
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and int(text) < _NO_LIMIT else None  # "max": none


def memory_budget(environ=None, cgroup_root="/sys/fs/cgroup", meminfo="/proc/meminfo",
                  membership="/proc/self/cgroup"):
    """`(bytes, why)`: what a decoded training split may take in memory, and where that came from.

    Args:
        environ: the environment to read `CLZOO_MEMORY_BUDGET` from. Defaults to `os.environ`.
        cgroup_root, meminfo, membership: where the limits and the process's cgroup are read
            (tests point them at a fake tree).

    Returns:
        `(int, str)`: the budget in bytes (None when nothing says: the machine is not Linux)
        and a few words on its source, e.g. `"CLZOO_MEMORY_BUDGET=2GB"` or `"half of the
        cgroup limit 8.0 GiB"`.

    Raises:
        ValueError: `CLZOO_MEMORY_BUDGET` is set but not a size.

    Example:

    >>> from clzoo.data.memory_budget import memory_budget
    >>> memory_budget({"CLZOO_MEMORY_BUDGET": "2GB"})
    (2000000000, 'CLZOO_MEMORY_BUDGET=2GB')
    """
    environ = os.environ if environ is None else environ
    if environ.get("CLZOO_MEMORY_BUDGET", "").strip():
        text = environ["CLZOO_MEMORY_BUDGET"].strip()
        return parse_bytes(text), f"CLZOO_MEMORY_BUDGET={text}"
    limit, available = cgroup_limit(cgroup_root, membership), available_memory(meminfo)
    if limit is not None and (available is None or limit < available):
        return int(limit * BUDGET_FRACTION), f"half of the cgroup limit {size_text(limit)}"
    if available is not None:
        return int(available * BUDGET_FRACTION), f"half of MemAvailable {size_text(available)}"
    return None, "no memory figure on this machine"


def choose_loading(loading, decoded_bytes, budget):
    """`(loading, why)`: `"memory"` or `"stream"` for a split of `decoded_bytes`.

    Args:
        loading: `"auto"`, `"memory"` or `"stream"` (recipe key `data_loading`).
        decoded_bytes: the training split's size held decoded (uint8), or None when unknown
            (an embedded or tfds dataset, which is held in memory).
        budget: `memory_budget()`'s `(bytes, why)`.

    Example:

    >>> from clzoo.data.memory_budget import choose_loading
    >>> choose_loading("auto", 3 * 10**9, (2 * 10**9, "CLZOO_MEMORY_BUDGET=2GB"))[0]
    'stream'
    """
    if loading not in LOADINGS:
        raise ValueError(f"data_loading = {loading!r}: must be one of {', '.join(LOADINGS)}")
    size = "" if decoded_bytes is None else f"{size_text(decoded_bytes)} decoded"
    if loading != "auto":
        return loading, f"data_loading: {loading}" + (f" ({size})" if size else "")
    limit, source = budget
    if decoded_bytes is None or limit is None:
        return "memory", "auto: " + (f"{source}" if limit is None else "size known only once loaded")
    verb = "fits" if decoded_bytes <= limit else "exceeds"
    return ("memory" if verb == "fits" else "stream",
            f"auto: {size} {verb} the budget {size_text(limit)} ({source})")


def size_text(count):
    """Bytes in the largest binary unit that keeps a whole number in front: `3.2 GiB`, `12.0 KiB`.

    >>> from clzoo.data.memory_budget import size_text
    >>> size_text(1000), size_text(12288), size_text(5 * 2**30)
    ('1000 B', '12.0 KiB', '5.0 GiB')
    """
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{int(count)} B"


def available_memory(meminfo="/proc/meminfo"):
    """Bytes of memory a process can take now without swapping: Linux's `MemAvailable` (free
    pages plus reclaimable cache, read from `meminfo`), else the free pages (`sysconf`); None
    where unknown."""
    import os

    try:
        with open(meminfo) as lines:
            for line in lines:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
