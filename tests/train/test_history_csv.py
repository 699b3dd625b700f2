"""`history.csv` numbers epochs from 1, as `history.jsonl` and `steps.jsonl` do, holds a column for
every key any epoch logged, and agrees with its header across a resume (issue 57)."""

import keras
import numpy as np

from clzoo.train.history import HistoryCSV, JSONLinesHistory
from clzoo.train.run_folder import RunFolder


class _LateKey(keras.callbacks.Callback):
    """Logs `knn` from the second epoch on, as the kNN monitor does with `monitor_every: 2`."""

    def on_epoch_end(self, epoch, logs=None):
        if epoch >= 1:
            logs["knn"] = 0.5 + epoch


def _fit(model, tmp_path, epochs, initial_epoch=0):
    history = JSONLinesHistory(tmp_path / "history.jsonl")
    history.truncate(initial_epoch)
    x, y = np.ones((8, 3), "float32"), np.zeros((8, 1), "float32")
    model.fit(x, y, epochs=epochs, initial_epoch=initial_epoch, verbose=0,
              callbacks=[_LateKey(), history,
                         HistoryCSV(tmp_path / "history.csv", tmp_path / "history.jsonl")])
    return [line.split(",") for line in (tmp_path / "history.csv").read_text().splitlines()]


def test_every_logged_key_has_a_column_and_rows_match_the_header_across_a_resume(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    rows = _fit(model, tmp_path, 3)
    assert rows[0] == ["epoch", "loss", "knn"]
    assert [row[0] for row in rows[1:]] == ["1", "2", "3"]
    assert rows[1][2] == "" and float(rows[2][2]) == 1.5 and float(rows[3][2]) == 2.5
    RunFolder(tmp_path).truncate_csv(2)  # the checkpoint holds two epochs; the run resumes there
    rows = _fit(model, tmp_path, 4, initial_epoch=2)
    assert rows[0] == ["epoch", "loss", "knn"] and all(len(row) == 3 for row in rows)
    assert [row[0] for row in rows[1:]] == ["1", "2", "3", "4"]
    assert float(rows[4][2]) == 3.5


def test_a_history_from_before_renumbers_when_the_run_resumes(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text("epoch,loss\n0,5.0\n1,4.0\n2,3.5\n3,3.0\n")  # 0-based, 4 epochs logged
    RunFolder(tmp_path).truncate_csv(3)  # the checkpoint holds three
    assert path.read_text() == "epoch,loss\n1,5.0\n2,4.0\n3,3.5\n"


def test_an_epoch_cut_short_by_a_signal_says_it_is_partial(tmp_path, capsys):
    """Issue 57 item 2: a stopped epoch showed a full bar and logged a few steps' mean as the
    epoch's loss; its row now carries `partial_epoch_steps`, a line says so, and the preset
    card's curve counts the images it saw."""
    from clzoo.eval.records import RunResult
    from clzoo.presets.format import training_curve
    from clzoo.train.callbacks import StopOnSignal
    from clzoo.train.recipe import load_recipe

    signals = StopOnSignal()

    class _SignalAtStep(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if self.params and batch == 2 and len(seen) == 1:  # the second epoch's third step
                signals.received = "SIGINT"

        def on_epoch_end(self, epoch, logs=None):
            seen.append(epoch)

    seen = []
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    history = JSONLinesHistory(tmp_path / "history.jsonl")
    x, y = np.ones((40, 3), "float32"), np.zeros((40, 1), "float32")
    model.fit(x, y, batch_size=8, epochs=3, verbose=2, callbacks=[_SignalAtStep(), signals, history])
    rows = [line for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and "partial_epoch_steps" not in rows[0] and '"partial_epoch_steps": 3' in rows[1]
    assert "epoch 2 stopped by SIGINT after 3 of its 5 steps" in capsys.readouterr().out
    recipe = load_recipe(None, [("training.batch_size", 8)])
    result = RunResult.from_summary({"knn_top1": 0.5, "knn_top1_k": 20, "knn_top1_by_k": {"k20": 0.5},
                                     "train_images": 40})
    curve = training_curve(tmp_path, recipe, result)
    assert [(r["epoch"], r["images_seen"], r.get("partial_epoch_steps")) for r in curve["rows"]] == [
        (1, 40, None), (2, 64, 3)]


def test_a_damaged_history_is_named_on_resume(tmp_path):
    """Issue 58 item 7: a damaged history.jsonl ended a resume in a bare JSON parser error."""
    import pytest

    path = tmp_path / "history.jsonl"
    path.write_text('{"epoch": 1, "loss": 4.0}\n{"epoch": 2, "lo')
    with pytest.raises(ValueError, match=r"history.jsonl is damaged \(a line that is not an epoch record"):
        JSONLinesHistory(path).truncate(1)
    path.write_text('{"epoch": 1, "loss": 4.0}\n{"epoch": 2, "loss": 3.0}\n')
    JSONLinesHistory(path).truncate(1)
    assert path.read_text() == '{"epoch": 1, "loss": 4.0}\n'


def test_a_damaged_csv_row_cannot_stop_a_resume(tmp_path):
    import json

    import pytest

    (tmp_path / "history.jsonl").write_text("".join(json.dumps({"epoch": e, "loss": 5.0 - e}) + "\n"
                                                    for e in (1, 2)))
    path = tmp_path / "history.csv"
    path.write_text("epoch,loss\n1,4.0\ngarbage\n3,3.0\n")
    RunFolder(tmp_path).truncate_csv(2)  # rebuilt from history.jsonl, which it mirrors
    assert path.read_text() == "epoch,loss\n1,4.0\n2,3.0\n"
    (tmp_path / "history.jsonl").unlink()  # a run from before history.jsonl: the row is named
    path.write_text("epoch,loss\n1,4.0\ngarbage\n")
    with pytest.raises(ValueError, match=r"history.csv is damaged .*'garbage'"):
        RunFolder(tmp_path).truncate_csv(1)


def test_off_a_terminal_a_line_comes_at_least_every_30_seconds_with_the_epochs_own_rate(capsys):
    """Issue 85 item 4: off a terminal Keras prints one line per epoch; a 31-minute epoch said nothing."""
    from clzoo.train.heartbeat import Heartbeat

    now = [0.0]
    beat = Heartbeat(epochs=40, batch_size=32, seconds=30, clock=lambda: now[0])
    beat.set_params({"steps": 100})
    beat.on_epoch_begin(2)
    for step in range(10):  # 10 steps of 10 s: lines after steps 3, 6 and 9 (30 s apart)
        now[0] += 10.0
        beat.on_train_batch_end(step, {"loss": 4.5 - step / 100})
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["epoch 3/40 step 3/100: loss 4.4800, 3.2 images/s this epoch",
                     "epoch 3/40 step 6/100: loss 4.4500, 3.2 images/s this epoch",
                     "epoch 3/40 step 9/100: loss 4.4200, 3.2 images/s this epoch"]
    quiet = Heartbeat(epochs=1, batch_size=1, seconds=0, enabled=False, clock=lambda: now[0])
    quiet.on_epoch_begin(0)
    quiet.on_train_batch_end(0, {"loss": 1.0})
    assert capsys.readouterr().out == ""  # on a terminal the live bar moves: no extra lines
