"""The built-in preset names and the retired ones, read from the shipped JSON files without Keras.

The CLI checks a model argument against these before it imports Keras or
TensorFlow, so that a typo is refused in a fraction of a second.
"""

import json
from pathlib import Path

from clzoo.presets.errors import PresetError

# The built-in presets ship as package data (the repo's top-level pretrained/ links here).
PRETRAINED = Path(__file__).resolve().parent / "builtin"
REGISTRY = PRETRAINED / "registry.json"
# Presets no longer shipped: name -> {retired, replacement, reason}, so an old name gets an answer.
RETIRED = PRETRAINED / "retired.json"


def read_json(path):
    """A JSON file as a dict; a damaged or non-object file is a `PresetError` naming it."""
    try:
        data = json.loads(Path(path).read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PresetError(f"{path} is not valid JSON ({error}).") from None
    if not isinstance(data, dict):
        raise PresetError(f"{path} must hold a JSON object. Received: {type(data).__name__}")
    return data


def registry():
    """`{name: registry.json entry}` of the built-in presets ({} when none ship)."""
    return read_json(REGISTRY) if REGISTRY.is_file() else {}


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
