"""`history.csv` numbers epochs from 1, as `history.jsonl` and `steps.jsonl` do, and a resume
keeps exactly the epochs its checkpoint holds."""

import keras
import numpy as np

from clzoo.train.callbacks import EpochCSVLogger
from clzoo.train.run_folder import RunFolder


def test_epochs_are_numbered_from_one_and_truncation_keeps_the_checkpointed_ones(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((8, 3), "float32"), np.zeros((8, 1), "float32")
    path = tmp_path / "history.csv"
    model.fit(x, y, epochs=3, verbose=0, callbacks=[EpochCSVLogger(str(path), append=True)])
    assert [line.split(",")[0] for line in path.read_text().splitlines()] == ["epoch", "1", "2", "3"]
    RunFolder(tmp_path).truncate_csv(2)  # the checkpoint holds two epochs
    assert [line.split(",")[0] for line in path.read_text().splitlines()] == ["epoch", "1", "2"]
    model.fit(x, y, epochs=3, initial_epoch=2, verbose=0,
              callbacks=[EpochCSVLogger(str(path), append=True)])
    assert [line.split(",")[0] for line in path.read_text().splitlines()] == ["epoch", "1", "2", "3"]


def test_a_history_from_before_renumbers_when_the_run_resumes(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text("epoch,loss\n0,5.0\n1,4.0\n2,3.5\n3,3.0\n")  # 0-based, 4 epochs logged
    RunFolder(tmp_path).truncate_csv(3)  # the checkpoint holds three
    assert path.read_text() == "epoch,loss\n1,5.0\n2,4.0\n3,3.5\n"
