"""XLA:CPU flags for the test processes that run JAX (the jax lane and its child checks).

The suite compiles thousands of small programs: each eager op is one, each `fit` a larger one.
LLVM level 0 and XLA's elemental emitters for fusions (instead of the MLIR fusion emitters) take
about 40-50% off each compile. Both change machine code, not the HLO: no fast-math, the same float
semantics. Training runs the user starts get XLA's defaults. `CLZOO_TEST_XLA_DEFAULT=1` runs the
tests with XLA's defaults too.
"""

import os

FAST_COMPILE = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")


def for_tests(*flags):
    """`XLA_FLAGS` for a test process: `flags`, then the fast-compile flags unless
    `CLZOO_TEST_XLA_DEFAULT` is set."""
    fast = () if os.environ.get("CLZOO_TEST_XLA_DEFAULT") else FAST_COMPILE
    return " ".join((*flags, *fast))
