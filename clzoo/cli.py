"""Command line: `clzoo train | eval | embed | export | compare | show-views | push | transfer | presets`."""

import argparse
import json
import math
import os
import re
import sys
import time
from pathlib import Path

from clzoo import console
from clzoo.run_reuse import RUN_TARGETS as _RUN_TARGETS
from clzoo.run_reuse import run_defaults as _run_defaults
from clzoo.run_reuse import unused_report_folder as _unused_report_folder
from clzoo.version import __version__

# TensorFlow's C++ start-up chatter (oneDNN, CUDA probing) hides the progress
# output; users can still ask for it with TF_CPP_MIN_LOG_LEVEL=0.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# Choices and defaults of the parser, kept here so that `clzoo --help` imports
# neither Keras nor TensorFlow; tests/test_cli.py checks them against the
# clzoo.eval.METRICS registry / DEFAULT_METRICS and clzoo.data.VIEW_RECIPES.
EVAL_METRICS = ("knn", "ncc", "probe", "calibration", "few_shot", "geometry", "separation",
                "loss_gap", "noisy_labels", "map", "retrieval", "sgd_probe", "coarse_to_fine")
EVAL_DEFAULT_METRICS = tuple(m for m in EVAL_METRICS if m not in ("sgd_probe", "coarse_to_fine"))
VIEW_RECIPE_NAMES = ("asymmetric", "digits", "randaugment", "simclr", "stacked_randaugment", "supcon")
# How every output of `--bare-encoder` (the one-view encoder inside a preset) is labelled.
BARE = " (bare encoder: test-time views off)"
# (clzoo.presets.names.REGISTRY; spelled out so that `clzoo --help` imports nothing of clzoo.presets)
PRESET_REGISTRY = Path(__file__).resolve().parent / "presets" / "builtin" / "registry.json"
# Fewest bootstrap resamples of `compare` (clzoo.eval.bootstrap.MIN_RESAMPLES; tests/test_cli.py checks).
MIN_RESAMPLES = 100
# Commands that run without Keras / TensorFlow.
LIGHT_COMMANDS = ("presets", "list")
_FAULTS = []  # OS errors of this process's commands (see `_run`)


MAX_ERROR = 1000  # characters of one error line: a huge value is cut, never printed whole


def _error(message):
    """Print `error: message` to stderr, one line, at most `MAX_ERROR` characters."""
    text = " ".join(str(message).split("\n"))
    if len(text) > MAX_ERROR:
        text = text[:MAX_ERROR - 25] + f"... ({len(text):,} characters)"
    print(f"error: {text}", file=sys.stderr)


def _os_fault(error):
    """One line for an `OSError`: what failed, on which path, and what is intact."""
    found = re.search(r"errno = (\d+)", str(error))
    if found:  # h5py's "file write failed: time = ..., filename = '...', errno = 28, ...": its parts
        named = re.search(r"filename = '([^']*)'", str(error))
        return _os_fault(OSError(int(found[1]), os.strerror(int(found[1])), named and named[1]))
    if error.errno is None:  # e.g. h5py's "Unable to create file (...)": its text is all there is
        return f"{error}; each file clzoo writes is complete or absent, never cut short"
    where = " -> ".join(str(p) for p in (error.filename, error.filename2) if p is not None)
    return (f"{error.strerror}{f': {where}' if where else ''} (errno {error.errno}); each file "
            "clzoo writes is complete or absent, never cut short")


_FLAGS = (("--data", "data", "data"), ("--epochs", "training.epochs", "epochs"),
          ("--batch-size", "training.batch_size", "batch_size"),
          ("--strategy", "training.strategy", "strategy"), ("--image-size", "image_size", "image_size"))


def _as_typed(args, line):
    """An error line naming `--set KEY` where the user typed the flag (`--epochs 1`), as typed."""
    for flag, key, name in _FLAGS:
        value = getattr(args, name, None)
        if value is not None:
            line = re.sub(rf"--set {re.escape(key)}(?![\w.])", f"{flag} {value}", line)
    return line


def _train_overrides(args):
    """`--set` items (YAML text) and the flags (typed `(key, value)` pairs, as argparse parsed
    them) as recipe overrides; a key given twice is refused."""
    given = [(f"--set {item}", item) for item in args.set or []]
    for flag, key, name in _FLAGS:
        value = getattr(args, name)
        if value is not None:
            given.append((f"{flag} {value}", (key, value)))
    seen = {}
    for origin, item in given:
        key = item[0] if isinstance(item, tuple) else item.partition("=")[0].strip()
        if key in seen:
            raise ValueError(f"{key} is set twice on the command line ({seen[key]} and {origin}); "
                             "give it once")
        seen[key] = origin
    return [item for _, item in given]


def _train_recipe(args):
    """The recipe file to read: the one given, or RUN/recipe.yaml for `--resume RUN`."""
    if args.recipe is None and not args.resume:
        raise ValueError("clzoo train needs a recipe YAML (e.g. clzoo train "
                         "recipes/sincere_digits.yaml) or --resume RUN to continue a run")
    if args.resume is True and not args.output:
        raise ValueError("--resume needs the run folder: --resume RUN or --output RUN --resume")
    if isinstance(args.resume, str) and args.output and Path(args.output) != Path(args.resume):
        raise ValueError("give the run folder once, as --resume RUN (or --output RUN --resume)")
    if isinstance(args.resume, str) and args.recipe is None:
        recipe = Path(args.resume) / "recipe.yaml"
        if not recipe.is_file():
            raise ValueError(f"{args.resume} has no recipe.yaml to resume from")
        return recipe
    if args.recipe is not None and not Path(args.recipe).expanduser().exists():
        from clzoo.recipes import recipe_path

        return recipe_path(args.recipe)  # a built-in recipe's name: `clzoo train sincere_digits`
    return args.recipe


