"""`clzoo compare`: two models evaluated alike on one data set, their difference with bootstrap
intervals (`compare.md`, `compare.json`, and each model's report under `A/` and `B/`)."""

import json

from clzoo import console
from clzoo.cli.arguments import add_image_size, add_overwrite, int_list, user_path, whole
from clzoo.cli.resolve import (
    k_checks,
    load_encoder,
    model_and_data_checks,
    model_name,
    model_path,
    resolved_source,
)

# Fewest bootstrap resamples (clzoo.eval.bootstrap.MIN_RESAMPLES, spelled out so that `clzoo --help`
# imports nothing of clzoo.eval; tests/test_cli.py checks).
MIN_RESAMPLES = 100


def add_parser(commands):
    p = commands.add_parser("compare", help="evaluate two encoders with bootstrap intervals")
    p.add_argument("model_a", help="run folder or .keras file")
    p.add_argument("model_b", help="run folder or .keras file")
    p.add_argument("--data", help="same forms as `clzoo train --data`; default: a run "
                   "folder's own data (and its image_size)")
    add_image_size(p)
    p.add_argument("--metrics", default="knn,ncc,probe,calibration,geometry,separation,loss_gap",
                   help="comma-separated, as `clzoo eval --metrics`")
    p.add_argument("--k", type=int_list, help="comma-separated k of kNN, each at most the training "
                                              "images (default: 1,5,20,200, less those above them)")
    p.add_argument("--resamples", type=whole(MIN_RESAMPLES), default=1000,
                   help=f"bootstrap resamples of the test set for each interval, at least "
                        f"{MIN_RESAMPLES} (default: 1000)")
    p.add_argument("--space", choices=("encoder", "projection"), default="encoder",
                   help="compare encoder features, or the projection head's embeddings")
    p.add_argument("--output", type=user_path, help="folder (default: ./compare)")
    add_overwrite(p)
    p.set_defaults(func=_compare)


def checks(args):
    """Before Keras: both models, the `--data` spec and an explicit `--k`."""
    model_and_data_checks(args, args.model_a, args.model_b)
    k_checks(args)


def _compare(args):
    from clzoo.eval import parse_metrics
    from clzoo.eval.report_folder import check_report_folder
    from clzoo.files import locked_output

    metrics = parse_metrics(args.metrics)
    targets = (("A", args.model_a), ("B", args.model_b))
    for _, target in targets:
        model_path(target, args.space)
    with locked_output(args.output or "compare", args.overwrite, folder=True) as out:
        for label, _ in targets:  # every input and output checked before any evaluation
            check_report_folder(out / label)
        return _compare_into(out, args, metrics, targets)


def _compare_into(out, args, metrics, targets):
    from clzoo.eval import compare_results, comparison_markdown, evaluate
    from clzoo.eval.plan import eval_plan, forward_rate
    from clzoo.files import atomic_write_text

    source = resolved_source(args)
    encoders = [load_encoder(target, args.space) for _, target in targets]
    train, test = source.load("train", stream="auto"), source.load("test", stream="auto")
    rate = forward_rate(encoders[0][0], train.images, size=encoders[0][0].input_shape[1],
                        verbose=not console.is_quiet())
    print(eval_plan(metrics, len(train), len(test), rate, encoders=2)
          + f" Then {args.resamples} bootstrap resamples of A - B per classifier.", flush=True)
    ks = _compare_ks(args.k, len(train))
    results, names = [], []
    for (label, target), (encoder, path) in zip(targets, encoders):
        names.append(f"{label}: {model_name(target, path)}")
        results.append(evaluate(encoder, (train, test), metrics, output_dir=out / label, ks=ks,
                                info={"model": model_name(target, path), "space": args.space,
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
