"""What a run logs as it trains: `history.jsonl` (one line per epoch), `history.csv` beside it,
and `steps.jsonl` (every `every`-th step), each cut back to a checkpoint's progress on resume."""

import json
from pathlib import Path

import keras

from clzoo.files import atomic_write_text, json_line


class JSONLinesHistory(keras.callbacks.Callback):
    """Append each epoch's logs to `path` as one JSON object per line, atomically.

    On a resumed run, call `truncate(epochs)` first so that lines of epochs
    the checkpoint does not contain are dropped.
    """

    def __init__(self, path, enabled=True):
        super().__init__()
        self.path = Path(path)
        self.enabled = enabled

    def truncate(self, epochs):
        if self.enabled and self.path.exists():
            rows = [line for line in self.path.read_text().splitlines()
                    if line.strip() and _epoch_of(line, self.path) <= epochs]
            atomic_write_text(self.path, "".join(row + "\n" for row in rows))

    def on_epoch_end(self, epoch, logs=None):
        if not self.enabled:
            return
        line = json_line({"epoch": epoch + 1, **{k: v if isinstance(v, int) else float(v)
                                                 for k, v in (logs or {}).items()}})
        previous = self.path.read_text() if self.path.exists() else ""
        atomic_write_text(self.path, previous + line + "\n")


def _epoch_of(line, path):
    """The `epoch` of one history line; a damaged line is a ValueError naming the file."""
    try:
        epoch = json.loads(line)["epoch"]
        if isinstance(epoch, int) and not isinstance(epoch, bool):
            return epoch
    except (ValueError, KeyError, TypeError):
        pass
    raise ValueError(f"{path} is damaged (a line that is not an epoch record: {line[:60]!r}); "
                     "it is the run's per-epoch log: restore it, or delete it to resume without "
                     "the earlier epochs' rows")


class HistoryCSV(keras.callbacks.Callback):
    """`history.csv`, rewritten at each epoch's end from `history.jsonl` (put it after
    `JSONLinesHistory`): one column per key any epoch logged (the first epoch's first, then
    later ones as they appear, e.g. the kNN monitor's), empty where an epoch has none. So its
    header and rows agree across resumes (the JSON-lines history is truncated to the
    checkpoint), and epochs are numbered from 1, as there."""

    def __init__(self, path, history_path, enabled=True):
        super().__init__()
        self.path, self.history_path, self.enabled = Path(path), Path(history_path), enabled

    def on_epoch_end(self, epoch, logs=None):
        if self.enabled and self.history_path.exists():
            write_history_csv(self.path, self.history_path)


def write_history_csv(path, history_path):
    """Write `path` (CSV) from the JSON-lines history `history_path`, atomically."""
    import csv
    import io

    rows = [json.loads(line) for line in Path(history_path).read_text().splitlines() if line.strip()]
    columns = list(dict.fromkeys(key for row in rows for key in row))
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=columns, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(Path(path), text.getvalue())


class StepLog(keras.callbacks.Callback):
    """Append `{"step", "epoch", "loss", "learning_rate"}` every `every` optimizer steps to `path`.

    Also adds `learning_rate` to the epoch logs.

    `loss` is Keras' running mean over the epoch so far, as in the progress
    bar. The file is appended to (one line per write); a line cut short by a
    killed process is skipped by `truncate`, which a resumed run calls with
    its starting step.
    """

    def __init__(self, path, every=1, enabled=True):
        super().__init__()
        if isinstance(every, bool) or int(every) < 1:
            raise ValueError(f"`every` must be a positive integer. Received: every={every!r}")
        self.path = Path(path)
        self.every = int(every)
        self.enabled = enabled
        self._epoch = 0

    def truncate(self, step):
        if not (self.enabled and self.path.exists()):
            return
        rows = []
        for line in self.path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if row.get("step", 0) <= step:
                rows.append(json_line(row))
        atomic_write_text(self.path, "".join(row + "\n" for row in rows))

    def on_train_begin(self, logs=None):
        # Count steps here rather than read the optimizer's counter (a device sync) every batch.
        self._step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:  # the rate of the epoch's last step, for the epoch histories
            logs["learning_rate"] = float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))

    def on_train_batch_end(self, batch, logs=None):
        if not self.enabled:
            return
        self._step += 1
        step = self._step
        if step % self.every:
            return
        optimizer = self.model.optimizer
        row = {"step": step, "epoch": self._epoch + 1,
               "loss": float((logs or {}).get("loss", float("nan"))),
               "learning_rate": float(keras.ops.convert_to_numpy(optimizer.learning_rate))}
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json_line(row) + "\n")
