"""Pretrained encoder presets: a checksummed folder format, loading, model cards and publishing.

- `build_preset(run_dir, out_dir)`: a training run -> preset folder.
- `load_preset(handle, trainable=False)` / `Encoder.from_preset(handle)`:
  a built-in name (`PRESETS`, a `clzoo.registry.Registry`), `hf://owner/repo[@revision]`
  or a local folder -> encoder (frozen unless `trainable=True`), after checking
  every file's SHA-256 and refusing code-carrying layers.
- `push_preset(run_dir, "hf://owner/repo", dry_run=...)`: build and upload.
"""

import importlib

# name -> module: each loads on first use (PEP 562), so `clzoo.presets.names` (the built-in names,
# read by the CLI before it imports Keras) does not pull in Keras with the package.
_EXPORTS = {"Encoder": "encoder", "PRESET_FILES": "format", "PresetError": "errors",
            "build_preset": "format", "verify_preset": "format", "BUILTIN_PRESETS": "loading",
            "PRESETS": "loading", "load_preset": "loading", "parse_hf_handle": "loading",
            "resolve_preset": "loading", "push_preset": "publish"}

__all__ = ["BUILTIN_PRESETS", "Encoder", "PRESETS", "PRESET_FILES", "PresetError", "build_preset",
           "load_preset", "parse_hf_handle", "push_preset", "resolve_preset", "verify_preset"]


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"clzoo.presets.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'clzoo.presets' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
