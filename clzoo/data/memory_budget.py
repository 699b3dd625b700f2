"""How much memory a training split may take when held decoded, and whether to stream it instead.

Every memory check before a decode or a run takes one figure, the memory this process may
use (`process_memory`): the smaller of the machine's `MemAvailable` and the room left under a
cgroup limit (a container or a Slurm job is killed at its cgroup's limit while
`/proc/meminfo` shows the host's). The budget is half of it, or the environment variable
`CLZOO_MEMORY_BUDGET` (a size with a unit: `512MB`, `2GB`, `1.5GiB`; bytes when a whole
number of at least 1024). `data_loading: auto` holds a split in memory when its decoded size
fits the budget and streams it from its files otherwise (`choose_loading`).
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
_MIN_BARE_BYTES = 2**10  # a bare "16" or "1.5" is a size in GB typed without its unit
# Where the figures are read; tests point these at a fake tree.
CGROUP_ROOT, MEMINFO, MEMBERSHIP = "/sys/fs/cgroup", "/proc/meminfo", "/proc/self/cgroup"
# Beside each limit file: what the cgroup uses now, and the statistics with its page cache.
_USAGE = {"memory.max": ("memory.current", "inactive_file"),
          "memory.limit_in_bytes": ("memory.usage_in_bytes", "total_inactive_file")}


def parse_bytes(text, name="CLZOO_MEMORY_BUDGET"):
    """`text` (`"2000000"`, `"512MB"`, `"2GB"`, `"1.5GiB"`; K/M/G are binary) as an int of bytes.

    A number without a unit is bytes only when whole and at least 1024: `"1.5"` or `"16"` is
    far more likely gigabytes typed without the unit than a budget of a few bytes.

    Raises:
        ValueError: one line naming `name`, the value and the accepted forms; for a bare
            fraction or a bare number below 1024, that a unit is needed.

    Example:

    >>> from clzoo.data.memory_budget import parse_bytes
    >>> parse_bytes("512MB"), parse_bytes("2GiB"), parse_bytes("2000000")
    (512000000, 2147483648, 2000000)
    """
    match = re.fullmatch(r"\s*([0-9]{1,30}(?:\.[0-9]{1,30})?)\s*([A-Za-z]*)\s*", str(text))
    number, unit = (match.group(1), match.group(2).upper()) if match else ("", None)
    if unit == "" and float(number) > 0 and ("." in number or float(number) < _MIN_BARE_BYTES):
        raise ValueError(f"{name} = {text!r}: a size needs a unit, e.g. {number}GB or {number}MiB "
                         f"(a number alone is bytes, and only from {_MIN_BARE_BYTES} up)")
    if unit not in _UNITS or float(number) * _UNITS[unit] < 1:
        raise ValueError(f"{name} = {text!r}: expected a positive size in bytes, e.g. 2000000000, "
                         "512MB, 2GB or 1.5GiB")
    return int(float(number) * _UNITS[unit])


def cgroup_limit(root=None, membership=None):
    """The smallest memory limit on this process's cgroup and its parents, in bytes (v2
    `memory.max`, v1 `memory/memory.limit_in_bytes`), or None where there is none or it cannot
    be read. The process's cgroup is read from `membership` (a Slurm job's sits below the root);
    `root` and `membership` default to `CGROUP_ROOT` and `MEMBERSHIP`."""
    room = cgroup_room(root, membership, used=False)
    return room and room[1]


def cgroup_room(root=None, membership=None, used=True):
    """`(room, limit, used)` of the cgroup (the process's or a parent) with the least room left
    under its memory limit, or None where no limit is set or readable.

    `used` is what the cgroup holds now (v2 `memory.current`, v1 `memory.usage_in_bytes`, read
    beside each limit file) less its inactive page cache (`memory.stat`), which the kernel
    reclaims before it kills; 0 where it cannot be read, or with `used=False`."""
    found = []
    for path in _cgroup_files(Path(root or CGROUP_ROOT), membership or MEMBERSHIP):
        limit = _limit(path)
        if limit is not None:
            taken = _used(path) if used else 0
            found.append((max(limit - taken, 0), limit, taken))
    return min(found) if found else None


def _used(limit_file):
    """Bytes the cgroup of `limit_file` uses now, less its inactive page cache; 0 where unknown."""
    usage, cache = _USAGE[limit_file.name]
    folder = limit_file.parent
    taken = _limit(folder / usage) or 0
    try:
        stats = dict(line.split(None, 1) for line in (folder / "memory.stat").read_text().splitlines()
                     if len(line.split()) == 2)
    except OSError:
        stats = {}
    reclaimable = int(stats[cache]) if stats.get(cache, "").strip().isdigit() else 0
    return max(taken - reclaimable, 0)


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


def process_memory(cgroup_root=None, meminfo=None, membership=None):
    """`(bytes, source)`: the memory this process may still take, the one figure every memory check
    takes (a held split, a resize on load, a step's activations, the queue, the budget).

    The smaller of `MemAvailable` and the room under the tightest cgroup limit (`cgroup_room`):
    inside a container or a Slurm job `/proc/meminfo` shows the host's memory, and the job is
    killed at its cgroup's limit (status 137, no message).

    Args:
        cgroup_root, meminfo, membership: where the limits, `MemAvailable` and the process's
            cgroup are read. Default to `CGROUP_ROOT`, `MEMINFO` and `MEMBERSHIP`.

    Returns:
        `(int, str)`: the bytes (None where nothing says: the machine is not Linux) and their
        source, e.g. `"cgroup limit 4.0 GiB, 1.2 GiB already used"` or `"MemAvailable 7.6 GiB"`.
    """
    room = cgroup_room(cgroup_root, membership)
    free, name = _free_memory(meminfo or MEMINFO)
    if room is not None and (free is None or room[0] < free):
        room, limit, used = room
        taken = f", {size_text(used)} already used" if used else ""
        return room, f"cgroup limit {size_text(limit)}{taken}"
    if free is not None:
        return free, f"{name} {size_text(free)}"
    return None, "no memory figure on this machine"


def over_memory(needed, fraction=1.0):
    """None when `needed` bytes fit in `fraction` of `process_memory()` (or it is unknown), else the
    words a refusal ends on, e.g. `"more than the 2.8 GiB this process may use (cgroup limit
    4.0 GiB, 1.2 GiB already used)"`."""
    free, source = process_memory()
    if free is None or needed <= fraction * free:
        return None
    share = "" if fraction == 1 else f"{fraction:.0%} of "
    return f"more than {share}the {size_text(free)} this process may use ({source})"


def memory_budget(environ=None, cgroup_root=None, meminfo=None, membership=None):
    """`(bytes, why)`: what a decoded training split may take in memory, and where that came from.

    Args:
        environ: the environment to read `CLZOO_MEMORY_BUDGET` from. Defaults to `os.environ`.
        cgroup_root, meminfo, membership: as `process_memory` takes them.

    Returns:
        `(int, str)`: the budget in bytes (None when nothing says: the machine is not Linux)
        and a few words on its source, e.g. `"CLZOO_MEMORY_BUDGET=2GB"` or `"half of the
        cgroup limit 8.0 GiB, 1.2 GiB already used"`.

    Raises:
        ValueError: `CLZOO_MEMORY_BUDGET` is set but not a size (`parse_bytes`: a bare
            number below 1024 or with a fraction needs a unit).

    Example:

    >>> from clzoo.data.memory_budget import memory_budget
    >>> memory_budget({"CLZOO_MEMORY_BUDGET": "2GB"})
    (2000000000, 'CLZOO_MEMORY_BUDGET=2GB')
    """
    environ = os.environ if environ is None else environ
    if environ.get("CLZOO_MEMORY_BUDGET", "").strip():
        text = environ["CLZOO_MEMORY_BUDGET"].strip()
        return parse_bytes(text), f"CLZOO_MEMORY_BUDGET={text}"
    free, source = process_memory(cgroup_root, meminfo, membership)
    if free is None:
        return None, source
    return int(free * BUDGET_FRACTION), f"half of {'the ' if source.startswith('cgroup') else ''}{source}"


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


def available_memory():
    """Bytes this process may still take: `process_memory()`'s figure, None where unknown."""
    return process_memory()[0]


def _free_memory(meminfo):
    """`(bytes, name)`: Linux's `MemAvailable` (free pages plus reclaimable cache, read from
    `meminfo`), else the free pages (`sysconf`); `(None, "")` where unknown."""
    try:
        with open(meminfo) as lines:
            for line in lines:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "MemAvailable"
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "free memory"
    except (ValueError, OSError, AttributeError):
        return None, ""


def over_budget(decoded_bytes):
    """True when a split of `decoded_bytes` (None: unknown) exceeds the memory budget
    (`memory_budget`): `data_loading: auto` streams it."""
    return choose_loading("auto", decoded_bytes, memory_budget())[0] == "stream"
