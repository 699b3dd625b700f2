"""Images/s of the streams that read an image folder from its files, beside this machine's decode limit.

The limit: a tight loop of Pillow decode (JPEG draft) + resize over the same files in as many
processes as cores, nothing else. Each stream then runs in its own process on one backend:
`host` (the file-backed split's batches, decoded ahead in threads: what feeds the device stream;
beside it the same decode by grain's `mp_prefetch` and by a `keras.utils.PyDataset` with worker
processes, when grain is installed),
`device` (the device stream on JAX / torch: host decode + the views' keras.ops, here on the CPU) and
`tf_data` (clzoo.data.batches over the files). Views: one random resized crop + flip at
`--view-size` (`--colour`: SupCon's two views with colour jitter and grayscale).

    python benchmarks/file_stream.py --images 1536 --batch 128 --batches 12

Without `--folder` an ImageNet-shaped folder is written to a temp folder (JPEGs of 256-500 px,
100 classes). Prints one JSON line per row and a Markdown table.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np


def write_folder(root, images, classes=100, seed=0):
    """`images` JPEGs of 256-500 px (a smooth random field: JPEG-sized like photos) in `classes`."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    for i in range(images):
        folder = Path(root) / "train" / f"n{i % classes:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        height, width = rng.integers(256, 501, 2)
        coarse = rng.integers(0, 256, (height // 16 + 1, width // 16 + 1, 3), dtype=np.uint8)
        image = Image.fromarray(coarse).resize((int(width), int(height)), Image.Resampling.BICUBIC)
        image.save(folder / f"{i}.jpg", quality=90)
    for c in range(classes):  # a test split, as every data folder has
        (Path(root) / "test" / f"n{c:04d}").mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(Path(root) / "test" / f"n{c:04d}" / "0.jpg")
    return str(root)


def _decode_chunk(args):
    from clzoo.data.decode import decode_image

    paths, size = args
    for path in paths:
        decode_image(path, size=size)
    return len(paths)


def decode_limit(paths, size, processes):
    """Images/s of Pillow decode + resize alone over `paths` in `processes` processes."""
    chunks = [(paths[i::processes], size) for i in range(processes)]
    with Pool(processes) as pool:
        pool.map(_decode_chunk, [(c[:8], size) for c, _ in chunks])  # imports, warm caches
        started = time.perf_counter()
        done = sum(pool.map(_decode_chunk, chunks))
    return done / (time.perf_counter() - started)


def stream_rate(folder, stream, load_size, view_size, batch, batches, colour):
    """Images/s of `batches` batches of one stream (run in a child process, one backend)."""
    import keras

    import clzoo
    from clzoo.data import ViewConfig

    split = clzoo.data.data_source(folder, image_size=load_size).load("train", stream=True)
    # decode + crop + resize (+ flip) alone, what the stream itself costs; or SupCon's colour views
    views = ViewConfig(size=view_size) if colour else ViewConfig(size=view_size, views=1, jitter_p=0.0,
                                                                 grayscale_p=0.0)
    if stream == "device":  # compile the views first: a GPU run compiles once, then streams for hours
        first = clzoo.data.device_batches(split, "views", batch, epochs=batches, views=views)
        next(iter(first.take(1)))
    # From the loader's creation to its last batch: worker start-up counts, and no batch decoded
    # ahead during a warm-up is counted as free.
    started = time.perf_counter()
    if stream in ("grain", "pydataset"):
        run = _process_loader(stream, split.images.paths, load_size, batch, batches)
    elif stream == "host":
        from clzoo.data.device_stream import DeviceBatches, _decoded_ahead

        steps = DeviceBatches(split, batch, 0, views, True, 0, batches)._indices(len(split))
        run = (pixels for _, pixels in _decoded_ahead(split.images, steps))
    elif stream == "tf_data":
        run = iter(clzoo.data.batches(split, "views", batch, epochs=batches, views=views).take(batches))
    else:
        run = iter(clzoo.data.device_batches(split, "views", batch, epochs=batches, views=views))
    for _ in range(batches):
        keras.tree.map_structure(lambda t: keras.ops.convert_to_numpy(t), next(run))
    return batches * batch / (time.perf_counter() - started)


def _decode_path(path, size):
    from clzoo.data.decode import decode_image

    return decode_image(path, size=size)


def _process_loader(loader, paths, size, batch, batches):
    """The same host decode by a well-kept loader with worker processes: grain's `mp_prefetch`,
    or a `keras.utils.PyDataset` with `use_multiprocessing=True` (through Keras' own adapter)."""
    import functools

    import keras

    cores = os.cpu_count() or 2
    decode = functools.partial(_decode_path, size=size)
    if loader == "grain":
        import grain.python as grain
        from absl import flags

        flags.FLAGS.mark_as_parsed()  # grain reads absl flags, parsed by absl.app in its examples
        dataset = grain.MapDataset.source(paths).repeat(None).map(decode).batch(batch).to_iter_dataset()
        return iter(dataset.mp_prefetch(grain.MultiprocessingOptions(num_workers=cores)))
    from keras.src.trainers.data_adapters.py_dataset_adapter import PyDatasetAdapter

    class Files(keras.utils.PyDataset):
        def __len__(self):
            return batches

        def __getitem__(self, index):
            start = index * batch % (len(paths) - batch + 1)
            return np.stack([decode(p) for p in paths[start:start + batch]])

    files = Files(workers=cores, use_multiprocessing=True, max_queue_size=4)
    return iter(PyDatasetAdapter(files, shuffle=False).get_numpy_iterator())


ROWS = (("grain", "jax"), ("pydataset", "jax"), ("host", "jax"), ("device", "jax"), ("device", "torch"),
        ("tf_data", "tensorflow"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", help="an image folder (<folder>/train/<class>/<image>)")
    parser.add_argument("--images", type=int, default=1536)
    parser.add_argument("--load-size", type=int, default=224)
    parser.add_argument("--view-size", type=int, default=224)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--colour", action="store_true",
                        help="SupCon's colour jitter and grayscale too (2 views), not the crop alone")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)  # stream backend
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps({"rate": stream_rate(args.folder, args.child[0], args.load_size,
                                              args.view_size, args.batch, args.batches,
                                              args.colour)}))
        return
    folder = args.folder or write_folder(tempfile.mkdtemp(prefix="clzoo-files-"), args.images)
    paths = sorted(str(p) for p in Path(folder).glob("train/*/*.jpg"))
    cores = os.cpu_count() or 2
    limit = decode_limit(paths, args.load_size, cores)
    rows = [{"stream": f"decode limit ({cores} processes)", "backend": "-", "images_per_s": limit}]
    print(json.dumps(rows[0]), flush=True)  # each row as it is measured: a run cut short keeps them
    for stream, backend in ROWS:
        child = [sys.executable, __file__, "--folder", folder, "--child", stream, backend,
                 "--load-size", str(args.load_size), "--view-size", str(args.view_size),
                 "--batch", str(args.batch), "--batches", str(args.batches)] + (
                     ["--colour"] if args.colour else [])
        out = subprocess.run(child, capture_output=True, text=True,
                             env={**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"})
        if out.returncode:
            print(out.stderr[-2000:], file=sys.stderr)
            continue
        rate = json.loads(out.stdout.strip().splitlines()[-1])["rate"]
        rows.append({"stream": stream, "backend": backend, "images_per_s": rate,
                     "of_limit": rate / limit})
        print(json.dumps(rows[-1]), flush=True)
    print(f"\n{len(paths)} JPEGs, load {args.load_size} px, views {args.view_size} px, batch {args.batch}\n")
    print("| stream | backend | images/s | of the limit |\n| --- | --- | --- | --- |")
    for row in rows:
        share = f"{row['of_limit']:.2f}x" if "of_limit" in row else "1.00x"
        print(f"| {row['stream']} | {row['backend']} | {row['images_per_s']:.0f} | {share} |")


if __name__ == "__main__":
    main()
