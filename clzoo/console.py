"""Console output of the `clzoo` commands: quiet TensorFlow start-up, plain progress off a terminal,
and a Ctrl-C that ends a command in one line (held during TensorFlow's import, delivered again
when Python drops it).

Standard library only: the command line imports this before Keras or TensorFlow.
"""

import _thread
import contextlib
import os
import re
import signal
import sys
import threading
import time

# An absl / TensorFlow C++ INFO or WARNING line, e.g. (before absl logging is initialized)
# `I0000 00:00:1795382594.463413    6172 port.cc:153] oneDNN custom operations are on. ...`
_TF_LOG_LINE = re.compile(r"^[IW]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [\w.-]+:\d+\] ")
_TF_NOISE = ("WARNING: All log messages before absl::InitializeLog() is called",
             "To enable the following instructions:")  # 2nd line of cpu_feature_guard's INFO
# TensorFlow's CUDA build calls cuInit on its first device use and logs its failure as an error;
# on a machine with no NVIDIA driver that failure is the expected answer, not an error.
_NO_DRIVER_CUINIT = re.compile(r"^E\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [\w.-]+:\d+\] failed call to cuInit")
NVIDIA_DRIVER = "/proc/driver/nvidia/version"

_quiet = False


def set_quiet(quiet=True):
    """Turn progress bars off for this process (`clzoo train --quiet`)."""
    global _quiet
    _quiet = bool(quiet)


def is_quiet():
    """Whether `set_quiet` turned progress output off for this process."""
    return _quiet


def is_terminal(stream=None):
    """Whether `stream` (default `sys.stdout`) is an interactive terminal."""
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def live_display():
    """Whether progress can redraw in place: stdout is a terminal, or this runs in a Jupyter /
    Colab kernel (its front end renders Keras' `\\r` bar live)."""
    return is_terminal() or in_notebook_kernel()


def in_notebook_kernel():
    """True inside a running IPython kernel (Jupyter, Colab); not merely where ipykernel was imported."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if hasattr(ipython, "get_ipython") else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def keras_verbose(verbose, plain=2):
    """Keras `fit` / `predict` verbosity for a clzoo `verbose` flag.

    0 when `verbose` is falsy or the process is quiet; 2 (one plain line per
    epoch) when asked for; otherwise 1 (Keras' live bar, which redraws with
    `\\r` and colours with ANSI codes) on a terminal or in a notebook and `plain`
    elsewhere: 2, or 0 for nothing.
    """
    if not verbose or _quiet:
        return 0
    if verbose == 2 and not isinstance(verbose, bool):
        return 2
    return 1 if live_display() else plain


def tqdm_disable():
    """tqdm's `disable` argument: True when quiet, else None (off when not writing to a terminal)."""
    return True if _quiet else None


def keras_backend_name():
    """The backend Keras will load, read as Keras reads it (`KERAS_BACKEND`, else
    `$KERAS_HOME/keras.json`, else tensorflow), without importing Keras; once Keras is
    imported, the backend it loaded."""
    import json

    if "keras" in sys.modules and hasattr(sys.modules["keras"], "backend"):
        return sys.modules["keras"].backend.backend()
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"]
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    try:
        with open(os.path.join(home, "keras.json")) as file:
            return json.load(file).get("backend", "tensorflow")
    except (OSError, ValueError, AttributeError):
        return "tensorflow"


def tensorflow_logs_wanted():
    """True when the user asked for TensorFlow's C++ logs (`TF_CPP_MIN_LOG_LEVEL` 0 or 1)."""
    return os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3").strip() in ("0", "1")


def quiet_tensorflow():
    """Silence TensorFlow's and absl's start-up chatter for a `clzoo` command.

    Sets `TF_CPP_MIN_LOG_LEVEL=3` unless the user set it, imports TensorFlow
    with the INFO / WARNING lines its C++ libraries print before logging is
    initialized dropped (TensorFlow 2.17+ prints them whatever the level), and
    raises the Python `tensorflow` and absl loggers to ERROR. With
    `TF_CPP_MIN_LOG_LEVEL=0` (or 1) nothing is hidden.
    """
    import logging

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if tensorflow_logs_wanted():
        return
    if keras_backend_name() != "tensorflow":
        # JAX / torch runs may never load TensorFlow (the device stream); loading it first would
        # also put its LLVM ahead of Triton's, which aborts the process (issue 58). Where it is
        # loaded later (tf.data, TensorBoard), its import is as quiet.
        if not any(isinstance(finder, _QuietTensorFlowImport) for finder in sys.meta_path):
            sys.meta_path.insert(0, _QuietTensorFlowImport())
        return
    _import_tensorflow_quietly()
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    try:
        from absl import logging as absl_logging
    except ImportError:
        return
    absl_logging.set_verbosity(absl_logging.ERROR)


def _is_noise(line):
    if _NO_DRIVER_CUINIT.match(line):
        return not os.path.exists(NVIDIA_DRIVER)
    return bool(_TF_LOG_LINE.match(line)) or line.startswith(_TF_NOISE)


