"""End-to-end: `clzoo train` / `clzoo eval` on tiny settings, NaN handling, atomic files."""

import json

import keras
import numpy as np
import pytest

from clzoo import cli
from clzoo.eval.records import read_eval, read_run
from clzoo.train import load_recipe, train
from clzoo.train.callbacks import AtomicCheckpoint, StopOnNaN

TINY = ["data=digits", "training.epochs=2", "training.batch_size=128",
        "model.architecture=resnet8", "model.embedding_dim=16", "eval.knn_k=[1,5]",
        "eval.knn_headline_k=5", "views.flip=false", "eval.metrics=[knn]"]


def _recipe(tmp_path, text="name: run\n"):
    """A recipe file (`clzoo train` refuses to start without one)."""
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.large
def test_train_cli_writes_a_complete_run(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", _recipe(tmp_path), "--output", str(out)]
    for item in TINY:
        args += ["--set", item]
    assert cli.main(args) == 0
    printed = capsys.readouterr().out
    assert "kNN top-1 (k=5" in printed
    for row in ("trained encoder", "raw pixels", "random init (untrained)"):
        assert f"  {row} " in printed, row
    for name in ("encoder.keras", "checkpoint.keras", "metrics.json", "recipe.yaml", "history.jsonl"):
        assert (out / name).is_file(), name
    metrics = json.loads((out / "metrics.json").read_text())
    # Two epochs of SINCERE on real digits beat chance (10%) by far.
    assert metrics["knn_top1"] > 0.5
    assert set(metrics["knn_top1_by_k"]) == {"k1", "k5"}
    assert set(metrics["baselines"]) == {"raw_pixels", "random_init"}
    assert set(metrics["baselines"]["raw_pixels"]["knn"]) == {"k1", "k5"}
    assert metrics["baselines"]["raw_pixels"]["knn"]["k5"] > 0.9  # a kNN on digit pixels is strong
    assert np.isfinite(metrics["final_train_loss"]) and metrics["images_per_second"] > 0
    assert len((out / "history.jsonl").read_text().splitlines()) == 2
    assert not list(out.glob(".*tmp*"))  # no temporary files left behind
    run = read_run(out)  # the typed record of the same folder
    assert run.knn_top1 == metrics["knn_top1"] and run.knn_k == 5 and len(run.loss_curve) == 2
    assert run.to_summary() == metrics and run.final_loss == run.loss_curve[-1]
    assert run.baselines["raw_pixels"].knn["k5"] == metrics["baselines"]["raw_pixels"]["knn"]["k5"]

    # run/eval holds the report train wrote: a second look writes run/eval-2 beside it (issue 85),
    # and --overwrite replaces it.
    train_report = (out / "eval" / "metrics.json").read_bytes()
    assert cli.main(["eval", str(out), "--data", "digits", "--k", "1,5", "--metrics", "knn"]) == 0
    assert f"writing {out / 'eval-2'}" in capsys.readouterr().out
    assert (out / "eval-2" / "metrics.json").is_file()
    assert (out / "eval" / "metrics.json").read_bytes() == train_report
    assert cli.main(["eval", str(out), "--data", "digits", "--k", "1,5",
                     "--metrics", "knn,probe,separation", "--overwrite"]) == 0
    evaluated = json.loads((out / "eval" / "metrics.json").read_text())
    assert evaluated["knn"]["k5"] == pytest.approx(metrics["knn_top1_by_k"]["k5"])
    assert evaluated["probe"]["accuracy"] > 0.5
    assert read_eval(out).probe == evaluated["probe"]["accuracy"]
    assert (out / "eval" / "report.md").is_file() and (out / "eval" / "separation.png").is_file()

    # The projection head's space, from the full model in checkpoint.keras.
    assert cli.main(["eval", str(out), "--data", "digits", "--metrics", "separation",
                     "--space", "projection"]) == 0
    projected = json.loads((out / "eval_projection" / "metrics.json").read_text())
    assert projected["feature_dim"] == 16 and projected["space"] == "projection"

    # A model compared with itself: identical accuracies, intervals [0, 0].
    assert cli.main(["compare", str(out), str(out), "--data", "digits", "--metrics", "knn,ncc",
                     "--k", "1,5", "--output", str(tmp_path / "cmp")]) == 0
    compared = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert set(compared["bootstrap"]) == {"knn_k1", "knn_k5", "ncc"}
    assert all(r["low"] == r["high"] == 0.0 for r in compared["bootstrap"].values())
    assert "excludes 0" in (tmp_path / "cmp" / "compare.md").read_text()


def test_train_cli_bad_data_path(tmp_path, capsys):
    code = cli.main(["train", _recipe(tmp_path), "--data", str(tmp_path / "nope"),
                     "--output", str(tmp_path / "r")])
    assert code == 2
    assert "no such path" in capsys.readouterr().err


def test_train_cli_empty_folder(tmp_path, capsys):
    (tmp_path / "d" / "train" / "cls").mkdir(parents=True)
    code = cli.main(["train", _recipe(tmp_path), "--data", str(tmp_path / "d"),
                     "--output", str(tmp_path / "r")])
    assert code == 2
    assert "holds no images" in capsys.readouterr().err


def test_eval_cli_missing_model(tmp_path, capsys):
    assert cli.main(["eval", str(tmp_path), "--data", "digits"]) == 2
    assert "no model at" in capsys.readouterr().err


class _NaNAfter(keras.losses.Loss):
    """MSE that turns NaN once the model's weights have moved `steps` times."""

    def __init__(self, calls, **kwargs):
        super().__init__(**kwargs)
        self.calls = calls

    def call(self, y_true, y_pred):
        self.calls[0] += 1
        value = keras.ops.mean(keras.ops.square(y_pred - y_true), axis=-1)
        return value * (np.nan if self.calls[0] > 4 else 1.0)


def test_nan_stops_at_once_and_last_checkpoint_survives(tmp_path):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    calls = [0]
    model.compile(optimizer="sgd", loss=_NaNAfter(calls), run_eagerly=True)
    guard = StopOnNaN()
    checkpoint = AtomicCheckpoint(tmp_path / "checkpoint.keras", guard)
    x, y = np.ones((8, 3), "float32"), np.ones((8, 1), "float32")
    history = model.fit(x, y, batch_size=2, epochs=5, verbose=0, callbacks=[guard, checkpoint])
    # Epoch 1 (4 batches) is finite and saved; the first NaN batch stops training.
    assert guard.failed_at[:2] == (1, 0)
    assert checkpoint.saved_epoch == 0
    assert len(history.history["loss"]) == 2
    restored = keras.saving.load_model(tmp_path / "checkpoint.keras", compile=False)
    assert all(np.all(np.isfinite(w)) for w in restored.get_weights())


@pytest.mark.large
def test_runner_reports_divergence(tmp_path):
    from clzoo.train import TrainingDiverged

    config = load_recipe(None, TINY + ["training.epochs=1", "training.learning_rate=1e30",
                                      "training.schedule=constant"])
    # The weights' check stops it as soon as a weight overflows, which may be before the loss does.
    with pytest.raises(TrainingDiverged, match="(loss became nan|a weight became NaN or inf).*at "
                                               "epoch 1.*Last good checkpoint"):
        train(config, tmp_path / "run", verbose=0)
    assert not (tmp_path / "run" / "encoder.keras").exists()
    assert not (tmp_path / "run" / "metrics.json").exists()
    # issue 72 item 11: a weight decay of 1e30 was blamed on the learning rate
    config = load_recipe(None, TINY + ["training.epochs=1", "training.optimizer.weight_decay=1e30"])
    with pytest.raises(TrainingDiverged, match=r"Lower training\.optimizer\.weight_decay = 1e\+30 \(times"):
        train(config, tmp_path / "decay", verbose=0)


def test_unknown_baseline_is_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", _recipe(tmp_path), "--output", str(out),
            "--set", "eval.baselines=[raw_pixels,pixels]"]
    assert cli.main(args) == 2
    assert "eval.baselines" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow  # a cost, not a result: after touching how the runner reads its data
def test_each_split_is_read_once_per_run(tmp_path, monkeypatch):
    """Monitor, report, baselines and the soft-target classifier share the runner's splits."""
    import clzoo.data.sources

    reads = []
    real = clzoo.data.sources.DataSource.load

    def counting(self, split="train", **kwargs):
        if self.label_set is None:  # a derived label set reads its base source once more
            reads.append(split)
        return real(self, split, **kwargs)

    monkeypatch.setattr(clzoo.data.sources.DataSource, "load", counting)
    config = load_recipe(None, TINY + ["training.epochs=1", "eval.monitor_every=1",
                                      "eval.metrics=[knn,probe]"])
    train(config, tmp_path / "run", verbose=0)
    assert sorted(reads) == ["test", "train"]
