"""XLA:CPU flags for the test processes that run JAX (the jax lane, and the JAX child checks that
the tensorflow and jax lanes start).

The suite compiles thousands of small programs: each eager op is one, each `fit` a larger one.
LLVM level 0 and XLA's elemental emitters for fusions (instead of the MLIR fusion emitters)
together take about half off each compile (a tiny eager op: about 40 -> 20 ms beside a training
run). No fast-math: results may differ from XLA's defaults only in the last bits, within every
test's tolerance. Training runs the user starts get XLA's defaults; `CLZOO_TEST_XLA_DEFAULT=1`
runs the tests with them too.
"""

import os
import subprocess
import sys

FAST_COMPILE = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
# The probe's answer, in the environment so that child processes inherit it instead of probing.
ACCEPTED = "CLZOO_TEST_XLA_ACCEPTED_FLAGS"


def accepted(flags):
    """Whether this jaxlib starts with `XLA_FLAGS=flags`: XLA aborts the whole process, with no
    Python traceback, on a flag it does not know (a jaxlib older or newer than the one these were
    chosen on), so the flags are tried in a child process first."""
    env = {**os.environ, "XLA_FLAGS": " ".join(flags), "JAX_PLATFORMS": "cpu"}
    probe = subprocess.run([sys.executable, "-c", "import jax; jax.devices()"], env=env,
                           capture_output=True, timeout=300, check=False)
    return probe.returncode == 0


def fast_compile_flags():
    """The `FAST_COMPILE` flags this jaxlib accepts (all of them with jaxlib 0.10), probed once per
    test run; none when `CLZOO_TEST_XLA_DEFAULT` is set."""
    if os.environ.get("CLZOO_TEST_XLA_DEFAULT"):
        return ()
    if ACCEPTED not in os.environ:
        kept = FAST_COMPILE if accepted(FAST_COMPILE) else tuple(
            flag for flag in FAST_COMPILE if accepted((flag,)))
        os.environ[ACCEPTED] = " ".join(kept)
    return tuple(os.environ[ACCEPTED].split())


def for_tests(*flags):
    """`XLA_FLAGS` for a test process: the fast-compile flags, then `flags` (later flags win, so a
    user's own setting of either is kept)."""
    return " ".join((*fast_compile_flags(), *flags))
