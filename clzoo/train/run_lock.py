"""One writer per run folder: `run.lock` inside it, held for the writing process's life
(`clzoo.file_lock`: released by the kernel however the process ends, so a dead run's lock
is never mistaken for a live one).
"""

import contextlib
import os
from pathlib import Path

from clzoo.file_lock import try_lock

LOCK_NAME = "run.lock"


def acquire(folder):
    """Lock `folder / run.lock` for this process; returns the open descriptor (None without fcntl).

    Raises:
        FileExistsError: another live process holds the lock (the message names it).
    """
    return try_lock(Path(folder) / LOCK_NAME, lambda who: (
        f"{folder} is being written by another clzoo process ({who}): "
        "wait for it to end, or choose another --output"))


@contextlib.contextmanager
def owned(folder, keep_if, enabled=True):
    """Hold the run folder's lock for the block; creates the folder if needed.

    On exit the lock file is removed, then the lock released (a process that opened the old
    file meanwhile sees it gone and is refused: `try_lock` compares inodes), so a finished run
    keeps no `run.lock`; when `keep_if()` is false (nothing of the run was written) the folder
    too, if this call created it and it is empty, so a refused run leaves nothing behind.
    """
    if not enabled:
        yield
        return
    folder = Path(folder)
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        fd = acquire(folder)
    except OSError:
        if created:
            with contextlib.suppress(OSError):  # another process may be filling it already
                folder.rmdir()
        raise
    try:
        yield
    finally:
        if fd is not None:  # unlocked (no fcntl), the file is not ours to remove
            with contextlib.suppress(OSError):
                os.remove(folder / LOCK_NAME)
            os.close(fd)
        if created and not keep_if():
            with contextlib.suppress(OSError):
                folder.rmdir()  # only if empty
