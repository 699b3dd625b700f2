"""The built-in preset names and the retired ones, read from the shipped JSON files without Keras.

The CLI checks a model argument against these before it imports Keras or
TensorFlow, so that a typo is refused in a fraction of a second.
"""

from pathlib import Path

from clzoo.presets.errors import PresetError
from clzoo.presets.json_files import read_json

# The built-in presets ship as package data (the repo's top-level pretrained/ links here).
PRETRAINED = Path(__file__).resolve().parent / "builtin"
REGISTRY = PRETRAINED / "registry.json"
# Presets no longer shipped: name -> {retired, replacement, reason}, so an old name gets an answer.
RETIRED = PRETRAINED / "retired.json"


def registry(folder=None):
    """`{name: registry.json entry}` of the built-in presets ({} when none ship); `folder`: another
    presets folder than clzoo's own (`PRETRAINED`)."""
    path = REGISTRY if folder is None else Path(folder) / "registry.json"
    return read_json(path) if path.is_file() else {}


def retired():
    """`{name: {retired, replacement, reason}}` of the presets no longer shipped."""
    return read_json(RETIRED) if RETIRED.is_file() else {}


def refuse_retired(name):
    """Raise `PresetError` naming the replacement when `name` (or `hf://clzoo/<name>`) is a
    retired built-in preset (`builtin/retired.json`); return otherwise."""
    old = retired()
    name = str(name).removeprefix("hf://clzoo/")
    if name in old:
        entry = old[name]
        raise PresetError(f"Preset {name!r} was retired on {entry['retired']} ({entry['reason']}): "
                          f"use {entry['replacement']!r}, or an earlier clzoo release for the old weights.")
