"""Which path a loss call takes: the fused Triton kernel or the `keras.ops` (XLA) path.

A covered loss (SupCon L_out / L_in, SINCERE, epsilon-SupInfoNCE, InfoNCE)
takes `kernel="auto" | "fused" | "xla"`: `"auto"` takes the Triton kernel on a
CUDA device under the torch backend for a configuration it covers and the
`keras.ops` path otherwise; `"fused"` takes the Triton kernel (torch) or the
Pallas one (JAX: a GPU, or interpret mode for tests) and is a `ValueError`
where neither can run (the sentence says why); `"xla"` never takes one.

`IMPLEMENTATIONS` is the one table of fused implementations (Triton for torch, Pallas for JAX),
each refusing, with a phrase, what it cannot take; neither is imported until a call takes it.
"""

import importlib.util
import os
import sys
import warnings
from collections.abc import Callable
from typing import NamedTuple

import keras

KERNELS = ("auto", "fused", "xla")
MAX_DIM = 128  # the widest embedding measured (float32 tiles of D = 256 exceed Hopper's shared memory)
# Where "auto" takes the Triton kernel: the CUDA capabilities it was measured on (H100 / H200).
MEASURED_CAPABILITIES = ((9, 0),)


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


class Implementation(NamedTuple):
    """One fused implementation of the per-anchor loss: the backend it serves, the module holding
    its `anchor_loss` (imported on first use: Triton and Pallas load only when a call takes them),
    and `refusal(z)`, why it cannot take the flat embeddings `z` here (a phrase) or None."""

    backend: str
    module: str
    refusal: Callable

    def anchor_loss(self, *args, **kwargs):
        return importlib.import_module(self.module).anchor_loss(*args, **kwargs)


def _triton_refusal(z):
    if importlib.util.find_spec("triton") is None:
        return "Triton is not installed (pip install triton)"
    if "tensorflow" in sys.modules and "triton" not in sys.modules:
        # TensorFlow's LLVM and Triton's collide ("Option ... registered more than once"):
        # loading Triton now would abort the process. (torch 2.13 loads Triton on import, so
        # there the abort comes earlier, at `import torch` after `import tensorflow`.)
        return "TensorFlow was imported before Triton (import triton first)"
    if not (z.is_cuda or (interpreting() and z.device.type == "cpu")):
        return f"the embeddings are on {z.device}, not a CUDA device"
    return None


def _pallas_refusal(z):
    if not pallas_interpreting():
        return ("the Pallas kernel has only run in interpret mode so far (CLZOO_PALLAS_INTERPRET=1, "
                "for tests), not yet on a GPU")
    return None


# The fused implementations, one per backend that has one; every other backend keeps keras.ops.
IMPLEMENTATIONS = {
    "triton": Implementation("torch", "clzoo.losses.fused.function", _triton_refusal),
    "pallas": Implementation("jax", "clzoo.losses.fused.function_jax", _pallas_refusal),
}


def implementation():
    """The fused implementation of the running Keras backend, or None where it has none."""
    backend = keras.backend.backend()
    return next((impl for impl in IMPLEMENTATIONS.values() if impl.backend == backend), None)


def blocker(z, uncovered=None):
    """Why the fused kernel cannot take the flat embeddings `z` here (a phrase), or None.

    `uncovered` is the loss's own reason (an option the kernel does not cover); the reasons
    every implementation shares come next, then the backend's implementation's own.
    """
    if uncovered:
        return uncovered
    if z.shape[-1] is None or z.shape[0] is None:
        return "the embeddings have no static shape"
    impl = implementation()
    if impl is None:
        return (f"the {keras.backend.backend()} backend keeps the keras.ops path (fused kernels: "
                + ", ".join(i.backend for i in IMPLEMENTATIONS.values()) + ")")
    if z.shape[-1] > MAX_DIM:
        return f"the kernel takes embeddings of at most {MAX_DIM} dimensions, not {z.shape[-1]}"
    return impl.refusal(z)


def check_embeddings(shape, dtype_name, mode, modes):
    """The input checks both kernels share: `ValueError` for a mode, shape or dtype they do not take.

    Args:
        shape: `z.shape`, expected `(N, D)` with `N > 0` and `0 < D <= MAX_DIM`.
        dtype_name: `"float32"` or `"bfloat16"`.
        mode, modes: the requested mode and the kernel's modes.
    """
    if mode not in modes:
        raise ValueError(f"`mode` must be one of {sorted(modes)}. Received: mode={mode!r}")
    if len(shape) != 2 or not 0 < shape[1] <= MAX_DIM or shape[0] == 0:
        raise ValueError(f"The fused kernel takes embeddings (N, D) with N > 0 and 0 < D <= {MAX_DIM}. "
                         f"Received: shape={tuple(shape)}")
    if dtype_name not in ("float32", "bfloat16"):
        raise ValueError(f"The fused kernel takes float32 or bfloat16 embeddings. Received: {dtype_name}")


def require_triton():
    """Refuse (`ImportError`) to load Triton into a process that loaded TensorFlow first: their
    LLVMs collide and the process aborts. Called by the modules that import Triton."""
    if "tensorflow" in sys.modules and "triton" not in sys.modules:
        raise ImportError("clzoo.losses.fused loads Triton, which aborts a process that loaded "
                          "TensorFlow first (their LLVMs collide): import clzoo, torch or triton "
                          "before tensorflow")


def _unmeasured_gpu(z):
    """Why "auto" leaves the Triton kernel out on this CUDA device, or None (a measured GPU)."""
    import torch

    capability = torch.cuda.get_device_capability(z.device)
    if capability not in MEASURED_CAPABILITIES:
        return (f"its tiles were measured on compute capability {MEASURED_CAPABILITIES}, not "
                f"{capability} (kernel='fused' tries it)")
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
    # "auto": Triton on a measured CUDA device; the interpreters are for tests.
    on_gpu = _on_cuda(z)
    if on_gpu and reason is None:
        reason = _unmeasured_gpu(z)
    if on_gpu and reason is not None and uncovered is None:
        _warn_once(reason)
    return on_gpu and reason is None


def _on_cuda(z):
    return keras.backend.backend() == "torch" and getattr(z, "is_cuda", False)


_WARNED = set()


def _warn_once(reason):
    """Say once per reason why `kernel="auto"` keeps the keras.ops path for a CUDA tensor."""
    if reason not in _WARNED:
        _WARNED.add(reason)
        warnings.warn(f"kernel='auto' keeps the keras.ops path on this CUDA device: {reason}",
                      stacklevel=4)
