"""A PNG grid of images and their augmented views, to look at what the model sees."""

import io

import numpy as np
import tensorflow as tf

from clzoo.data.batch_views import BatchViewConfig, batch_views, image_coins
from clzoo.data.views import ViewConfig, multi_view, view_recipe
from clzoo.files import atomic_write


def show_views(split, path, recipe="supcon", images=8, views=4, size=None, seed=0):
    """Write a grid: one row per image, the original then `views` augmented views.

    Args:
        split: `clzoo.data.Split`.
        path: output PNG path (written atomically).
        recipe: a name of `clzoo.data.VIEW_RECIPES`, a `ViewConfig`, or
            `"airbench"` / a `BatchViewConfig` (airbench's batch-wise views:
            the columns are then epochs 1, 2, ..., showing the alternating flip
            and the translate). Defaults to `"supcon"`.
        images: rows (the first images of the split, one per class first).
        views: views per image. Defaults to `4`.
        size: view size. Defaults to the images' size.
        seed: augmentation seed.

    Returns:
        `path`.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    size = size or int(split.images.shape[1])
    batch_wise = recipe == "airbench" or isinstance(recipe, BatchViewConfig)
    if batch_wise:
        config = recipe if isinstance(recipe, BatchViewConfig) else BatchViewConfig(size=size)
        title = "'airbench' views, one per epoch (alternating flip, reflect translate)"
    elif isinstance(recipe, ViewConfig):
        config = ViewConfig(**{**recipe.to_dict(), "views": views, "size": size})
        title = "custom views"
    else:
        config = view_recipe(recipe, size=size, views=views)
        title = f"'{recipe}' views"
    # One image per class first, so the grid shows the variety of the data.
    labels = np.asarray(split.labels)
    firsts = [int(np.flatnonzero(labels == c)[0]) for c in np.unique(labels)]
    rest = [i for i in range(len(labels)) if i not in set(firsts)]
    chosen = (firsts + rest)[:images]
    fig, axes = plt.subplots(len(chosen), views + 1, figsize=(1.3 * (views + 1), 1.3 * len(chosen)),
                             squeeze=False)
    by_epoch = _epochs_of_batch_views(split, chosen, config, views, seed) if batch_wise else None
    for row, index in enumerate(chosen):
        image = split.images[index]
        out = (by_epoch[row] if batch_wise else
               multi_view(tf.constant(image), tf.constant([seed, index], tf.int64), config).numpy())
        axes[row][0].imshow(image)
        name = split.class_names[labels[index]] if split.class_names else str(labels[index])
        axes[row][0].set_ylabel(name, fontsize=7)
        for v in range(views):
            axes[row][v + 1].imshow(np.clip(out[v], 0, 1))
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0][0].set_title("original", fontsize=8)
    for v in range(views):
        axes[0][v + 1].set_title(f"{'epoch' if batch_wise else 'view'} {v + 1}", fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)

    def write(tmp):
        with open(tmp, "wb") as handle:
            handle.write(buffer.getvalue())

    atomic_write(path, write)
    return path


def _epochs_of_batch_views(split, chosen, config, epochs, seed):
    """`(len(chosen), epochs, H, W, 3)`: view 0 of the chosen images in epochs 1..`epochs`."""
    if tuple(split.images.shape[1:3]) != (config.size, config.size):
        raise ValueError(f"airbench's views do not resize: the images must be {config.size}x"
                         f"{config.size}. Received: {tuple(split.images.shape[1:3])}")
    images = tf.constant(split.images[chosen])
    coins = tf.gather(image_coins(len(split), seed), chosen)
    out = [batch_views(images, tf.constant(seed, tf.int64), tf.constant(epoch, tf.int64),
                       tf.constant(0, tf.int64), coins, config)[:, 0].numpy()
           for epoch in range(epochs)]
    return np.stack(out, axis=1)
