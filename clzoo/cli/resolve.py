"""What a command's model and `--data` arguments name, shared by the commands: a model (a preset,
a run folder or a `.keras` file) found and loaded, a data spec resolved once, and the checks of
both that run before Keras is imported."""

from pathlib import Path

from clzoo import console
from clzoo.run_reuse import RUN_TARGETS, run_defaults

# How every output of `--bare-encoder` (the one-view encoder inside a preset) is labelled.
BARE = " (bare encoder: test-time views off)"


def is_preset(target, space):
    from clzoo.presets.names import registry

    return space == "encoder" and (str(target) in registry() or str(target).startswith("hf://")
                                   or (Path(target).expanduser() / "checksums.json").is_file())


def _bare(encoder, target):
    """The one-view encoder inside `encoder`; `ValueError` when it averages no views (a result
    labelled "bare" would then be the model's own)."""
    from clzoo.models import as_image_encoder, bare_encoder

    inner = bare_encoder(encoder)
    if inner is encoder:
        raise ValueError(f"--bare-encoder: {target} averages no test-time views (its encoder is "
                         "already one pass per image); leave the flag out")
    inner = as_image_encoder(inner)
    inner.trainable = encoder.trainable
    return inner


def _closest_model(target, space):
    """`" Did you mean ...?"` for the closest sibling of a missing `target` (and, for encoders, the
    closest built-in preset name); "" for a target that exists (a run without its model file)."""
    import itertools

    from clzoo.registry import did_you_mean

    if target.exists():
        return ""
    nested = str(target.parent) not in ("", ".")
    try:
        entries = list(itertools.islice(target.parent.iterdir(), 1000)) if target.parent.is_dir() else []
    except OSError:  # an unreadable parent: no suggestion, the refusal stands
        entries = []
    siblings = [str(p) if nested else p.name for p in entries if p.is_dir() or p.suffix == ".keras"]
    if space == "encoder":
        from clzoo.presets.names import registry

        siblings += list(registry())
    return did_you_mean(str(target), siblings)


def model_path(target, space="encoder"):
    """The `.keras` file a run folder or file target names (None for a preset); checks it exists.

    Raises:
        FileNotFoundError: no such file (nothing is loaded).
    """
    if is_preset(target, space):
        return None
    target = Path(target)
    name = "encoder.keras" if space == "encoder" else "checkpoint.keras"
    path = target / name if target.is_dir() else target
    if not path.is_file():
        if space == "encoder" and not target.exists():
            from clzoo.presets.names import refuse_retired

            refuse_retired(target)  # a retired built-in name: say so and name its replacement
        expected = ("a run folder, a .keras file, a preset folder or a preset name (clzoo presets "
                    "lists them)" if space == "encoder" else "a run folder or a .keras file")
        raise FileNotFoundError(f"no model at {path} (expected {expected}).{_closest_model(target, space)}")
    return path


def load_encoder(target, space="encoder", bare=False):
    """The feature extractor of a preset, run folder or `.keras` file, and where it came from.

    Presets (built-in name, `hf://owner/repo`, preset folder) are loaded
    with `clzoo.presets.load_preset` and its checks.
    `space="encoder"`: encoder features (what probes and transfer use).
    `space="projection"`: the projection head's L2-normalized embeddings, the
    space the loss shapes (`clzoo.eval.projection_encoder`); needs the full
    model (a run's `checkpoint.keras`). A truncated or unreadable file is a
    `ValueError` naming it (`clzoo.saving.load_model`). `bare`: the encoder
    without its test-time views (`clzoo.models.bare_encoder`).
    """
    from clzoo.eval import projection_encoder
    from clzoo.saving import load_model

    if bare and space != "encoder":
        raise ValueError("--bare-encoder drops an encoder's test-time views; it takes --space encoder")
    path = model_path(target, space)
    if path is None:
        from clzoo.presets import load_preset

        encoder = load_preset(target)
        return (_bare(encoder, target) if bare else encoder), Path(str(target))
    model = load_model(path)
    if space == "encoder":
        encoder = getattr(model, "encoder", model)
        return (_bare(encoder, target) if bare else encoder), path
    if getattr(model, "projection_head", None) is None:
        raise ValueError(f"--space projection needs a model with a projection head; {path} has none")
    return projection_encoder(model), path


def model_name(target, path, bare=False):
    """What the report calls the model: the file loaded, or the preset name / hf:// handle as given
    (marked when its test-time views were dropped)."""
    return (str(path) if path.exists() else str(target)) + (BARE if bare else "")


def check_data(data, image_size=None):
    """The `DataSource` of a `--data` spec (resized on load to `--image-size`), resolved once and
    passed down, and its `DataSummary`; a bad spec is refused here, before any model is loaded or
    image decoded."""
    from clzoo.data.checks import check_data as check_source
    from clzoo.data.sources import data_source

    try:
        source = data_source(data, image_size=image_size)
        summary = check_source(source, "auto")  # the commands read with stream="auto"
    except ValueError as error:
        raise ValueError(f"--data {data!r}: {error}") from None
    except Exception as error:  # PIL's DecompressionBombError: a header of over ~179 M pixels
        if type(error).__name__ != "DecompressionBombError":
            raise
        raise ValueError(f"--data {data!r}: {error}") from None
    return source, summary


def data_checks(args):
    """Before Keras: the `--data` spec (kept as `args.source` for the command)."""
    if args.command in RUN_TARGETS:
        run_defaults(args)
    if str(args.data).startswith("tfds:"):  # tensorflow-datasets may import TensorFlow: quietly
        console.quiet_tensorflow()
    args.source, args.data_summary = check_data(args.data, args.image_size)
    if args.command in ("eval", "compare", "transfer") and not args.data_summary.labelled:
        from clzoo.data.unlabelled import unlabelled_test_refusal

        own = (" A run's label-free metrics (alignment, uniformity, effective rank) are in its "
               "metrics.json." if args.command in RUN_TARGETS else "")
        raise ValueError(f"--data {args.data!r}: {unlabelled_test_refusal(args.data)} Pass one "
                         f"with --data.{own}")


def resolved_source(args):
    """The `DataSource` the checks resolved (resolved here when a command runs without `main`)."""
    source = getattr(args, "source", None)
    return check_data(args.data, args.image_size)[0] if source is None else source


def model_and_data_checks(args, *targets):
    """Before Keras: the model argument(s) `targets` name something loadable, and the `--data` spec."""
    for target in targets:
        model_path(target, args.space)
    data_checks(args)


def k_checks(args):
    """An explicit `--k` above the training images, refused once a folder's listing counts them
    (a tfds set is counted when loaded: `clzoo.eval.evaluate` refuses it then, before embedding)."""
    from clzoo.data.checks import knn_ks

    count = args.data_summary.train_images
    if args.k is not None and count is not None:
        knn_ks(args.k, count, name="--k")
