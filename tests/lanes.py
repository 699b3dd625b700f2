"""Run the test suite once per Keras backend: `python tests/lanes.py [pytest arguments]`.

The backend is fixed per process, so each lane is one `python -m pytest` run with
`KERAS_BACKEND` set: the tensorflow lane runs every test, the jax and torch lanes the
tests marked `backends(...)` with their name (`tests/conftest.py` deselects the rest).
Arguments are passed to every lane (`-n 2 --dist loadgroup`, `-m large` for the large tier, paths);
`--lanes jax,torch` picks lanes. Every lane runs even when one fails; the exit status is
the first failing lane's. A jax or torch lane with nothing selected (pytest's exit status 5,
e.g. for a TensorFlow-only file) counts as passed.
"""

import os
import shlex
import subprocess
import sys
import time

LANES = ("tensorflow", "jax", "torch")


def main(argv):
    lanes = LANES
    if argv and argv[0].startswith("--lanes"):
        value = argv[0].partition("=")[2] if "=" in argv[0] else (argv[1] if len(argv) > 1 else "")
        argv = argv[1:] if "=" in argv[0] else argv[2:]
        lanes = tuple(name for name in value.split(",") if name)
        unknown = set(lanes) - set(LANES)
        if not lanes or unknown:
            sys.exit(f"--lanes takes a comma-separated subset of {','.join(LANES)}, not {value!r}")
    results = []
    for lane in lanes:
        command = [sys.executable, "-m", "pytest", *argv]
        print(f"== lane {lane}: KERAS_BACKEND={lane} python -m pytest {shlex.join(argv)}", flush=True)
        start = time.monotonic()
        code = subprocess.run(command, env={**os.environ, "KERAS_BACKEND": lane}).returncode
        results.append((lane, 0 if code == 5 and lane != "tensorflow" else code, time.monotonic() - start))
    verdicts = [f"{lane} {'passed' if code == 0 else f'FAILED ({code})'} in {seconds:.0f} s"
                for lane, code, seconds in results]
    print("== lanes: " + ", ".join(verdicts), flush=True)
    return next((code for _, code, _ in results if code), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
