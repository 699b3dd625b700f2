"""A tfds split, held or streamed: in ArrayRecord files read by index (`TfdsImages`, with or
without TensorFlow), else loaded whole by `tfds.load` (`_load_tfds`); a dataset not prepared here
is refused at once where TFDS' host cannot be reached."""

import os

import numpy as np

from clzoo.data.memory_budget import over_budget
from clzoo.data.resize import MixedImageSizes, check_resized_memory, resize_image
from clzoo.data.split import Split


def prepared_builder(name):
    """The builder of a tfds dataset prepared here in ArrayRecord files, else None (TFRecord files,
    not prepared, or a name tfds cannot build: read as `tfds.load` reads it)."""
    try:
        from clzoo.data.tfds_images import streams, tfds_builder

        builder = tfds_builder(name)
        prepared = os.path.isfile(os.path.join(builder.data_dir, "dataset_info.json"))
        return builder if prepared and streams(builder) else None
    except Exception:  # no tensorflow-datasets, an unknown name: `_load_tfds` names the reason
        return None


def _on_disk(name):
    """True when tfds dataset `name` is prepared here (in whatever files)."""
    try:
        from clzoo.data.tfds_images import tfds_builder

        return os.path.isfile(os.path.join(tfds_builder(name).data_dir, "dataset_info.json"))
    except Exception:  # no tensorflow-datasets, an unknown name: `_load_tfds` names the reason
        return False


def decoded_bytes(name, split, image_size):
    builder = prepared_builder(name)
    if builder is None:
        return None
    image_key = builder.info.supervised_keys[0]
    height, width = (image_size, image_size) if image_size else builder.info.features[image_key].shape[:2]
    if height is None or width is None:
        return None
    return builder.info.splits[split].num_examples * height * width * 3


def load_tfds_split(source, split, stream):
    """A tfds split: in ArrayRecord files read by index (`TfdsImages`: streamed, or decoded whole
    into memory, TensorFlow not needed), else `tfds.load` into memory (`_load_tfds`)."""
    name = source.source[len("tfds:"):]
    if prepared_builder(name) is None:
        from clzoo.data.device_stream import tensorflow_installed

        if not tensorflow_installed() and _on_disk(name):
            raise ValueError(f"tfds:{name} is prepared in TFRecord files, which TFDS reads with "
                             "TensorFlow (not installed here): prepare it in ArrayRecord files (tfds "
                             "build --file_format=array_record), which TFDS reads without it, or pip "
                             "install tensorflow")
        if stream is True:
            raise ValueError(f"streaming reads tfds splits prepared in ArrayRecord files; tfds:{name} is "
                             "not (tfds build --file_format=array_record prepares it so), or hold it "
                             "(data_loading: memory or auto)")
        return _load_tfds(name, split, image_size=source.image_size)
    from clzoo.data.tfds_images import TfdsImages

    images = TfdsImages(name, split, size=source.image_size)
    if stream == "auto":
        stream = over_budget(images.nbytes)
    labels = images.labels()
    names = list(_class_names(images, labels))
    fingerprint = images.fingerprint()  # the same held or streamed, so a resume may switch
    if not stream:
        if source.image_size is not None:
            check_resized_memory(len(images), source.image_size, f"tfds:{name} {split}")
        images = np.asarray(images)
    return Split(images, labels, names, fingerprint=fingerprint)


def _class_names(images, labels):
    """The class names of a `TfdsImages` split's label feature (its ids as text if it has none)."""
    from clzoo.data.tfds_images import tfds_builder

    feature = tfds_builder(images.name, images.data_dir).info.features[images.label_key]
    return getattr(feature, "names", None) or [str(i) for i in range(int(np.max(labels)) + 1)]


TFDS_HOST = ("storage.googleapis.com", 443)  # TFDS' mirror of the datasets it prepares


def tfds_missing():
    """The one line for a `tfds:` spec where tensorflow-datasets (or TensorFlow under it) is missing."""
    from clzoo.data.device_stream import tensorflow_installed

    needs = "tensorflow-datasets importlib_resources" + ("" if tensorflow_installed() else " tensorflow")
    return (f"Reading a tfds dataset needs {needs.replace(' ', ', ')}: pip install {needs}; or pass "
            "--data <image folder> (<folder>/{train,test}/<class>/<image>)")



