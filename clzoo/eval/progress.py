"""Plain progress lines for a long forward pass where Keras' live bar does not show (a log, a pipe).

Keras draws its bar only on a terminal; `clzoo eval` of a preset averaging 6
test-time views runs for many minutes, and off a terminal would print nothing
in that time. `PlainProgress` prints one line per tenth of the work, and only
once the pass has run for `after` seconds, so short passes stay silent.
"""

import time

import keras

FIRST_LINE_AFTER = 10.0  # seconds: a pass shorter than this prints nothing


class PlainProgress(keras.callbacks.Callback):
    """A Keras `predict` callback: `"{what}: 3,072/10,000 images (30%), about 2 min left"` lines.

    Args:
        what: what the pass does, e.g. `"embedding 10,000 images"`.
        images: images in the pass (the line's denominator).
        batches: `predict` steps in the pass. Defaults to (None) the steps Keras gives its
            callbacks (`params["steps"]`); where Keras cannot count them either (a generator of
            unknown length), nothing is printed.
        batch_size: images per step (the last may be padded). Defaults to `ceil(images / batches)`.
        after: seconds before the first line; a pass shorter than this prints nothing.
            Defaults to `FIRST_LINE_AFTER` (10 s).
        print_fn: where lines go. Defaults to `print` (flushed).

    Example:

    >>> import numpy as np, keras
    >>> from clzoo.eval.progress import PlainProgress
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> lines = []
    >>> progress = PlainProgress("embedding", 40, after=0.0, print_fn=lines.append)
    >>> _ = model.predict(np.zeros((40, 2)), batch_size=10, verbose=0, callbacks=[progress])
    >>> lines[-1].startswith("embedding: 40/40 images (100%)")
    True
    """

    def __init__(self, what, images, batches=None, batch_size=None, after=None, print_fn=None):
        super().__init__()
        if images < 1 or (batches is not None and batches < 1):
            raise ValueError(f"`images` and `batches` must be >= 1. Received: images={images}, "
                             f"batches={batches}")
        self.what, self.images, self.after = what, int(images), (
            FIRST_LINE_AFTER if after is None else float(after))
        # as given; a None is resolved when the pass begins, from the steps Keras counted
        self._batches, self._batch_size = None if batches is None else int(batches), batch_size
        self.print_fn = print_fn or (lambda line: print(line, flush=True))
        self._start, self._tenths = None, 0

    def on_predict_begin(self, logs=None):
        steps = (self.params or {}).get("steps")
        self.batches = self._batches if self._batches is not None else (int(steps) if steps else None)
        if self.batches is not None:
            self.batch_size = int(self._batch_size or -(-self.images // self.batches))
        self._start, self._tenths = time.perf_counter(), 0

    def on_predict_batch_end(self, batch, logs=None):
        if self.batches is None:  # no step count from the caller nor from Keras: no share to print
            return
        done = batch + 1
        tenths = 10 * done // self.batches
        elapsed = time.perf_counter() - self._start
        if tenths <= self._tenths or elapsed < self.after:
            return
        self._tenths = tenths
        seen = min(self.images, done * self.batch_size)
        left = elapsed * (self.batches - done) / done
        tail = f", about {_minutes(left)} left" if done < self.batches else f" in {_minutes(elapsed)}"
        self.print_fn(f"{self.what}: {seen:,}/{self.images:,} images ({done / self.batches:.0%}){tail}")


def _minutes(seconds):
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"
