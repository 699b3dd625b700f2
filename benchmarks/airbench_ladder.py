"""The airbench ablation ladder for a contrastive loss: kNN as each lever of the stack is added.

airbench's ablations (KellerJordan/cifar10-zoo, `airbench_ablations/README.md`)
count the epochs cross-entropy needs for 94% as levers are added one by one.
Here the budget is fixed instead (`--epochs`, 5 by default) and each rung is one
`clzoo train` run of `recipes/<loss>/cifar10_airbench.yaml` with every lever
above it switched off: kNN top-1 (k=20, cosine-weighted) of the shipped
encoder on the full CIFAR-10 test set, and training images/s. The side rows
change one setting of the full stack (width, views, batch size, temperature, an
auxiliary cross-entropy head).

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
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data_default import CIFAR10_HELP, default_cifar10  # noqa: E402  (benchmarks/data_default.py)

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
    "auxiliary_ce": ["model.auxiliary_cross_entropy_weight=1"],  # + CE head, label smoothing 0.2
    "offset_decay_64": ["training.offset_weight_decay_multiplier=64"],  # as the recipes ship
    # the run ends on an average of its weights over about 50 steps (clzoo.train.levers)
    "ema": ["training.levers=[{name: ema, momentum: 0.98}]"],
}
# The ladder measures airbench94's stack: the batch-norm offsets decay at the weights' rate
# (the recipes since 2026-11-27 decay them 64x: the side row offset_decay_64).
COMMON = ["eval.monitor_every=0", "eval.metrics=[knn]", "eval.baselines=[]",
          "training.offset_weight_decay_multiplier=1"]


def rungs():
    """`{name: overrides}`: `stack_0` (no lever) up to `stack_full`, then the side rows."""
    levers = list(OFF)
    out = {}
    for count in range(len(levers) + 1):
        name = "stack_full" if count == len(levers) else f"stack_{count}"
        out[name] = [o for lever in levers[count:] for o in OFF[lever]]
    out.update(SIDE)
    return out


def settings(overrides, epochs, data):
    """The `--set` values of one rung: the common ones unless the rung sets that key itself
    (`clzoo train` refuses a key set twice), the budget, the data, then the rung's own."""
    own = {o.split("=")[0] for o in overrides}
    return [*(c for c in COMMON if c.split("=")[0] not in own), f"training.epochs={epochs}",
            f"data={data}", f"training.warmup_epochs={round(0.23 * epochs, 2)}", *overrides]


def run(name, overrides, args):
    """One rung's `RunResult` (trained, resumed or reused), or None when its run failed."""
    from clzoo.eval.records import read_run  # noqa: PLC0415 (--help imports nothing heavy)

    folder = Path(args.output) / name
    if (folder / "metrics.json").is_file():
        return read_run(folder)
    sets = settings(overrides, args.epochs, args.data)
    clzoo = [sys.executable, "-m", "clzoo.cli", "train"]
    command = clzoo + [f"recipes/{args.loss}/cifar10_airbench.yaml", "--output", str(folder)]
    command += [a for s in sets for a in ("--set", s)]
    if (folder / "checkpoint.keras").is_file():
        command = clzoo + ["--resume", str(folder)]
    print("$", " ".join(command), flush=True)
    if subprocess.run(command).returncode:
        print(f"rung {name} failed; the others go on", flush=True)
        return None
    return read_run(folder)


def table(results, epochs):
    added = ["none"] + list(OFF)
    lines = [f"| rung ({epochs} epochs) | change | kNN top-1 (k=20) | images/s |",
             "| --- | --- | --- | --- |"]
    for name, metrics in results.items():
        if name == "stack_full":
            change = f"+ {added[-1]} (the whole stack)"
        elif name.startswith("stack_"):
            change = f"+ {added[int(name.split('_')[1])]}"
        else:
            change = f"the whole stack, {name}"
        speed = metrics.get("images_per_second")  # None for a run resumed after its last step
        lines.append(f"| `{name}` | {change} | {100 * metrics['knn_top1']:.2f}% | "
                     f"{'-' if speed is None else f'{speed:.0f}'} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True, help="folder for the run folders")
    parser.add_argument("--loss", default="supcon", choices=["supcon", "sincere"])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--data", default=default_cifar10(), help=CIFAR10_HELP)
    parser.add_argument("--only", nargs="*", help="rung names to run (default: all)")
    parser.add_argument("--table", action="store_true", help="print the markdown table")
    args = parser.parse_args(argv)
    every = rungs()
    unknown = sorted(set(args.only or []) - set(every))
    if unknown:  # a misspelt rung would otherwise run nothing and exit 0
        parser.error(f"--only: no such rung {unknown}. The rungs: {list(every)}")
    chosen = {k: v for k, v in every.items() if not args.only or k in args.only}
    results = {name: run(name, overrides, args) for name, overrides in chosen.items()}
    results = {name: metrics for name, metrics in results.items() if metrics is not None}
    path = Path(args.output) / "ladder.json"
    merged = json.loads(path.read_text()) if path.is_file() else {}  # rungs of earlier calls
    merged.update({k: {"knn_top1": v.knn_top1, "images_per_second": v.images_per_second}
                   for k, v in results.items()})
    path.write_text(json.dumps(merged, indent=2) + "\n")
    if args.table:
        print(table({k: merged[k] for k in every if k in merged}, args.epochs))
    return 0 if len(results) == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
