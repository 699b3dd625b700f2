"""Which path a loss call takes: the fused Triton kernel or the `keras.ops` (XLA) path.

A covered loss (SupCon L_out / L_in, SINCERE, epsilon-SupInfoNCE, InfoNCE)
takes `kernel="auto" | "fused" | "xla"`: `"auto"` takes the fused kernel on a
CUDA device for a configuration it covers and the `keras.ops` path otherwise,
`"fused"` is a `ValueError` where the kernel cannot run (the sentence says
why), `"xla"` never takes it.
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
    if backend != "torch":
        return f"the fused kernel is built for the torch backend (Triton); this is {backend}"
    if active_memory() is not None:
        return "a memory queue (clzoo.losses.with_memory) is active"
    if importlib.util.find_spec("triton") is None:
        return "Triton is not installed (pip install triton)"
    if "tensorflow" in sys.modules and "triton" not in sys.modules:
        # TensorFlow's LLVM and Triton's collide ("Option ... registered more than once"):
        # loading Triton now would abort the process. (torch 2.13 loads Triton on import, so
        # there the abort comes earlier, at `import torch` after `import tensorflow`.)
        return "TensorFlow was imported before Triton (import triton first)"
    if z.shape[-1] > MAX_DIM:
        return f"the kernel takes embeddings of at most {MAX_DIM} dimensions, not {z.shape[-1]}"
    if not (z.is_cuda or interpreting()):
        return f"the embeddings are on {z.device}, not a CUDA device"
    return None


def use_fused(kernel, z, uncovered=None):
    """Whether this call takes the fused kernel; `ValueError` for `"fused"` where it cannot."""
    if kernel == "xla":
        return False
    reason = blocker(z, uncovered)
    if kernel == "fused" and reason is not None:
        raise ValueError(f"kernel='fused' cannot run here: {reason}. Use kernel='auto' or 'xla'. "
                         "Received: kernel='fused'")
    # The interpreter is for tests: "auto" takes the kernel only on a GPU.
    return reason is None and (kernel == "fused" or z.is_cuda)

