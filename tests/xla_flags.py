"""XLA:CPU flags for the test processes that run JAX (the jax lane and its JAX child checks).

The suite compiles thousands of small programs: each eager op is one, each `fit` a larger one.
LLVM level 0 and XLA's elemental emitters for fusions (instead of the MLIR fusion emitters)
together take about half off each compile (a tiny eager op: about 40 -> 20 ms beside a training
run). No fast-math: results may differ from XLA's defaults only in the last bits, within every
test's tolerance. Training runs the user starts get XLA's defaults; `CLZOO_TEST_XLA_DEFAULT=1`
runs the tests with them too.
"""

import os
from importlib import metadata

LEVEL_0 = "--xla_backend_optimization_level=0"
# XLA aborts on flags it does not know; older jaxlib builds lack this one (0.10.2 has it; the
# first release with it was not pinned down, so only 0.7 and later get it).
ELEMENTAL_FUSIONS = "--xla_cpu_use_fusion_emitters=false"


def _jaxlib_at_least(major, minor):
    try:
        version = metadata.version("jaxlib").split(".")
        return (int(version[0]), int(version[1])) >= (major, minor)
    except (metadata.PackageNotFoundError, ValueError, IndexError):
        return False


def for_tests(*flags):
    """`XLA_FLAGS` for a test process: `flags`, then the fast-compile flags unless
    `CLZOO_TEST_XLA_DEFAULT` is set."""
    if os.environ.get("CLZOO_TEST_XLA_DEFAULT"):
        return " ".join(flags)
    fast = (LEVEL_0, ELEMENTAL_FUSIONS) if _jaxlib_at_least(0, 7) else (LEVEL_0,)
    return " ".join((*flags, *fast))
