"""The paragraphs the loss docstrings share, written once and filled in by `shared_docstring`.

A loss's docstring keeps its own text (description, formula, paper, its own
arguments, the call of its example) and names a shared paragraph by a line
holding only `$name`; `shared_docstring` replaces that line with the
paragraph, indented to the placeholder's column (`$temperature` names the
default of the loss's own signature), so `help(SINCERELoss)` and
`SINCERELoss.__doc__` read as one complete docstring and its doctest runs.
(keras-rs formats its pairwise losses' docstrings from one template likewise.)
"""

import inspect
import re

PARAGRAPHS = {
    # a loss class's temperature; {temperature} is the default of its `__init__`.
    "temperature": """\
temperature: positive float. Defaults to `{temperature}`.
    `"learnable"` makes it a trained weight (CLIP), see
    `clzoo.losses.LearnableTemperature`; the keyword arguments
    `temperature_init`, `min_temperature`, `max_temperature` then apply.""",
    "chunk_size": """\
chunk_size: None, or anchors per block: the same value and gradient in
    about six `chunk_size x N` float32 buffers (`N = batch * views`),
    see `ContrastiveLoss`; needs a static batch size. Defaults to `None`.""",
    "kernel": """\
kernel: `"auto"`, `"fused"` or `"xla"`. `"auto"` takes the fused Triton
    kernel (torch backend, CUDA device; O(N) memory, gradients by
    recomputation, `clzoo.losses.fused`) where it covers the call's options
    and the `keras.ops` path otherwise; `"fused"` also takes the Pallas
    kernel on JAX, and raises a `ValueError` saying why where no kernel can
    run; `"xla"` never takes one. Defaults to `"auto"`.""",
    # a function twin's memory (the MoCo queue, cross-batch memory): clzoo.losses.memory_bank.
    "memory": """\
memory: None, or `(embeddings (K, dim), labels (K,) or None, valid (K,) or None)`: entries every
    anchor is also contrasted with, never anchors, no gradient into them (MoCo queue, cross-batch
    memory; `clzoo.losses.memory_bank`). None takes `clzoo.losses.with_memory`'s, if one is active.
    Defaults to `None`.""",
    "check_values": """\
check_values: also refuse NaN / inf embeddings and check
    `sample_weight` values inside compiled steps (`fit`,
    `tf.function`, `jax.jit`); costs a pass over `y_pred` and, on
    JAX, a host callback per step (see
    `clzoo.losses.base.ContrastiveLoss`). Defaults to `False`.""",
    # the arguments every SINCERE-family class documents once, on SINCERELoss.
    "as_sincere": """\
normalize, chunk_size, kernel, check_values, reduction, name, dtype: as
    `clzoo.losses.SINCERELoss` / its function.""",
    # the example's heading and input (4 samples, 2 views, 8 dims); the loss's call follows it.
    "example": """\
Example:

>>> import numpy as np, clzoo
>>> z = np.random.default_rng(0).normal(size=(4, 2, 8)).astype("float32")""",
}

_PLACEHOLDER = re.compile(r"^([ \t]*)\$(\w+)[ \t]*$", re.MULTILINE)


def fill_docstring(doc, temperature=None):
    """`doc` with each line `$name` replaced by `PARAGRAPHS[name]` at that line's indent.

    Args:
        doc: a docstring.
        temperature: the default the `$temperature` paragraph names.

    Raises:
        KeyError: for a placeholder that names no shared paragraph.

    Example:

    >>> from clzoo.losses.docstrings import fill_docstring
    >>> print(fill_docstring("Args:\\n    $temperature", temperature=0.5))
    Args:
        temperature: positive float. Defaults to `0.5`.
            `"learnable"` makes it a trained weight (CLIP), see
            `clzoo.losses.LearnableTemperature`; the keyword arguments
            `temperature_init`, `min_temperature`, `max_temperature` then apply.
    """
    def paragraph(match):
        indent, name = match.groups()
        text = PARAGRAPHS[name].format(temperature=temperature)
        # blank lines stay empty, as they are in a written docstring
        return "\n".join(indent + line if line else line for line in text.splitlines())

    return _PLACEHOLDER.sub(paragraph, doc)


def shared_docstring(obj):
    """Decorator: fill the shared paragraphs into a loss class's or function's docstring."""
    if obj.__doc__ is None:  # python -OO strips docstrings
        return obj
    default = inspect.signature(obj).parameters.get("temperature")
    obj.__doc__ = fill_docstring(obj.__doc__, None if default is None else default.default)
    return obj
