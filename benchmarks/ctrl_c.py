"""Seconds from a Ctrl-C to the end of `clzoo train` on a 224-px run streamed from its files.

Usage:
    python benchmarks/ctrl_c.py [--root /tmp/ctrlc] [--after-steps 2]

Writes an ImageNet-shaped folder (JPEGs of 256-500 px, `benchmarks/file_stream.py`), then runs

    CLZOO_MEMORY_BUDGET=16MB clzoo train supcon/imagenet100_224px --data ROOT \\
        --set model.encoder.name=resnet18 --set training.batch_size=16 ...

(the shipped 224-px recipe with a smaller encoder and batch, so a step takes seconds on a CPU),
waits until it has printed `--after-steps` step lines (off a terminal: one every few steps or
30 s), sends SIGINT as a terminal's Ctrl-C does, and prints the seconds until the process exits,
its exit status (130 expected), whether `checkpoint.keras` was written, and the mean step seconds
(so the wait can be read against one step: the current step ends, then the checkpoint is written).
Issue 85 item 2: on 26e85b6 the same took 7.5 minutes (the online kNN monitor ran after the stop).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from file_stream import write_folder  # noqa: E402

OVERRIDES = ["model.encoder.name=resnet18", "training.batch_size=16", "training.epochs=2",
             "training.schedule.warmup_epochs=0", "training.log_every_steps=1",
             "eval.monitor_every=1"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/tmp/ctrlc")
    parser.add_argument("--images", type=int, default=320)
    parser.add_argument("--after-steps", type=int, default=2)
    args = parser.parse_args()
    root = Path(args.root)
    data = root / "data"
    if not (data / "train").is_dir():
        write_folder(data, args.images, classes=10)
    run = root / f"run-{int(time.time())}"
    clzoo = Path(sys.executable).with_name("clzoo")
    command = [str(clzoo), "train", "supcon/imagenet100_224px", "--data", str(data),
               *[item for override in OVERRIDES for item in ("--set", override)], "--output", str(run)]
    env = {**os.environ, "CLZOO_MEMORY_BUDGET": "16MB", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, bufsize=1)
    steps, lines, started = 0, [], time.perf_counter()
    for line in process.stdout:
        lines.append(line.rstrip())
        steps += line.startswith("epoch ") and " step " in line
        if steps >= args.after_steps:
            break
    sent = time.perf_counter()
    process.send_signal(signal.SIGINT)
    rest = process.stdout.read()
    code = process.wait()
    waited = time.perf_counter() - sent
    step_lines = [json.loads(x) for x in (run / "steps.jsonl").read_text().splitlines()] \
        if (run / "steps.jsonl").exists() else []
    result = {"seconds_to_exit": round(waited, 1), "exit": code,
              "checkpoint": (run / "checkpoint.keras").exists(),
              "steps_done": len(step_lines), "seconds_before_ctrl_c": round(sent - started, 1),
              "command": "CLZOO_MEMORY_BUDGET=16MB clzoo " + " ".join(command[1:])}
    print("\n".join(lines[-4:] + rest.strip().splitlines()[-4:]))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
