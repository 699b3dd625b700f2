"""A tfds split read by random access: an array-like `(N, S, S, 3)` uint8 decoded on access.

TFDS serves a split prepared in ArrayRecord files by index (`tfds.data_source`, the source /
sampler / loader pattern of its "TFDS for JAX and PyTorch" guide), without TensorFlow. Held, a
split is decoded whole through it (`TfdsImages.__array__`); streamed, each batch decodes its own
rows, as `clzoo.data.file_images.FileImages` does for an image folder, so every stream serves
the same batches either way. A split prepared in TFRecord files (TFDS' default) is read by
`tfds.load` and held; `tfds build --file_format=array_record` (or `file_format="array_record"`
in `download_and_prepare`) prepares one to stream.
"""

import numpy as np

from clzoo.data.resize import MixedImageSizes, resize_image


def tfds_builder(name, data_dir=None):
    """The prepared (or preparable) builder of tfds dataset `name`; raises as `tfds.builder`."""
    import tensorflow_datasets as tfds

    return tfds.builder(name, data_dir=data_dir)


def streams(builder):
    """True when `builder`'s files serve random access (ArrayRecord), so its splits can stream."""
    return "array_record" in str(getattr(builder.info, "file_format", "")).lower()


class TfdsImages:
    """uint8 images `(N, size, size, 3)` of one tfds split in ArrayRecord files, decoded when indexed.

    Supports `len`, `shape`, `dtype`, `ndim`, `nbytes` (the decoded size), `subset(rows)` and
    NumPy-style indexing by an int, a slice or an integer array (decoded pixels, in the order
    asked); grey images become RGB, and with `size` every image is resized as an image folder's
    are (`clzoo.data.resize.resize_image`).

    Args:
        name: the tfds dataset name (`"cifar10"`).
        split: its split (`"train"`, `"test"`).
        size: the square side of every image, in pixels; None keeps the dataset's own shape,
            which must then be fixed (a dataset of mixed sizes needs `size`).
        data_dir: where TFDS keeps its prepared datasets. Defaults to TFDS' own
            (`TFDS_DATA_DIR`, else `~/tensorflow_datasets`).

    Raises:
        ValueError: the split is not in ArrayRecord files (naming how to prepare it), or its
            images have no fixed size and `size` is None.

    Example (needs a dataset prepared in ArrayRecord):

        images = TfdsImages("cifar10", "train", data_dir="~/tensorflow_datasets")
        images[[0, 5]].shape  # (2, 32, 32, 3), decoded now
    """

    dtype = np.dtype(np.uint8)
    ndim = 4

    def __init__(self, name, split, size=None, data_dir=None):
        import tensorflow_datasets as tfds

        builder = tfds_builder(name, data_dir)
        if not streams(builder):
            raise ValueError(f"tfds:{name} is prepared in {builder.info.file_format} files, which "
                             "TFDS reads in order only: prepare it in ArrayRecord files to stream it "
                             "(tfds build --file_format=array_record), or hold it (data_loading: memory)")
        self.name, self.split, self.data_dir = name, split, data_dir
        self.version = str(builder.info.version)  # for `fingerprint`: the builder is read once
        self._source = tfds.data_source(name, split=split, data_dir=data_dir)
        self.image_key, self.label_key = builder.info.supervised_keys
        shape = builder.info.features[self.image_key].shape
        if size is None and (shape[0] is None or shape[1] is None):
            raise MixedImageSizes(f"tfds:{name} holds images of several sizes: resize them on load with "
                             "--image-size N (recipe key image_size)")
        self._side = (size, size) if size is not None else tuple(shape[:2])
        self._resize = size
        self._rows = np.arange(len(self._source))

    @property
    def shape(self):
        return (len(self._rows), *self._side, 3)

    @property
    def nbytes(self):
        """Bytes the decoded images would take in memory (uint8)."""
        return int(np.prod(self.shape))

    def __len__(self):
        return len(self._rows)

    def __repr__(self):
        return f"TfdsImages(tfds:{self.name} {self.split}, shape={self.shape})"

    def labels(self):
        """int32 `(N,)` labels of the rows, read without decoding an image (one pass over the
        files: the records are read, their images skipped)."""
        skipping = self._skipping()
        found = np.zeros(len(self._rows), np.int32)
        for start in range(0, len(self._rows), 1024):
            rows = self._rows[start:start + 1024].tolist()
            found[start:start + len(rows)] = [int(r[self.label_key]) for r in skipping.__getitems__(rows)]
        return found

    def fingerprint(self, samples=4096, edge=4096):
        """Hex digest of the rows' records, read without decoding an image: the dataset's name,
        version and split, the row count, and the first and last `edge` bytes of the encoded image
        of `samples` rows spread over the split (as `clzoo.train.resume_checks.data_fingerprint`
        reads an image folder's files). Decoding the split to hash its pixels held it whole."""
        import hashlib

        skipping = self._skipping()
        named = f"tfds:{self.name}\0{self.version}\0{self.split}\0{len(self._rows)}"
        digest = hashlib.blake2b(named.encode(), digest_size=16)
        digest.update(np.ascontiguousarray(self._rows, np.int64))
        picked = self._rows[::max(1, len(self._rows) // samples)].tolist()
        for start in range(0, len(picked), 1024):
            for record in skipping.__getitems__(picked[start:start + 1024]):
                encoded = bytes(record[self.image_key])
                digest.update(encoded[:edge] + encoded[-edge:] + f"\0{len(encoded)}\0".encode())
        return digest.hexdigest()

    def _skipping(self):
        """The split's data source with its images left encoded (`tfds.decode.SkipDecoding`)."""
        import tensorflow_datasets as tfds

        return tfds.data_source(self.name, split=self.split, data_dir=self.data_dir,
                                decoders={self.image_key: tfds.decode.SkipDecoding()})

    def subset(self, rows):
        """The images of `rows` (an int array, or a boolean mask), still in their files."""
        part = TfdsImages.__new__(TfdsImages)
        part.__dict__.update(self.__dict__)
        part._rows = self._rows[self._index(rows)]
        return part

    def __array__(self, dtype=None, copy=None):
        whole = self[np.arange(len(self))]
        return whole if dtype is None else whole.astype(dtype)

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            return self[np.asarray([key])][0]
        rows = self._rows[self._index(key)]
        if not len(rows):
            return np.zeros((0, *self.shape[1:]), np.uint8)
        return np.stack([self._pixels(r[self.image_key]) for r in self._source.__getitems__(rows.tolist())])

    def _index(self, key):
        """Non-negative positions of an index into the rows, or an IndexError as NumPy gives it."""
        if isinstance(key, tuple):
            raise IndexError(f"TfdsImages takes one index of images, not a tuple of axes: {key!r}")
        if key is None or isinstance(key, (bool, np.bool_)):  # NumPy would add an axis
            raise IndexError(f"TfdsImages takes an int, a slice, or a 1-D integer or boolean array. "
                             f"Received: {key!r}")
        positions = np.arange(len(self._rows))[key]
        if np.ndim(positions) != 1:
            raise IndexError(f"TfdsImages takes a 1-D index of images. Received: {key!r}")
        return positions

    def _pixels(self, image):
        image = np.asarray(image, np.uint8)
        image = np.repeat(image, 3, axis=-1) if image.shape[-1] == 1 else image
        image = image if self._resize is None else resize_image(image, self._resize)
        if image.shape[:2] != tuple(self._side):
            raise MixedImageSizes(f"tfds:{self.name} has images of several sizes ({self._side}, "
                             f"{image.shape[:2]}, ...); resize them on load with --image-size N "
                             "(recipe key image_size).")
        return image