def _load_tfds(name, split, coarse_key=None, image_size=None):
    try:
        import tensorflow_datasets as tfds
    except ImportError as error:
        raise ImportError(tfds_missing()) from error
    _refuse_a_download_offline(tfds, name)
    try:
        dataset, info = tfds.load(name, split=split, with_info=True)
    except Exception as error:  # download, preparation or name errors come in many types
        reason = (str(error).strip().splitlines() or [""])[0][:200]
        raise ValueError(f"tfds dataset {name!r} (split {split!r}) could not be loaded: "
                         f"{type(error).__name__}: {reason}") from None
    image_key, label_key = info.supervised_keys
    count = _example_count(dataset, info, split)
    if image_size is not None:
        check_resized_memory(count, image_size, f"tfds:{name} {split}")
    images, labels, coarse = None, [], []
    for row, example in enumerate(tfds.as_numpy(dataset)):
        image = example[image_key]
        image = np.repeat(image, 3, axis=-1) if image.shape[-1] == 1 else image
        image = image if image_size is None else resize_image(image.astype(np.uint8), image_size)
        if images is None:  # one array filled in place: the split in memory once, not twice
            images = np.zeros((count, *image.shape), np.uint8)
        if row >= count:
            raise ValueError(f"tfds dataset {name!r} holds more examples than its {count} in split "
                             f"{split!r}")
        if image.shape != images.shape[1:]:
            raise MixedImageSizes(f"tfds dataset {name!r} has images of several sizes ({images.shape[1:]}, "
                             f"{image.shape}, ...); resize them on load with --image-size N (recipe "
                             "key image_size).")
        images[row] = image
        labels.append(example[label_key])
        if coarse_key:
            coarse.append(example[coarse_key])
    if images is None or not labels:
        raise ValueError(f"tfds dataset {name!r} has no examples in split {split!r}.")
    images = images[:len(labels)]
    label_feature = info.features[info.supervised_keys[1]]
    names = list(getattr(label_feature, "names", None) or
                 [str(i) for i in range(int(np.max(labels)) + 1)])
    if coarse_key:
        coarse_names = list(info.features[coarse_key].names)
        return Split(images.astype(np.uint8), np.asarray(coarse, np.int32), coarse_names,
                     fine_labels=np.asarray(labels, np.int32), fine_class_names=names)
    return Split(images.astype(np.uint8), np.asarray(labels, np.int32), names)



def _refuse_a_download_offline(tfds, name):
    """A tfds dataset not yet prepared here is downloaded first; without a network that took
    3 min 40 s of retries and progress bars, then an error cut off mid-word. Refused at once, in
    one line, when TFDS' host cannot be reached (checked only without an HTTP proxy, which a
    direct connection would not use)."""
    import socket

    try:
        builder = tfds.builder(name)
        prepared = os.path.isfile(os.path.join(builder.data_dir, "dataset_info.json"))
    except Exception:  # a name tfds cannot build: `tfds.load` gives its own reason
        return
    # tfds.testing.mock_data replaces the download with generated examples: nothing to fetch
    download = getattr(type(builder), "download_and_prepare", None)
    prepared = prepared or "mock" in getattr(download, "__qualname__", "")
    proxied = any(os.environ.get(key) for key in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"))
    if prepared or proxied:
        return
    try:
        socket.create_connection(TFDS_HOST, timeout=5).close()
    except OSError as error:
        raise ValueError(f"tfds:{name} is not prepared in {builder.data_dir} and this machine cannot "
                         f"reach {TFDS_HOST[0]} to download it ({error.strerror or error}): prepare "
                         "it where there is a network (copy the folder over), or give an image folder"
                         ) from None



def _example_count(dataset, info, split):
    """Examples in a tfds split: tf.data's cardinality, else the dataset info's count."""
    count = int(dataset.cardinality())
    if count >= 0:
        return count
    try:
        return info.splits[split].num_examples
    except KeyError:
        raise ValueError(f"tfds dataset {info.name!r} does not say how many examples split "
                         f"{split!r} holds") from None
