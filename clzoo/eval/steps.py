"""Wall time and progress lines of the steps of an evaluation (load, embed, each metric, plots)."""

import contextlib
import sys
import time

from clzoo import console


class StepTimer:
    """Times named steps and prints one line when each starts and one when it ends.

    The lines are plain text (no `\\r`, no colours), so they read the same on a
    terminal and in a log file: `[clzoo eval] 3/15 probe ...` then
    `[clzoo eval] 3/15 probe: 12.4 s`. Nothing is printed when `verbose` is
    false or the process is quiet (`clzoo.console.set_quiet`).

    Args:
        verbose: print the progress lines. Defaults to `True`.
        total: number of steps expected, shown as `i/total`; None shows `i`.
        prefix: start of each line. Defaults to `"[clzoo eval]"`.
        stream: where to print. Defaults to `sys.stdout` at print time.

    Attributes:
        seconds: `{step name: wall seconds}` (float, rounded to 0.01 s), in the
            order the steps ran.

    Example:

    >>> from clzoo.eval.steps import StepTimer
    >>> timer = StepTimer(verbose=False)
    >>> with timer.step("load_data"):
    ...     pass
    >>> list(timer.seconds), timer.seconds["load_data"] >= 0
    (['load_data'], True)
    """

    def __init__(self, verbose=True, total=None, prefix="[clzoo eval]", stream=None):
        self.verbose = verbose
        self.total = total
        self.prefix = prefix
        self.stream = stream
        self.seconds = {}

    def _print(self, text):
        if self.verbose and not console.is_quiet():
            print(f"{self.prefix} {text}", file=self.stream or sys.stdout, flush=True)

    @contextlib.contextmanager
    def step(self, name, detail=""):
        """Context manager timing the step `name`; `detail` is shown on its start line.

        Raises:
            ValueError: `name` was timed already.
        """
        if name in self.seconds:
            raise ValueError(f"Step {name!r} was timed already; give each step its own name.")
        number = len(self.seconds) + 1
        label = f"{number}/{self.total} {name}" if self.total else f"{number} {name}"
        self._print(f"{label}{' (' + detail + ')' if detail else ''} ...")
        self.seconds[name] = None  # reserve the name and its place in the order
        started = time.perf_counter()
        try:
            yield self
        finally:
            self.seconds[name] = round(time.perf_counter() - started, 2)
        self._print(f"{label}: {self.seconds[name]:.1f} s")

    def add(self, seconds):
        """Record steps timed elsewhere, `{name: seconds}`, before the ones timed here."""
        self.seconds = {**{k: round(float(v), 2) for k, v in seconds.items()}, **self.seconds}
