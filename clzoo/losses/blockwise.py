"""Blockwise evaluation: a loss over consecutive blocks of anchors, recomputed in the backward pass.

Used by the embedding losses' `chunk_size`: the same value and gradient in
about six `chunk_size x N` float32 buffers instead of several `N x N` ones.
"""

import keras
from keras import ops


def _runs_eagerly(z):
    """True where blocks are dispatched op by op: eager TensorFlow, PyTorch, and JAX outside `jit`.

    Eager JAX (also under `jax.grad` without `jit`) would compile a new `lax.map`
    on every call, about 5x slower than a loop of cached ops. Only concrete values loop:
    `jit`, `vmap`, `checkpoint`, `scan` bodies and `eval_shape` keep `lax.map`. The check reads
    `Tracer.to_concrete_value` and falls back to `lax.map` where a JAX release lacks it.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.executing_eagerly()
    if backend == "jax":
        import jax

        if not isinstance(z, jax.core.Tracer):
            return True
        to_concrete = getattr(z, "to_concrete_value", None)
        return to_concrete is not None and to_concrete() is not None
    return backend == "torch"


def _sequential_map(fn, xs, n_outputs):
    """`ops.map` of `fn` returning `n_outputs` float32 `(chunk,)` vectors, one block at a time.

    A graph-mode `tf.map_fn` runs 10 iterations at once by default (and
    Keras' `ops.map` traces `fn` once more to learn its outputs).
    """
    if keras.backend.backend() != "tensorflow":
        return ops.map(fn, xs)
    import tensorflow as tf

    signature = (tf.TensorSpec((xs[0].shape[1],), "float32"),) * n_outputs
    return tf.map_fn(fn, xs, fn_output_signature=signature, parallel_iterations=1)



def blockwise(block, z, z_all, rows, chunk_size, input_shape, n_outputs):
    """`block` over consecutive row blocks of `chunk_size` anchors, concatenated.

    Each block is wrapped in `keras.remat`: a pass keeps only the block
    inputs and per-anchor outputs, and the backward pass recomputes one
    `chunk_size x N` block at a time. Compiled (`tf.function`, `jax.jit`), the full
    blocks run in one sequential loop (`tf.map_fn` with
    `parallel_iterations=1`, `lax.map`) the compiler cannot unroll, so it
    never schedules two blocks at once; eager
    TensorFlow, PyTorch and JAX outside `jit` run a Python loop (eager `tf.map_fn` evaluates an
    extra block to learn the output signature, and keeps more alive). A
    shorter last block runs on its own.
    """
    n_rows = z.shape[0]
    if n_rows is None:
        raise ValueError(
            "`chunk_size` needs a static batch size (e.g. tf.data with "
            f"drop_remainder=True). Received: y_pred.shape={tuple(input_shape)}"
        )
    n_full, rest = divmod(n_rows, chunk_size)

    def remat_block(z_rows, row_ids):
        # z_all is an explicit argument so that its gradient is recomputed too.
        return keras.remat(lambda zr, zc: block(zr, zc, row_ids))(z_rows, z_all)

    if _runs_eagerly(z):
        starts = range(0, n_rows, chunk_size)
        pieces = [remat_block(z[a:a + chunk_size], tuple(r[a:a + chunk_size] for r in rows))
                  for a in starts]
    else:
        pieces = []
        if n_full:
            stop = n_full * chunk_size

            def blocked(t):
                return ops.reshape(t[:stop], (n_full, chunk_size) + tuple(t.shape[1:]))

            mapped = _sequential_map(
                lambda x: remat_block(x[0], tuple(x[1:])),
                (blocked(z),) + tuple(blocked(r) for r in rows), n_outputs,
            )
            pieces.append([ops.reshape(m, (stop,)) for m in mapped])
        if rest:
            start = n_full * chunk_size
            pieces.append(remat_block(z[start:], tuple(r[start:] for r in rows)))
    if len(pieces) == 1:
        return tuple(pieces[0])
    return tuple(ops.concatenate(parts, axis=0) for parts in zip(*pieces))
