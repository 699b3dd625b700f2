"""Repeatable runs: the same recipe and seed on a CPU give the same weights and metrics.

Keras' `set_random_seed` seeds Python, NumPy and the backend, so initial
weights repeat; every augmentation draw in `clzoo.data.batches` comes from a
stateless seed `(seed, epoch, position)` or `(seed, step)`. What remains is the order of
floating-point reductions inside the backend's kernels:

- TensorFlow: `tf.config.experimental.enable_op_determinism()` picks
  deterministic kernels (and deterministic `tf.data`); it is process-wide.
- PyTorch: `torch.use_deterministic_algorithms(True)`.
- JAX: XLA's CPU programs are deterministic for a fixed program and thread
  count; there is no switch to set.
"""

import keras


def seed_everything(seed, deterministic=True):
    """Seed Python, NumPy and the backend; with `deterministic`, ask for deterministic kernels.

    Args:
        seed: int, the recipe's `seed`.
        deterministic: also switch the backend to deterministic kernels
            (`training.deterministic`, default True; may cost some speed on GPUs).

    Raises:
        ValueError: if `seed` is not an integer.
    """
    if isinstance(seed, bool) or not float(seed).is_integer():
        raise ValueError(f"`seed` must be an integer. Received: seed={seed!r}")
    keras.utils.set_random_seed(int(seed))
    if not deterministic:
        return
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()
    elif backend == "torch":
        import torch

        torch.use_deterministic_algorithms(True, warn_only=True)
