"""`per_worker_batches`: each worker's rows of every global batch, cut into one batch per local
replica in replica order (tf.distribute.InputContext), checked on 2 logical CPUs."""

import json
import subprocess
import sys

import pytest

pytest.importorskip("tensorflow")

CHECK = r"""
import json, os
os.environ["KERAS_BACKEND"] = "tensorflow"
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
from clzoo.train.distribute import per_worker_batches

GLOBAL, STEPS = 8, 3
asked = []

def build(shard):
    asked.append(list(shard))
    index, count = shard
    local = GLOBAL // count
    rows = [[step * GLOBAL + index * local + i for i in range(local)] for step in range(STEPS)]
    data = tf.data.Dataset.from_tensor_slices(tf.constant(rows, tf.int64))
    data.clzoo_stream = {"steps_per_epoch": STEPS, "batches": STEPS, "start_step": 0}
    return data

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
data = per_worker_batches(strategy, build, GLOBAL)
seen = [[strategy.experimental_local_results(batch)[r].numpy().tolist() for r in range(2)]
        for batch in data]
print(json.dumps({"asked": asked, "seen": seen, "facts": data.clzoo_stream}))
"""


def test_each_replica_takes_its_slice_of_the_global_batch_in_order():
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["asked"] == [[0, 1]]  # one input pipeline on one host
    assert out["seen"] == [[list(range(s * 8, s * 8 + 4)), list(range(s * 8 + 4, s * 8 + 8))]
                           for s in range(3)]  # what one device splits a global batch into
    assert out["facts"] == {"steps_per_epoch": 3, "batches": 3, "start_step": 0}
