"""Where one torch process and two `torchrun` processes part: the training loss step by step.

Usage:
    python benchmarks/torch_processes_agreement.py [--recipe sincere_digits] [--epochs 1]

Runs `clzoo train RECIPE --set training.log_every_steps=1` once in one process and once as two
gloo processes (`--strategy multi_worker`), one thread each (so the one-process run's reductions
are not split over threads either), with no end-of-run metrics but kNN, then prints the logged
loss of every step (Keras' running mean over the epoch) for both and their relative difference,
and the largest absolute difference of the encoder weights. Two processes compute the same
global batch's loss and gradient in another summation order; batch norm over the global batch
sums its moments across processes. The question it answers: do the runs agree to float32
rounding at first (the same computation) and then drift apart as training amplifies that
rounding, or do they differ from the first step (a different computation)? Writes
`torch_processes_agreement.json` beside itself.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_processes_speed import arguments, two_processes  # noqa: E402  (their torchrun command)


def _train(command, env, output):
    done = subprocess.run(command + ["--output", str(output)], env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return [json.loads(line)["loss"] for line in (output / "steps.jsonl").read_text().splitlines()]


def _weights_apart(one, two):
    os.environ.setdefault("KERAS_BACKEND", "torch")
    from clzoo.saving import load_model

    first, second = load_model(one).get_weights(), load_model(two).get_weights()
    return max(float(np.max(np.abs(a - b))) for a, b in zip(first, second)), \
        max(float(np.max(np.abs(a))) for a in first)


def main():
    args = arguments(__doc__.splitlines()[0])
    env = {**os.environ, "KERAS_BACKEND": "torch", "CLZOO_TORCH_THREADS": "1", "OMP_NUM_THREADS": "1"}
    common = [str(Path(sys.executable).with_name("clzoo")), "train", args.recipe,
              "--set", f"training.epochs={args.epochs}", "--set", "training.log_every_steps=1",
              "--set", "eval.baselines=[]", "--set", "eval.metrics=[knn]"]
    root = Path(tempfile.mkdtemp(prefix="clzoo-torch-agreement-"))
    try:
        one = _train(common, env, root / "one")
        two = _train(two_processes(common), env, root / "two")
        apart, largest = _weights_apart(root / "one" / "encoder.keras", root / "two" / "encoder.keras")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{args.recipe}, {args.epochs} epoch(s): logged loss per step, 1 process vs 2 processes")
    print("| step | 1 process | 2 processes | relative difference |")
    print("| --- | --- | --- | --- |")
    rows = []
    for step, (a, b) in enumerate(zip(one, two), 1):
        rows.append({"step": step, "one": a, "two": b, "relative": abs(a - b) / abs(a)})
        print(f"| {step} | {a:.7f} | {b:.7f} | {rows[-1]['relative']:.1e} |")
    print(f"encoder weights: largest absolute difference {apart:.3g} (largest weight {largest:.3g})")
    record = {"recipe": args.recipe, "epochs": args.epochs, "steps": rows,
              "weights_max_abs_difference": apart, "weights_max_abs": largest}
    Path(__file__).with_name("torch_processes_agreement.json").write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
