"""Resizing on load, for image sets of mixed sizes (`image_size`, `--image-size`).

As Keras' `image_dataset_from_directory(image_size=...)` does, every image is resized to the
given square size on load, without keeping its aspect ratio; here with Pillow's bilinear
filter (antialiased when shrinking). Sizes are taken after the EXIF orientation is applied.
"""

import numbers

import numpy as np

MAX_IMAGE_SIZE = 4096  # pixels per side; a larger value is more likely a typo than a wish


class MixedImageSizes(ValueError):
    """Images of several sizes where a split needs one: resize them on load (`image_size`)."""


def check_image_size(value):
    """`value` as an int side in pixels, or None; `ValueError` naming the expected range."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not (
            1 <= value <= MAX_IMAGE_SIZE):
        raise ValueError(f"`image_size` must be a whole number of pixels from 1 to {MAX_IMAGE_SIZE}, "
                         f"or None to keep the images' own size. Received: image_size={value!r}")
    return int(value)


def check_resized_memory(count, size, where):
    """Refuse, before decoding, `count` images resized to `size` that would not fit in memory.

    Raises:
        ValueError: `count * size * size * 3` bytes (uint8 RGB) exceed the memory this process
            may use (`clzoo.data.memory_budget.process_memory`: `MemAvailable` or the room
            under a cgroup limit); the message gives both and the figure's source.
    """
    from clzoo.data.memory_budget import over_memory, size_text

    needed = count * size * size * 3
    if over := over_memory(needed):
        raise ValueError(f"{count} images of {where} at --image-size {size} take "
                         f"{size_text(needed)} as uint8, {over}; choose a smaller --image-size "
                         "(an image folder may also stream: data_loading: auto or stream)")


def resize_image(image, size):
    """uint8 `(H, W, 3)` -> uint8 `(size, size, 3)` (bilinear); returned as is when already that size.

    Example:

    >>> import numpy as np
    >>> from clzoo.data.resize import resize_image
    >>> resize_image(np.zeros((20, 30, 3), np.uint8), 16).shape
    (16, 16, 3)
    """
    if image.shape[:2] == (size, size):
        return image
    from PIL import Image

    resized = Image.fromarray(image).resize((size, size), Image.Resampling.BILINEAR)
    return np.asarray(resized, dtype=np.uint8)
