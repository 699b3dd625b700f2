"""Matrix products of the losses at full float32 precision on every backend.

On Ampere and later NVIDIA GPUs, JAX computes a float32 `dot` in TensorFloat-32 by default
(10-bit mantissa, as float16): at temperature 0.01 that moved SINCERE's per-sample loss by up
to 2.5e-4 of its value on an H100 (`tests/losses` against the float64 references: 133 of 608
failed; all pass at full precision). The loss contract asks for float32 logits, so the logits,
their gradients and the label-similarity products ask for full precision. The encoder's own
products are left to the backend's default.

Other backends: PyTorch computes float32 products in float32 unless
`torch.backends.cuda.matmul.allow_tf32` or `torch.set_float32_matmul_precision` says otherwise;
TensorFlow uses TensorFloat-32 on such GPUs unless
`tf.config.experimental.enable_tensor_float_32_execution(False)` is called, a process-wide
switch that clzoo leaves to the user. On CPUs every backend computes in float32.
"""

import keras
from keras import ops


def matmul(a, b):
    """`a @ b` for float32 `(..., n, k)` and `(..., k, m)` arrays, at full float32 precision.

    Same shapes, dtypes and errors as `keras.ops.matmul`; on JAX the products of its gradient
    keep the precision too (`dot_general`'s transpose rule). Used for the logits `s = rows @ cols^T`
    of every embedding loss (SINCERE eq. 12, SupCon eq. 2 and the others in `clzoo.losses`), their
    hand-written gradients (`row_ops`), the label similarities and the soft-target pair scores.

    Example:
        >>> import numpy as np
        >>> from clzoo.losses import precision
        >>> a = np.eye(2, 3, dtype="float32")
        >>> tuple(precision.matmul(a, a.T).shape)
        (2, 2)
    """
    if keras.backend.backend() == "jax":
        import jax.numpy as jnp

        return jnp.matmul(a, b, precision="highest")
    return ops.matmul(a, b)
