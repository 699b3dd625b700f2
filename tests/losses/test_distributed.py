"""Cross-replica negatives: two MirroredStrategy replicas equal one device on the global batch."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")
SCRIPT = Path(__file__).with_name("distributed_check.py")


@pytest.mark.slow
def test_mirrored_strategy_matches_single_device():
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                            timeout=600, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    assert result.returncode == 0, result.stderr[-4000:]
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    control = [r for r in rows if r["loss"] == "control_local_negatives"]
    rows = [r for r in rows if r["loss"] != "control_local_negatives"]
    assert len(rows) == 8 and len(control) == 1, result.stdout
    assert control[0]["value_diff"] > 1e-3  # local negatives only: not the same loss
    for row in rows:
        assert row["value_diff"] < 1e-5, row
        assert row["fit_loss_diff"] < 1e-5, row
        assert row["weight_diff"] < 1e-5, row
