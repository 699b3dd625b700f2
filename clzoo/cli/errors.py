"""The one-line errors of the `clzoo` command: `error: ...` on stderr, an OS fault with what is
intact, a missing Keras backend, a Ctrl-C."""

import os
import re
import sys

from clzoo import console

MAX_ERROR = 1000  # characters of one error line: a huge value is cut, never printed whole


def print_error(message):
    """Print `error: message` to stderr, one line, at most `MAX_ERROR` characters."""
    text = " ".join(str(message).split("\n"))
    if len(text) > MAX_ERROR:
        text = text[:MAX_ERROR - 25] + f"... ({len(text):,} characters)"
    print(f"error: {text}", file=sys.stderr)


def os_fault(error):
    """One line for an `OSError`: what failed, on which path, and what is intact."""
    found = re.search(r"errno = (\d+)", str(error))
    if found:  # h5py's "file write failed: time = ..., filename = '...', errno = 28, ...": its parts
        named = re.search(r"filename = '([^']*)'", str(error))
        return os_fault(OSError(int(found[1]), os.strerror(int(found[1])), named and named[1]))
    if error.errno is None:  # e.g. h5py's "Unable to create file (...)": its text is all there is
        return f"{error}; each file clzoo writes is complete or absent, never cut short"
    where = " -> ".join(str(p) for p in (error.filename, error.filename2) if p is not None)
    return (f"{error.strerror}{f': {where}' if where else ''} (errno {error.errno}); each file "
            "clzoo writes is complete or absent, never cut short")


def missing_backend(error):
    """The line for Keras' backend not installed (a `[jax]` install without KERAS_BACKEND set gets
    Keras' default, tensorflow), else None."""
    backend = console.keras_backend_name()
    if not isinstance(error, ImportError) or getattr(error, "name", None) != backend:
        return None
    return (f"Keras' backend is {backend} (KERAS_BACKEND, else ~/.keras/keras.json; tensorflow when "
            f"neither says) but {backend} is not installed: pip install 'clzoo[{backend}]', or set "
            "KERAS_BACKEND to an installed one (jax, torch, tensorflow)")


def interrupted():
    """Say that a Ctrl-C ended the command; its exit status, 130."""
    print_error("interrupted (Ctrl-C); each file clzoo writes is complete or absent, never cut short")
    return 130
