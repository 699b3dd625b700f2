"""`clzoo export`: an encoder for serving (SavedModel, ONNX or LiteRT), in float32, checked
against the Keras model in its own runtime."""

from pathlib import Path

from clzoo.cli.arguments import add_overwrite, user_path
from clzoo.cli.resolve import load_encoder, model_path


def add_parser(commands):
    p = commands.add_parser("export", help="export an encoder for serving: SavedModel, ONNX or LiteRT")
    p.add_argument("model", help="run folder, .keras file, or preset (name, hf://owner/repo, folder)")
    p.add_argument("--format", choices=("saved_model", "onnx", "litert"), default="saved_model",
                   help="saved_model (a folder; needs tensorflow), onnx (a .onnx file; tf2onnx on "
                        "TensorFlow, jax2onnx on JAX), litert (a .tflite file)")
    p.add_argument("--output", type=user_path, required=True,
                   help="where to write; must not exist yet")
    p.add_argument("--space", choices=("encoder", "projection"), default="encoder",
                   help="export the encoder, or encoder + projection head (a run's checkpoint)")
    add_overwrite(p)
    p.set_defaults(func=_export)


def checks(args):
    """Before Keras: the model, and the export's packages and output (LiteRT's in `_export`)."""
    from clzoo.export.serving import check_export

    model_path(args.model, args.space)
    if args.format != "litert":  # litert's check imports TensorFlow: it runs in _export, quietly
        check_export(args.format, Path(args.output), args.overwrite)


def _export(args):
    import numpy as np

    from clzoo.export.float32_copy import float32_copy
    from clzoo.export.serving import check_export, export_encoder, exported_outputs

    check_export(args.format, Path(args.output), args.overwrite)  # before loading anything
    trained, _ = load_encoder(args.model, args.space)
    encoder = float32_copy(trained)  # a run of training.precision mixed_*: exported in float32
    if encoder is not trained:
        print("note: the model computes in half precision (training.precision); exported in float32, "
              "with its weights", flush=True)
    written = export_encoder(encoder, args.output, args.format, overwrite=args.overwrite)
    images = np.random.default_rng(0).uniform(size=(4, *encoder.input_shape[1:])).astype("float32")
    try:
        difference = np.max(np.abs(exported_outputs(written, args.format, images)
                                   - np.asarray(encoder.predict(images, verbose=0))))
    except ImportError as error:  # the runtime to check with is absent; the export stands
        print(f"wrote {written} ({args.format}); not checked: {error}")
        return 0
    except Exception as error:  # the artifact does not run in its own runtime: not left behind
        import shutil

        shutil.rmtree(written) if Path(written).is_dir() else Path(written).unlink()
        raise ValueError(f"{written}: the export does not run in its runtime "
                         f"({str(error).strip().splitlines()[0][:200]}); removed it") from None
    print(f"wrote {written} ({args.format}); its outputs on 4 random images differ from the "
          f"Keras model's by at most {difference:.2g}")
    print("it takes float32 images in [0, 1]" + (
        "; uint8 pixels through the signature serve_uint8 (serve refuses values outside [0, 1])"
        if args.format == "saved_model" else " (divide uint8 pixels by 255 first)"))
    return 0
