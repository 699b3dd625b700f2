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
import stat
import warnings
from pathlib import Path

from clzoo.hidden_names import sibling_prefix

# flock is not available on this filesystem: run unlocked rather than refuse to run.
_UNSUPPORTED = {errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL}
_HELD = {}  # lock path -> [descriptor, depth, parents created]: this process's locks (re-entrant)


def holder(lock):
    """The `pid ... on host since ...` line a lock file records, or "owner unknown"."""
    try:
        return Path(lock).read_text().strip() or "owner unknown"
    except OSError:
        return "owner unknown"


def try_lock(lock, refusal):
    """Lock the file `lock` (created if absent) for this process; returns its descriptor, or None
    where locks are unsupported or the lock file cannot be created (a read-only parent: the
    output is then written unlocked, with a warning).

    Raises:
        FileExistsError: `refusal(holder line)`: another live process holds the lock; or `lock`
            is a symbolic link, a folder or another non-regular file (never written through).
    """
    try:
        import fcntl
    except ImportError:
        return None
    lock = Path(lock)
    try:  # O_NOFOLLOW: a link planted at the lock's name is refused, never written through
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        return _unlocked(lock, _why_not_opened(lock, error))
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_nlink != 1:  # a hard link is another's file
            raise FileExistsError(_not_a_lock(lock))
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_ino != os.stat(lock).st_ino:  # removed and re-created meanwhile
            raise BlockingIOError
    except (BlockingIOError, FileNotFoundError):
        os.close(fd)
        raise FileExistsError(refusal(holder(lock))) from None
    except OSError as error:
        os.close(fd)
        if isinstance(error, FileExistsError) or error.errno not in _UNSUPPORTED:
            raise
        return _unlocked(lock, error.strerror)
    since = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    os.ftruncate(fd, 0)
    os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} since {since}\n".encode())
    return fd


def _not_a_lock(lock):
    return (f"{lock} is not a lock file of clzoo's (a link, a hard link, a folder or a device where "
            "clzoo keeps the writer lock of the output beside it): remove it, or write elsewhere")


def _why_not_opened(lock, error):
    """Why a write may go on unlocked (the parent takes no new file); raises for anything else."""
    if error.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
        raise FileExistsError(_not_a_lock(lock)) from None
    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return error.strerror
    raise OSError(error.errno, error.strerror, str(lock)) from None


def _unlocked(lock, reason):
    # stacklevel: _unlocked <- try_lock <- output_lock / run_lock.acquire <- their caller
    warnings.warn(f"{lock.parent}: no writer lock here ({reason}); the output is not protected "
                  "from a second writer", stacklevel=4)
    return None


def lock_path(output):
    """The lock file of a folder or file written as a whole: `.<name>.lock` beside it."""
    output = Path(output).resolve()  # a link and the folder it names share one lock
    return output.parent / sibling_prefix(output.name, "lock")


@contextlib.contextmanager
def output_lock(output, what="--output"):
    """Hold `output`'s lock (`lock_path`) for the block: a second process writing the same output
    meanwhile is refused in one line naming this one. Re-entrant within a process; the lock file
    is removed on leaving the outermost block. `what` names `output` in a refusal
    (`"--output"`, `"the report folder (default --output)"`).

    Raises:
        FileExistsError: another live process holds the lock (the message names it).
        ValueError: `output` lies inside an installed package's folder (`clzoo.installed`).

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
    from clzoo.installed import refuse_installed_packages

    refuse_installed_packages(output, what)  # before the lock file: nothing is written there
    lock = lock_path(output)
    if lock in _HELD:
        _HELD[lock][1] += 1
    else:
        created = _make_parents(lock.parent)
        try:
            fd = try_lock(lock, lambda who: (
                f"{output} is being written by another clzoo process ({who}): wait for it to "
                "end, or write elsewhere"))
        except OSError:
            _remove_empty(created)
            raise
        _HELD[lock] = [fd, 1, created]
    try:
        yield
    finally:
        _HELD[lock][1] -= 1
        if not _HELD[lock][1]:
            fd, _, created = _HELD.pop(lock)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.remove(lock)  # while still held, so no one locks a file about to vanish
                os.close(fd)
            _remove_empty(created)


def _make_parents(folder):
    """Create `folder` and its missing parents; returns those created, deepest first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir(exist_ok=True)
    return missing


def _remove_empty(folders):
    """Remove the folders this lock created, where nothing was written into them."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()
