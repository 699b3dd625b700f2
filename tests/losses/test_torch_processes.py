"""Cross-process negatives on PyTorch: two `torch.distributed` processes (torchrun, gloo) give the
one-process loss on the concatenated batch, and their gradients, summed back through the
all-gather, are the one-process gradient of the global mean (times the process count)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.losses.distributed_cases import LOSSES
from tests.losses.torch_processes_check import BATCH, global_batch

pytestmark = pytest.mark.backends("torch")
SCRIPT = Path(__file__).with_name("torch_processes_check.py")
PROCESSES = 2


def _reference(name):
    import torch

    z, labels = global_batch()
    whole = torch.tensor(z, requires_grad=True)
    per_sample = LOSSES[name]().call(torch.tensor(labels), whole)
    per_sample.mean().backward()
    return per_sample.detach().numpy(), whole.grad.numpy()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("torch_processes")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc-per-node={PROCESSES}", str(SCRIPT), str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return [dict(np.load(out / f"rank{rank}.npz")) for rank in range(PROCESSES)]


@pytest.mark.large
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_two_processes_equal_one_on_the_concatenated_batch(ranks, name):
    loss, grad = _reference(name)
    per_sample = np.concatenate([rank[f"{name}/loss"] for rank in ranks])
    np.testing.assert_allclose(per_sample, loss, rtol=1e-5, atol=1e-6)
    # each process's gradient of its local mean, summed over every process's loss by the
    # all-gather's backward: PROCESSES x the gradient of the global mean, on its own rows
    gathered = np.concatenate([rank[f"{name}/grad"] for rank in ranks]) / PROCESSES
    np.testing.assert_allclose(gathered, grad, rtol=1e-4, atol=1e-6)


@pytest.mark.large
def test_local_negatives_alone_would_differ(ranks):
    """The control: without the gather, a process's loss is not the global one."""
    import torch

    z, labels = global_batch()
    half = slice(0, BATCH // PROCESSES)
    alone = LOSSES["SupConLoss"]().call(torch.tensor(labels[half]), torch.tensor(z[half])).numpy()
    assert np.abs(alone - ranks[0]["SupConLoss/loss"]).max() > 1e-3
