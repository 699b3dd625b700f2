"""Every load of a saved clzoo object goes through here, so clzoo's Keras classes are registered first.

The `clzoo` command skips the registrations at import (its `--help` starts
without Keras); a `.keras` file or preset config naming `clzoo>...` classes
then fails deep inside Keras ("Could not locate class ..."). Loading through
`load_model` / `deserialize` registers them on first use, whoever calls.
"""

import zipfile
from pathlib import Path


def register_keras_objects():
    """Import the modules that register clzoo's serializable classes (idempotent, cheap after once)."""
    import clzoo.losses  # noqa: F401
    import clzoo.metrics  # noqa: F401
    import clzoo.models  # noqa: F401
    import clzoo.optimizers  # noqa: F401


def load_model(path, **kwargs):
    """`keras.saving.load_model` with clzoo's classes registered and a clear error for a bad file.

    Args:
        path: a `.keras` file.
        **kwargs: passed to `keras.saving.load_model` (`compile=`, `safe_mode=`).

    Returns:
        the `keras.Model` saved in `path`.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: `path` is not a readable `.keras` archive (truncated or not a zip),
            naming the file.

    Example:

    >>> import clzoo, keras, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "encoder.keras")
    >>> clzoo.models.get_encoder("resnet20").save(path)
    >>> clzoo.saving.load_model(path).output_shape
    (None, 64)
    """
    import keras

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no saved model at {path}")
    if path.suffix == ".keras" and not zipfile.is_zipfile(path):
        raise ValueError(f"{path} is not a readable .keras archive (truncated or not a saved "
                         "model): re-save it, or resume from an earlier checkpoint")
    register_keras_objects()
    try:
        return keras.saving.load_model(path, **kwargs)
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        raise ValueError(f"{path} cannot be read as a saved model ({type(error).__name__}: "
                         f"{error})") from None


def deserialize(config, safe_mode=True):
    """`keras.saving.deserialize_keras_object(config)` with clzoo's classes registered."""
    import keras

    register_keras_objects()
    return keras.saving.deserialize_keras_object(config, safe_mode=safe_mode)
