"""Every load of a saved clzoo object goes through here, so clzoo's Keras classes are registered first.

The `clzoo` command skips the registrations at import (its `--help` starts
without Keras); a `.keras` file or preset config naming `clzoo>...` classes
then fails deep inside Keras ("Could not locate class ..."). Loading through
`load_model` / `deserialize` registers them on first use, whoever calls.
"""

import contextlib
import json
import os
import re
import tempfile
import warnings
import zipfile
from pathlib import Path

from clzoo.compat import jit_compile_for_this_backend


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
        the `keras.Model` saved in `path`; an image encoder saved as a plain
        functional model comes back as a `clzoo.models.ImageEncoder` (uint8
        pixels divided by 255 inside). A saved `jit_compile=True` this backend
        would not pick is turned off (`jit_compile_for_this_backend`: torch).

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: `path` is not a readable `.keras` archive (truncated or not a zip),
            naming the file.
        ValueError: its config names model parts whose weights it does not hold (a part added to
            config.json), naming the file and the parts in one line.

    Example:

    >>> import clzoo, keras, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "encoder.keras")
    >>> clzoo.models.get_encoder("resnet20").save(path)
    >>> clzoo.saving.load_model(path).output_shape
    (None, 64)
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no saved model at {path}")
    if path.suffix == ".keras" and not zipfile.is_zipfile(path):
        raise ValueError(f"{path} is not a readable .keras archive (truncated or not a saved "
                         "model): re-save it, or resume from an earlier checkpoint")
    register_keras_objects()
    try:
        with _portable_archive(path) as readable:
            model = _load_or_name_the_parts(path, readable, kwargs)
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        raise ValueError(f"{path} cannot be read as a saved model ({type(error).__name__}: "
                         f"{error})") from None
    return _with_input_contract(jit_compile_for_this_backend(model))


def _load_or_name_the_parts(path, readable, kwargs):
    """`keras.saving.load_model(readable)`; a file whose config names parts its weights lack is
    refused in one line (`_parts_without_weights`), without Keras' warnings before it."""
    import keras

    failure = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = keras.saving.load_model(readable, **kwargs)
        except ValueError as error:
            blamed = _parts_without_weights(readable, error)
            if blamed:
                raise ValueError(f"{path}: the .keras file's config names parts whose weights it "
                                 f"does not hold: {', '.join(blamed)}; the file was edited or is "
                                 "damaged") from None
            failure = error
    for warning in caught:  # held until here: a refused file's line comes without them
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    if failure is not None:
        raise failure
    return model


_NOT_LOADED = re.compile(r"A total of (\d+) objects could not be loaded")


def _parts_without_weights(readable, error):
    """The parts a `.keras` file's config names but its weights do not hold (a part added to
    config.json after saving; Keras reports only the part's inner layer, over several lines).

    A part is to blame when the file loads with fewer failures once the part is left out of its
    config (weights the config does not name are never read), so no weight layout is assumed.
    Only run once `error` is Keras' failure to load some objects: one trial load per part.
    """
    if _failures(error) is None:
        return []
    with zipfile.ZipFile(readable) as archive:
        config = json.loads(archive.read("config.json"))
    inner = config.get("config") if isinstance(config, dict) else None
    parts = inner.get("parts") if isinstance(inner, dict) else None
    if not isinstance(parts, list):
        return []
    config["compile_config"] = None  # the optimizer's slots are not the question

    def failures_without(index):
        config["config"]["parts"] = [part for i, part in enumerate(parts) if i != index]
        with _archive_with_config(readable, config) as trial:
            return _failures_loading(trial)

    baseline = failures_without(None)
    return [str(part.get("class_name")) for index, part in enumerate(parts)
            if isinstance(part, dict) and failures_without(index) < baseline]


def _failures(error):
    """The number of objects Keras could not load, from its error; None for any other error."""
    found = _NOT_LOADED.search(str(error))
    return None if found is None else int(found.group(1))


def _failures_loading(path):
    """How many objects fail to load from `path` (0: it loads); a big number for another error."""
    import keras

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            keras.saving.load_model(path, compile=False)
    except ValueError as error:
        return _failures(error) or float("inf")
    except Exception:  # a config the trial left broken: not this part's doing
        return float("inf")
    return 0


@contextlib.contextmanager
def _portable_archive(path):
    """`path`, or a temporary copy whose compile config names Keras' backend-specific optimizer
    classes by `keras.optimizers` (a checkpoint saved under torch names
    `keras.src.backend.torch.optimizers...`: importing it under TensorFlow loads torch, then
    Triton, whose LLVM aborts the process). Any model, not only `ContrastiveModel`."""
    from clzoo.models.contrastive_model import _portable

    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json")) if "config.json" in archive.namelist() else {}
        compile_config = config.get("compile_config")
        if not compile_config or _portable(compile_config) == compile_config:
            yield path
            return
        config["compile_config"] = _portable(compile_config)
    with _archive_with_config(path, config) as copy:
        yield copy


@contextlib.contextmanager
def _archive_with_config(path, config):
    """A temporary copy of the `.keras` file `path` with `config` as its config.json."""
    handle, copy = tempfile.mkstemp(suffix=".keras")
    os.close(handle)
    try:
        with zipfile.ZipFile(path) as archive, zipfile.ZipFile(copy, "w") as out:
            for item in archive.infolist():
                data = json.dumps(config) if item.filename == "config.json" else archive.read(item)
                out.writestr(item, data)
        yield copy
    finally:
        os.remove(copy)


def _with_input_contract(model):
    """An encoder saved as a plain functional model (before `ImageEncoder`), as an `ImageEncoder`."""
    from clzoo.models.image_encoder import as_image_encoder

    is_image_model = (type(model).__name__ == "Functional" and len(model.inputs) == 1
                      and len(model.outputs) == 1 and len(model.input_shape) == 4
                      and len(model.output_shape) == 2)
    return as_image_encoder(model) if is_image_model else model


def deserialize(config, safe_mode=True):
    """`keras.saving.deserialize_keras_object(config)` with clzoo's classes registered."""
    import keras

    register_keras_objects()
    return keras.saving.deserialize_keras_object(config, safe_mode=safe_mode)
