"""`clzoo eval`: a model's metrics on a data set, written as `metrics.json`, `report.md` and plots
(by default beside a run's model, in the next free `eval-N`)."""

from pathlib import Path

from clzoo.cli.arguments import add_bare_encoder, add_image_size, add_overwrite, int_list, user_path, whole
from clzoo.cli.resolve import (
    BARE,
    k_checks,
    load_encoder,
    model_and_data_checks,
    model_name,
    model_path,
    resolved_source,
)
from clzoo.run_reuse import unused_report_folder

# The metric choices and defaults, kept here so that `clzoo --help` imports neither Keras nor
# TensorFlow; tests/test_cli.py checks them against the clzoo.eval.METRICS registry / DEFAULT_METRICS.
EVAL_METRICS = ("knn", "ncc", "probe", "calibration", "few_shot", "geometry", "separation",
                "loss_gap", "noisy_labels", "map", "retrieval", "sgd_probe", "coarse_to_fine")
EVAL_DEFAULT_METRICS = tuple(m for m in EVAL_METRICS if m not in ("sgd_probe", "coarse_to_fine"))


def add_parser(commands):
    p = commands.add_parser("eval", help="evaluate a trained encoder: metrics.json, report.md, plots")
    p.add_argument("model", help="run folder, .keras file, or preset (name, hf://owner/repo, folder)")
    p.add_argument("--data", help="same forms as `clzoo train --data`; default: a run "
                   "folder's own data (and its image_size)")
    add_image_size(p)
    p.add_argument("--metrics", default=",".join(EVAL_DEFAULT_METRICS),
                   help=f"comma-separated, from {', '.join(EVAL_METRICS)} "
                        "(default: all but sgd_probe and coarse_to_fine)")
    p.add_argument("--k", type=int_list,
                   help="comma-separated k of kNN and of retrieval precision@k / recall@k, each at "
                        "most the training images (default: 1,5,20,200, less those above them)")
    p.add_argument("--shots", default="10,100", type=int_list,
                   help="comma-separated m for m-shot errors")
    p.add_argument("--probe-epochs", type=whole(1), default=100,
                   help="epochs of sgd_probe (app. J: 100)")
    p.add_argument("--space", choices=("encoder", "projection"), default="encoder",
                   help="evaluate encoder features, or the projection head's embeddings")
    p.add_argument("--output", type=user_path,
                   help="report folder (default: <run>/eval, with --bare-encoder <run>/eval_bare_encoder)")
    add_bare_encoder(p)
    add_overwrite(p)
    p.set_defaults(func=_eval)


def checks(args):
    """Before Keras: the model, the `--data` spec and an explicit `--k`."""
    model_and_data_checks(args, args.model)
    k_checks(args)


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
    path = model_path(args.model, args.space)  # an unknown model refused before the folder
    name = "eval_bare_encoder" if args.bare_encoder else "eval"
    out = Path(args.output) if args.output else _default_output(
        args.model, path, name if args.space == "encoder" else "eval_projection")
    if not args.output and not args.overwrite:
        out = unused_report_folder(out)
    what = "--output" if args.output else "the report folder (default --output)"
    with locked_output(out, args.overwrite, folder=True, what=what) as out:
        check_report_folder(out)
        return _eval_into(out, args, metrics)


def _eval_into(out, args, metrics):
    from clzoo.eval import evaluate
    from clzoo.eval.steps import StepTimer

    source = resolved_source(args)
    timer = StepTimer(total=5 + len(metrics))  # model, data, 2 embeddings, metrics, plots
    with timer.step("load_model", str(args.model)):
        encoder, path = load_encoder(args.model, args.space, args.bare_encoder)
    if args.bare_encoder:
        print(f"{args.model}{BARE}: one pass per image; its metrics are not the model's", flush=True)
    result = evaluate(encoder, source, metrics, output_dir=out, ks=args.k, shots=args.shots,
                      probe_epochs=args.probe_epochs, timings=timer, plan=True,
                      info={"model": model_name(args.model, path, args.bare_encoder),
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