def _resumes_stored_recipe(args):
    """`_train_recipe` took the run's own recipe.yaml (`--resume RUN` without a recipe): a stored
    recipe (not a built-in recipe's name, which is read as strictly as any file)."""
    return isinstance(args.resume, str) and args.recipe is None


def _train(args):
    import signal

    recipe, overrides = _train_recipe(args), _train_overrides(args)  # before importing Keras
    from clzoo.train import RecipeError, TrainingDiverged, TrainingInterrupted, load_recipe, train

    try:
        stored = _resumes_stored_recipe(args)
        config = load_recipe(recipe, overrides, stored=stored)
        if not stored:  # a stored recipe's notes are the run's, said when it started
            for note in config.upgrade_notes:
                print(f"note: {note} (an earlier recipe spelling; clzoo upgrades it on reading)",
                      file=sys.stderr)
        for note in config.override_notes:
            print(f"note: {note}", file=sys.stderr)
        output = Path(args.resume if isinstance(args.resume, str) else
                      args.output or Path("runs") / f"{config.name}-{time.strftime('%Y%m%d-%H%M%S')}")
        run = train(config, output, verbose=0 if args.quiet else 1, resume=bool(args.resume))
    except RecipeError as error:
        for line in error.lines:
            _error(_as_typed(args, line))
        return 2
    except TrainingDiverged as error:
        _error(error)
        return 3
    except TrainingInterrupted as error:
        print(f"stopped: {error}", file=sys.stderr)
        return 128 + int(getattr(signal, error.signal))
    except (FileExistsError, ValueError) as error:
        _error(error)
        return 2
    except OSError as error:  # a full disk while checkpointing: the previous checkpoint is kept
        _error(error)
        return 1
    if run is None:  # a non-chief worker: the chief writes the run
        return 0
    from clzoo.eval.plan import rate_text

    print("\n" + _results_table(run, config.data))
    speed = ("no steps left to train" if run.images_per_second is None  # a resume at the last step
             else f"{rate_text(run.images_per_second)} images/s")
    print(f"final training loss {run.final_loss:.4f} | {speed} | wall {run.wall_seconds:.0f} s")
    print(f"wrote {output}/: {_run_files(output)}")
    return 0


def _run_files(output):
    """What a run folder holds, as the closing line lists it (no report with `eval.report:
    false`, no tensorboard/ without TensorFlow)."""
    folder = Path(output)
    held = [name for name in ("encoder.keras", "metrics.json", "eval/report.md", "checkpoint.keras")
            if (folder / name).is_file()]
    history = [name for name in ("history.jsonl", "history.csv") if (folder / name).is_file()]
    if history:
        held.append("history.jsonl/.csv" if len(history) == 2 else history[0])
    if (folder / "tensorboard").is_dir():
        held.append("tensorboard/")
    return ", ".join(held)


def _results_table(run, data):
    """The trained encoder's kNN / probe (a `RunResult`) beside its raw-pixel and random-init baselines."""
    k = run.knn_k
    rows = [("trained encoder", run.knn_top1, run.probe)]
    names = {"raw_pixels": "raw pixels", "random_init": "random init (untrained)"}
    for key, row in run.baselines.items():
        rows.append((names.get(key, key), row.knn.get(f"k{k}"), row.probe))
    probe = any(row[2] is not None for row in rows)
    lines = [f"kNN top-1 (k={k}, cosine-weighted) on {data} test"
             + (" and linear-probe top-1:" if probe else ":"),
             f"  {'':<26}{'kNN k=' + str(k):>10}" + (f"{'probe':>10}" if probe else "")]
    for name, knn, probe_acc in rows:
        lines.append(f"  {name:<26}{knn:>10.2%}" + (
            f"{probe_acc:>10.2%}" if probe_acc is not None else (f"{'-':>10}" if probe else "")))
    others = "  ".join(f"{key}: {value:.2%}" for key, value in run.knn.items())
    return "\n".join(lines + [f"  trained encoder, every k: {others}"])


def _is_preset(target, space):
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


def _model_path(target, space="encoder"):
    """The `.keras` file a run folder or file target names (None for a preset); checks it exists.

    Raises:
        FileNotFoundError: no such file (nothing is loaded).
    """
    if _is_preset(target, space):
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


def _load_encoder(target, space="encoder", bare=False):
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
    path = _model_path(target, space)
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


def _check_data(data, image_size=None):
    """The `DataSource` of a `--data` spec (resized on load to `--image-size`), resolved once and
    passed down, and its `DataSummary`; a bad spec is refused here, before any model is loaded or
    image decoded."""
    from clzoo.data.checks import check_data
    from clzoo.data.sources import data_source

    try:
        source = data_source(data, image_size=image_size)
        summary = check_data(source, "auto")  # the commands read with stream="auto"
    except ValueError as error:
        raise ValueError(f"--data {data!r}: {error}") from None
    except Exception as error:  # PIL's DecompressionBombError: a header of over ~179 M pixels
        if type(error).__name__ != "DecompressionBombError":
            raise
        raise ValueError(f"--data {data!r}: {error}") from None
    return source, summary


def _model_name(target, path, bare=False):
    """What the report calls the model: the file loaded, or the preset name / hf:// handle as given
    (marked when its test-time views were dropped)."""
    return (str(path) if path.exists() else str(target)) + (BARE if bare else "")


def _default_output(target, path, name):
    """The default report folder: beside a run's model; for a preset (`path` None) a folder here
    named after it (never a same-named local folder, never inside a preset folder)."""
    target = Path(target)
    if path is None and (target / "checksums.json").is_file():  # a preset folder
        return Path(f"{name}-{target.resolve().name}")
    if path is None:  # a preset name or hf:// handle
        return Path(f"{name}-{str(target).replace('hf://', '').replace('/', '_')}")
    return (target if target.is_dir() else path.parent / path.stem) / name


