"""Which path a loss call takes: the fused Triton kernel or the `keras.ops` (XLA) path.

A covered loss (SupCon L_out / L_in, SINCERE, epsilon-SupInfoNCE, InfoNCE)
takes `kernel="auto" | "fused" | "xla"`: `"auto"` takes the Triton kernel on a
CUDA device under the torch backend for a configuration it covers and the
`keras.ops` path otherwise; `"fused"` takes the Triton kernel (torch) or the
Pallas one (JAX: a GPU, or interpret mode for tests) and is a `ValueError`
where neither can run (the sentence says why); `"xla"` never takes one.
"""

import importlib.util
import os
import sys
from typing import NamedTuple

import keras

from clzoo.losses.memory import active_memory

KERNELS = ("auto", "fused", "xla")
MAX_DIM = 256  # the widest embedding the kernel's tiles hold


def interpreting():
    """True when Triton runs its kernels in its CPU interpreter (`TRITON_INTERPRET=1`, for tests)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def pallas_interpreting():
    """True when the Pallas kernels run in interpret mode (`CLZOO_PALLAS_INTERPRET=1`, for tests)."""
    return os.environ.get("CLZOO_PALLAS_INTERPRET", "0") == "1"


class Fused(NamedTuple):
    """A loss's fused kernel: its mode (`clzoo.losses.fused.triton_kernels`), the
    epsilon-SupInfoNCE margin, and why the call's options are not covered (None if they are)."""

    mode: str
    epsilon: float = 0.0
    uncovered: str = None


def validate_kernel(kernel):
    """Return `kernel` if it is one of `KERNELS`, else a `ValueError` naming it."""
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(f"`kernel` must be one of {KERNELS}. Received: kernel={kernel!r}")
    return kernel


def blocker(z, uncovered=None):
    """Why the fused kernel cannot take the flat embeddings `z` here (a phrase), or None.

    `uncovered` is the loss's own reason (an option the kernel does not cover).
    """
    if uncovered:
        return uncovered
    backend = keras.backend.backend()
    if backend not in ("torch", "jax"):
        return f"the {backend} backend keeps the keras.ops path (fused kernels: torch, jax)"
    if active_memory() is not None:
        return "a memory queue (clzoo.losses.with_memory) is active"
    if z.shape[-1] > MAX_DIM:
        return f"the kernel takes embeddings of at most {MAX_DIM} dimensions, not {z.shape[-1]}"
    if backend == "jax":
        return _jax_blocker()
    if importlib.util.find_spec("triton") is None:
        return "Triton is not installed (pip install triton)"
    if "tensorflow" in sys.modules and "triton" not in sys.modules:
        # TensorFlow's LLVM and Triton's collide ("Option ... registered more than once"):
        # loading Triton now would abort the process. (torch 2.13 loads Triton on import, so
        # there the abort comes earlier, at `import torch` after `import tensorflow`.)
        return "TensorFlow was imported before Triton (import triton first)"
    if not (z.is_cuda or interpreting()):
        return f"the embeddings are on {z.device}, not a CUDA device"
    return None


def _jax_blocker():
    import jax

    if jax.default_backend() != "gpu" and not pallas_interpreting():
        return f"the Pallas kernel runs on a GPU, and JAX's default backend is {jax.default_backend()}"
    return None


def use_fused(kernel, z, uncovered=None):
    """Whether this call takes the fused kernel; `ValueError` for `"fused"` where it cannot."""
    if kernel == "xla":
        return False
    reason = blocker(z, uncovered)
    if kernel == "fused" and reason is not None:
        raise ValueError(f"kernel='fused' cannot run here: {reason}. Use kernel='auto' or 'xla'. "
                         "Received: kernel='fused'")
    if kernel == "fused":
        return True
    # "auto": Triton on a CUDA device; the Pallas kernel is not yet measured on a GPU, and the
    # interpreters are for tests.
    return reason is None and keras.backend.backend() == "torch" and z.is_cuda

