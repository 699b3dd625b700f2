"""The airbench ablation ladder for a contrastive loss: kNN as each lever of the stack is added.

airbench's ablations (KellerJordan/cifar10-zoo, `airbench_ablations/README.md`)
count the epochs cross-entropy needs for 94% as levers are added one by one.
Here the budget is fixed instead (`--epochs`, 5 by default) and each rung is one
`clzoo train` run of `recipes/<loss>/cifar10_airbench.yaml` with every lever
above it switched off: kNN top-1 (k=20, cosine-weighted) of the shipped
encoder on the full CIFAR-10 test set, and training images/s. The side rows
change one setting of the full stack (width, views, batch size, temperature).

Each run goes to `<output>/<rung>` (outside the checkout) and is resumed or
reused when it is there; nothing else heavy should run beside it, since its
images/s are reported.

Usage (from the repository root):

    python benchmarks/airbench_ladder.py --output /tmp/ladder            # SupCon, 5 epochs
    python benchmarks/airbench_ladder.py --output /tmp/ladder --only stack_full --table
"""

import argparse
import json
import subprocess
from pathlib import Path

# Levers in airbench's order, each rung adding one; the first rung has none.
OFF = {
    "whitening": ["model.encoder_options.whitening=false"],
    "dirac": ["model.encoder_options.dirac=false"],
    "batch_norm": ["model.encoder_options.batch_norm_scale=true",
                   "model.encoder_options.batch_norm_momentum=0.99",
                   "model.encoder_options.batch_norm_epsilon=0.001"],
    "bias_lr": ["training.bias_learning_rate_multiplier=1"],
    "lookahead": ["training.lookahead_every=0"],
    "test_time_translate": ["model.test_time_translate=0"],
    "alternating_flip": ["views.flip=random"],
}
SIDE = {  # one change to the full stack each
    "half_width": ["model.architecture=airbench_half"],
    "two_views": ["views.views=2"],
    "batch_512": ["training.batch_size=512"],
    "temperature_0.2": ["loss.temperature=0.2"],
}
COMMON = ["eval.monitor_every=0", "eval.metrics=[knn]", "eval.baselines=[]"]


def rungs():
    """`{name: overrides}`: `stack_0` (no lever) up to `stack_full`, then the side rows."""
    levers = list(OFF)
    out = {}
    for count in range(len(levers) + 1):
        name = "stack_full" if count == len(levers) else f"stack_{count}"
        out[name] = [o for lever in levers[count:] for o in OFF[lever]]
    out.update(SIDE)
    return out


def run(name, overrides, args):
    folder = Path(args.output) / name
    if (folder / "metrics.json").is_file():
        return json.loads((folder / "metrics.json").read_text())
    sets = [*COMMON, f"training.epochs={args.epochs}", f"data={args.data}",
            f"training.warmup_epochs={round(0.23 * args.epochs, 2)}", *overrides]
    command = ["clzoo", "train", f"recipes/{args.loss}/cifar10_airbench.yaml", "--output",
               str(folder)] + [a for s in sets for a in ("--set", s)]
    if (folder / "checkpoint.keras").is_file():
        command = ["clzoo", "train", "--resume", str(folder)]
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=True)
    return json.loads((folder / "metrics.json").read_text())


def table(results, epochs):
    levers = ["none"] + list(OFF)
    lines = [f"| rung ({epochs} epochs) | lever added | kNN top-1 (k=20) | images/s |",
             "| --- | --- | --- | --- |"]
    for name, metrics in results.items():
        label = (f"+ {levers[int(name.split('_')[1])]}" if name.startswith("stack_")
                 and name != "stack_full" else ("+ " + levers[-1] if name == "stack_full"
                                                else f"full stack, {name}"))
        lines.append(f"| `{name}` | {label} | {100 * metrics['knn_top1']:.2f}% | "
                     f"{metrics['images_per_second']:.0f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True, help="folder for the run folders")
    parser.add_argument("--loss", default="supcon", choices=["supcon", "sincere"])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--data", default="../shared/data/cifar10",
                        help="CIFAR-10 as an image folder, or tfds:cifar10")
    parser.add_argument("--only", nargs="*", help="rung names to run (default: all)")
    parser.add_argument("--table", action="store_true", help="print the markdown table")
    args = parser.parse_args(argv)
    chosen = {k: v for k, v in rungs().items() if not args.only or k in args.only}
    results = {name: run(name, overrides, args) for name, overrides in chosen.items()}
    (Path(args.output) / "ladder.json").write_text(json.dumps(
        {k: {"knn_top1": v["knn_top1"], "images_per_second": v["images_per_second"]}
         for k, v in results.items()}, indent=2))
    if args.table:
        print(table(results, args.epochs))


if __name__ == "__main__":
    main()
