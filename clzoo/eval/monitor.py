"""Online kNN monitor: weighted-kNN accuracy of the encoder on held-out data during `fit`."""

import keras
import numpy as np

from clzoo.eval.embed import embed
from clzoo.eval.knn import knn_accuracy


class KNNMonitor(keras.callbacks.Callback):
    """Report weighted-kNN top-1 of the encoder every `every` epochs.

    At the end of every `every`-th epoch (and the last), embeds
    `memory_images` and `query_images` with the frozen encoder (the model's
    `.encoder` when it has one, as `ContrastiveModel` does) and adds
    `knn_top1_k{k}` to the epoch logs, so it shows up in the progress bar,
    history, CSV / TensorBoard loggers and `EarlyStopping`. Cosine-weighted
    vote (SINCERE app. M). An epoch that ends because training was asked to
    stop (`model.stop_training`: Ctrl-C, SIGTERM, a NaN loss) is not measured,
    so the stop is not held up by embedding the held-out images.

    Args:
        memory_images: uint8 `(N, H, W, 3)`, the labelled memory bank.
        memory_labels: int `(N,)`.
        query_images: uint8 `(M, H, W, 3)` held-out images.
        query_labels: int `(M,)`.
        ks: neighbourhood sizes. Defaults to `(20,)`.
        every: epochs between measurements. Defaults to `1`.
        encoder: the model to embed with. Defaults to `model.encoder`, else `model`.

    Example:

    >>> import numpy as np, keras, clzoo
    >>> images = np.random.default_rng(0).integers(0, 255, (8, 32, 32, 3), dtype=np.uint8)
    >>> monitor = clzoo.eval.KNNMonitor(images, np.arange(8) % 2, images, np.arange(8) % 2, ks=(1,))
    >>> monitor.every
    1
    """

    def __init__(self, memory_images, memory_labels, query_images, query_labels, ks=(20,),
                 every=1, encoder=None):
        super().__init__()
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"`every` must be a positive integer. Received: every={every!r}")
        self.memory = (np.asarray(memory_images), np.asarray(memory_labels).reshape(-1))
        self.query = (np.asarray(query_images), np.asarray(query_labels).reshape(-1))
        for name, (images, labels) in (("memory", self.memory), ("query", self.query)):
            if images.ndim != 4 or len(images) != len(labels):
                raise ValueError(
                    f"`{name}_images` must be (N, H, W, 3) with one label each. "
                    f"Received: images {images.shape}, labels {labels.shape}"
                )
        self.ks = tuple(int(k) for k in ks)
        self.every = every
        self.encoder = encoder
        self.history = []

    def _encoder(self):
        return self.encoder or getattr(self.model, "encoder", self.model)

    def on_epoch_end(self, epoch, logs=None):
        last = self.params.get("epochs") if self.params else None
        if (epoch + 1) % self.every and epoch + 1 != last:
            return
        if getattr(self.model, "stop_training", False):
            return  # a stop was asked for (Ctrl-C, SIGTERM, NaN): the checkpoint, then exit, no embedding
        encoder = self._encoder()
        size = encoder.input_shape[1]
        memory = embed(encoder, self.memory[0], size=size, verbose=False)
        query = embed(encoder, self.query[0], size=size, verbose=False)
        accuracy = knn_accuracy(memory, self.memory[1], query, self.query[1], ks=self.ks)
        values = {f"knn_top1_k{k}": v for k, v in accuracy.items()}
        self.history.append({"epoch": epoch + 1, **values})
        if logs is not None:
            logs.update(values)
