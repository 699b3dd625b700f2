"""One `torch.distributed` process of the cross-process loss check (started by torchrun, gloo):
its rows of a fixed global batch, every loss of `distributed_cases.LOSSES`; writes per rank the
per-sample losses and the gradient of its local mean to `$OUT/rank<r>.npz`.

    KERAS_BACKEND=torch torchrun --standalone --nproc-per-node 2 tests/losses/torch_processes_check.py OUT
"""

import os
import sys
from pathlib import Path

if __name__ == "__main__":  # run by torchrun; imported by the test (its lane's backend stays)
    os.environ["KERAS_BACKEND"] = "torch"
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from tests.losses.distributed_cases import LOSSES  # noqa: E402

BATCH, VIEWS, DIM, CLASSES = 8, 2, 6, 3


def global_batch():
    """The global batch every process and the one-process reference share."""
    rng = np.random.default_rng(0)
    return (rng.normal(size=(BATCH, VIEWS, DIM)).astype(np.float32),
            rng.integers(0, CLASSES, size=BATCH).astype(np.int32))


def main(out):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    z, labels = global_batch()
    rows = slice(rank * BATCH // world, (rank + 1) * BATCH // world)
    results = {}
    for name, make in LOSSES.items():
        local = torch.tensor(z[rows], requires_grad=True)
        per_sample = make().call(torch.tensor(labels[rows]), local)  # one value per sample
        per_sample.mean().backward()
        results[f"{name}/loss"] = per_sample.detach().numpy()
        results[f"{name}/grad"] = local.grad.numpy()
    np.savez(Path(out) / f"rank{rank}.npz", **results)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
