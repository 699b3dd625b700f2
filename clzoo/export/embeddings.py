"""Embeddings of a dataset's splits as a table, written atomically to `.npz` or `.parquet`."""

import time
from pathlib import Path

import numpy as np

from clzoo.files import atomic_write

FORMATS = (".npz", ".parquet")


def check_output(path):
    """The suffix of an embeddings file `path`, refused before any work when it cannot be written.

    Raises:
        ValueError: a suffix other than `.npz` / `.parquet`.
        ImportError: `.parquet` without pyarrow installed, naming the package.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"`output` must end in .npz or .parquet. Received: {str(path)!r}")
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            raise ImportError("writing .parquet needs pyarrow: pip install pyarrow "
                              "(or write .npz)") from None
    return suffix


def embed_splits(encoder, data, splits=("train", "test"), normalize=False, batch_size=512,
                 verbose=True):
    """Embed the images of each split of `data` with a frozen encoder.

    Args:
        encoder: `keras.Model`, float images in [0, 1] `(B, H, W, 3)` -> `(B, D)`.
        data: a dataset spec of `clzoo.data.load_split` (`"digits"`, a folder, `"tfds:name"`),
            or the `clzoo.data.sources.DataSource` resolved from one (read once per split).
        splits: which splits, in row order. Defaults to `("train", "test")`.
        normalize: L2-normalize each embedding. Defaults to `False` (raw features).
        batch_size: images per forward pass.
        verbose: progress output.

    Returns:
        dict of equal-length columns: `"embeddings"` float32 `(N, D)`, `"labels"`
        int32 `(N,)`, `"split"` str `(N,)`, `"class_names"` (list, by label id),
        and `"paths"` str `(N,)` when the images are files (`Split.paths`: an
        image folder without a derived label set).

    Raises:
        ValueError: an unknown split name, and as `clzoo.data.load_split`.
    """
    from clzoo.data.sources import data_source
    from clzoo.eval.embed import embed

    if not splits or any(s not in ("train", "test") for s in splits):
        raise ValueError(f"`splits` must name 'train' and/or 'test'. Received: {splits!r}")
    source = data_source(data)
    parts = []
    for name in splits:
        split = source.load(name, stream="auto")
        _say(verbose, f"[clzoo embed] {name}: {len(split):,} images ...")
        started = time.perf_counter()
        features = embed(encoder, split.images, batch_size=batch_size, size=encoder.input_shape[1],
                         normalize=normalize, verbose=verbose)
        _say(verbose, f"[clzoo embed] {name}: {time.perf_counter() - started:.1f} s")
        parts.append((name, features, split))
    table = {"embeddings": np.concatenate([p[1] for p in parts]),
             "labels": np.concatenate([p[2].labels for p in parts]).astype(np.int32),
             "split": np.concatenate([np.full(len(p[2]), p[0]) for p in parts]),
             "class_names": list(parts[0][2].class_names)}
    if all(p[2].paths is not None for p in parts):
        table["paths"] = np.asarray([f for p in parts for f in p[2].paths])
    return table


def _say(verbose, line):
    """A plain progress line (Keras' bar shows on a terminal only; a log gets these)."""
    from clzoo.console import tqdm_disable

    if verbose and not tqdm_disable():
        print(line, flush=True)


def write_embeddings(path, table):
    """Write an `embed_splits` table atomically to `path` (`.npz` or `.parquet`).

    `.npz`: the arrays `embeddings`, `labels`, `split`, `class_names` and
    `paths` if known (`numpy.load`). `.parquet` (pyarrow): one row per image
    with columns `embedding` (fixed-size list of float32), `label`,
    `class_name`, `split` and `path` if known.

    Returns:
        `Path` written.

    Raises:
        ValueError, ImportError: as `check_output`.

    Example:

    >>> import numpy as np, tempfile, os
    >>> from clzoo.export.embeddings import write_embeddings
    >>> table = {"embeddings": np.eye(2, 3, dtype="float32"), "labels": np.array([0, 1]),
    ...          "split": np.array(["test", "test"]), "class_names": ["a", "b"]}
    >>> path = write_embeddings(os.path.join(tempfile.mkdtemp(), "e.npz"), table)
    >>> np.load(path)["embeddings"].shape
    (2, 3)
    """
    suffix = check_output(path)
    arrays = {k: np.asarray(v) for k, v in table.items()}
    if suffix == ".npz":
        def write(tmp):
            with open(tmp, "wb") as handle:
                np.savez(handle, **arrays)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        x = np.ascontiguousarray(arrays["embeddings"], dtype=np.float32)
        columns = {"embedding": pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), x.shape[1]),
                   "label": pa.array(arrays["labels"].astype(np.int32)),
                   "class_name": pa.array([table["class_names"][i] for i in arrays["labels"]]),
                   "split": pa.array(arrays["split"].tolist())}
        if "paths" in arrays:
            columns["path"] = pa.array(arrays["paths"].tolist())

        def write(tmp):
            pq.write_table(pa.table(columns), tmp)
    return atomic_write(path, write, suffix=suffix)
