"""A PNG grid of images and their augmented views, to look at what the model sees."""

import io

import numpy as np

from clzoo.data.augmentation_settings import BatchViewConfig, ViewConfig
from clzoo.files import atomic_write

STREAMS = ("auto", "tf_data", "device")
PREVIEW_SIDE = 256  # pixels; a grid cell is 130 px wide, so larger images are decoded at this size


def show_views(split, path, recipe="supcon", images=8, views=4, size=None, seed=0, stream="auto"):
    """Write a grid: one row per image, the original then `views` augmented views.

    Args:
        split: `clzoo.data.Split`.
        path: output PNG path (written atomically).
        recipe: a name of `clzoo.data.VIEW_RECIPES`, a `ViewConfig`, or
            `"airbench"` / a `BatchViewConfig` (airbench's batch-wise views:
            the columns are then epochs 1, 2, ..., showing the alternating flip
            and the translate). Defaults to `"supcon"`.
        images: rows (the first images of the split, one per class first). Images left in
            their files (`FileImages`) larger than `PREVIEW_SIDE` are decoded at that size
            (square, as `image_size` resizes), never whole.
        views: views per image. Defaults to `4`.
        size: view size. Defaults to the shown images' size.
        seed: augmentation seed.
        stream: whose views to draw: `"tf_data"` (`clzoo.data.batches`, TensorFlow),
            `"device"` (`clzoo.data.device_batches`, `keras.ops` on any backend) or
            `"auto"`: tf.data where TensorFlow is installed, else the device stream.

    Returns:
        `path`.

    Raises:
        ValueError: an unknown `stream`; `"tf_data"` without TensorFlow; a view
            setting the device stream has no form for (RandAugment, the blur).
    """
    stream = _stream(stream)
    # One image per class first, so the grid shows the variety of the data.
    labels = np.asarray(split.labels)
    firsts = [int(np.flatnonzero(labels == c)[0]) for c in np.unique(labels)]
    rest = [i for i in range(len(labels)) if i not in set(firsts)]
    chosen = (firsts + rest)[:images]
    shown = _shown(split.images, chosen)
    size = size or int(shown.shape[1])
    batch_wise = recipe == "airbench" or isinstance(recipe, BatchViewConfig)
    config, title = _config(recipe, views, size, batch_wise)
    title += f", {stream} stream"
    if batch_wise and tuple(shown.shape[1:3]) != (config.size, config.size):
        raise ValueError(f"airbench's views do not resize: the images must be {config.size}x"
                         f"{config.size}. Received: {tuple(shown.shape[1:3])}")
    drawn = (_tf_data_views if stream == "tf_data" else _device_views)(shown, chosen, len(split), config,
                                                                        views, seed, batch_wise)
    names = [split.class_names[labels[i]] if split.class_names else str(labels[i]) for i in chosen]
    png = _grid_png(shown, drawn, names, "epoch" if batch_wise else "view", title)

    def write(tmp):
        with open(tmp, "wb") as handle:
            handle.write(png)

    atomic_write(path, write)
    return path


def preview_source(source):
    """`source` (a `DataSource`) resized on load to `PREVIEW_SIDE` where it is a folder of larger
    images and no `image_size` is set: its first image is then not decoded whole either."""
    import dataclasses

    if source.folder is None or source.image_size is not None:
        return source
    first = source.decoded_bytes(1)  # from the first file's header
    if first is None or first <= 3 * PREVIEW_SIDE**2:
        return source
    return dataclasses.replace(source, image_size=PREVIEW_SIDE)


def _shown(images, chosen):
    """uint8 pixels of rows `chosen`; rows left in their files larger than `PREVIEW_SIDE` are decoded
    at that size (a JPEG at a reduced DCT scale): decoded whole, with views drawn at that size,
    8 photos of 2048 px grew RSS by 2.4 GB."""
    from clzoo.data.file_images import FileImages

    if isinstance(images, FileImages) and max(images.shape[1:3]) > PREVIEW_SIDE:
        images = FileImages([images.paths[i] for i in chosen], PREVIEW_SIDE, images.on_unreadable)
        chosen = np.arange(len(chosen))
    return np.asarray(images[chosen])


