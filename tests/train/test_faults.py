"""Faults during training: outputs that go non-finite, a full disk, a denied write, strict JSON logs."""

import errno
import json
import re
from pathlib import Path

import keras
import numpy as np
import pytest

from clzoo.files import json_line, strict_json, write_json
from clzoo.train import callbacks as callbacks_module
from clzoo.train.callbacks import AtomicCheckpoint, CheckpointWriteError, StopOnNaN


def _model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    return model


class _PoisonAfter(keras.callbacks.Callback):
    """After `steps` batches, make the layer map the probe input to inf while weights stay finite."""

    def __init__(self, steps):
        super().__init__()
        self.steps, self.seen = steps, 0

    def on_train_batch_end(self, batch, logs=None):
        self.seen += 1
        if self.seen == self.steps:
            kernel = self.model.layers[0].kernel
            kernel.assign(np.full(kernel.shape, 3e38, "float32"))


def test_a_checkpoint_is_kept_only_when_probe_outputs_are_finite(tmp_path):
    model = _model()
    guard = StopOnNaN()
    probe = np.ones((4, 3), "float32")
    checkpoint = AtomicCheckpoint(tmp_path / "c.keras", guard, probe=probe)
    x, y = np.ones((8, 3), "float32"), np.ones((8, 2), "float32")
    model.fit(x, y, batch_size=2, epochs=3, verbose=0,
              callbacks=[guard, _PoisonAfter(8), checkpoint])
    assert checkpoint.saved_step == 4 and checkpoint.refused_step == 8
    assert guard.failed_at is not None
    restored = keras.saving.load_model(tmp_path / "c.keras")
    assert np.all(np.isfinite(restored(probe)))


def test_a_full_disk_keeps_the_previous_checkpoint_and_says_so(tmp_path, monkeypatch):
    model = _model()
    path = tmp_path / "c.keras"
    checkpoint = AtomicCheckpoint(path, StopOnNaN())
    x, y = np.ones((8, 3), "float32"), np.ones((8, 2), "float32")
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[checkpoint])
    before = path.read_bytes()
    real = callbacks_module.atomic_write

    def full_disk(target, write, suffix=""):
        return real(target, lambda tmp: (write(tmp), _raise_enospc()), suffix=suffix)

    monkeypatch.setattr(callbacks_module, "atomic_write", full_disk)
    with pytest.raises(CheckpointWriteError, match="No space left on device.*step 2.*intact"):
        model.fit(x, y, batch_size=4, epochs=2, initial_epoch=1, verbose=0, callbacks=[checkpoint])
    assert path.read_bytes() == before
    assert not list(tmp_path.glob(".*.tmp*"))


def _raise_enospc():
    raise OSError(errno.ENOSPC, "No space left on device")


def test_logs_and_metrics_are_strict_json(tmp_path):
    value = {"loss": float("nan"), "rows": [1.0, float("inf")], "ok": 0.5}
    assert strict_json(value) == {"loss": None, "rows": [1.0, None], "ok": 0.5}
    assert json.loads(json_line(value))["loss"] is None
    write_json(tmp_path / "m.json", value)
    assert "NaN" not in (tmp_path / "m.json").read_text()
    json.loads((tmp_path / "m.json").read_text(), parse_constant=lambda c: pytest.fail(c))


