"""Defensive reading of a preset's JSON files (size cap, UTF-8, nesting depth, type), without Keras,
so the CLI can read the built-in registry before it imports Keras."""

import json
from pathlib import Path

from clzoo.presets.errors import PresetError

# Size caps (bytes) of the preset's own files: checked before a file is hashed or parsed.
MAX_BYTES = {"checksums.json": 64 << 10, "config.json": 32 << 20, "preprocessing.json": 1 << 20,
             "metadata.json": 16 << 20, "README.md": 4 << 20, "model.weights.h5": 8 << 30}
# Deepest JSON nesting accepted (a Keras functional config is about 10 levels deep).
MAX_JSON_DEPTH = 64


def _json_depth_ok(value, limit):
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return True


def read_json(path, kind=dict, max_bytes=None):
    """Parse a preset's JSON file defensively.

    Raises:
        PresetError: naming `path` when it is missing, a link, larger than
            its cap, not UTF-8, not JSON, nested deeper than
            `MAX_JSON_DEPTH`, or not a JSON `kind` (object by default).
    """
    path = Path(path)
    max_bytes = max_bytes or MAX_BYTES.get(path.name, 32 << 20)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise PresetError(f"{path} is {size} bytes, more than the {max_bytes} allowed.")
        text = path.read_bytes().decode("utf-8")
        value = json.loads(text)
    except PresetError:
        raise
    except OSError as error:
        raise PresetError(f"Cannot read {path}: {error}") from error
    except UnicodeDecodeError as error:
        raise PresetError(f"{path} is not UTF-8 text (binary content?): {error}") from error
    except (ValueError, RecursionError) as error:  # JSONDecodeError, or nesting too deep to parse
        raise PresetError(f"{path} is not valid JSON: {type(error).__name__}: {error}") from error
    if not _json_depth_ok(value, MAX_JSON_DEPTH):
        raise PresetError(f"{path} is nested more than {MAX_JSON_DEPTH} levels deep.")
    if not isinstance(value, kind):
        raise PresetError(f"{path} must hold a JSON {'object' if kind is dict else kind.__name__}. "
                          f"Received: a JSON {type(value).__name__}")
    return value
