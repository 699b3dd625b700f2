"""Resolve a preset handle (built-in name, `hf://owner/repo[@revision]`, local folder) and load it safely."""

import functools
import re
from pathlib import Path

import keras

from clzoo.presets.download import download
from clzoo.presets.format import PresetError, read_json, verify_preset
from clzoo.presets.names import PRETRAINED, REGISTRY, RETIRED, refuse_retired, registry, retired  # noqa: F401
from clzoo.presets.weights_check import check_config_sizes, check_weights_file
from clzoo.registry import Registry, did_you_mean
from clzoo.saving import deserialize

# `owner/repo` as the Hub spells it, and a revision (branch, tag or commit hash).
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-/]{0,199}$")


def parse_hf_handle(handle):
    """`"hf://owner/repo[@revision]"` -> `("owner/repo", revision or None)`.

    Raises:
        PresetError: when the repository id or the revision is malformed
            (`..`, empty parts, spaces, more than one `/` in the id).
    """
    body = handle[len("hf://"):]
    repo, _, revision = body.partition("@")
    if not _REPO_ID.match(repo) or ".." in repo:
        raise PresetError(f"`handle` must look like hf://owner/repo or hf://owner/repo@revision. "
                          f"Received: {handle!r}")
    if "@" in body:
        if not _REVISION.match(revision) or ".." in revision:
            raise PresetError(f"The revision in {handle!r} must be a branch, tag or commit hash. "
                              f"Received: {revision!r}")
    return repo, revision or None


def _registry_entry_for(repo):
    """The built-in (name, entry) whose Hub handle is `hf://repo`, else (None, None)."""
    for name in PRESETS:
        entry = PRESETS.entry(name).metadata
        if entry.get("handle", "").split("@")[0] == f"hf://{repo}":
            return name, entry
    return None, None


def _resolve_hf(repo, revision, entry):
    """(snapshot folder, pinned SHA-256, cache root links may point into) of Hub repo `repo`.

    `entry` is the registry entry of one of clzoo's own repos (its revision
    unless one is named, its SHA-256 always), or None.
    """
    pinned = None
    if entry is not None:
        pinned = entry.get("checksums_sha256")
        revision = revision or entry.get("revision")
    folder = download(repo, revision)
    # Snapshot files are links into the repo's blobs/ folder: two levels up.
    return folder, pinned, folder.parent.parent


def resolve_preset(handle):
    """Local folder of a preset, and the pinned SHA-256 of its `checksums.json` (or None).

    - a built-in name (`clzoo.presets.BUILTIN_PRESETS`): the files shipped in
      `pretrained/<name>/` (a source checkout), else its Hub handle at the
      registry's `revision`, checked against the registry's SHA-256;
    - `hf://owner/repo[@revision]`: downloaded with huggingface_hub
      (`snapshot_download(revision=...)`) into its cache (works offline from
      the cache with `HF_HUB_OFFLINE=1`): only the preset format's files, and
      none when the Hub lists them above their size caps or above
      `$CLZOO_MAX_PRESET_DOWNLOAD_BYTES` in all (default 2 GiB). A repo that the registry lists is
      pinned exactly like its built-in name (local copy, registry revision
      unless one is named, SHA-256 always);
    - a folder path.

    Raises:
        PresetError: unknown name (with a suggestion), malformed `hf://`
            handle or revision, or a failed download.
    """
    return _resolve(str(handle))[:2]


def _resolve(handle):
    """(folder, pinned SHA-256 or None, root that links may resolve into or None) of `handle`."""
    if handle.startswith("hf://"):
        repo, revision = parse_hf_handle(handle)
        name, entry = _registry_entry_for(repo)
        if revision is None:
            refuse_retired(handle)  # clzoo's Hub repos of retired presets are not published
        if name is None or revision is not None:
            return _resolve_hf(repo, revision, entry)
        handle = name  # one of clzoo's repos without a revision: exactly its built-in name
    if handle in PRESETS:
        entry = PRESETS.entry(handle).metadata
        local = PRETRAINED / entry["path"]
        if local.is_dir():
            return local, entry.get("checksums_sha256"), None
        return _resolve_hf(*parse_hf_handle(entry["handle"]), entry)
    folder = Path(handle).expanduser()
    if not folder.is_dir():
        refuse_retired(handle)
        known = ", ".join(PRESETS) or "none"
        raise PresetError(
            f"Unknown preset {handle!r}: not a built-in name ({known}), not hf://owner/repo and "
            "not a folder." + did_you_mean(handle, [*PRESETS, *retired()])
        )
    return folder, None, None


def _refuse_code(config, where):
    """Walk a Keras config (iteratively) and refuse layers that carry Python code."""
    stack = [config]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            inner = item.get("config")
            if item.get("class_name") in ("Lambda", "TFOpLambda") or (
                    isinstance(inner, dict) and "function" in inner):
                raise PresetError(f"{where} contains a {item.get('class_name')} layer (Python code); "
                                  "clzoo presets never load code.")
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


MAX_IMAGE_SIDE = 4096  # pixels: a preset declaring larger inputs is refused before it is built


