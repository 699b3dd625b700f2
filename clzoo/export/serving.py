"""Export a frozen encoder for serving through Keras' `model.export`: SavedModel, ONNX, LiteRT."""

import errno
import importlib.util
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from clzoo.file_lock import output_lock
from clzoo.hidden_names import sibling_prefix

# clzoo's name -> Keras' `format` argument.
FORMATS = {"saved_model": "tf_saved_model", "onnx": "onnx", "litert": "litert"}
# Python modules each format needs beyond Keras, by backend, and the pip package that brings them.
_NEEDS = {
    ("saved_model", None): [("tensorflow", "tensorflow")],
    ("onnx", "tensorflow"): [("tf2onnx", "tf2onnx")],
    ("onnx", "jax"): [("jax2onnx", "jax2onnx")],
    ("onnx", "torch"): [("onnx", "onnx"), ("onnxscript", "onnxscript")],
    ("litert", "torch"): [("litert_torch", "litert-torch")],
    ("litert", None): [("tensorflow", "tensorflow")],
}


def missing_packages(fmt, backend=None):
    """The pip packages `fmt` still needs on `backend` (default: Keras' backend); empty when ready.

    Raises:
        ValueError: an unknown format.

    Example:

    >>> from clzoo.export.serving import missing_packages
    >>> missing_packages("saved_model")
    []
    """
    if fmt not in FORMATS:
        raise ValueError(f"`format` must be one of {', '.join(FORMATS)}. Received: format={fmt!r}")
    if backend is None:
        from clzoo.console import keras_backend_name

        backend = keras_backend_name()
    needs = _NEEDS.get((fmt, backend), _NEEDS.get((fmt, None), []))
    missing = [package for module, package in needs if importlib.util.find_spec(module) is None]
    if fmt == "litert" and backend != "torch" and not missing:
        import tensorflow as tf

        if not hasattr(getattr(tf, "lite", None), "TFLiteConverter"):
            missing.append("tensorflow with tf.lite")
    return missing


def check_export(fmt, path, overwrite=False):
    """Refuse an export before any work: a missing package, a wrong file name, a taken `path`.

    Raises:
        ImportError, ValueError, FileExistsError: as `export_encoder`.
    """
    from clzoo.console import keras_backend_name

    if fmt == "saved_model" and keras_backend_name() == "torch":
        raise ValueError("a SavedModel export from the torch backend fails inside Keras' torch.export "
                         "bridge (dynamic shapes); export under KERAS_BACKEND=tensorflow or jax (runs and "
                         "presets load on every backend), or choose --format onnx")
    missing = missing_packages(fmt)
    if missing:
        raise ImportError(f"exporting to {fmt} needs {' and '.join(missing)}: "
                          f"pip install {' '.join(p.split()[0] for p in missing)}")
    if fmt == "litert" and not str(path).endswith(".tflite"):
        raise ValueError(f"A LiteRT export is one file ending in .tflite. Received: output={str(path)!r}")
    if fmt == "onnx" and not str(path).endswith(".onnx"):
        raise ValueError(f"An ONNX export is one file ending in .onnx. Received: output={str(path)!r}")
    from clzoo.files import check_output

    check_output(path, overwrite, folder=fmt == "saved_model")
    path = Path(path)
    if fmt == "saved_model" and path.is_dir() and any(path.iterdir()) \
            and not (path / "saved_model.pb").is_file():
        raise FileExistsError(f"--output {path} is a folder that holds no SavedModel; --overwrite "
                              "replaces only an earlier export. Choose another path.")


def export_encoder(model, path, format="saved_model", verbose=False, overwrite=False):
    """Export `model` (images -> features) for inference, atomically, with Keras' `model.export`.

    The artifact is written next to `path` under a temporary name and renamed
    into place once complete, so `path` is either absent or whole. A
    SavedModel is a folder with two signatures: `serve` (`serving_default`)
    takes float32 images in [0, 1] and refuses other values in the graph
    (`InvalidArgumentError`: a uint8 array converted to float32 would hold
    0-255), `serve_uint8` takes uint8 pixels; both give the Keras encoder's
    features. ONNX is a `.onnx` file (onnxruntime) and LiteRT a `.tflite` file
    (`tf.lite.Interpreter` or `ai_edge_litert`), both float32 in [0, 1]: their
    runtimes refuse a uint8 array, but not floats in 0-255 (divide by 255).

    Args:
        model: `keras.Model` taking float32 images in [0, 1] `(B, H, W, 3)`; one with
            half-precision layers (`training.precision`) is exported as its float32 copy
            (`clzoo.export.float32_copy`), so every format returns float32 features.
        path: where to write: a folder for `"saved_model"`, a `.onnx` or `.tflite` file.
        format: `"saved_model"`, `"onnx"` or `"litert"`. Defaults to `"saved_model"`.
        verbose: Keras' export messages.
        overwrite: replace an earlier export at `path` (a file, or a SavedModel
            folder) once the new one is complete. Defaults to `False`.

    Returns:
        `Path` written.

    Raises:
        ValueError: an unknown format, a file name without `.onnx` / `.tflite`, or
            `"saved_model"` on the torch backend (Keras' torch.export bridge fails).
        ImportError: a package the format needs on this backend is missing
            (the message names it, e.g. `pip install tf2onnx`).
        FileExistsError: `path` exists (without `overwrite`, or it is not an earlier export), or
            another process is exporting to it (the message names that process).
    """
    from clzoo.export.float32_copy import float32_copy

    path = Path(path)
    path = path.resolve() if path.is_symlink() else path  # replace the export a link names
    check_export(format, path, overwrite)
    model = float32_copy(model)  # a mixed-precision model (training.precision) exports in float32
    if not getattr(model, "_called", True) or not model.built:
        model(np.zeros((1, *model.input_shape[1:]), "float32"))  # Keras exports called models only
    path.parent.mkdir(parents=True, exist_ok=True)
    with output_lock(path):  # one writer: stale staging left by a killed export is ours to drop
        check_export(format, path, overwrite)  # again: another export may have finished meanwhile
        for stale in path.parent.glob(sibling_prefix(path.name, "staging-", room=8) + "*"):
            shutil.rmtree(stale, ignore_errors=True)
        return _write_export(model, path, format, verbose)


