"""Training-step speed: clzoo's `fit` on TensorFlow / JAX / torch vs a plain PyTorch step.

Every contender lives in its own worker process (`KERAS_BACKEND` is fixed per
process), builds its model, warms up, then waits; the parent tells the workers
in turn "run a round now" (A, B, C, A, B, C, ...) so that load changes on the
machine hit every contender alike. A round is a fixed number of training steps
on one synthetic batch (`batch` images x 2 views, 32x32x3, 10 classes); the
table gives the best and the median round in images/s (`batch * views * steps
/ seconds`), and the ratio to the plain PyTorch channels_last step.

- clzoo: the model, loss and optimizer from the recipe builders
  (`clzoo.train.build_model` / `build_loss` / `build_optimizer`, SupCon loss,
  SGD with momentum), compiled as `clzoo train` compiles it, trained by
  `model.fit` on a repeated `tf.data` batch.
- PyTorch: the same network written here from the papers (ResNet-20: He et al.
  2016 sec. 4.2; CIFAR ResNet-18: 3x3 stem, no max-pool; 1x1 projection
  shortcuts where the shape changes, as in `clzoo.models.cifar_resnet`), the
  same head (Linear-ReLU-Linear, L2-normalized) and SupCon's L_out (Khosla et
  al. 2020, eq. 2), SGD with momentum; channels_first and channels_last.

Usage (from the repository root):

    python benchmarks/train_step.py --archs resnet20 resnet18 --write-readme
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VIEWS, SIZE, CLASSES = 2, 32, 10
LEARNING_RATE, MOMENTUM, TEMPERATURE = 0.05, 0.9, 0.1

# contender -> (kind, KERAS_BACKEND, extra environment)
CONTENDERS = {
    "clzoo-tensorflow": ("keras", "tensorflow", {}),
    "clzoo-jax": ("keras", "jax", {}),
    "clzoo-torch": ("keras", "torch", {}),
    "pytorch-channels_first": ("torch", None, {}),
    "pytorch-channels_last": ("torch", None, {}),
}
REFERENCE = "pytorch-channels_last"


# ----------------------------------------------------------------------------- clzoo worker
def keras_step(arch, batch):
    """`run(steps) -> seconds` for clzoo's `fit`, built as `clzoo train` builds it."""
    import numpy as np
    import tensorflow as tf

    from clzoo.train import load_recipe
    from clzoo.train.builders import build_loss, build_optimizer
    from clzoo.train.determinism import seed_everything
    from clzoo.train.tasks import build_model

    recipe = load_recipe(None, [f"model.architecture={arch}", "loss.name=SupConLoss",
                                f"loss.temperature={TEMPERATURE}", f"training.batch_size={batch}",
                                f"training.learning_rate={LEARNING_RATE}", "training.warmup_epochs=0",
                                "training.schedule=constant"])
    seed_everything(recipe.seed, deterministic=recipe.training.deterministic)
    model = build_model(recipe)
    options = json.loads(os.environ.get("CLZOO_BENCH_COMPILE", "{}"))  # clzoo train passes none
    model.compile(optimizer=build_optimizer(recipe, 1000), loss=build_loss(recipe), **options)
    rng = np.random.default_rng(0)
    images = rng.random((batch, VIEWS, SIZE, SIZE, 3), dtype=np.float32)
    labels = rng.integers(0, CLASSES, batch).astype("int32")
    data = tf.data.Dataset.from_tensors((images, labels)).repeat()

    def run(steps):
        started = time.perf_counter()
        model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0)
        return time.perf_counter() - started

    return run


# ----------------------------------------------------------------------------- PyTorch worker
def torch_resnet(arch):
    """CIFAR-stem ResNet (ResNet-20 or ResNet-18) + SupCon head, as `torch.nn.Module`."""
    import torch
    from torch import nn

    blocks, widths = {"resnet20": ((3, 3, 3), (16, 32, 64)),
                      "resnet18": ((2, 2, 2, 2), (64, 128, 256, 512))}[arch]

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Identity()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                              nn.BatchNorm2d(cout))

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(x))

    cin = widths[0]
    layers = [nn.Conv2d(3, cin, 3, 1, 1, bias=False), nn.BatchNorm2d(cin), nn.ReLU()]
    for stage, (count, width) in enumerate(zip(blocks, widths)):
        for block in range(count):
            layers.append(Block(cin, width, 2 if stage > 0 and block == 0 else 1))
            cin = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1))
            self.register_buffer("std", torch.tensor([0.2470, 0.2435, 0.2616]).view(1, 3, 1, 1))
            self.encoder = nn.Sequential(*layers)
            self.head = nn.Sequential(nn.Linear(cin, cin), nn.ReLU(), nn.Linear(cin, 128))

        def forward(self, x):
            z = self.head(self.encoder((x - self.mean) / self.std))
            return nn.functional.normalize(z, dim=1)

    return Model()


