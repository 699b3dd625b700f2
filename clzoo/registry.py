"""One registry shape for everything looked up by name: losses, encoders, view
recipes, metrics, optimizers, schedules and presets.

A `Registry` maps a name to a factory plus free-form metadata (a one-line
description, the paper it comes from, ...). `get(name)` returns the factory,
`entry(name)` the whole record, `list()` the names; an unknown name raises a
`ValueError` that lists the known ones and suggests the closest.
"""

import difflib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Entry:
    """A registered name: `factory(**kwargs)` builds the thing; `metadata` describes it."""

    name: str
    factory: Callable
    metadata: dict = field(default_factory=dict)

    @property
    def description(self):
        return self.metadata.get("description", "")


def did_you_mean(name, known):
    """`" Did you mean 'x'?"` for the closest of `known`, or `""` when none is close."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def check_kwargs(fn, kwargs, section, owner=None, skip=("self", "name", "dtype")):
    """Refuse keyword arguments that `fn` (a class, function or partial) does not take.

    Args:
        fn: what the arguments are for; its signature gives the known names.
        kwargs: the given keyword arguments (a recipe section's keys).
        section: the recipe key they come from, for the message (`"loss"`, `"encoder_options"`).
        owner: the name in the message; defaults to `fn.__name__`.
        skip: parameters that are never given this way (`name` and `dtype` are no recipe keys).

    Raises:
        ValueError: naming the unknown argument, the section and the known ones (did-you-mean).

    Example:

    >>> from clzoo.registry import check_kwargs
    >>> check_kwargs(lambda size=1: size, {"sise": 2}, "views", owner="ViewConfig")
    Traceback (most recent call last):
    ...
    ValueError: unknown views argument 'sise' of ViewConfig; known: size. Did you mean 'size'?
    """
    params = inspect.signature(fn).parameters
    extra = list(getattr(fn, "extra_arguments", ()))  # taken through **kwargs, e.g. learnable temperature
    if any(p.kind is p.VAR_KEYWORD for p in params.values()) and not extra:
        return
    known = [n for n, p in params.items() if n not in skip and p.kind is not p.VAR_KEYWORD] + extra
    for key in kwargs:
        if key not in known:
            raise ValueError(f"unknown {section} argument {key!r} of {owner or fn.__name__}; known: "
                             f"{', '.join(known) or 'none'}." + did_you_mean(key, known))


class Registry:
    """Name -> factory + metadata, with `register` (also a decorator), `get`, `entry`, `list`.

    Args:
        kind: what the names are, for error messages (`"loss"`, `"encoder"`).
        order: names listed in this order whenever they are registered (the others
            after them, in registration order). Defaults to registration order.
        check: called with each factory as it is registered; raises `TypeError` for one
            the registry cannot call (e.g. a signature it does not fill). Defaults to None.

    Example:

    >>> from clzoo.registry import Registry
    >>> shapes = Registry("shape")
    >>> @shapes.register("square", description="four equal sides")
    ... def square(side=1):
    ...     return side * side
    >>> shapes.get("square")(side=3), shapes.list(), shapes.entry("square").description
    (9, ['square'], 'four equal sides')
    >>> shapes.get("sqare")
    Traceback (most recent call last):
    ...
    ValueError: Unknown shape 'sqare'. Known: square. Did you mean 'square'?
    """

    def __init__(self, kind, order=(), check=None):
        self.kind = kind
        self._entries = {}
        self._rank = {name: i for i, name in enumerate(order)}
        self._check = check

    def register(self, name=None, factory=None, **metadata):
        """Register `factory` under `name`; without `factory`, return a decorator.

        Raises:
            ValueError: when `name` is already registered.
            TypeError: a factory the registry's `check` refuses.
        """
        def add(fn):
            key = name or getattr(fn, "__name__", None)
            if key in self._entries:
                raise ValueError(f"A {self.kind} named {key!r} is already registered.")
            if self._check is not None:
                self._check(fn)
            self._entries[key] = Entry(key, fn, dict(metadata))
            if self._rank:
                ranked = sorted(self._entries, key=lambda n: self._rank.get(n, len(self._rank)))
                self._entries = {n: self._entries[n] for n in ranked}
            return fn

        return add if factory is None else add(factory)

    def entry(self, name):
        """The `Entry` of `name`. Raises `ValueError` naming the known names (a name that is no
        text, such as a mapping from a recipe, too)."""
        if name not in self:
            known = ", ".join(self.list()) or "none"
            raise ValueError(f"Unknown {self.kind} {name!r}. Known: {known}."
                             + (did_you_mean(name, self._entries) if isinstance(name, str) else ""))
        return self._entries[name]

    def get(self, name):
        """The factory registered as `name`."""
        return self.entry(name).factory

    def list(self):
        """Registered names, in registration order."""
        return list(self._entries)

    def describe(self):
        """`{name: description}` of every entry."""
        return {name: entry.description for name, entry in self._entries.items()}

    def __contains__(self, name):
        return isinstance(name, str) and name in self._entries

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)

    def __repr__(self):
        return f"Registry({self.kind!r}, {self.list()})"

