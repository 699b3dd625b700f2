"""The end-of-run evaluation holds memory independent of a streamed split's size (issue 84 item 4).

A subprocess evaluates an encoder (default report metrics, geometry, both baselines) on streamed
`FileImages` splits of 256 px JPEGs, N and 4N images, and reads its peak resident memory
(VmHWM, reset between runs): the peak may not grow with the split. The old code decoded
512 images per raw-pixel batch and converted them whole to float32 (hundreds of MB at 4N).
"""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

SIDE, CLASSES, SMALL = 256, 4, 120
# Measured here: the old code grew by 486 MB from N to 4N, this one by about 100 MB (tf.data's
# autotuned buffers ramp up over a longer pass; the features themselves are a few MB).
GROWTH_LIMIT_MB = 250

CHILD = r"""
import json, sys
from pathlib import Path
import keras, numpy as np
from clzoo.data.file_images import FileImages
from clzoo.data.split import Split
from clzoo.eval import evaluate
from clzoo.eval.baselines import baseline_metrics

def peak_mb():
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) / 1024

def reset_peak():
    Path("/proc/self/clear_refs").write_text("5")

def split(folder, n):
    paths = sorted(Path(folder).glob("*.jpg"), key=lambda p: int(p.stem))[:n]
    labels = np.array([int(p.stem) % 4 for p in paths], np.int32)
    return Split(FileImages(paths, labels=labels), labels, list("abcd"), paths=[str(p) for p in paths])

def run(root, n, encoder, untrained):
    train, test = split(root + "/train", n), split(root + "/test", n // 4)
    metrics = ("knn", "ncc", "probe", "calibration", "separation", "geometry")
    evaluate(encoder, (train, test), metrics, verbose=False, ks=(1, 5, 20))
    baseline_metrics(train, test, untrained, ks=(1, 5, 20), probe=True, size=32)

root, small = sys.argv[1], int(sys.argv[2])
keras.utils.set_random_seed(0)
def build():
    inputs = keras.Input((32, 32, 3))
    x = keras.layers.Conv2D(16, 3, activation="relu")(inputs)
    return keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(x))
encoder, untrained = build(), build()
run(root, small, encoder, untrained)  # tracing, thread pools, first allocations
peaks = {}
for n in (small, 4 * small):
    reset_peak()
    run(root, n, encoder, untrained)
    peaks[n] = peak_mb()
print(json.dumps(peaks))
"""


def _write_images(folder, count, seed):
    rng = np.random.default_rng(seed)
    colours = rng.integers(0, 256, (CLASSES, 3))
    folder.mkdir(parents=True)
    for i in range(count):
        blocks = rng.integers(-60, 60, (SIDE // 16, SIDE // 16, 3))
        pixels = np.clip(colours[i % CLASSES] + np.kron(blocks, np.ones((16, 16, 1))), 0, 255)
        Image.fromarray(pixels.astype(np.uint8)).save(folder / f"{i}.jpg", quality=85)


@pytest.mark.large
def test_evaluation_peak_does_not_grow_with_a_streamed_split(tmp_path):
    _write_images(tmp_path / "train", 4 * SMALL, 0)
    _write_images(tmp_path / "test", SMALL, 1)
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), str(SMALL)],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-3000:]
    peaks = {int(n): mb for n, mb in json.loads(done.stdout.strip().splitlines()[-1]).items()}
    growth = peaks[4 * SMALL] - peaks[SMALL]
    print(f"peak MB by split size: {peaks}")
    assert growth < GROWTH_LIMIT_MB, (
        f"peak memory grew by {growth:.0f} MB from {SMALL} to {4 * SMALL} streamed "
        f"{SIDE} px images: {peaks}")


def test_raw_pixels_are_compared_at_most_32_px_and_batched_as_one_array():
    from clzoo.eval.baselines import raw_pixel_features, raw_pixel_side

    images = np.random.default_rng(0).integers(0, 256, (5, 64, 64, 3), dtype=np.uint8)
    assert raw_pixel_side(images, 224) == 32 and raw_pixel_side(images, None) == 32
    assert raw_pixel_side(images[:, :8, :8], None) is None and raw_pixel_side(images, 16) == 16
    np.testing.assert_array_equal(raw_pixel_features(images),
                                  images.reshape(5, -1).astype(np.float32) / 255.0)


def test_class_balanced_rows_keep_each_class_share():
    from clzoo.eval.baselines import class_balanced_rows

    labels = np.repeat([0, 1, 2], [600, 300, 100])
    assert class_balanced_rows(labels, limit=1000) is None
    rows = class_balanced_rows(labels, limit=100)
    assert np.bincount(labels[rows]).tolist() == [60, 30, 10] and np.all(np.diff(rows) > 0)


def test_each_baseline_says_when_it_ends_and_its_seconds(capsys):
    """Issue 85 item 4: the end-of-run baselines (300 s, longer than training) printed no end."""
    from clzoo.data import from_arrays
    from clzoo.eval.baselines import baseline_metrics

    rng = np.random.default_rng(0)
    split = from_arrays(rng.integers(0, 255, (40, 8, 8, 3), dtype=np.uint8), np.arange(40) % 4)
    baseline_metrics(split, split, ks=(1,), probe=False, verbose=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[clzoo eval] baseline: raw_pixels ..."
    assert re.fullmatch(r"\[clzoo eval\] baseline: raw_pixels: \d+\.\d s", lines[1]), lines
