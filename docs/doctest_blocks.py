"""A griffe extension for the API pages: clzoo's docstrings write their `>>>` examples flush
under `Example:`, as doctest reads them; Markdown would take `>>>` for nested quotes. Each run of
`>>>` lines and their output becomes a fenced `pycon` block. A constant's docstring that is its
type's (inspection reads `tuple.__doc__` for `ALL_OBJECTS = (...)`) is dropped."""

import builtins
import inspect

import griffe

# The docstrings of the builtin types a module constant may be: not the constant's own.
_TYPE_DOCS = {inspect.cleandoc(cls.__doc__) for cls in vars(builtins).values()
              if isinstance(cls, type) and cls.__doc__}


def fence_doctests(text):
    """`text` with each doctest run (a `>>>` line up to the next blank line) fenced."""
    out, inside = [], False
    for line in text.splitlines():
        starts = line.lstrip().startswith(">>>")
        if starts and not inside:
            out.append("```pycon")
            inside = True
        elif inside and not line.strip():
            out.append("```")
            inside = False
        out.append(line)
    if inside:
        out.append("```")
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None and obj.is_attribute \
                and inspect.cleandoc(obj.docstring.value) in _TYPE_DOCS:
            obj.docstring = None
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
