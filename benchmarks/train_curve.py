"""kNN top-1 (k=20) on the full CIFAR-10 test set against wall-clock time and images seen.

Each curve is one `clzoo train` run with the online kNN monitor on the whole
training set (memory, 50,000 images) and the whole test set (queries, 10,000):
`eval.monitor_memory=50000 eval.monitor_queries=10000`. The monitor's own time
(embedding 60,000 images) is inside the wall-clock axis, as a user waits for it.
Points: every `eval.monitor_every` epochs; wall time from the run's start
(`environment.json`) to the TensorBoard event of that epoch's kNN.

Usage (from the repository root; runs are kept outside the checkout):

    # train (or resume) a curve run, then read it
    python benchmarks/train_curve.py --train recipes/supcon/cifar10_fast.yaml --output /tmp/runs/supcon
    # plot and tabulate finished runs on one set of axes
    python benchmarks/train_curve.py /tmp/runs/supcon /tmp/runs/sincere /tmp/runs/small \\
        --labels "SupCon, fast recipe" "SINCERE, fast recipe" "SINCERE, small recipe" \\
        --plot benchmarks/train_curve.png
    # add a new run to curves measured in an earlier session
    python benchmarks/train_curve.py /tmp/runs/airbench --labels "airbench stack" \\
        --previous benchmarks/train_curve.json --plot benchmarks/train_curve.png \\
        --json benchmarks/train_curve.json
    # replace an earlier curve by its re-run: --drop "its label" beside --previous
"""

import argparse
import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data_default import CIFAR10_HELP, default_cifar10  # noqa: E402  (benchmarks/data_default.py)

MONITOR = ["eval.monitor_memory=50000", "eval.monitor_queries=10000"]
TAG = "epoch_knn_top1_k20"
STARTED = "%Y-%m-%dT%H:%M:%S%z"  # environment.json's "started" (clzoo/train/runner.py)


def train(recipe, output, data, every):
    """`clzoo train` (or `--resume`) with the full-test kNN monitor; returns its exit code."""
    output = Path(output)
    if (output / "metrics.json").is_file():
        return 0
    if (output / "checkpoint.keras").is_file():
        command = ["clzoo", "train", "--resume", str(output)]
    else:
        sets = [*MONITOR, f"eval.monitor_every={every}"]
        command = ["clzoo", "train", str(recipe), "--data", data, "--output", str(output)]
        command += [arg for item in sets for arg in ("--set", item)]
    print("$", " ".join(command), flush=True)
    return subprocess.call(command)


def _event_times(run):
    """`{epoch: unix time}` of each kNN scalar in the run's TensorBoard events."""
    import tensorflow as tf

    times = {}
    for path in sorted((Path(run) / "tensorboard").rglob("events.out.tfevents.*")):
        for record in tf.data.TFRecordDataset(str(path)):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                if value.tag == TAG:
                    times[int(event.step) + 1] = event.wall_time
    return times


