"""`clzoo train`: a recipe (a file, a built-in name, or a run's own for `--resume`) and its
command-line overrides, checked before Keras, then the run and its closing summary."""

import os
import re
import sys
import time
from pathlib import Path

from clzoo.cli.arguments import add_image_size, user_path, whole
from clzoo.cli.errors import print_error

_FLAGS = (("--data", "data", "data"), ("--epochs", "training.epochs", "epochs"),
          ("--batch-size", "training.batch_size", "batch_size"),
          ("--strategy", "training.strategy", "strategy"), ("--image-size", "image_size", "image_size"))


def add_parser(commands):
    p = commands.add_parser("train", help="train an encoder from a recipe YAML")
    p.add_argument("recipe", nargs="?", help="recipe YAML, or a built-in recipe's name (clzoo list "
                                              "recipes), e.g. sincere_digits")
    p.add_argument("--data", help="'digits', an image folder with train/ and test/, or tfds:<name>")
    add_image_size(p)
    p.add_argument("--epochs", type=whole(1), help="training epochs (overrides training.epochs)")
    p.add_argument("--batch-size", type=whole(1),
                   help="images per step, all replicas together (overrides training.batch_size)")
    p.add_argument("--output", type=user_path, help="run folder (default runs/<recipe>-<time>)")
    p.add_argument("--strategy", choices=("auto", "one_device", "mirrored", "multi_worker"),
                   help="where to train (default: the recipe's training.strategy, 'auto': "
                        "MirroredStrategy when several GPUs are visible; multi_worker reads TF_CONFIG "
                        "on TensorFlow, KERAS_DISTRIBUTION_* on JAX, and runs under torchrun on "
                        "PyTorch: docs/training.md)")
    p.add_argument("--resume", type=user_path, nargs="?", const=True, metavar="RUN",
                   help="continue RUN (or --output) from its last checkpoint: same optimizer "
                        "state, schedule step and data order")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a recipe value, e.g. --set loss.temperature=0.2")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress output: only the final results (and errors)")
    p.set_defaults(func=_train)


def checks(args):
    """Before Keras: the thread setting, the recipe file, and its keys, types and ranges with the
    overrides."""
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
            print_error(_as_typed(args, line))
        raise ValueError(_as_typed(args, error.lines[-1])) from None


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
            print_error(_as_typed(args, line))
        return 2
    except TrainingDiverged as error:
        print_error(error)
        return 3
    except TrainingInterrupted as error:
        print(f"stopped: {error}", file=sys.stderr)
        return 128 + int(getattr(signal, error.signal))
    except (FileExistsError, ValueError) as error:
        print_error(error)
        return 2
    except OSError as error:  # a full disk while checkpointing: the previous checkpoint is kept
        print_error(error)
        return 1
    if run is None:  # a non-chief worker: the chief writes the run
        return 0

    print("\n" + _results_table(run, config.data))
    speed = speed_text(run)
    print(f"final training loss {run.final_loss:.4f} | {speed} | wall {run.wall_seconds:.0f} s")
    print(f"wrote {output}/: {_run_files(output)}")
    return 0


def speed_text(run):
    """The closing line's speed of a `RunResult`: its images/s, or why there is none (a resume
    at the last step; a run of one step, as the speed is timed after the first, which compiles)."""
    from clzoo.eval.plan import rate_text

    if run.images_per_second is not None:
        return f"{rate_text(run.images_per_second)} images/s"
    resumed = run.summary.get("resumed_from_step")
    if resumed is not None and resumed == run.steps:
        return "no steps left to train"
    return "speed not measured (it is timed after the first step)"


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


def _label_free_table(run, data):
    """An unlabelled run's alignment / uniformity / effective rank beside its random-init encoder's."""
    rows = [("trained encoder", run.label_free)] + [
        ("random init (untrained)" if name == "random_init" else name, row)
        for name, row in run.label_free_baselines.items()]
    most = min(run.label_free["images"], run.label_free.get("features") or run.label_free["images"])
    lines = [f"Label-free metrics on {run.label_free['images']:,} images of {data}, two views "
             "each (alignment: lower is closer; uniformity: lower is more uniform; effective rank: "
             f"1 to {most:,}, the smaller of images and feature width):",
             f"  {'':<26}{'alignment':>11}{'uniformity':>12}{'eff. rank':>11}"]
    for name, row in rows:
        lines.append(f"  {name:<26}{row['alignment']:>11.4f}{row['uniformity']:>12.4f}"
                     f"{row['effective_rank']:>11.1f}")
    return "\n".join(lines + ["  kNN and linear probe: clzoo eval RUN --data FOLDER with a labelled "
                              "folder (train/<class>/ and test/<class>/)"])


def _results_table(run, data):
    """The trained encoder's kNN / probe (a `RunResult`) beside its raw-pixel and random-init
    baselines; a run on an unlabelled folder, its label-free metrics."""
    if run.label_free:
        return _label_free_table(run, data)
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
