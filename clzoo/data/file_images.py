"""Images that stay in their files: an array-like `(N, S, S, 3)` uint8 decoded on access.

A folder larger than memory is read this way (`clzoo.data.load_split(..., stream=True)`):
the split lists its files and labels, and each batch decodes its own images, in a
thread pool of daemon threads (Pillow releases the GIL while it decodes and resizes; a read
that never returns, a stuck network mount, cannot keep the process from exiting), shrinking JPEGs at
decode time (`PIL.Image.draft`) when the load size is well below theirs. Indexing gives
the same pixels as the in-memory path (`clzoo.data.sources`) at the same `image_size`,
so every stream over these images yields the batches of the in-memory one.
"""

import os
import queue
import re
import threading
import warnings
from concurrent.futures import Future

import numpy as np

from clzoo.data import decode
from clzoo.data.resize import MixedImageSizes

# The errors decoding raises, as they read inside a TensorFlow op error (tf.data's map wraps them).
_DECODE_ERRORS = re.compile(r"Cannot read image .*?leaves such files out\)"
                            r"|Images differ in size: .*?\(recipe key image_size\)\.", re.DOTALL)
_POOL_LOCK = threading.Lock()
_POOLS = {}


def decode_pool():
    """The process's image-decoding thread pool (`DaemonPool`), one per process (a forked child
    makes its own): the in-memory loader and `FileImages` share it."""
    with _POOL_LOCK:
        pid = os.getpid()
        if pid not in _POOLS:
            _POOLS[pid] = DaemonPool(os.cpu_count() or 2, "clzoo-decode")
        return _POOLS[pid]


class DaemonPool:
    """A thread pool of daemon threads, started as work comes: `submit` and `map` as
    `concurrent.futures.ThreadPoolExecutor`'s. That pool's workers are joined when Python exits,
    so one decode blocked in a read that never returns kept the process alive after a stop;
    these are not waited for. Waits (`result`) poll, so signal handlers run meanwhile."""

    def __init__(self, workers, name):
        self.workers, self.name = max(1, int(workers)), name
        self._tasks, self._threads, self._lock = queue.SimpleQueue(), [], threading.Lock()

    def submit(self, fn, *args):
        future = Future()
        self._tasks.put((future, fn, args))
        with self._lock:
            if len(self._threads) < self.workers:
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"{self.name}_{len(self._threads)}")
                self._threads.append(thread)
                thread.start()
        return future

    def map(self, fn, items):
        """`fn(item)` for each item, in order, computed in the pool; closing the generator cancels
        the calls not yet started (as `Executor.map`'s)."""
        futures = [self.submit(fn, item) for item in items]

        def results():
            try:
                for future in futures:
                    yield result(future)
            finally:
                for future in futures:
                    future.cancel()

        return results()

    def _work(self):
        while True:
            future, fn, args = self._tasks.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as error:  # handed to the waiting caller, as an executor does
                future.set_exception(error)
            del future, fn, args  # drop the result before blocking on the queue again


def result(future, poll=0.5):
    """`future.result()`, waited for in short slices so the main thread handles signals between
    them (a Ctrl-C's handler runs even while a read it waits on never returns)."""
    while True:
        try:
            return future.result(timeout=poll)
        except TimeoutError:
            continue