def _eval(args):
    from clzoo.eval import parse_metrics
    from clzoo.eval.report_folder import check_report_folder
    from clzoo.files import locked_output

    metrics = parse_metrics(args.metrics)
    path = _model_path(args.model, args.space)  # an unknown model refused before the folder
    name = "eval_bare_encoder" if args.bare_encoder else "eval"
    out = Path(args.output) if args.output else _default_output(
        args.model, path, name if args.space == "encoder" else "eval_projection")
    if not args.output and not args.overwrite:
        out = _unused_report_folder(out)
    what = "--output" if args.output else "the report folder (default --output)"
    with locked_output(out, args.overwrite, folder=True, what=what) as out:
        check_report_folder(out)
        return _eval_into(out, args, metrics)


def _eval_into(out, args, metrics):
    from clzoo.eval import evaluate
    from clzoo.eval.steps import StepTimer

    source = _source(args)
    timer = StepTimer(total=5 + len(metrics))  # model, data, 2 embeddings, metrics, plots
    with timer.step("load_model", str(args.model)):
        encoder, path = _load_encoder(args.model, args.space, args.bare_encoder)
    if args.bare_encoder:
        print(f"{args.model}{BARE}: one pass per image; its metrics are not the model's", flush=True)
    result = evaluate(encoder, source, metrics, output_dir=out, ks=args.k, shots=args.shots,
                      probe_epochs=args.probe_epochs, timings=timer, plan=True,
                      info={"model": _model_name(args.model, path, args.bare_encoder),
                            "space": args.space})
    if result.knn:
        print("weighted kNN top-1: " + "  ".join(f"{k}: {v:.2%}" for k, v in result.knn.items()))
    for value, label in ((result.ncc, "nearest-class-center top-1"), (result.probe, "linear probe top-1"),
                         (result.sgd_probe, "SGD linear probe top-1")):
        if value is not None:
            print(f"{label}: {value:.2%}")
    if result.margin is not None:
        print(f"target-noise margin: {result.margin:.4f}")
    metric_seconds = sum(result.timings.get(name, 0.0) for name in metrics)
    print(f"wrote {out / 'report.md'}, metrics.json and {len(result.files) - 2} plots "
          f"({result.timings['total']:.0f} s in all, {metric_seconds:.0f} s of metrics)")
    return 0


def _embed(args):
    from clzoo.files import locked_output

    with locked_output(args.output, args.overwrite):
        return _embed_into(args)


def _embed_into(args):
    from clzoo.export.embeddings import embed_splits, write_embeddings

    source = _source(args)
    encoder, path = _load_encoder(args.model, args.space, args.bare_encoder)
    if args.bare_encoder:
        print(f"{args.model}{BARE}: these are not the model's features", flush=True)
    splits = ("train", "test") if args.split == "both" else (args.split,)
    table = embed_splits(encoder, source, splits, normalize=args.normalize)
    written = write_embeddings(args.output, table)
    paths = "with image paths" if "paths" in table else "no image paths (not an image folder)"
    print(f"wrote {written}: {len(table['labels'])} embeddings of dimension "
          f"{table['embeddings'].shape[1]} ({', '.join(splits)}), labels, {paths}")
    return 0


def _export(args):
    import numpy as np

    from clzoo.export.float32_copy import float32_copy
    from clzoo.export.serving import check_export, export_encoder, exported_outputs

    check_export(args.format, Path(args.output), args.overwrite)  # before loading anything
    trained, _ = _load_encoder(args.model, args.space)
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


def _compare(args):
    from clzoo.eval import parse_metrics
    from clzoo.eval.report_folder import check_report_folder
    from clzoo.files import locked_output

    metrics = parse_metrics(args.metrics)
    targets = (("A", args.model_a), ("B", args.model_b))
    for _, target in targets:
        _model_path(target, args.space)
    with locked_output(args.output or "compare", args.overwrite, folder=True) as out:
        for label, _ in targets:  # every input and output checked before any evaluation
            check_report_folder(out / label)
        return _compare_into(out, args, metrics, targets)


def _compare_into(out, args, metrics, targets):
    from clzoo.eval import compare_results, comparison_markdown, evaluate
    from clzoo.eval.plan import eval_plan, forward_rate
    from clzoo.files import atomic_write_text

    source = _source(args)
    encoders = [_load_encoder(target, args.space) for _, target in targets]
    train, test = source.load("train", stream="auto"), source.load("test", stream="auto")
    rate = forward_rate(encoders[0][0], train.images, size=encoders[0][0].input_shape[1],
                        verbose=not console.is_quiet())
    print(eval_plan(metrics, len(train), len(test), rate, encoders=2)
          + f" Then {args.resamples} bootstrap resamples of A - B per classifier.", flush=True)
    ks = _compare_ks(args.k, len(train))
    results, names = [], []
    for (label, target), (encoder, path) in zip(targets, encoders):
        names.append(f"{label}: {_model_name(target, path)}")
        results.append(evaluate(encoder, (train, test), metrics, output_dir=out / label, ks=ks,
                                info={"model": _model_name(target, path), "space": args.space,
                                      "data": args.data}))
    table = compare_results(*results, names=("A", "B"), resamples=args.resamples)
    lines = comparison_markdown(results, names, table, args.data, args.space, args.resamples)
    atomic_write_text(out / "compare.md", "\n".join(lines))
    atomic_write_text(out / "compare.json", json.dumps(
        {"data": args.data, "models": names, "bootstrap": table,
         "A": results[0].metrics, "B": results[1].metrics}, indent=2) + "\n")
    print("\n".join(lines[6:]))
    print(f"wrote {out / 'compare.md'}")
    return 0


def _compare_ks(ks, train_images):
    """The k both evaluations use: the default k left out for a small training set are named
    here, once, not by each evaluation."""
    from clzoo.data.checks import dropped_ks_note, knn_ks

    kept, dropped = knn_ks(ks, train_images, name="--k")
    if dropped:
        print(dropped_ks_note(dropped, train_images), flush=True)
    return kept


