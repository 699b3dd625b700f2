"""One writer per run folder: an OS file lock held for the writing process's life.

`fcntl.flock` is released by the kernel when its process ends, however it
ends (`kill -9` included), so a lock left by a dead run is never mistaken for
a live one: the file stays, the lock does not. The file records who holds it,
for the refusal message. Platforms without `fcntl` (Windows) and filesystems
without `flock` (some cluster mounts) run unlocked, with a warning.
"""

import contextlib
import datetime
import errno
import os
import socket
import warnings
from pathlib import Path

# flock is not available on this filesystem: run unlocked rather than refuse to run.
_UNSUPPORTED = {errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL}

LOCK_NAME = "run.lock"


def _owner(lock):
    try:
        return lock.read_text().strip() or "owner unknown"
    except OSError:
        return "owner unknown"


def _refuse(folder, lock):
    return FileExistsError(f"{folder} is being written by another clzoo process ({_owner(lock)}): "
                           "wait for it to end, or choose another --output")


def acquire(folder):
    """Lock `folder / run.lock` for this process; returns the open descriptor (None without fcntl).

    Raises:
        FileExistsError: another live process holds the lock (the message names it).
    """
    try:
        import fcntl
    except ImportError:
        return None
    lock = Path(folder) / LOCK_NAME
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_ino != os.stat(lock).st_ino:  # removed and re-created meanwhile
            raise BlockingIOError
    except (BlockingIOError, FileNotFoundError):
        os.close(fd)
        raise _refuse(folder, lock) from None
    except OSError as error:
        os.close(fd)
        if error.errno not in _UNSUPPORTED:
            raise OSError(error.errno, error.strerror, str(lock)) from None
        warnings.warn(f"{folder}: this filesystem has no file locks ({error.strerror}); the run "
                      "folder is not protected from a second writer", stacklevel=3)
        return None
    since = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    os.ftruncate(fd, 0)
    os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} since {since}\n".encode())
    return fd


@contextlib.contextmanager
def owned(folder, keep_if, enabled=True):
    """Hold the run folder's lock for the block; creates the folder if needed.

    On exit the lock is released; when `keep_if()` is false (nothing of the
    run was written) the lock file, and the folder if this call created it
    and it is empty, are removed, so a refused run leaves nothing behind.
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
        if not keep_if():
            with contextlib.suppress(OSError):
                os.remove(folder / LOCK_NAME)
            if created:
                with contextlib.suppress(OSError):
                    folder.rmdir()  # only if empty
        if fd is not None:
            os.close(fd)