def test_an_output_folder_that_cannot_be_written_gives_one_line_and_exit_1(tmp_path, monkeypatch, capsys):
    from clzoo import cli

    locked = tmp_path / "locked"
    real_mkdir = Path.mkdir

    def mkdir(self, *args, **kwargs):  # tests run as root, where chmod cannot deny a write
        if str(self).startswith(str(locked)):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    recipe = Path(__file__).resolve().parents[2] / "recipes" / "sincere_digits.yaml"
    assert cli.main(["train", str(recipe), "--output", str(locked / "run"), "--quiet"]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and "Permission denied" in err[0] and str(locked / "run") in err[0]
    assert not locked.exists()


def test_the_finite_output_check_runs_a_few_samples_not_the_whole_batch(monkeypatch):
    # The check runs the model eagerly and unchunked: the whole first batch of a GradCache run
    # (16,384 images) took 15 GiB at the end of the first epoch.
    from types import SimpleNamespace

    import tensorflow as tf

    from clzoo.train import fit

    seen = {}

    def capture(model, run, plan, place, done, monitor, probe=None, verbose=1):
        seen["probe"] = probe
        raise KeyboardInterrupt  # stop before fit: only the probe is under test

    monkeypatch.setattr(fit, "_callbacks", capture)
    x = np.arange(200 * 2 * 3, dtype="float32").reshape(200, 2, 3)
    batches = tf.data.Dataset.from_tensor_slices((x, np.zeros(200, "int32"))).batch(100)
    model = SimpleNamespace(optimizer=SimpleNamespace(iterations=0))
    plan = SimpleNamespace(epochs=1, steps=2)
    place = SimpleNamespace(replicas=1, is_chief=True)
    with pytest.raises(KeyboardInterrupt):
        fit.resumable_fit(model, lambda step: batches, None, plan, place)
    np.testing.assert_array_equal(seen["probe"], x[:fit.PROBE_SAMPLES])


def test_a_full_disk_at_the_first_checkpoint_does_not_claim_a_previous_one(tmp_path, monkeypatch):
    """Issue 72 item 21: "The last complete checkpoint (the previous one) is intact" when none was."""
    model = _model()
    checkpoint = AtomicCheckpoint(tmp_path / "c.keras", StopOnNaN())
    real = callbacks_module.atomic_write
    monkeypatch.setattr(callbacks_module, "atomic_write", lambda target, write, suffix="": real(
        target, lambda tmp: (write(tmp), _raise_enospc()), suffix=suffix))
    x, y = np.ones((8, 3), "float32"), np.ones((8, 2), "float32")
    with pytest.raises(CheckpointWriteError, match="No checkpoint was written yet; free space"):
        model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[checkpoint])
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("sections, advice", [
    ({}, r"Try a lower training\.learning_rate \(now 0\.1\)\."),
    ({"training": {"optimizer": {"name": "adamw", "weight_decay": 1e30}}},
     r"Lower training\.optimizer\.weight_decay = 1e\+30 \(times the learning rate 0\.1"),
    ({"training": {"optimizer": {"name": "lars", "trust_coefficient": 1e30}}},
     r"Lower training\.optimizer\.trust_coefficient = 1e\+30 \(LARS"),
    ({"model": {"auxiliary": {"weight": 1.0, "logit_scale": 1e30}}},
     r"Lower model\.auxiliary\.logit_scale = 1e\+30 \(airbench: 1/9\), or training\.learning_rate\."),
    # the hostile pass: the default weight decay was blamed for a learning rate of 1e30
    ({"training": {"learning_rate": 1e30}}, r"Try a lower training\.learning_rate \(now 1e\+30\)\."),
])
def test_the_nan_stop_names_the_setting_that_blew_up(sections, advice):
    """Issue 72 item 11: the NaN stop blamed the learning rate for a weight decay, LARS trust
    coefficient or auxiliary logit scale of 1e30."""
    from clzoo.train.divergence import divergence_advice
    from clzoo.train.recipe import validate_recipe

    assert re.fullmatch(advice + ".*", divergence_advice(validate_recipe(sections)))


def test_a_resumed_fit_numbers_its_epochs_out_of_the_runs(capsys):
    """Issue 69 item 9: a resumed run printed `Epoch 3/3` (the rest of epoch 3) then `Epoch 4/4`."""
    from clzoo.train.fit import RunProgbar

    model = _model()
    x, y = np.ones((8, 3), "float32"), np.ones((8, 2), "float32")
    model.fit(x, y, batch_size=4, epochs=3, initial_epoch=2, steps_per_epoch=1, verbose=2,
              callbacks=[RunProgbar(4)])
    model.fit(x, y, batch_size=4, epochs=4, initial_epoch=3, verbose=2, callbacks=[RunProgbar(4)])
    printed = capsys.readouterr().out
    assert "Epoch 3/4" in printed and "Epoch 4/4" in printed and "Epoch 3/3" not in printed


@pytest.mark.parametrize("verbose", [1, 2])
def test_an_epoch_stopped_early_ends_its_bar_at_the_step_reached(capsys, verbose):
    """Issue 85 item 4: after a Ctrl-C at step 7 the bar read 78/78."""
    from clzoo.train.fit import RunProgbar

    class StopAtThirdStep(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            self.model.stop_training = self.model.stop_training or batch == 2

    model = _model()
    x, y = np.ones((40, 3), "float32"), np.ones((40, 2), "float32")
    model.fit(x, y, batch_size=4, epochs=2, verbose=verbose, callbacks=[StopAtThirdStep(), RunProgbar(2)])
    printed = capsys.readouterr().out
    assert re.search(r"\b3/10\b", printed) and "10/10" not in printed and "Epoch 2/2" not in printed
    model.fit(x, y, batch_size=4, epochs=1, verbose=verbose, callbacks=[RunProgbar(1)])
    assert "10/10" in capsys.readouterr().out  # a whole epoch still ends at its last step


def test_the_stop_note_of_a_live_bar_starts_its_own_line(capsys):
    """Hostile pass, 2026-12-07: on a terminal the note was glued to the end of the live bar."""
    from clzoo.train.callbacks import StopOnSignal

    signals = StopOnSignal()

    class SignalAtThirdStep(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 2:
                signals.received = "SIGINT"

    model = _model()
    x, y = np.ones((40, 3), "float32"), np.ones((40, 2), "float32")
    try:
        model.fit(x, y, batch_size=4, epochs=1, verbose=1, callbacks=[SignalAtThirdStep(), signals])
    finally:
        signals.release()
    printed = capsys.readouterr().out
    assert "\nepoch 1 stopped by SIGINT after 3 of its 10 steps" in printed
