"""Pretrained encoder presets: a checksummed folder format, loading, model cards and publishing.

- `build_preset(run_dir, out_dir)`: a training run -> preset folder.
- `load_preset(handle)` / `clzoo.models.Encoder.from_preset(handle)`: a
  built-in name, `hf://owner/repo` or a local folder -> frozen encoder, after
  checking every file's SHA-256 and refusing code-carrying layers.
- `push_preset(run_dir, "hf://owner/repo", dry_run=...)`: build and upload.
"""

from clzoo.presets.format import PRESET_FILES, PresetError, build_preset, verify_preset
from clzoo.presets.loading import BUILTIN_PRESETS, load_preset, resolve_preset
from clzoo.presets.publish import push_preset

__all__ = ["BUILTIN_PRESETS", "PRESET_FILES", "PresetError", "build_preset", "load_preset",
           "push_preset", "resolve_preset", "verify_preset"]