def _show_views(args):
    from clzoo.data import show_views
    from clzoo.data.preview import preview_source
    from clzoo.files import locked_output

    with locked_output(args.output, args.overwrite):
        source = preview_source(_source(args))  # large images: decoded at the grid's size
        # a folder stays in its files: only the images shown are decoded
        split = source.load("train", stream=source.folder is not None)
        path = show_views(split, args.output, recipe=args.recipe, images=args.images,
                          views=args.views, seed=args.seed, stream=args.stream)
    print(f"wrote {path}")
    return 0


def _push_checks(args):
    if (args.handle is None) == (args.builtin is None):
        raise ValueError("clzoo push takes hf://owner/repo or --builtin NAME (one of them)")
    if args.builtin is not None:
        if args.dry_run or args.private:
            raise ValueError("--builtin writes clzoo's own presets folder; --dry-run and --private "
                             "are for hf:// pushes")
        from clzoo.presets.builtin_entry import check_builtin_name

        check_builtin_name(args.builtin, args.overwrite)


def _push(args):
    from clzoo.presets import push_preset

    if args.builtin is not None:
        from clzoo.presets.builtin_entry import add_builtin

        folder, entry = add_builtin(args.run, args.builtin, overwrite=args.overwrite)
        print(f"wrote the built-in preset {folder} and its registry.json entry (pinned "
              f"{entry['checksums_sha256'][:12]}...); {folder.name} loads with "
              f"Encoder.from_preset({folder.name!r})")
        return 0

    result = push_preset(args.run, args.handle, dry_run=args.dry_run, private=args.private,
                         overwrite=args.overwrite)
    print(f"wrote the preset to {result} (nothing uploaded)" if args.dry_run else f"uploaded: {result}")
    return 0


def _transfer(args):
    from clzoo.files import locked_output

    if not args.output:
        return _transfer_into(args)
    with locked_output(args.output, args.overwrite):
        return _transfer_into(args)


def _transfer_into(args):
    from clzoo.data.split_overlap import check_splits_apart
    from clzoo.eval.plan import forward_rate, transfer_plan
    from clzoo.eval.probe_transfer import check_input_size, transfer_probe
    from clzoo.files import atomic_write_text

    source = _source(args)
    encoder, _ = _load_encoder(args.preset, "encoder", bare=args.bare_encoder)
    if args.bare_encoder:
        print(f"{args.preset}{BARE}: one pass per image; not the preset's result", flush=True)
    train, test = source.load("train", stream="auto"), source.load("test", stream="auto")
    check_splits_apart(train, test, str(source))
    check_input_size(encoder, train, args.data)  # before the plan and the first fit
    rate = forward_rate(encoder, train.images, verbose=not console.is_quiet())
    print(transfer_plan(args.protocol, len(train), len(test), rate, list(args.learning_rates),
                        args.epochs), flush=True)
    result = transfer_probe(encoder, train, test, args.protocol, args.learning_rates, args.epochs)
    chosen = ("" if result.learning_rate is None else f", learning rate {result.learning_rate:g}"
              + (" chosen on the validation split" if result.learning_rates_tried > 1 else ""))
    bare = BARE if args.bare_encoder else ""
    print(f"linear-probe top-1 on {args.data}{bare}: {result.top1:.2%} (95% bootstrap interval "
          f"{result.low:.2%} - {result.high:.2%}, {result.test_images} test images{chosen})")
    if args.output:
        report = result.to_dict(preset=args.preset + bare, data=args.data)
        atomic_write_text(Path(args.output), json.dumps(report, indent=2, default=float) + "\n")
        print(f"wrote {args.output}")
    return 0


def _data_checks(args):
    """Before Keras: the `--data` spec (kept as `args.source` for the command)."""
    if args.command in _RUN_TARGETS:
        _run_defaults(args)
    if str(args.data).startswith("tfds:"):  # tensorflow-datasets may import TensorFlow: quietly
        console.quiet_tensorflow()
    args.source, args.data_summary = _check_data(args.data, args.image_size)


def _source(args):
    """The `DataSource` the checks resolved (resolved here when a command runs without `main`)."""
    source = getattr(args, "source", None)
    return _check_data(args.data, args.image_size)[0] if source is None else source


def _model_and_data_checks(args):
    """Before Keras: the model argument(s) name something loadable, and the `--data` spec."""
    for target in (args.model_a, args.model_b) if args.command == "compare" else (args.model,):
        _model_path(target, args.space)
    _data_checks(args)
    if args.command in ("eval", "compare"):
        _k_checks(args)


def _k_checks(args):
    """An explicit `--k` above the training images, refused once a folder's listing counts them
    (a tfds set is counted when loaded: `clzoo.eval.evaluate` refuses it then, before embedding)."""
    from clzoo.data.checks import knn_ks

    count = args.data_summary.train_images
    if args.k is not None and count is not None:
        knn_ks(args.k, count, name="--k")


def _embed_checks(args):
    from clzoo.export.embeddings import check_output

    check_output(args.output)  # a bad suffix or a missing pyarrow, before any work
    _model_and_data_checks(args)


def _export_checks(args):
    from clzoo.export.serving import check_export

    _model_path(args.model, args.space)
    if args.format != "litert":  # litert's check imports TensorFlow: it runs in _export, quietly
        check_export(args.format, Path(args.output), args.overwrite)


def _transfer_checks(args):
    from clzoo.files import check_output
    from clzoo.presets.names import refuse_retired, registry

    if args.protocol == "lbfgs" and (args.epochs is not None or args.learning_rates is not None):
        raise ValueError("--epochs and --learning-rates set the sgd protocol; add --protocol sgd "
                         "(the default, lbfgs, fits once on features embedded once)")
    args.epochs = 100 if args.epochs is None else args.epochs
    args.learning_rates = [0.01, 0.1, 1.0] if args.learning_rates is None else args.learning_rates

    if args.output:  # a taken output first: it needs nothing else to be refused
        check_output(args.output, args.overwrite)
    preset = str(args.preset)
    if preset not in registry() and not preset.startswith("hf://") \
            and not Path(preset).expanduser().exists():  # a folder's files: the loaders name them
        refuse_retired(preset)
        from clzoo.registry import did_you_mean

        raise ValueError(f"no encoder {preset!r}: expected a built-in preset name (clzoo presets lists "
                         "them), hf://owner/repo, a preset folder, a run folder or a .keras file."
                         f"{did_you_mean(preset, list(registry()))}")
    if not _is_preset(preset, "encoder"):
        _model_path(preset)  # a run folder or .keras file: its encoder exists (before Keras)
    _data_checks(args)


