"""Resolve a preset handle (built-in name, `hf://owner/repo`, local folder) and load it safely."""

import json
from pathlib import Path

import keras

from clzoo.presets.format import PresetError, verify_preset

# The built-in presets ship as package data (the repo's top-level pretrained/ links here).
PRETRAINED = Path(__file__).resolve().parent / "builtin"
REGISTRY = PRETRAINED / "registry.json"


def _registry():
    if not REGISTRY.is_file():
        return {}
    return json.loads(REGISTRY.read_text())


BUILTIN_PRESETS = _registry()


def resolve_preset(handle):
    """Local folder of a preset, and the pinned SHA-256 of its `checksums.json` (or None).

    - a built-in name (`clzoo.presets.BUILTIN_PRESETS`): the files shipped in
      `pretrained/<name>/` (a source checkout), else its Hub handle;
    - `hf://owner/repo`: downloaded with huggingface_hub into its cache (works
      offline from the cache with `HF_HUB_OFFLINE=1`);
    - a folder path.
    """
    handle = str(handle)
    if handle in BUILTIN_PRESETS:
        entry = BUILTIN_PRESETS[handle]
        local = PRETRAINED / entry["path"]
        if local.is_dir():
            return local, entry.get("checksums_sha256")
        handle = entry["handle"]
        pinned = entry.get("checksums_sha256")
    else:
        pinned = None
    if handle.startswith("hf://"):
        try:
            from huggingface_hub import snapshot_download
        except ImportError as error:
            raise ImportError("hf:// presets need huggingface_hub: pip install 'clzoo[hub]'") from error
        repo = handle[len("hf://"):]
        try:
            return Path(snapshot_download(repo_id=repo)), pinned
        except Exception as error:  # network, offline cache miss, missing repo
            raise PresetError(
                f"Could not get preset {handle} from the Hugging Face Hub or its cache: "
                f"{type(error).__name__}: {error}"
            ) from error
    folder = Path(handle).expanduser()
    if not folder.is_dir():
        known = ", ".join(BUILTIN_PRESETS) or "none"
        raise PresetError(
            f"Unknown preset {handle!r}: not a built-in name ({known}), not hf://owner/repo and "
            "not a folder."
        )
    return folder, pinned


def _refuse_code(config, where):
    """Walk a Keras config and refuse layers that carry Python code."""
    if isinstance(config, dict):
        inner = config.get("config")
        if config.get("class_name") in ("Lambda", "TFOpLambda") or (
                isinstance(inner, dict) and "function" in inner):
            raise PresetError(f"{where} contains a {config.get('class_name')} layer (Python code); "
                              "clzoo presets never load code.")
        for value in config.values():
            _refuse_code(value, where)
    elif isinstance(config, list):
        for value in config:
            _refuse_code(value, where)


def load_preset(handle, verify=True):
    """Load a preset's encoder: float images in [0, 1] -> features `(batch, D)`.

    Every file is checked against `checksums.json` (and, for built-in
    presets, `checksums.json` against the registry) before anything is
    read; the config is refused if it holds Lambda layers, and it is
    deserialized with Keras `safe_mode`; weights are read from the `.h5`
    file, never from pickle.

    Raises:
        PresetError: unknown handle, missing / modified / truncated file,
            code in the config, or a config naming an unknown class.

    Example:

    >>> import clzoo
    >>> encoder = clzoo.models.Encoder.from_preset("sincere_resnet20_cifar10")  # doctest: +SKIP
    """
    import clzoo  # noqa: F401  (registers clzoo's serializable classes)

    folder, pinned = resolve_preset(handle)
    if verify:
        verify_preset(folder, pinned)
    config_path = folder / "config.json"
    try:
        config = json.loads(config_path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise PresetError(f"Cannot read {config_path}: {error}") from error
    _refuse_code(config, config_path)
    try:
        with keras.saving.custom_object_scope({}):
            model = keras.saving.deserialize_keras_object(config, safe_mode=True)
    except Exception as error:
        raise PresetError(f"{config_path} cannot be built: {type(error).__name__}: {error}") from error
    if not isinstance(model, keras.Model):
        raise PresetError(f"{config_path} describes a {type(model).__name__}, not a Keras model.")
    weights = folder / "model.weights.h5"
    try:
        model.load_weights(weights)
    except Exception as error:
        raise PresetError(f"Cannot load weights from {weights}: {type(error).__name__}: {error}") from error
    model.trainable = False
    return model
