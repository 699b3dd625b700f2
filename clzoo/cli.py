"""Command line: `clzoo train` and `clzoo eval`."""

import argparse
import json
import os
import sys
import time
from pathlib import Path

# TensorFlow's C++ start-up chatter (oneDNN, CUDA probing) hides the progress
# output; users can still ask for it with TF_CPP_MIN_LOG_LEVEL=0.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _train(args):
    from clzoo.train import TrainingDiverged, load_recipe, train

    overrides = list(args.set or [])
    if args.data:
        overrides.append(f"data={args.data}")
    if args.epochs is not None:
        overrides.append(f"training.epochs={args.epochs}")
    if args.batch_size is not None:
        overrides.append(f"training.batch_size={args.batch_size}")
    config = load_recipe(args.recipe, overrides)
    output = Path(args.output or Path("runs") / f"{config['name']}-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        metrics = train(config, output, verbose=1)
    except TrainingDiverged as error:
        print(f"error: {error}", file=sys.stderr)
        return 3
    print(f"\nkNN top-1 (k={metrics['knn_top1_k']}, cosine-weighted) on {config['data']} test: "
          f"{metrics['knn_top1']:.2%}  "
          + "  ".join(f"{k}: {v:.2%}" for k, v in metrics["knn_top1_by_k"].items()))
    print(f"final training loss {metrics['final_train_loss']:.4f} | "
          f"{metrics['images_per_second']:.0f} images/s | wall {metrics['wall_seconds']:.0f} s")
    print(f"wrote {output}/encoder.keras, metrics.json, checkpoint.keras, history.jsonl")
    return 0


def _eval(args):
    import keras

    import clzoo  # noqa: F401  (registers clzoo classes for loading)
    from clzoo.data.cache import atomic_write_text
    from clzoo.train import evaluate_encoder

    target = Path(args.model)
    path = target / "encoder.keras" if target.is_dir() else target
    if not path.is_file():
        print(f"error: no encoder at {path} (expected a run folder or a .keras file)",
              file=sys.stderr)
        return 2
    model = keras.saving.load_model(path)
    encoder = getattr(model, "encoder", model)
    ks = [int(k) for k in args.k.split(",")]
    knn = evaluate_encoder(encoder, args.data, ks=ks)
    result = {"model": str(path), "data": args.data, "knn_top1_by_k": knn}
    print("weighted kNN top-1: " + "  ".join(f"{k}: {v:.2%}" for k, v in knn.items()))
    out = Path(args.output) if args.output else (target if target.is_dir() else path.parent)
    atomic_write_text(out / "eval_metrics.json", json.dumps(result, indent=2) + "\n")
    print(f"wrote {out / 'eval_metrics.json'}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="clzoo", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("train", help="train an encoder from a recipe YAML")
    p.add_argument("recipe", nargs="?", help="recipe YAML (see recipes/)")
    p.add_argument("--data", help="'digits', an image folder with train/ and test/, or tfds:<name>")
    p.add_argument("--epochs", type=int)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--output", help="run folder (default runs/<recipe>-<time>)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a recipe value, e.g. --set loss.temperature=0.2")
    p.set_defaults(func=_train)

    p = commands.add_parser("eval", help="weighted-kNN top-1 of a trained encoder")
    p.add_argument("model", help="run folder or .keras file")
    p.add_argument("--data", required=True)
    p.add_argument("--k", default="1,5,20,200", help="comma-separated k values")
    p.add_argument("--output", help="folder for eval_metrics.json (default: beside the model)")
    p.set_defaults(func=_eval)

    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