def supcon_loss(z, labels, temperature):
    """SupCon L_out (Khosla et al. 2020, eq. 2) over N = 2B embeddings `z` (unit rows)."""
    import torch

    n = z.shape[0]
    logits = z @ z.T / temperature
    self_mask = torch.eye(n, dtype=torch.bool, device=z.device)
    logits = logits.masked_fill(self_mask, float("-inf"))
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    positives = (labels[:, None] == labels[None, :]) & ~self_mask
    mean_log_prob = (log_prob.masked_fill(~positives, 0).sum(1)) / positives.sum(1).clamp(min=1)
    return -mean_log_prob.mean()


def torch_step(arch, batch, channels_last):
    import numpy as np
    import torch

    torch.manual_seed(0)
    model = torch_resnet(arch)
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM,
                                weight_decay=1e-4)
    rng = np.random.default_rng(0)
    images = torch.from_numpy(rng.random((VIEWS * batch, 3, SIZE, SIZE), dtype=np.float32))
    labels = torch.from_numpy(rng.integers(0, CLASSES, batch)).repeat(VIEWS)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        images = images.contiguous(memory_format=torch.channels_last)
    model.train()

    def run(steps):
        started = time.perf_counter()
        for _ in range(steps):
            optimizer.zero_grad(set_to_none=True)
            loss = supcon_loss(model(images), labels, TEMPERATURE)
            loss.backward()
            optimizer.step()
        loss.item()
        return time.perf_counter() - started

    return run


def worker(name, arch, batch, warmup):
    kind = CONTENDERS[name][0]
    if kind == "keras":
        run = keras_step(arch, batch)
    else:
        run = torch_step(arch, batch, channels_last=name.endswith("channels_last"))
    run(warmup)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = line.split()
        if not command or command[0] == "quit":
            break
        print(json.dumps({"seconds": run(int(command[1]))}), flush=True)


# ----------------------------------------------------------------------------- parent
def start(name, arch, args):
    kind, backend, extra = CONTENDERS[name]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2", **extra}
    if backend:
        env["KERAS_BACKEND"] = backend
    command = [sys.executable, __file__, "--worker", name, "--variants", json.dumps({name: CONTENDERS[name]}),
               "--archs", arch, "--batch", str(args.batch), "--warmup", str(args.warmup)]
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)


def reply(process, name):
    line = process.stdout.readline()
    if not line:
        raise RuntimeError(f"worker {name} died (exit code {process.wait()})")
    return json.loads(line)


def measure(arch, names, args):
    """{name: [images/s per round]}, rounds interleaved across the workers."""
    processes = {}
    for name in names:  # one at a time: warm-ups (compiling) would otherwise share the cores
        processes[name] = start(name, arch, args)
        reply(processes[name], name)
    steps = args.steps[arch] if isinstance(args.steps, dict) else args.steps
    rates = {name: [] for name in names}
    for _ in range(args.rounds):
        for name, process in processes.items():
            process.stdin.write(f"round {steps}\n")
            process.stdin.flush()
            seconds = reply(process, name)["seconds"]
            rates[name].append(args.batch * VIEWS * steps / seconds)
            print(f"  {arch} {name}: {rates[name][-1]:.1f} images/s", file=sys.stderr, flush=True)
    for process in processes.values():
        process.stdin.write("quit\n")
        process.stdin.flush()
        process.wait()
    return rates


def table(results, batch):
    lines = [f"| model | contender | images/s best | images/s median | median / {REFERENCE} |",
             "| --- | --- | --- | --- | --- |"]
    for arch, rates in results.items():
        reference = statistics.median(rates[REFERENCE]) if REFERENCE in rates else float("nan")
        for name, values in rates.items():
            median = statistics.median(values)
            lines.append(f"| {arch} | {name} | {max(values):.1f} | {median:.1f} | "
                         f"{median / reference:.2f}x |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", nargs="+", default=["resnet20", "resnet18"])
    parser.add_argument("--contenders", nargs="+", default=list(CONTENDERS))
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=None,
                        help="steps per round (default: 10 for resnet20, 3 for resnet18)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", default=None,
                        help='extra contenders as JSON {"name": ["keras" | "torch", backend, {env}]}; '
                             'env CLZOO_BENCH_COMPILE (JSON) adds model.compile arguments')
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variants:
        variants = json.loads(args.variants)
        CONTENDERS.update({name: tuple(spec) for name, spec in variants.items()})
        args.contenders += [name for name in variants if name not in args.contenders]
    if args.worker:
        return worker(args.worker, args.archs[0], args.batch, args.warmup)
    if args.steps is None:
        args.steps = {"resnet20": 10, "resnet18": 3}
    results = {arch: measure(arch, args.contenders, args) for arch in args.archs}
    print(table(results, args.batch))


if __name__ == "__main__":
    main()