@contextlib.contextmanager
def interrupts_delivered():
    """Deliver again a Ctrl-C that Python dropped, for the time of the block; yields an Event set
    when one was dropped.

    A KeyboardInterrupt raised inside a garbage-collector callback or a `__del__` is "unraisable":
    Python prints it and goes on. JAX registers such a callback, and TensorFlow imports JAX when both
    are installed, so a Ctrl-C while a command started was printed as a traceback and the command
    then finished with status 0. The hook sends the interrupt to the main thread again
    (`_thread.interrupt_main`, from a thread once the hook has returned), where it ends the command
    as any Ctrl-C does (or reaches the training run's own SIGINT handler); never after the block."""
    previous, lock = sys.unraisablehook, threading.Lock()
    dropped, ended = threading.Event(), threading.Event()

    def deliver():
        time.sleep(0.01)  # after the hook has returned: an interrupt raised inside it is dropped again
        with lock:
            if not ended.is_set():
                _thread.interrupt_main(signal.SIGINT)

    def hook(unraisable):
        if unraisable.exc_type is KeyboardInterrupt:
            dropped.set()
            threading.Thread(target=deliver, daemon=True).start()
        else:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield dropped
    finally:
        with lock:
            ended.set()
        sys.unraisablehook = previous



class SecondSignalExit:
    """Ends the process when a second SIGINT / SIGTERM finds the main thread stuck.

    A training run's first stop signal finishes the step and saves it; its second raises
    KeyboardInterrupt, from Python's handler, which runs only on the main thread between
    bytecodes. Blocked in C (TensorFlow's iterator waiting on an image read that never
    returns: a stuck network mount), that handler never ran and only `kill -9` ended the run.
    The signal also wakes a daemon thread here (`signal.set_wakeup_fd`): if the run is still
    armed `grace` seconds after the second signal, it prints one line and calls `os._exit`.
    `arm` and `release` are called from the main thread; `release` (the run left `fit`)
    disarms it."""

    STOPS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, grace=5.0):
        self.grace, self._armed, self._previous, self._sockets = grace, threading.Event(), None, None

    def arm(self):
        import socket

        if self._sockets is not None or threading.current_thread() is not threading.main_thread():
            return
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        try:
            self._previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        except (ValueError, OSError):  # not Python's signals to watch (an embedding host)
            reader.close(), writer.close()
            return
        self._sockets = (reader, writer)
        self._armed.set()
        threading.Thread(target=self._watch, args=(reader,), daemon=True,
                         name="clzoo-second-signal").start()

    def release(self):
        if self._sockets is None:
            return
        self._armed.clear()
        signal.set_wakeup_fd(self._previous if self._previous is not None else -1)
        for end in self._sockets:
            end.close()  # ends the watching thread's read
        self._sockets = None

    def _watch(self, reader):
        seen = 0
        try:
            while self._armed.is_set():
                received = reader.recv(64)
                if not received:
                    return
                seen += sum(byte in self.STOPS for byte in received)
                if seen >= 2 and not self._wait_released():
                    self._exit(received[-1])
        except OSError:  # released: the socket was closed
            return

    def _wait_released(self):
        deadline = time.monotonic() + self.grace
        while self._armed.is_set() and time.monotonic() < deadline:
            time.sleep(0.1)
        return not self._armed.is_set()

    @staticmethod
    def _exit(signum):
        name = signal.Signals(signum).name if signum in SecondSignalExit.STOPS else "a second signal"
        try:
            sys.stderr.write(f"clzoo: error: stopped by a second {name} while the run was blocked (an "
                             "image read that does not return?); the last saved checkpoint is kept\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(128 + int(signum) if signum in SecondSignalExit.STOPS else 130)


@contextlib.contextmanager
def interrupts_deferred():
    """Hold a Ctrl-C (SIGINT) until the block ends, then deliver it to the handler it was for.

    A KeyboardInterrupt raised inside TensorFlow's import (about 3 s of a command's start) can crash
    the process while the half-imported C++ modules are torn down: status -11, nothing printed
    (`clzoo show-views` under load, 2 of about 35 tries). Held, the Ctrl-C takes effect as soon as
    the import is done and ends the command in one line. Off the main thread, or where SIGINT is
    ignored or not Python's to handle, the block runs as it is."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield
        return
    held = []
    signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            signal.raise_signal(signal.SIGINT)


def _import_tensorflow_quietly():
    """Import TensorFlow with file descriptor 2 captured; replay all but its INFO / WARNING lines.
    A Ctrl-C meanwhile is held until the import is done (`interrupts_deferred`)."""
    if "tensorflow" in sys.modules:
        return
    try:
        with _start_up_lines_dropped():
            import tensorflow

            if not os.path.exists(NVIDIA_DRIVER):  # cuInit's expected failure, met here, is dropped
                tensorflow.config.list_physical_devices("GPU")
    except ImportError:
        pass  # the command that needs it says so


class _QuietTensorFlowImport:
    """A `sys.meta_path` finder: TensorFlow, when something imports it, is imported as
    `_import_tensorflow_quietly` does (the real finder's spec, its loader run with the lines dropped)."""

    searching = False

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow" or self.searching:
            return None
        import importlib.util

        self.searching = True  # the search below asks this finder too
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.searching = False
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


class _QuietLoader:
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        with _start_up_lines_dropped():
            self.loader.exec_module(module)

    def __getattr__(self, name):  # the rest of the loader's interface (is_package, resources, ...)
        return getattr(self.loader, name)


@contextlib.contextmanager
def _start_up_lines_dropped():
    """File descriptor 2 captured for the block, then replayed without TensorFlow's INFO / WARNING
    start-up lines; a Ctrl-C meanwhile is held until the block ends."""
    import tempfile

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no stderr to capture (closed, a service): as is
        yield
        return
    with tempfile.TemporaryFile() as sink, interrupts_deferred():
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            kept = [line for line in sink.read().decode(errors="replace").splitlines(keepends=True)
                    if not _is_noise(line)]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()