def _grid_png(shown, drawn, names, column, title):
    """PNG bytes of the grid: each row an image (named) then its views `drawn[row]`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, views = len(shown), drawn.shape[1]
    fig, axes = plt.subplots(rows, views + 1, figsize=(1.3 * (views + 1), 1.3 * rows), squeeze=False)
    for row in range(rows):
        axes[row][0].imshow(shown[row])
        axes[row][0].set_ylabel(names[row], fontsize=7)
        for v in range(views):
            axes[row][v + 1].imshow(np.clip(drawn[row][v], 0, 1))
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0][0].set_title("original", fontsize=8)
    for v in range(views):
        axes[0][v + 1].set_title(f"{column} {v + 1}", fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()


def _stream(stream):
    from clzoo.data.device_stream import tensorflow_installed

    if stream not in STREAMS:
        raise ValueError(f"stream must be one of {', '.join(STREAMS)}. Received: {stream!r}")
    if stream == "auto":
        return "tf_data" if tensorflow_installed() else "device"
    if stream == "tf_data" and not tensorflow_installed():
        raise ValueError("the tf.data stream's views need TensorFlow, which is not installed here; "
                         "show the device stream's (stream='device', clzoo show-views --stream device)")
    return stream


def _config(recipe, views, size, batch_wise):
    from clzoo.data.augmentation_settings import view_recipe

    if batch_wise:
        config = recipe if isinstance(recipe, BatchViewConfig) else BatchViewConfig(size=size)
        return config, "'airbench' views, one per epoch (alternating flip, reflect translate)"
    if isinstance(recipe, ViewConfig):
        return ViewConfig(**{**recipe.to_dict(), "views": views, "size": size}), "custom views"
    return view_recipe(recipe, size=size, views=views), f"'{recipe}' views"


def _tf_data_views(shown, chosen, count, config, views, seed, batch_wise):
    """`(len(chosen), views, S, S, 3)` from tf.data's functions (columns: epochs when `batch_wise`)."""
    import tensorflow as tf

    from clzoo.data.tf_data_batch_views import batch_views, image_coins
    from clzoo.data.tf_data_views import multi_view

    if not batch_wise:
        return np.stack([multi_view(tf.constant(image), tf.constant([seed, index], tf.int64), config).numpy()
                         for image, index in zip(shown, chosen)])
    coins = tf.gather(image_coins(count, seed), chosen)
    out = [batch_views(tf.constant(shown), tf.constant(seed, tf.int64), tf.constant(epoch, tf.int64),
                       tf.constant(0, tf.int64), coins, config)[:, 0].numpy()
           for epoch in range(views)]
    return np.stack(out, axis=1)


def _device_views(shown, chosen, count, config, views, seed, batch_wise):
    """The same grid from the device stream (`keras.ops`): the shown images as one batch, in order;
    for `batch_wise` views, view 0 of epochs 1..`views`."""
    import keras

    from clzoo.data.device_stream import device_batches, device_form_missing

    if reason := device_form_missing("views", config):
        raise ValueError(f"the device stream cannot draw these views: {reason}; show tf.data's "
                         "(stream='tf_data', clzoo show-views --stream tf_data)")
    from clzoo.data.split import from_arrays

    small = from_arrays(shown, np.arange(len(shown)))  # labels unused: one class per image
    stream = device_batches(small, batch_size=len(shown), seed=seed, epochs=views if batch_wise else 1,
                            views=config, shuffle=False)
    batches = [keras.ops.convert_to_numpy(images) for images, _ in stream]
    if batch_wise:
        return np.stack([batch[:, 0] for batch in batches], axis=1)
    return batches[0]
