"""Pretrained encoder presets: a checksummed folder format, loading, model cards and publishing.

- `build_preset(run_dir, out_dir)`: a training run -> preset folder.
- `load_preset(handle, trainable=False)` / `Encoder.from_preset(handle)`:
  a built-in name (`PRESETS`, a `clzoo.registry.Registry`), `hf://owner/repo[@revision]`
  or a local folder -> encoder (frozen unless `trainable=True`), after checking
  every file's SHA-256 and refusing code-carrying layers.
- `push_preset(run_dir, "hf://owner/repo", dry_run=...)`: build and upload.
"""

from clzoo.presets.encoder import Encoder
from clzoo.presets.format import PRESET_FILES, PresetError, build_preset, verify_preset
from clzoo.presets.loading import BUILTIN_PRESETS, PRESETS, load_preset, parse_hf_handle, resolve_preset
from clzoo.presets.publish import push_preset

__all__ = ["BUILTIN_PRESETS", "Encoder", "PRESETS", "PRESET_FILES", "PresetError", "build_preset",
           "load_preset", "parse_hf_handle", "push_preset", "resolve_preset", "verify_preset"]
