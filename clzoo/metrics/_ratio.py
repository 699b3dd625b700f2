"""Private: a metric kept as two running sums, so its value over an epoch pools every batch."""

import keras
from keras import ops


class RatioMetric(keras.metrics.Metric):
    """Running `total` and `count`; `result()` is `total / count` (0 before any count).

    Subclasses implement `batch_sums(y_true, y_pred, sample_weight) -> (total, count)`.
    """

    def __init__(self, name, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(shape=(), initializer="zeros", dtype="float32", name="total")
        self.count = self.add_variable(shape=(), initializer="zeros", dtype="float32", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        total, count = self.batch_sums(y_true, y_pred, sample_weight)
        self.total.assign(self.total + ops.cast(total, "float32"))
        self.count.assign(self.count + ops.cast(count, "float32"))

    def sums(self):
        """The running `(total, count)` as tensors."""
        return ops.convert_to_tensor(self.total), ops.convert_to_tensor(self.count)

    def result(self):
        total, count = self.sums()
        return ops.where(count > 0, total / ops.where(count > 0, count, 1.0), 0.0)

    def reset_state(self):
        self.total.assign(0.0)
        self.count.assign(0.0)

    def batch_sums(self, y_true, y_pred, sample_weight):
        raise NotImplementedError


def need_views(views, metric):
    if views < 2:
        raise ValueError(f"{metric} compares the views of a sample: `y_pred` must be (batch, views, dim) "
                         f"with views >= 2. Received: y_pred with views={views}")
