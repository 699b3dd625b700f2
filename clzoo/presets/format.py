"""The preset folder: Keras config + weights, preprocessing, provenance, metrics, SHA-256 of every file.

Layout (all written atomically):

    config.json          Keras config of the encoder (no code, no pickle)
    model.weights.h5     its weights
    preprocessing.json   input size, value range, mean / std (applied inside the model)
    metadata.json        loss, recipe, clzoo commit and versions, evaluation metrics
    README.md            Hugging Face model card (see `card.py`)
    checksums.json       SHA-256 of each file above
"""

import hashlib
import json
import subprocess
from pathlib import Path

import keras
import yaml

from clzoo.data.cache import atomic_write, atomic_write_text
from clzoo.version import __version__

PRESET_FILES = ("config.json", "model.weights.h5", "preprocessing.json", "metadata.json", "README.md")
CHECKSUMS = "checksums.json"


class PresetError(ValueError):
    """A preset is missing a file, fails its checksum or asks for something unsafe."""


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _commit():
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _preprocessing(encoder):
    info = {"image_size": list(encoder.input_shape[1:3]), "channels": int(encoder.input_shape[3]),
            "value_range": [0.0, 1.0], "dtype": "float32",
            "note": "normalization by mean/std happens inside the model"}
    for layer in encoder.layers:
        if isinstance(layer, keras.layers.Normalization):
            info["mean"] = [float(v) for v in keras.ops.convert_to_numpy(layer.mean).reshape(-1)]
            info["std"] = [float(v) ** 0.5 for v in keras.ops.convert_to_numpy(layer.variance).reshape(-1)]
            break
    return info


def build_preset(run_dir, out_dir, name=None, license="apache-2.0"):
    """Turn a `clzoo train` run folder into a preset folder.

    Reads `encoder.keras`, `recipe.yaml`, `metrics.json` and, when present,
    `eval/metrics.json` (the `clzoo eval` report) from `run_dir`.

    Args:
        run_dir: run folder.
        out_dir: preset folder to write (created; files replaced atomically).
        name: preset name in the card and metadata. Defaults to the run folder's name.
        license: SPDX-style license id for the card. Defaults to `"apache-2.0"`.

    Returns:
        `Path` of `out_dir`.

    Raises:
        PresetError: when the run lacks `encoder.keras`, `recipe.yaml` or `metrics.json`.
    """
    from clzoo.presets.card import model_card

    run = Path(run_dir)
    for needed in ("encoder.keras", "recipe.yaml", "metrics.json"):
        if not (run / needed).is_file():
            raise PresetError(f"{run} is not a complete clzoo run: {needed} is missing.")
    import clzoo  # noqa: F401  (registers clzoo classes)

    encoder = keras.saving.load_model(run / "encoder.keras")
    encoder = getattr(encoder, "encoder", encoder)
    recipe = yaml.safe_load((run / "recipe.yaml").read_text())
    metrics = {"train": json.loads((run / "metrics.json").read_text())}
    if (run / "eval" / "metrics.json").is_file():
        metrics["eval"] = json.loads((run / "eval" / "metrics.json").read_text())
    name = name or run.name
    metadata = {
        "name": name, "clzoo_version": __version__, "keras_version": keras.__version__,
        "commit": _commit(), "loss": recipe.get("loss", {}), "architecture":
        recipe.get("model", {}).get("architecture"), "dataset": recipe.get("data"),
        "recipe": recipe, "metrics": metrics, "feature_dim": int(encoder.output_shape[-1]),
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "config.json", json.dumps(keras.saving.serialize_keras_object(encoder),
                                                      indent=1) + "\n")
    atomic_write(out / "model.weights.h5", lambda tmp: encoder.save_weights(tmp), suffix=".weights.h5")
    atomic_write_text(out / "preprocessing.json", json.dumps(_preprocessing(encoder), indent=2) + "\n")
    atomic_write_text(out / "metadata.json", json.dumps(metadata, indent=2) + "\n")
    atomic_write_text(out / "README.md", model_card(metadata, license=license))
    checksums = {f: sha256(out / f) for f in PRESET_FILES}
    atomic_write_text(out / CHECKSUMS, json.dumps(checksums, indent=2) + "\n")
    return out


def verify_preset(folder, expected_checksums_sha256=None):
    """Check that every preset file is present and matches `checksums.json`.

    Args:
        folder: preset folder.
        expected_checksums_sha256: SHA-256 that `checksums.json` itself must
            have (built-in presets pin it in the registry).

    Raises:
        PresetError: naming the missing, unexpected or modified file.
    """
    folder = Path(folder)
    listing = folder / CHECKSUMS
    if not listing.is_file():
        raise PresetError(f"{folder} is not a clzoo preset: {CHECKSUMS} is missing.")
    if expected_checksums_sha256 and sha256(listing) != expected_checksums_sha256:
        raise PresetError(f"{listing} does not match the registry's pinned SHA-256.")
    try:
        checksums = json.loads(listing.read_text())
    except json.JSONDecodeError as error:
        raise PresetError(f"{listing} is not valid JSON: {error}") from error
    for required in PRESET_FILES:
        if required not in checksums:
            raise PresetError(f"{listing} lists no checksum for {required}.")
    for name, expected in checksums.items():
        path = folder / name
        if not path.is_file():
            raise PresetError(f"Preset file {name} is missing from {folder}.")
        if sha256(path) != expected:
            raise PresetError(
                f"Preset file {name} in {folder} does not match its SHA-256 "
                "(modified, truncated or corrupted); refusing to load it."
            )
    return checksums
