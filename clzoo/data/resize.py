"""Resizing on load, for image sets of mixed sizes (`image_size`, `--image-size`).

As Keras' `image_dataset_from_directory(image_size=...)` does, every image is resized to the
given square size on load, without keeping its aspect ratio; here with Pillow's bilinear
filter (antialiased when shrinking). Sizes are taken after the EXIF orientation is applied.
"""

import numbers

import numpy as np

MAX_IMAGE_SIZE = 4096  # pixels per side; a larger value is more likely a typo than a wish
MEMORY_FRACTION = 0.5  # of the machine's memory the resized images may take (the rest: decoding, training)


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
        ValueError: `count * size * size * 3` bytes (uint8 RGB) exceed `MEMORY_FRACTION` of the
            machine's physical memory; the message gives both in GiB.
    """
    from clzoo.machine import machine_bytes

    needed, total = count * size * size * 3, machine_bytes()
    if total and needed > MEMORY_FRACTION * total:
        raise ValueError(f"{count} images of {where} at --image-size {size} take "
                         f"{needed / 2**30:.1f} GiB as uint8, over half of this machine's "
                         f"{total / 2**30:.1f} GiB; choose a smaller --image-size")


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
