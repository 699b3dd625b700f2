"""A tfds split, held or streamed: in ArrayRecord files read by index (`TfdsImages`, with or
without TensorFlow), else loaded whole by `tfds.load` (`clzoo.data.sources._load_tfds`)."""

import os

import numpy as np

from clzoo.data.resize import check_resized_memory
from clzoo.data.sources import _load_tfds, _over_budget
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
        stream = _over_budget(images.nbytes)
    labels = images.labels()
    names = list(_class_names(images, labels))
    if not stream:
        if source.image_size is not None:
            check_resized_memory(len(images), source.image_size, f"tfds:{name} {split}")
        images = np.asarray(images)
    return Split(images, labels, names)


def _class_names(images, labels):
    """The class names of a `TfdsImages` split's label feature (its ids as text if it has none)."""
    from clzoo.data.tfds_images import tfds_builder

    feature = tfds_builder(images.name, images.data_dir).info.features[images.label_key]
    return getattr(feature, "names", None) or [str(i) for i in range(int(np.max(labels)) + 1)]