# A failed write inside TensorFlow's SaveV2 ends its message with the OS's text for one of these.
_WRITE_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EACCES)


def _write_export(model, path, format, verbose):
    staging = Path(tempfile.mkdtemp(prefix=sibling_prefix(path.name, "staging-", room=8), dir=path.parent))
    try:
        target = staging / path.name
        try:
            if format == "saved_model":  # Keras' export, then re-saved with the input contract
                model.export(str(staging / "keras_export"), format=FORMATS[format], verbose=verbose)
                _save_with_input_contract(staging / "keras_export", target)
            else:
                model.export(str(target), format=FORMATS[format], verbose=verbose)
        except Exception as error:  # TensorFlow's ResourceExhaustedError on a full disk: one line
            if isinstance(error, OSError) and error.errno is not None:
                if error.filename is not None:
                    raise
                raise OSError(error.errno, error.strerror, str(path)) from None  # name the output
            code = next((c for c in _WRITE_ERRNOS if os.strerror(c) in str(error)), None)
            if code is None:
                raise
            raise OSError(code, os.strerror(code), str(path)) from None
        if path.is_dir():  # an earlier SavedModel (--overwrite): moved aside, removed with staging
            os.replace(path, staging / "replaced")
        os.replace(target, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return path


SERVE_CONTRACT = ("`serve` takes float32 images in [0, 1] (B, H, W, 3); for uint8 pixels call "
                  "`serve_uint8` (signature 'serve_uint8') or divide by 255 first")


def _save_with_input_contract(keras_export, target):
    """Save Keras' SavedModel `keras_export` again at `target` with the encoders' input contract:
    `serve` / `serving_default` (float32 in [0, 1], checked in the graph: a uint8 array converted
    to float32 holds 0-255 and would give features ~350x too large) and `serve_uint8` (pixels / 255).
    """
    import tensorflow as tf

    inner = tf.saved_model.load(str(keras_export))
    shape = inner.serve.input_signature[0].shape

    @tf.function(input_signature=[tf.TensorSpec(shape, tf.float32, name="images")])
    def serve(images):
        low, high = tf.reduce_min(images), tf.reduce_max(images)
        # one Assert whose data is the contract and the range received (TF's element dump of
        # assert_less_equal buried the contract in its error)
        inside = tf.reduce_all((images >= -1e-3) & (images <= 1.0 + 1e-3))  # a NaN is outside too
        check = tf.debugging.Assert(inside, [SERVE_CONTRACT + "; received values from", low, "to", high])
        with tf.control_dependencies([check]):
            return inner.serve(tf.identity(images))

    @tf.function(input_signature=[tf.TensorSpec(shape, tf.uint8, name="pixels")])
    def serve_uint8(pixels):
        return inner.serve(tf.cast(pixels, tf.float32) / 255.0)

    module = tf.Module()
    module.encoder, module.serve, module.serve_uint8 = inner, serve, serve_uint8
    tf.saved_model.save(module, str(target),  # no gradients: jax2tf's would not save again
                        signatures={"serving_default": serve, "serve_uint8": serve_uint8},
                        options=tf.saved_model.SaveOptions(experimental_custom_gradients=False))


def exported_outputs(path, format, images):
    """Run an exported artifact on `images` `(B, H, W, 3)`; returns float32 `(B, D)`.

    The artifacts' signature is float32 in [0, 1]; uint8 pixels are divided by
    255 first (the encoders' input contract, `clzoo.models.ImageEncoder`).

    SavedModel through `tf.saved_model.load(...).serve`, ONNX through
    onnxruntime, LiteRT through `ai_edge_litert`'s interpreter, else
    `tf.lite.Interpreter` (batch resized to `B`).

    Raises:
        ImportError: the runtime is not installed (onnxruntime, tf.lite).
        ValueError: images neither uint8 nor float in [0, 1].
    """
    from clzoo.models.image_encoder import unit_float_images

    images = unit_float_images(images)
    if format == "saved_model":
        import tensorflow as tf

        loaded = tf.saved_model.load(str(path))  # kept: `serve` needs its variables alive
        return np.asarray(loaded.serve(tf.constant(images)), np.float32)
    if format == "onnx":
        if importlib.util.find_spec("onnxruntime") is None:
            raise ImportError("running an ONNX export needs onnxruntime: pip install onnxruntime")
        import onnxruntime

        session = onnxruntime.InferenceSession(str(path))
        return np.asarray(session.run(None, {session.get_inputs()[0].name: images})[0], np.float32)
    if importlib.util.find_spec("ai_edge_litert") is not None:
        from ai_edge_litert.interpreter import Interpreter
    else:  # TensorFlow's own, deprecated in favour of ai_edge_litert but still working
        import tensorflow as tf

        Interpreter = tf.lite.Interpreter
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*tf.lite.Interpreter is deprecated")
        interpreter = Interpreter(model_path=str(path))
    index = interpreter.get_input_details()[0]["index"]
    interpreter.resize_tensor_input(index, images.shape)
    interpreter.allocate_tensors()
    interpreter.set_tensor(index, images)
    interpreter.invoke()
    return np.asarray(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), np.float32)
