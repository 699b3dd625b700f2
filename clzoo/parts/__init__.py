"""`ContrastiveModel`'s optional parts by name: a recipe's `model.<part>: {settings}`.

A part is a `ModelPart` (hooks the model calls in its step, see `clzoo.parts.base`) registered
in `PARTS` under the name recipes use; a new part is one module here plus its import below
(the registration). Registered so far:

- `queue` (`queue.QueuePart`): MoCo's memory of past keys and labels (`memory_queue`), filled
  by the EMA key encoder (`momentum`) or the model's own embeddings;
- `grad_cache` (`grad_cache.GradCacheStep`): GradCache's chunked step (Gao et al. 2021);
- `auxiliary` (`auxiliary.AuxiliaryPart`): airbench94's classifier, its loss added;
- `online_probe` (`online_probe.OnlineLinearProbe`): a linear classifier on the encoder's
  stop-gradient features, its top-1 logged every epoch.

Architectures, heads and the encoder registry stay in `clzoo.models`, whose `ContrastiveModel`
composes these parts (as keras-hub keeps backbones apart from the tasks built on them).

Example:

>>> from clzoo.parts import PARTS, build_parts
>>> PARTS.list()[:3]
['queue', 'grad_cache', 'auxiliary']
>>> build_parts({"queue": {"size": 4096, "momentum": 0.99}})
(QueuePart(size=4096, momentum=0.99),)
"""

import inspect
import re

from clzoo.parts import auxiliary, grad_cache, online_probe, queue  # noqa: F401  (registers each)
from clzoo.parts.auxiliary import AuxiliaryPart
from clzoo.parts.base import (
    PARTS,
    ModelPart,
    PartContext,
    check_together,
    deserialize_part,
    part_name,
    serialize_part,
)
from clzoo.parts.grad_cache import GradCacheStep
from clzoo.parts.memory_queue import MemoryQueue
from clzoo.parts.momentum import MomentumEncoder
from clzoo.parts.online_probe import OnlineLinearProbe
from clzoo.parts.queue import QueuePart
from clzoo.registry import did_you_mean

# ContrastiveModel's arguments before `parts=[...]` (saved configs hold them): part, setting
FLAT_ARGUMENTS = {
    "queue_size": ("queue", "size"), "momentum": ("queue", "momentum"),
    "encoder_chunk_size": ("grad_cache", "chunk_size"),
    "auxiliary_classes": ("auxiliary", "classes"), "auxiliary_weight": ("auxiliary", "weight"),
    "auxiliary_label_smoothing": ("auxiliary", "label_smoothing"),
    "auxiliary_logit_scale": ("auxiliary", "logit_scale"),
}
# the setting whose None turns its part off
SWITCHES = {"queue": "size", "grad_cache": "chunk_size", "auxiliary": "classes"}


def build_parts(sections, context=None, spelled="{}", **run):
    """The `ModelPart`s of `{part name: settings}` (a recipe's `model.<part>` sections), in
    `PARTS` order (the order the model attaches their layers), checked together.

    Args:
        sections: `{name: {setting: value}}`; a None section is a part that is off.
        context: a `PartContext` (task, loss) the parts are checked against.
        spelled: how messages name a part (`"model.{}"` for a recipe).
        **run: what the run knows (`classes`), given to the parts that take it.

    Raises:
        ValueError: an unknown part (listing the known ones), a setting the part does not take,
            a value it refuses, or parts that do not run together (`check_together`).
    """
    for name in sections:
        PARTS.entry(name)  # unknown names refused with the known ones
    parts = []
    for name in PARTS:
        if sections.get(name) is None:
            continue
        settings, factory = dict(sections[name]), PARTS.get(name)
        _check_settings(factory, settings, spelled.format(name))
        taken = {key: value for key, value in run.items() if key in factory.run_arguments}
        try:
            parts.append(factory(**settings, **taken))
        except ValueError as error:
            raise ValueError(_setting_error(spelled.format(name), settings, str(error))) from None
    check_together(parts, context, spelled)
    return tuple(parts)


def _check_settings(factory, settings, section):
    """Refuse a setting the part's constructor does not take (or one the run fills in)."""
    parameters = inspect.signature(factory).parameters
    known = [key for key in parameters if key not in ("self", *factory.run_arguments)]
    for key in settings:
        if key not in known:
            raise ValueError(f"unknown {'recipe key' if '.' in section else 'setting'} "
                             f"{f'{section}.{key}'!r}." + did_you_mean(key, known)
                             + f" Known keys here: {', '.join(known) or 'none'}.")
    for key in known:
        if parameters[key].default is parameters[key].empty and key not in settings:
            raise ValueError(f"{section}.{key}: required (the part's settings: "
                             f"{', '.join(known)}), e.g. {section} = {{{key}: ...}}")


def _setting_error(section, settings, message):
    """`model.queue.size = 0: must be ...` for a part's "`size` must be ... Received: ..." message."""
    named = re.match(r"`(\w+)` (.*?)(?:\. Received: .*)?$", message, re.S)
    if named and named.group(1) in settings:
        key = named.group(1)
        return f"{section}.{key} = {settings[key]!r}: {named.group(2)}"
    return f"{section}: {message}"


def sections_from_arguments(arguments):
    """`{part: settings}` of `ContrastiveModel`'s earlier flat arguments (`queue_size=4096`),
    as `build_parts` takes them; a part whose switch (`SWITCHES`) is None is off.

    Raises:
        ValueError: a setting of a part that is off (`momentum` without `queue_size`).

    Example:

    >>> from clzoo.parts import sections_from_arguments
    >>> sections_from_arguments({"queue_size": 64, "momentum": 0.9, "encoder_chunk_size": None})
    {'queue': {'size': 64, 'momentum': 0.9}}
    """
    sections = {}
    for argument, value in arguments.items():
        part, setting = FLAT_ARGUMENTS[argument]
        sections.setdefault(part, {})[setting] = value
    memory = sections.get("queue", {})
    if memory.get("size") is None and memory.get("momentum") is not None:
        raise ValueError(f"`momentum` (the key encoder) needs a queue: set `queue_size`. "
                         f"Received: momentum={memory['momentum']!r}, queue_size=None")
    # a part whose switch is None is off (the auxiliary settings given without classes do nothing)
    return {part: settings for part, settings in sections.items()
            if settings.get(SWITCHES[part]) is not None}


__all__ = ["FLAT_ARGUMENTS", "PARTS", "AuxiliaryPart", "GradCacheStep", "MemoryQueue", "ModelPart",
           "MomentumEncoder", "OnlineLinearProbe", "PartContext", "QueuePart", "build_parts",
           "check_together", "deserialize_part", "part_name", "sections_from_arguments",
           "serialize_part"]