def _refuse_huge_inputs(config, where):
    """Refuse, before building, input shapes no encoder preset has (a tampered config could ask
    Keras to allocate any size): each `batch_shape` dimension an int of at most `MAX_IMAGE_SIDE`."""
    stack = [config]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            shape = item.get("batch_shape")
            if shape is not None and (not isinstance(shape, list) or any(
                    not (dim is None or (isinstance(dim, int) and not isinstance(dim, bool)
                                         and 0 < dim <= MAX_IMAGE_SIDE)) for dim in shape[1:])):
                raise PresetError(f"{where} declares an input of shape {shape!r}; a preset takes images "
                                  f"of at most {MAX_IMAGE_SIDE} pixels a side (positive ints).")
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def load_preset(handle, verify=True, trainable=False, test_time=True):
    """Load a preset's encoder: images (uint8 or float in [0, 1]) -> features `(batch, D)`.

    Every file is checked against `checksums.json` (and, for built-in
    presets and their `hf://` repos, `checksums.json` against the registry)
    before anything is read; `checksums.json` may name only the preset's
    own files, with no links (except the Hub cache's own) and size caps;
    `config.json` must be a JSON object, not too deep, without Lambda
    layers, and is deserialized with Keras `safe_mode`; weights are read
    from the `.h5` file, never from pickle.

    Args:
        handle: built-in name, `hf://owner/repo`, `hf://owner/repo@revision`
            (a branch, tag or commit, passed to `snapshot_download`) or a
            preset folder.
        verify: check the SHA-256 of every file. Defaults to `True`.
        trainable: return the encoder trainable (for fine-tuning). Defaults
            to `False`: clzoo presets are feature extractors for kNN / linear
            probes, so they come frozen. (keras-hub's `from_preset` and timm's
            `create_model` return trainable models; pass `trainable=True` to
            get the same.)
        test_time: keep the preset's test-time views (the airbench presets average 6
            passes per image: mirror and +-2 px shifts). `False` returns the bare
            encoder inside (`clzoo.models.bare_encoder`): one pass, about 6x faster on a
            CPU, for a quick look; its features and metrics are not the preset's.
            Defaults to `True`.

    Returns:
        a `clzoo.models.ImageEncoder` (uint8 pixels are divided by 255 inside).

    Raises:
        PresetError: unknown handle, malformed `hf://` handle or revision,
            missing / modified / truncated / oversized / linked file,
            `checksums.json` naming other files or paths, malformed JSON
            (list, binary, deep nesting), code in the config, or a config
            naming an unknown class. Each message names the file.
        ValueError: `trainable`, `verify` or `test_time` not a bool.

    Example:

    >>> import clzoo
    >>> encoder = clzoo.presets.Encoder.from_preset("sincere_airbench_cifar10")  # doctest: +SKIP
    """
    for value, name in ((verify, "verify"), (trainable, "trainable"), (test_time, "test_time")):
        if not isinstance(value, bool):
            raise ValueError(f"`{name}` must be True or False. Received: {name}={value!r}")
    folder, pinned, links_within = _resolve(str(handle))
    if verify:
        verify_preset(folder, pinned, links_within=links_within)
    config_path = folder / "config.json"
    config = read_json(config_path)
    _refuse_code(config, config_path)
    _refuse_huge_inputs(config, config_path)
    weights = folder / "model.weights.h5"
    try:
        check_config_sizes(config, weights, config_path)  # before a layer is built
    except ValueError as error:
        raise PresetError(str(error)) from None
    except Exception as error:  # h5py: not an HDF5 file, truncated
        raise PresetError(f"Cannot read {weights}: {type(error).__name__}: {error}") from error
    try:
        with keras.saving.custom_object_scope({}):
            model = deserialize(config, safe_mode=True)
    except Exception as error:
        raise PresetError(f"{config_path} cannot be built: {type(error).__name__}: {error}") from error
    if not isinstance(model, keras.Model):
        raise PresetError(f"{config_path} describes a {type(model).__name__}, not a Keras model.")
    try:
        check_weights_file(weights, model)  # before an array is read
        model.load_weights(weights)
    except Exception as error:
        raise PresetError(f"Cannot load weights from {weights}: {type(error).__name__}: {error}") from error
    model = _as_image_encoder(model, config_path)
    if not test_time:
        from clzoo.models.test_time_augmentation import bare_encoder

        model = _as_image_encoder(bare_encoder(model), config_path)
    model.trainable = trainable
    return model


def _as_image_encoder(model, config_path):
    from clzoo.models.image_encoder import as_image_encoder

    try:
        return as_image_encoder(model)
    except ValueError as error:
        raise PresetError(f"{config_path}: {error}") from None



# name -> `load_preset(name, ...)`, with the registry.json entry as metadata.
PRESETS = Registry("preset")
for _name, _entry in registry().items():
    PRESETS.register(_name, functools.partial(load_preset, _name), **_entry)
# `{name: registry entry}` (a plain dict view of PRESETS), read by the CLI and `Encoder.presets()`.
BUILTIN_PRESETS = {name: PRESETS.entry(name).metadata for name in PRESETS}