def _train_checks(args):
    from clzoo.machine import chosen_threads

    chosen_threads(os.environ.get("CLZOO_TORCH_THREADS", ""))  # before any work, as every setting
    recipe = _train_recipe(args)
    overrides = _train_overrides(args)
    if not Path(recipe).is_file():
        raise FileNotFoundError(f"{recipe}: recipe file not found (expected a recipe YAML, e.g. "
                                "recipes/sincere_digits.yaml)")
    from clzoo.train.recipe import RecipeError, check_recipe_keys  # no Keras: keys, types, ranges

    try:
        check_recipe_keys(recipe, overrides, stored=_resumes_stored_recipe(args))
    except RecipeError as error:
        for line in error.lines[:-1]:
            _error(_as_typed(args, line))
        raise ValueError(_as_typed(args, error.lines[-1])) from None


def _show_views_checks(args):
    if Path(args.output).suffix.lower() != ".png":
        raise ValueError(f"--output {args.output}: show-views writes a PNG image; name a .png file")
    import importlib.util  # not clzoo.data.device_stream's check: that module imports Keras

    if args.stream == "tf_data" and importlib.util.find_spec("tensorflow") is None:
        raise ValueError("--stream tf_data: tf.data's views need TensorFlow, which is not installed "
                         "here; --stream device shows the device stream's (keras.ops, any backend)")
    _data_checks(args)


# Refusals that need no Keras, run before TensorFlow is imported (a typo costs a fraction of a
# second, not the 5-10 s of that import); each command runs them again or reads what they keep.
_CHECKS = {"train": _train_checks, "eval": _model_and_data_checks, "embed": _embed_checks,
           "export": _export_checks, "compare": _model_and_data_checks, "show-views": _show_views_checks,
           "transfer": _transfer_checks, "push": _push_checks}


def _percent(value):
    return f"{value:.2%}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def _preset_lines(registry):
    """Table lines of `registry.json`: name, architecture, loss, data, headline kNN and probe."""
    header = ("name", "architecture", "loss", "data", "kNN top-1", "probe top-1")
    rows, notes = [], []
    for name, entry in registry.items():
        metrics = dict(entry.get("metrics") or {})
        knn_key = next((key for key in metrics if key.startswith("knn_top1_k")), None)
        knn = metrics.pop(knn_key, None)
        k = f" (k={knn_key[len('knn_top1_k'):]})" if knn_key else ""
        rows.append((name, str(entry.get("architecture", "-")), str(entry.get("loss", "-")),
                     str(entry.get("dataset", "-")), _percent(knn) + k,
                     _percent(metrics.pop("probe_top1", metrics.pop("linear_probe_top1", None)))))
        if metrics:  # anything else the registry records, e.g. fine-label numbers
            notes.append(f"  {name}: " + ", ".join(
                f"{key} {_percent(v) if isinstance(v, float) else v}" for key, v in metrics.items()))
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
             for row in [header, *rows]]
    return lines + (["", "also recorded:", *notes] if notes else [])


def _presets(args):
    """`clzoo presets`: the built-in presets and their numbers, read from registry.json."""
    registry = json.loads(PRESET_REGISTRY.read_text()) if PRESET_REGISTRY.is_file() else {}
    if args.json:
        print(json.dumps(registry, indent=2))
        return 0
    if not registry:
        print("no built-in presets")
        return 0
    print("\n".join(_preset_lines(registry)))
    print("\nTest-split top-1 (kNN: cosine-weighted). Load one with "
          "clzoo.presets.Encoder.from_preset(NAME) or `clzoo transfer NAME --data ...`.")
    return 0


def _list(args):
    """`clzoo list recipes|presets`: the built-in recipes (a table: name, task/loss, encoder,
    epochs x batch, description) or presets; `--json`: the same as JSON."""
    if args.what == "presets":
        return _presets(argparse.Namespace(json=getattr(args, "json", False)))
    from clzoo.recipes import list_recipes

    rows = [_recipe_row(name) for name in list_recipes()]
    if getattr(args, "json", False):
        print(json.dumps(rows, indent=2))
        return 0
    print("\n".join(_recipe_table(rows, _table_width())))
    print(f"\n{len(rows)} recipes. Train one with clzoo train NAME (e.g. clzoo train sincere_digits); "
          "a path to your own YAML works the same.")
    return 0


def _recipe_row(name):
    """One built-in recipe as the list shows it, read with the Keras-free checks (defaults filled
    in); a recipe that does not load says why in its description."""
    from clzoo.recipes import recipe_path
    from clzoo.train.recipe import RecipeError, load_recipe
    from clzoo.train.recipe_components import light_pass

    try:
        with light_pass():
            recipe = load_recipe(recipe_path(name))
    except RecipeError as error:
        return {"name": name, "task_loss": "-", "encoder": "-", "epochs": None, "batch_size": None,
                "description": f"(does not load: {error.lines[0]})"}
    loss = recipe.loss.name if recipe.task == "contrastive" else f"{recipe.task}/{recipe.loss.name}"
    return {"name": name, "task_loss": loss, "encoder": recipe.model.encoder.name,
            "epochs": recipe.training.epochs, "batch_size": recipe.training.batch_size,
            "description": recipe.description or ""}


