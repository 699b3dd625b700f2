"""The `clzoo` command (`clzoo.cli:main`; the console script `console_main`).

One module per command, each holding its parser (`add_parser`), its checks that run before Keras
is imported (`checks`: a typo is refused in a fraction of a second, not after the 5-10 s of
TensorFlow's import) and its handler, which imports what the command needs:

    train.py        clzoo train
    eval.py         clzoo eval
    embed.py        clzoo embed
    export.py       clzoo export
    compare.py      clzoo compare
    show_views.py   clzoo show-views
    push.py         clzoo push
    transfer.py     clzoo transfer
    listing.py      clzoo list, clzoo presets (no Keras at all)

and what they share, below them:

    resolve.py      a model argument found and loaded, a --data spec resolved once, their checks
    arguments.py    the parser class, argument types, --version, options several commands take
    errors.py       the one-line errors

(clzoo.run_reuse: what a command reuses of a run folder.) This module builds the parser from the
command modules and runs a command: its checks, then its handler, every failure one line.
"""

import os
import sys

from clzoo import console
from clzoo.cli import compare, embed, export, listing, push, show_views, train, transfer
from clzoo.cli import eval as eval_command
from clzoo.cli.arguments import Parser, VersionAction
from clzoo.cli.compare import MIN_RESAMPLES
from clzoo.cli.errors import MAX_ERROR, interrupted, missing_backend, os_fault, print_error
from clzoo.cli.eval import EVAL_DEFAULT_METRICS, EVAL_METRICS
from clzoo.cli.listing import PRESET_REGISTRY
from clzoo.cli.show_views import VIEW_RECIPE_NAMES

__all__ = ["EVAL_DEFAULT_METRICS", "EVAL_METRICS", "MAX_ERROR", "MIN_RESAMPLES", "PRESET_REGISTRY",
           "VIEW_RECIPE_NAMES", "build_parser", "console_main", "main"]

# TensorFlow's C++ start-up chatter (oneDNN, CUDA probing) hides the progress
# output; users can still ask for it with TF_CPP_MIN_LOG_LEVEL=0.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# `clzoo --help`'s description.
DESCRIPTION = ("Command line: `clzoo train | eval | embed | export | compare | show-views | push | "
               "transfer | presets`.")
# Commands that run without Keras / TensorFlow.
LIGHT_COMMANDS = ("presets", "list")
# Refusals that need no Keras, run before TensorFlow is imported (a typo costs a fraction of a
# second, not the 5-10 s of that import); each command runs them again or reads what they keep.
_CHECKS = {"train": train.checks, "eval": eval_command.checks, "embed": embed.checks,
           "export": export.checks, "compare": compare.checks, "show-views": show_views.checks,
           "transfer": transfer.checks, "push": push.checks}
_FAULTS = []  # OS errors of this process's commands (see `_run`)


def build_parser():
    """The `clzoo` argument parser (builds without importing Keras or TensorFlow)."""
    parser = Parser(prog="clzoo", description=DESCRIPTION)
    parser.add_argument("--version", action=VersionAction, help="print versions and exit")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in (train, eval_command, embed, export, compare, show_views, push, transfer):
        command.add_parser(commands)
    listing.add_parsers(commands)
    return parser


def main(argv=None):
    """Run a `clzoo` command; returns its exit status (2 for a usage or input error, 130 after a
    Ctrl-C)."""
    args = build_parser().parse_args(argv)
    try:
        with console.interrupts_delivered() as dropped:
            code = _run(args)
    except KeyboardInterrupt:  # a dropped Ctrl-C delivered again as the command ended
        code = interrupted()
    if code != 130 and dropped.is_set():  # dropped too late to be delivered in time
        code = interrupted()
    return code


def console_main():
    """The `clzoo` console script: `main`, and after a Ctrl-C an exit that skips the interpreter's
    teardown (os._exit) over whatever the interrupt cut short. The SIGSEGV seen (status -11,
    nothing printed) came from inside TensorFlow's import, which now holds the Ctrl-C
    (`console.interrupts_deferred`); this exit guards the teardown after one, and after a write
    cut short (status 1: h5py's teardown segfaulted after a full disk). Every file was closed
    or removed by then (`main` has returned)."""
    sys.unraisablehook = _quiet_h5py_teardown
    sys.excepthook = _quiet_h5py_traceback  # Cython's __dealloc__ prints through it too
    code = main()
    if code in (1, 130):  # an interrupt, or a write cut short (h5py crashed in teardown after one)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:  # the reader left (`clzoo ... | head`)
                pass
        os._exit(code)
    return code


def _quiet_h5py_teardown(unraisable, default=sys.unraisablehook):
    """h5py, its file closed by a failed write (a full disk), reports each object it can no longer
    release ("Can't decrement id ref count") as an exception ignored in `__dealloc__`: tracebacks
    before the one line that says what happened. Those alone are left out."""
    if "decrement id ref count" in str(unraisable.exc_value):
        return
    default(unraisable)


def _quiet_h5py_traceback(kind, value, traceback, default=sys.excepthook):
    if "decrement id ref count" in str(value):
        return
    default(kind, value, traceback)


def _run(args):
    try:  # TensorFlow's import too: a Ctrl-C during it ends in one line as well
        if args.command in _CHECKS:
            _CHECKS[args.command](args)
        if args.command not in LIGHT_COMMANDS:
            console.quiet_tensorflow()
        console.set_quiet(getattr(args, "quiet", False))
        return args.func(args)
    except (ValueError, FileNotFoundError, FileExistsError, ImportError) as error:
        print_error(missing_backend(error) or error)
        return 2
    except BrokenPipeError:  # the reader left, e.g. `clzoo presets | head -3`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit's flush
        return 0
    except OSError as error:  # disk full, read-only, file-size limit, name too long, permission
        # kept: freeing its frames releases h5py objects of the failed file, which segfaulted;
        # the console script then exits without the interpreter's teardown (console_main)
        _FAULTS.append(error)
        print_error(os_fault(error))
        return 1
    except MemoryError:
        print_error("out of memory: use a smaller --batch-size (or fewer images), or a machine with "
                    "more memory")
        return 1
    except KeyboardInterrupt:
        return interrupted()
    except Exception as error:  # a file met mid-epoch in tf.data arrives in a TensorFlow op error
        from clzoo.data.file_images import decode_error_line

        line = decode_error_line(error)
        if line is None:
            raise
        print_error(line)
        return 2
    finally:
        console.set_quiet(False)