class FileImages:
    """uint8 images `(N, size, size, 3)` of `paths`, decoded when indexed.

    Supports `len`, `shape`, `dtype`, `ndim`, `nbytes` (the decoded size) and
    NumPy-style indexing by an int, a slice or an integer array, which returns
    decoded pixels (`np.asarray` decodes everything: what streaming avoids).

    Args:
        paths: image files, str `(N,)`.
        size: the square side every image is resized to on decode, in pixels;
            None takes the first image's own (upright) size, and then an image
            of another size is refused when decoded, naming both files.
        on_unreadable: `"error"` (default): an image that cannot be decoded (or is
            not a regular file: a pipe, a device) stops with one line naming it;
            `"skip"`: the next readable file in the list takes its place (a batch
            keeps its size), counted in `skipped` and warned about once per file.
        labels: the label of each path, int `(N,)`, or None. Given, a skipped file's
            substitute is the next readable file *of its label* (never an image
            of another class under this row's label), and a label none of whose
            files can be read is refused in one line.

    Attributes:
        suggested_size: the `--image-size` value that the refusal of images of several sizes
            names (`clzoo train` sets its views' size); None: `N`.

    Raises:
        ValueError: at construction, no path, an unknown `on_unreadable`, or `labels` of another
            length than `paths`; when indexed, an image
            that cannot be decoded (naming the file, under `"error"`), or one of another size than
            the first (`size` None), naming both files.
        IndexError: an index NumPy would refuse: out of range, a boolean mask of another length,
            a float or a tuple of axes.

    Example:

    >>> import numpy as np, tempfile, os
    >>> from PIL import Image
    >>> from clzoo.data.file_images import FileImages
    >>> folder = tempfile.mkdtemp()
    >>> paths = [os.path.join(folder, f"{i}.png") for i in range(3)]
    >>> for p in paths: Image.fromarray(np.zeros((20, 30, 3), np.uint8)).save(p)
    >>> images = FileImages(paths, size=16)
    >>> images.shape, images[[0, 2]].shape, images[1].dtype
    ((3, 16, 16, 3), (2, 16, 16, 3), dtype('uint8'))
    """

    dtype = np.dtype(np.uint8)
    ndim = 4

    def __init__(self, paths, size=None, on_unreadable="error", labels=None):
        if on_unreadable not in ("error", "skip"):
            raise ValueError(f"`on_unreadable` must be 'error' or 'skip'. Received: {on_unreadable!r}")
        if not len(paths):
            raise ValueError("`paths` must name at least one image file.")
        if labels is not None and len(labels) != len(paths):
            raise ValueError(f"`labels` must give one label per path: {len(labels)} labels for "
                             f"{len(paths)} paths")
        self.paths = [str(p) for p in paths]
        self.labels = None if labels is None else np.asarray(labels)
        self.on_unreadable = on_unreadable
        self.skipped = set()
        self._lock = threading.Lock()
        self._resize = size  # None: every image must have the first one's size
        self.suggested_size = None
        self._side = None
        first = self._decode_one(0) if size is None else None
        self._side = (size, size) if size is not None else first.shape[:2]

    @property
    def shape(self):
        return (len(self.paths), *self._side, 3)

    @property
    def nbytes(self):
        """Bytes the decoded images would take in memory (uint8)."""
        return int(np.prod(self.shape))

    def __len__(self):
        return len(self.paths)

    def __repr__(self):
        return f"FileImages({len(self)} files, shape={self.shape})"

    def subset(self, rows):
        """The images of `rows` (an int array, or a boolean mask), still in their files."""
        rows = self._rows(np.asarray(rows), rows)
        part = FileImages.__new__(FileImages)
        part.__dict__.update(self.__dict__)
        part.paths = [self.paths[i] for i in rows.tolist()]
        part.labels = None if self.labels is None else self.labels[rows]
        return part

    def __array__(self, dtype=None, copy=None):
        whole = self[np.arange(len(self))]
        return whole if dtype is None else whole.astype(dtype)

    def __getitem__(self, key):
        if isinstance(key, tuple):  # NumPy would index axes; decode the rows, then index those
            raise IndexError(f"FileImages takes one index of images, not a tuple of axes: {key!r}")
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            return self._decode_one(self._rows(np.asarray([key]), key)[0])
        rows = self._rows(np.arange(len(self))[key] if isinstance(key, slice) else np.asarray(key), key)
        if not len(rows):
            return np.zeros((0, *self.shape[1:]), np.uint8)
        return np.stack(list(decode_pool().map(self._decode_one, rows.tolist())))

    def __iter__(self):
        return (self[row] for row in range(len(self)))

    def _rows(self, index, key):
        """Non-negative rows of an int or boolean index, or an IndexError as NumPy gives it."""
        if index.size == 0:
            return np.zeros(0, np.int64)
        if index.dtype == bool:
            if index.shape != (len(self),):
                raise IndexError(f"boolean index of shape {index.shape} does not match the "
                                 f"{len(self)} images")
            return np.flatnonzero(index)
        if index.ndim != 1 or index.dtype.kind not in "iu":
            raise IndexError(f"FileImages takes an int, a slice, or a 1-D integer or boolean array. "
                             f"Received: {key!r}")
        if index.min() < -len(self) or index.max() >= len(self):
            raise IndexError(f"index out of range for {len(self)} images: {key!r}")
        return np.where(index < 0, index + len(self), index)

    def _decode_one(self, index):
        """The pixels of file `index`, or under `"skip"` of the next readable file after it (of
        its label, when the labels are known)."""
        for at in self._substitutes(index):
            pixels = decode.decode_image(self.paths[at], skip=self.on_unreadable == "skip", size=self._resize)
            if pixels is not None:
                return self._checked_size(pixels, at)
            self._note_skipped(self.paths[at])
        if self.labels is not None:
            raise ValueError(f"No image file labelled {self.labels[index]} could be read (e.g. "
                             f"{self.paths[index]}): remove that class, or replace its files.")
        raise ValueError(f"None of the {len(self)} image files could be read (e.g. {self.paths[index]}).")

    def _substitutes(self, index):
        """Rows to try for row `index`: itself, then (only once it failed) the rows after it,
        cyclically: all of them, or those of its label."""
        yield index
        if self.labels is None:
            yield from ((index + offset) % len(self) for offset in range(1, len(self)))
            return
        same = np.flatnonzero(self.labels == self.labels[index])
        yield from (int(row) for row in np.roll(same, -int(np.searchsorted(same, index)))[1:])

    def _checked_size(self, pixels, at):
        """`pixels`, or (images kept at their own size) a refusal when their size is not the first's."""
        if self._side is not None and pixels.shape[:2] != tuple(self._side):
            first, (height, width) = self._side, pixels.shape[:2]
            raise MixedImageSizes(f"Images differ in size: {self.paths[0]} is {first[1]}x{first[0]}, "
                             f"{self.paths[at]} is {width}x{height} (width x height). Resize them "
                             f"on load with --image-size {self.suggested_size or 'N'} (recipe key "
                             "image_size).")
        return pixels

    def _note_skipped(self, path):
        with self._lock:
            if path in self.skipped:
                return
            self.skipped.add(path)
        same = "" if self.labels is None else " of its label"
        warnings.warn(f"Skipped unreadable image {path} ({len(self.skipped)} so far); the next "
                      f"readable file{same} takes its place in the batch.", stacklevel=2)


def decode_error_line(error):
    """The one line of an image that could not be decoded (or had another size) inside `error`,
    which may be a TensorFlow op error around it (a streamed epoch on tf.data); None if none."""
    found = _DECODE_ERRORS.search(str(error))
    return " ".join(found.group(0).split()) if found else None