def read_curve(run):
    """Rows `{epoch, images_seen, wall_seconds, knn_top1_k20}` of one run folder.

    Raises:
        ValueError: the run has no full-test kNN points (trained without `MONITOR`).
    """
    run = Path(run)
    recipe = yaml.safe_load((run / "recipe.yaml").read_text())
    monitor = recipe["eval"]
    if (monitor["monitor_memory"], monitor["monitor_queries"]) != (50000, 10000):
        raise ValueError(f"{run}: its kNN monitor used {monitor['monitor_memory']} memory / "
                         f"{monitor['monitor_queries']} query images, not the full CIFAR-10 "
                         "splits; train it with benchmarks/train_curve.py --train")
    # clzoo writes %z as +0000, which datetime.fromisoformat reads only from Python 3.11
    started = datetime.strptime(json.loads((run / "environment.json").read_text())["started"], STARTED)
    times = _event_times(run)
    batch = recipe["training"]["batch_size"]
    per_epoch = (50000 // batch) * batch
    rows = []
    for line in (run / "history.jsonl").read_text().splitlines():
        row = json.loads(line)
        if TAG.removeprefix("epoch_") in row and row["epoch"] in times:
            rows.append({"epoch": row["epoch"], "images_seen": row["epoch"] * per_epoch,
                         "wall_seconds": round(times[row["epoch"]] - started.timestamp(), 1),
                         "knn_top1_k20": row["knn_top1_k20"]})
    if not rows:
        raise ValueError(f"{run}: no kNN points in history.jsonl / tensorboard")
    return rows


def _points(specs, parser):
    """`--point` end points as one-row curves."""
    points = {}
    for spec in specs:
        label, _, values = spec.rpartition("=")
        try:
            minutes, images, knn = (float(v) for v in values.split(","))
        except ValueError:
            parser.error(f"--point takes LABEL=MINUTES,IMAGES,KNN. Received: {spec!r}")
        points[label] = [{"epoch": "end", "images_seen": int(images),
                          "wall_seconds": 60 * minutes, "knn_top1_k20": knn}]
    return points


def table(curves):
    lines = ["| run | epoch | images seen | wall (min) | kNN top-1 (k=20) |",
             "| --- | --- | --- | --- | --- |"]
    for label, rows in curves.items():
        for r in rows:
            lines.append(f"| {label} | {r['epoch']} | {r['images_seen']:,} | "
                         f"{r['wall_seconds'] / 60:.1f} | {r['knn_top1_k20']:.2%} |")
    return "\n".join(lines)


def plot(curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True)
    for label, rows in curves.items():
        knn = [100 * r["knn_top1_k20"] for r in rows]
        axes[0].plot([r["wall_seconds"] / 60 for r in rows], knn, marker="o", label=label)
        axes[1].plot([r["images_seen"] / 1e6 for r in rows], knn, marker="o", label=label)
    axes[0].set_xlabel("wall-clock time on 2 CPU cores (minutes)")
    axes[1].set_xlabel("training images seen (millions; a 2-view image counts once)")
    axes[0].set_ylabel("weighted kNN top-1, k=20, CIFAR-10 test (%)")
    for ax in axes:
        ax.grid(alpha=0.3)
    # below the axes: long labels inside them hide the curves
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=2, fontsize="small")
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", help="finished run folders to read")
    parser.add_argument("--labels", nargs="*", help="one label per run (default: folder names)")
    parser.add_argument("--train", metavar="RECIPE", help="train this recipe first into --output")
    parser.add_argument("--output", help="the run folder for --train")
    parser.add_argument("--data", default=default_cifar10(), help=CIFAR10_HELP)
    parser.add_argument("--every", type=int, default=3, help="epochs between kNN points")
    parser.add_argument("--point", action="append", default=[], metavar="LABEL=MIN,IMAGES,KNN",
                        help="a single measured end point to show beside the curves, e.g. "
                             "'old recipe=26.1,299520,0.6877' (minutes, images seen, kNN top-1)")
    parser.add_argument("--previous", metavar="JSON",
                        help="curves measured earlier (a --json file of this script) to draw beside "
                             "these, e.g. runs no longer on this machine")
    parser.add_argument("--drop", nargs="*", default=[], metavar="LABEL",
                        help="curves of --previous to leave out (replaced by a re-run)")
    parser.add_argument("--plot", help="write the figure here (PNG)")
    parser.add_argument("--json", help="write the curves here")
    args = parser.parse_args(argv)
    if args.train:
        if not args.output:
            parser.error("--train needs --output (a run folder outside the checkout)")
        if train(args.train, args.output, args.data, args.every):
            return 1
        args.runs = [*args.runs, args.output]
    labels = args.labels or [Path(r).name for r in args.runs]
    if len(labels) != len(args.runs):
        parser.error(f"{len(args.runs)} runs but {len(labels)} labels")
    if args.previous and not Path(args.previous).is_file():
        parser.error(f"--previous: no such file: {args.previous}")
    curves = json.loads(Path(args.previous).read_text()) if args.previous else {}
    unknown = [label for label in args.drop if label not in curves]
    if unknown:
        parser.error(f"--drop: no such curve in --previous: {unknown}. Its curves: {list(curves)}")
    curves = {label: rows for label, rows in curves.items() if label not in args.drop}
    curves.update({label: read_curve(run) for label, run in zip(labels, args.runs)})
    curves.update(_points(args.point, parser))
    print(table(curves))
    if args.plot:
        plot(curves, args.plot)
    if args.json:
        Path(args.json).write_text(json.dumps(curves, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
