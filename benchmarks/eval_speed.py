"""Start-up and evaluation wall time of the `clzoo` command, run as a user runs it.

Times `clzoo --help` / `clzoo eval --help` (best of 3 runs each), then one default
`clzoo eval MODEL --data DATA` into a temporary folder, and prints the whole
command's wall time beside the per-step seconds the report records
(`metrics.json` -> `timings`).

    python benchmarks/eval_speed.py --model nscl_resnet20_cifar10 --data ../shared/data/cifar10
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def clzoo_command():
    """The `clzoo` console script beside this Python, else `python -m clzoo`."""
    script = Path(sys.executable).with_name("clzoo")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "clzoo"]


def wall(args, repeats=1, **kwargs):
    """Best wall seconds of `repeats` runs of `clzoo ARGS`, and the last run's result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = subprocess.run(clzoo_command() + args, capture_output=True, text=True, **kwargs)
        best = min(best, time.perf_counter() - start)
        if result.returncode != 0:
            raise SystemExit(f"clzoo {' '.join(args)} failed:\n{result.stderr[-3000:]}")
    return best, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="nscl_resnet20_cifar10",
                        help="preset name, run folder or .keras file")
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent
                                              / "shared" / "data" / "cifar10"))
    parser.add_argument("--metrics", help="as `clzoo eval --metrics` (default: its default)")
    args = parser.parse_args()

    for help_args in (["--help"], ["eval", "--help"]):
        seconds, _ = wall(help_args, repeats=3)
        print(f"clzoo {' '.join(help_args)}: {seconds:.2f} s (best of 3)")

    with tempfile.TemporaryDirectory() as folder:
        command = ["eval", args.model, "--data", args.data, "--output", folder]
        command += ["--metrics", args.metrics] if args.metrics else []
        seconds, result = wall(command)
        timings = json.loads((Path(folder) / "metrics.json").read_text())["timings"]
    print(f"\nclzoo {' '.join(command[:4])}: {seconds:.1f} s wall in all "
          f"(the steps: {timings['total']:.1f} s; the rest is Python / TensorFlow start-up)")
    print("\n| step | seconds |\n| --- | --- |")
    for step, value in timings.items():
        print(f"| {'total of the steps' if step == 'total' else '`' + step + '`'} | {value:.1f} |")
    print(f"| whole command | {seconds:.1f} |")
    print("\n" + "\n".join(line for line in result.stdout.splitlines() if "top-1" in line))


if __name__ == "__main__":
    main()