def _table_width():
    """The terminal's width where the output is one (or `COLUMNS` is set); None off a terminal:
    nothing is cut."""
    import shutil

    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def _recipe_table(rows, width):
    """The lines of the recipe table; descriptions cut to `width` (None: not cut), each under its
    row, indented, where the columns leave it under 30 characters."""
    head = {"name": "name", "task_loss": "task/loss", "encoder": "encoder", "size": "epochs x batch"}
    cells = [{**row, "size": "-" if row["epochs"] is None else f"{row['epochs']} x {row['batch_size']}"}
             for row in rows]
    widths = {key: max(len(str(cell[key])) for cell in [head, *cells]) for key in head}
    left = sum(widths.values()) + 2 * len(head)
    below = width is not None and width - left < 30

    def lines(cell, description):
        columns = "  ".join(f"{str(cell[key]):<{widths[key]}}" for key in head)
        if below:
            return [columns.rstrip(), f"    {_cut(description, width - 4)}".rstrip()]
        return [f"{columns}  {_cut(description, None if width is None else width - left)}".rstrip()]

    return [line for cell, text in [(head, "description"), *((c, c["description"]) for c in cells)]
            for line in lines(cell, text)]


def _cut(text, room):
    """`text` cut at a word boundary to fit `room` characters, ending in "..." (None, or too little
    room to cut usefully: as it is)."""
    if room is None or len(text) <= room or room < 16:
        return text
    kept = text[:room - 3]
    if text[room - 3:room - 2] != " " and " " in kept:
        kept = kept.rsplit(" ", 1)[0]
    return kept.rstrip(" ,;:") + "..."


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: the message and where help is, without the usage block."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _whole(low):
    """argparse type: a whole number >= `low` ("2.5" and "0" name the argument and the value)."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {low}. Received: {text!r}")
        return value

    return parse


def _user_path(text):
    """argparse type of an output path: `~` expanded (`--output=~/x` reaches us unexpanded; it
    made a folder named "~"); a name that is not valid UTF-8 is refused (TensorBoard's writer and
    the reports' JSON cannot name it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(text).decode("ascii", "backslashreplace")
        raise argparse.ArgumentTypeError(f"{shown}: the name is not valid UTF-8; choose one that "
                                         "is") from None
    return os.path.expanduser(text)


def _number_list(cast, valid, expected):
    """argparse type: comma-separated numbers, each `cast` and `valid`; `expected` says what."""

    def parse(text):
        try:
            values = [cast(v) for v in text.split(",")]
        except ValueError:
            values = []
        if not values or not all(valid(v) for v in values):
            raise argparse.ArgumentTypeError(f"expected {expected}. Received: {text!r}")
        return values

    return parse


_int_list = _number_list(int, lambda v: v >= 1, "comma-separated whole numbers >= 1, e.g. 1,5,20")
_float_list = _number_list(float, lambda v: math.isfinite(v) and v > 0,
                           "comma-separated positive numbers, e.g. 0.01,0.1")


def _add_overwrite(p):
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing output (by default an existing file or non-empty "
                        "folder is refused)")


class _VersionAction(argparse.Action):
    """`--version`: clzoo's version, and Keras' from its package metadata (nothing imported)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib import metadata

        from clzoo.console import keras_backend_name

        def version(package):
            try:
                return metadata.version(package)
            except metadata.PackageNotFoundError:
                return "not installed"

        backend = keras_backend_name()
        package = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}.get(backend)
        engine = f"{backend} {version(package)}" if package else backend
        if backend not in ("tensorflow", "jax", "torch", "numpy", "openvino"):  # Keras' own list
            engine = f"{backend!r}, not a backend Keras knows (tensorflow, jax, torch, numpy, openvino)"
        print(f"clzoo {__version__} (keras {version('keras')}, backend {engine}, "
              f"python {sys.version.split()[0]})")
        parser.exit()


def _add_bare_encoder(p):
    p.add_argument("--bare-encoder", action="store_true",
                   help="the encoder without its test-time views (the airbench presets average 6 "
                        "passes per image): about 6x faster on a CPU for a quick look; results are "
                        "labelled as the bare encoder's, not the preset's")


def _add_image_size(p):
    p.add_argument("--image-size", type=_whole(1), metavar="N",
                   help="resize every image to NxN on load (image folders of mixed sizes; as "
                        "Keras' image_dataset_from_directory, aspect ratio not kept)")


def _add_train_parser(commands):
    p = commands.add_parser("train", help="train an encoder from a recipe YAML")
    p.add_argument("recipe", nargs="?", help="recipe YAML, or a built-in recipe's name (clzoo list "
                                              "recipes), e.g. sincere_digits")
    p.add_argument("--data", help="'digits', an image folder with train/ and test/, or tfds:<name>")
    _add_image_size(p)
    p.add_argument("--epochs", type=_whole(1), help="training epochs (overrides training.epochs)")
    p.add_argument("--batch-size", type=_whole(1),
                   help="images per step, all replicas together (overrides training.batch_size)")
    p.add_argument("--output", type=_user_path, help="run folder (default runs/<recipe>-<time>)")
    p.add_argument("--strategy", choices=("auto", "one_device", "mirrored", "multi_worker"),
                   help="where to train (default: the recipe's training.strategy, 'auto': "
                        "MirroredStrategy when several GPUs are visible; multi_worker reads TF_CONFIG "
                        "on TensorFlow, KERAS_DISTRIBUTION_* on JAX, and runs under torchrun on "
                        "PyTorch: docs/training.md)")
    p.add_argument("--resume", type=_user_path, nargs="?", const=True, metavar="RUN",
                   help="continue RUN (or --output) from its last checkpoint: same optimizer "
                        "state, schedule step and data order")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a recipe value, e.g. --set loss.temperature=0.2")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress output: only the final results (and errors)")
    p.set_defaults(func=_train)


def _add_eval_parsers(commands):
    p = commands.add_parser("eval", help="evaluate a trained encoder: metrics.json, report.md, plots")
    p.add_argument("model", help="run folder, .keras file, or preset (name, hf://owner/repo, folder)")
    p.add_argument("--data", help="same forms as `clzoo train --data`; default: a run "
                   "folder's own data (and its image_size)")
    _add_image_size(p)
    p.add_argument("--metrics", default=",".join(EVAL_DEFAULT_METRICS),
                   help=f"comma-separated, from {', '.join(EVAL_METRICS)} "
                        "(default: all but sgd_probe and coarse_to_fine)")
    p.add_argument("--k", type=_int_list,
                   help="comma-separated k of kNN and of retrieval precision@k / recall@k, each at "
                        "most the training images (default: 1,5,20,200, less those above them)")
    p.add_argument("--shots", default="10,100", type=_int_list,
                   help="comma-separated m for m-shot errors")
    p.add_argument("--probe-epochs", type=_whole(1), default=100,
                   help="epochs of sgd_probe (app. J: 100)")
    p.add_argument("--space", choices=("encoder", "projection"), default="encoder",
                   help="evaluate encoder features, or the projection head's embeddings")
    p.add_argument("--output", type=_user_path,
                   help="report folder (default: <run>/eval, with --bare-encoder <run>/eval_bare_encoder)")
    _add_bare_encoder(p)
    _add_overwrite(p)
    p.set_defaults(func=_eval)

    p = commands.add_parser("embed", help="write a model's embeddings and labels to .npz or .parquet")
    p.add_argument("model", help="run folder, .keras file, or preset (name, hf://owner/repo, folder)")
    p.add_argument("--data", help="same forms as `clzoo train --data`; default: a run "
                   "folder's own data (and its image_size)")
    _add_image_size(p)
    p.add_argument("--output", type=_user_path, required=True,
                   help="embeddings.npz (numpy) or embeddings.parquet (needs pyarrow)")
    p.add_argument("--split", choices=("train", "test", "both"), default="both",
                   help="which split(s) to embed (default: both, with a split column)")
    p.add_argument("--space", choices=("encoder", "projection"), default="encoder",
                   help="encoder features, or the projection head's embeddings (a run's checkpoint)")
    p.add_argument("--normalize", action="store_true", help="L2-normalize each embedding")
    _add_bare_encoder(p)
    _add_overwrite(p)
    p.set_defaults(func=_embed)

    p = commands.add_parser("export", help="export an encoder for serving: SavedModel, ONNX or LiteRT")
    p.add_argument("model", help="run folder, .keras file, or preset (name, hf://owner/repo, folder)")
    p.add_argument("--format", choices=("saved_model", "onnx", "litert"), default="saved_model",
                   help="saved_model (a folder; needs tensorflow), onnx (a .onnx file; tf2onnx on "
                        "TensorFlow, jax2onnx on JAX), litert (a .tflite file)")
    p.add_argument("--output", type=_user_path, required=True,
                   help="where to write; must not exist yet")
    p.add_argument("--space", choices=("encoder", "projection"), default="encoder",
                   help="export the encoder, or encoder + projection head (a run's checkpoint)")
    _add_overwrite(p)
    p.set_defaults(func=_export)

    p = commands.add_parser("compare", help="evaluate two encoders with bootstrap intervals")
    p.add_argument("model_a", help="run folder or .keras file")
    p.add_argument("model_b", help="run folder or .keras file")
    p.add_argument("--data", help="same forms as `clzoo train --data`; default: a run "
                   "folder's own data (and its image_size)")
    _add_image_size(p)
    p.add_argument("--metrics", default="knn,ncc,probe,calibration,geometry,separation,loss_gap",
                   help="comma-separated, as `clzoo eval --metrics`")
    p.add_argument("--k", type=_int_list, help="comma-separated k of kNN, each at most the training "
                                               "images (default: 1,5,20,200, less those above them)")
    p.add_argument("--resamples", type=_whole(MIN_RESAMPLES), default=1000,
                   help=f"bootstrap resamples of the test set for each interval, at least "
                        f"{MIN_RESAMPLES} (default: 1000)")
    p.add_argument("--space", choices=("encoder", "projection"), default="encoder",
                   help="compare encoder features, or the projection head's embeddings")
    p.add_argument("--output", type=_user_path, help="folder (default: ./compare)")
    _add_overwrite(p)
    p.set_defaults(func=_compare)


def _add_other_parsers(commands):
    p = commands.add_parser("show-views", help="PNG grid of training images and their augmented views")
    p.add_argument("--data", required=True, help="same forms as `clzoo train --data`")
    _add_image_size(p)
    p.add_argument("--recipe", default="supcon", choices=[*VIEW_RECIPE_NAMES, "airbench"],
                   help="view recipe; 'airbench': its batch-wise views, one column per epoch")
    p.add_argument("--images", type=_whole(1), default=8, help="training images, one row each")
    p.add_argument("--views", type=_whole(1), default=4, help="augmented views per image")
    p.add_argument("--seed", type=_whole(0), default=0, help="seed of the images and views drawn")
    p.add_argument("--stream", choices=("auto", "tf_data", "device"), default="auto",
                   help="whose views: tf.data's (TensorFlow) or the device stream's (keras.ops, any "
                        "backend); auto: tf_data where TensorFlow is installed")
    p.add_argument("--output", type=_user_path, default="views.png",
                   help="PNG file to write (default: views.png)")
    _add_overwrite(p)
    p.set_defaults(func=_show_views)

    p = commands.add_parser("push", help="publish a run as a preset on the Hugging Face Hub")
    p.add_argument("run", help="run folder from clzoo train (with eval/ if you ran clzoo eval)")
    p.add_argument("handle", nargs="?", help="hf://owner/repo (not with --builtin)")
    p.add_argument("--dry-run", type=_user_path, metavar="DIR",
                   help="write the exact folder to DIR; upload nothing")
    p.add_argument("--builtin", metavar="NAME",
                   help="maintainers: write the run as clzoo's built-in preset NAME (the package's "
                        "presets folder, which pretrained/ links to) and its registry.json entry")
    p.add_argument("--private", action="store_true", help="create the Hub repository as private")
    _add_overwrite(p)
    p.set_defaults(func=_push)

    p = commands.add_parser("transfer", help="linear-probe transfer from a pretrained encoder")
    p.add_argument("preset", help="built-in preset name, hf://owner/repo, a preset folder, a run "
                                   "folder or a .keras file")
    p.add_argument("--data", help="same forms as `clzoo train --data`; default: a run "
                   "folder's own data (and its image_size)")
    _add_image_size(p)
    p.add_argument("--protocol", choices=("sgd", "lbfgs"), default="lbfgs",
                   help="lbfgs (default): logistic regression on features embedded once, seconds to "
                        "minutes on a CPU; sgd: SINCERE app. J, 4 fits x 100 epochs through the encoder")
    p.add_argument("--epochs", type=_whole(1), help="sgd protocol epochs (default: app. J's 100)")
    p.add_argument("--learning-rates", type=_float_list,
                   help="comma-separated rates the sgd protocol chooses from on a validation split "
                        "(default: 0.01,0.1,1.0)")
    p.add_argument("--output", type=_user_path, help="JSON file for the result")
    _add_bare_encoder(p)
    _add_overwrite(p)
    p.set_defaults(func=_transfer)

    p = commands.add_parser("list", help="list the built-in recipes or presets")
    p.add_argument("what", choices=("recipes", "presets"), help="recipes (clzoo train NAME) or presets")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=_list)

    p = commands.add_parser("presets", help="list the built-in pretrained encoders and their numbers")
    p.add_argument("--json", action="store_true", help="print registry.json as is")
    p.set_defaults(func=_presets)


def build_parser():
    """The `clzoo` argument parser (builds without importing Keras or TensorFlow)."""
    parser = _Parser(prog="clzoo", description=__doc__)
    parser.add_argument("--version", action=_VersionAction, help="print versions and exit")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_train_parser(commands)
    _add_eval_parsers(commands)
    _add_other_parsers(commands)
    return parser


def main(argv=None):
    """Run a `clzoo` command; returns its exit status (2 for a usage or input error, 130 after a
    Ctrl-C)."""
    args = build_parser().parse_args(argv)
    try:
        with console.interrupts_delivered() as dropped:
            code = _run(args)
    except KeyboardInterrupt:  # a dropped Ctrl-C delivered again as the command ended
        code = _interrupted()
    if code != 130 and dropped.is_set():  # dropped too late to be delivered in time
        code = _interrupted()
    return code


def _interrupted():
    _error("interrupted (Ctrl-C); each file clzoo writes is complete or absent, never cut short")
    return 130


def console_main():
    """The `clzoo` console script: `main`, and after a Ctrl-C an exit that skips the interpreter's
    teardown (os._exit) over whatever the interrupt cut short. The SIGSEGV seen (status -11,
    nothing printed) came from inside TensorFlow's import, which now holds the Ctrl-C
    (`console.interrupts_deferred`); this exit guards the teardown after one, and after a write
    cut short (status 1: h5py's teardown segfaulted after a full disk). Every file was closed
    or removed by then (`main` has returned)."""
    sys.unraisablehook = _quiet_h5py_teardown
    sys.excepthook = _quiet_h5py_traceback  # Cython's __dealloc__ prints through it too
    code = main()
    if code in (1, 130):  # an interrupt, or a write cut short (h5py crashed in teardown after one)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:  # the reader left (`clzoo ... | head`)
                pass
        os._exit(code)
    return code


def _quiet_h5py_teardown(unraisable, default=sys.unraisablehook):
    """h5py, its file closed by a failed write (a full disk), reports each object it can no longer
    release ("Can't decrement id ref count") as an exception ignored in `__dealloc__`: tracebacks
    before the one line that says what happened. Those alone are left out."""
    if "decrement id ref count" in str(unraisable.exc_value):
        return
    default(unraisable)


def _quiet_h5py_traceback(kind, value, traceback, default=sys.excepthook):
    if "decrement id ref count" in str(value):
        return
    default(kind, value, traceback)


def _missing_backend(error):
    """The line for Keras' backend not installed (a `[jax]` install without KERAS_BACKEND set gets
    Keras' default, tensorflow), else None."""
    backend = console.keras_backend_name()
    if not isinstance(error, ImportError) or getattr(error, "name", None) != backend:
        return None
    return (f"Keras' backend is {backend} (KERAS_BACKEND, else ~/.keras/keras.json; tensorflow when "
            f"neither says) but {backend} is not installed: pip install 'clzoo[{backend}]', or set "
            "KERAS_BACKEND to an installed one (jax, torch, tensorflow)")


def _run(args):
    try:  # TensorFlow's import too: a Ctrl-C during it ends in one line as well
        if args.command in _CHECKS:
            _CHECKS[args.command](args)
        if args.command not in LIGHT_COMMANDS:
            console.quiet_tensorflow()
        console.set_quiet(getattr(args, "quiet", False))
        return args.func(args)
    except (ValueError, FileNotFoundError, FileExistsError, ImportError) as error:
        _error(_missing_backend(error) or error)
        return 2
    except BrokenPipeError:  # the reader left, e.g. `clzoo presets | head -3`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit's flush
        return 0
    except OSError as error:  # disk full, read-only, file-size limit, name too long, permission
        # kept: freeing its frames releases h5py objects of the failed file, which segfaulted;
        # the console script then exits without the interpreter's teardown (console_main)
        _FAULTS.append(error)
        _error(_os_fault(error))
        return 1
    except MemoryError:
        _error("out of memory: use a smaller --batch-size (or fewer images), or a machine with more memory")
        return 1
    except KeyboardInterrupt:
        return _interrupted()
    except Exception as error:  # a file met mid-epoch in tf.data arrives in a TensorFlow op error
        from clzoo.data.file_images import decode_error_line

        line = decode_error_line(error)
        if line is None:
            raise
        _error(line)
        return 2
    finally:
        console.set_quiet(False)


if __name__ == "__main__":
    sys.exit(console_main())
