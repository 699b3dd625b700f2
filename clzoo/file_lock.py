"""One writer per output: an OS file lock (`fcntl.flock`) held by the writing process.

The kernel releases a flock when its process ends, however it ends (`kill -9` included), so a
lock left by a dead writer is never mistaken for a live one: the file may stay, the lock does
not. The lock file records who holds it, for the refusal message. Platforms without `fcntl`
(Windows) and filesystems without `flock` (some cluster mounts) run unlocked, with a warning.
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
_HELD = {}  # lock path -> [descriptor, depth]: this process's output locks (re-entrant)


def holder(lock):
    """The `pid ... on host since ...` line a lock file records, or "owner unknown"."""
    try:
        return Path(lock).read_text().strip() or "owner unknown"
    except OSError:
        return "owner unknown"


def try_lock(lock, refusal):
    """Lock the file `lock` (created if absent) for this process; returns its descriptor, or None
    where locks are unsupported (with a warning).

    Raises:
        FileExistsError: `refusal(holder line)`: another live process holds the lock.
    """
    try:
        import fcntl
    except ImportError:
        return None
    lock = Path(lock)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_ino != os.stat(lock).st_ino:  # removed and re-created meanwhile
            raise BlockingIOError
    except (BlockingIOError, FileNotFoundError):
        os.close(fd)
        raise FileExistsError(refusal(holder(lock))) from None
    except OSError as error:
        os.close(fd)
        if error.errno not in _UNSUPPORTED:
            raise OSError(error.errno, error.strerror, str(lock)) from None
        warnings.warn(f"{lock.parent}: this filesystem has no file locks ({error.strerror}); "
                      "the output is not protected from a second writer", stacklevel=3)
        return None
    since = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    os.ftruncate(fd, 0)
    os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} since {since}\n".encode())
    return fd


def lock_path(output):
    """The lock file of a folder or file written as a whole: `.<name>.lock` beside it."""
    output = Path(output).absolute()
    return output.parent / f".{output.name}.lock"


@contextlib.contextmanager
def output_lock(output):
    """Hold `output`'s lock (`lock_path`) for the block: a second process writing the same output
    meanwhile is refused in one line naming this one. Re-entrant within a process; the lock file
    is removed on leaving the outermost block.

    Raises:
        FileExistsError: another live process holds the lock (the message names it).

    Example:

    >>> import tempfile, pathlib
    >>> from clzoo.file_lock import output_lock, lock_path
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "report"
    >>> with output_lock(out):
    ...     with output_lock(out):  # the same process again: fine
    ...         lock_path(out).is_file()
    True
    >>> lock_path(out).exists()
    False
    """
    lock = lock_path(output)
    if lock in _HELD:
        _HELD[lock][1] += 1
    else:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = try_lock(lock, lambda who: (
            f"{Path(output)} is being written by another clzoo process ({who}): wait for it to "
            "end, or choose another --output"))
        _HELD[lock] = [fd, 1]
    try:
        yield
    finally:
        _HELD[lock][1] -= 1
        if not _HELD[lock][1]:
            fd = _HELD.pop(lock)[0]
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.remove(lock)  # while still held, so no one locks a file about to vanish
                os.close(fd)
