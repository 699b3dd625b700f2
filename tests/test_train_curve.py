"""benchmarks/train_curve.py reads a run's kNN points and merges them with earlier curves."""

import json
import sys
import time
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import train_curve  # noqa: E402  (benchmarks/train_curve.py)


def _run(folder, memory=50000, started_seconds_ago=100.0):
    """A finished run folder as `clzoo train` writes it: kNN at epochs 2 and 4 of 4."""
    import tensorflow as tf

    folder.mkdir()
    recipe = {"training": {"batch_size": 256},
              "eval": {"monitor_memory": memory, "monitor_queries": 10000}}
    (folder / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(time.time() - started_seconds_ago))
    (folder / "environment.json").write_text(json.dumps({"started": started}))  # as clzoo/train/runner.py
    knn = {2: 0.61, 4: 0.72}
    rows = [{"epoch": e, "loss": 5.0, **({"knn_top1_k20": knn[e]} if e in knn else {})} for e in (1, 2, 3, 4)]
    (folder / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    writer = tf.summary.create_file_writer(str(folder / "tensorboard" / "validation"))
    with writer.as_default():
        for epoch, value in knn.items():
            tf.summary.scalar(train_curve.TAG, value, step=epoch - 1)  # Keras logs epoch e at step e-1
    writer.close()
    return folder


def test_read_curve_gives_epochs_images_and_wall_time(tmp_path):
    rows = train_curve.read_curve(_run(tmp_path / "run"))
    assert [r["epoch"] for r in rows] == [2, 4]
    assert [r["images_seen"] for r in rows] == [2 * 195 * 256, 4 * 195 * 256]  # whole batches only
    assert [r["knn_top1_k20"] for r in rows] == [0.61, 0.72]
    assert all(95 <= r["wall_seconds"] <= 160 for r in rows)


def test_read_curve_refuses_a_subsampled_monitor(tmp_path):
    with pytest.raises(ValueError, match="10000 memory"):
        train_curve.read_curve(_run(tmp_path / "run", memory=10000))


def test_previous_curves_are_kept_dropped_and_joined(tmp_path):
    previous = {"old fast": [{"epoch": 3, "images_seen": 1, "wall_seconds": 60.0, "knn_top1_k20": 0.5}],
                "airbench": [{"epoch": 4, "images_seen": 2, "wall_seconds": 120.0, "knn_top1_k20": 0.7}]}
    (tmp_path / "previous.json").write_text(json.dumps(previous))
    out = tmp_path / "curves.json"
    code = train_curve.main([str(_run(tmp_path / "run")), "--labels", "fast, alone",
                             "--previous", str(tmp_path / "previous.json"), "--drop", "old fast",
                             "--point", "small=26.1,299520,0.6877", "--json", str(out)])
    curves = json.loads(out.read_text())
    assert code == 0 and list(curves) == ["airbench", "fast, alone", "small"]
    assert curves["airbench"] == previous["airbench"]
    assert curves["small"] == [{"epoch": "end", "images_seen": 299520, "wall_seconds": 60 * 26.1,
                                "knn_top1_k20": 0.6877}]


def test_dropping_an_unknown_curve_is_refused(tmp_path, capsys):
    (tmp_path / "previous.json").write_text(json.dumps({"airbench": []}))
    with pytest.raises(SystemExit) as exit_info:
        train_curve.main(["--previous", str(tmp_path / "previous.json"), "--drop", "airbnch"])
    assert exit_info.value.code == 2
    assert "no such curve in --previous: ['airbnch']" in capsys.readouterr().err
