"""One image file to uint8 RGB pixels: the decoding every image folder source shares (a split
decoded whole into memory, `clzoo.data.sources`, and one read per step, `clzoo.data.file_images`)."""

import os
import stat

import numpy as np

from clzoo.data.resize import resize_image

ALPHA_BACKGROUND = (255, 255, 255)  # transparent pixels are composited on white


def to_rgb(image):
    """uint8 `(H, W, 3)` pixels of a PIL image.

    16-bit grey (`I;16*`, or `I` within 0..65535) is scaled to 0..255 as
    `round(v / 257)`; Pillow reads 16-bit colour PNGs as the high byte of each
    sample (within 1 of that). Alpha (RGBA, LA, palettes and colours marked
    transparent) is composited on `ALPHA_BACKGROUND`. Palette, 1-bit, grey,
    CMYK and YCbCr images become RGB by Pillow's conversions.

    Raises:
        ValueError: 32-bit integer pixels outside 0..65535, or float (`F`)
            pixels: their scale is unknown.
    """
    mode = image.mode
    if mode == "F":
        raise ValueError("float pixels (mode 'F') have no known 0..255 scale")
    if mode.startswith("I"):  # "I;16", "I;16B", "I;16L", "I;16N", "I"
        values = np.asarray(image).astype(np.int64)
        if values.size and (values.min() < 0 or values.max() > 65535):
            raise ValueError(f"32-bit integer pixels span {values.min()}..{values.max()}, not "
                             "0..65535; their scale is unknown")
        grey = ((values * 255 + 32767) // 65535).astype(np.uint8)
        return np.repeat(grey[..., None], 3, axis=-1)
    if "A" in mode or "a" in mode or "transparency" in image.info:
        rgba = np.asarray(image.convert("RGBA"), dtype=np.int32)
        alpha = rgba[..., 3:]
        background = np.asarray(ALPHA_BACKGROUND, np.int32)
        return ((rgba[..., :3] * alpha + background * (255 - alpha) + 127) // 255).astype(np.uint8)
    return np.asarray(image.convert("RGB"), dtype=np.uint8)


def decode_image(path, skip=False, size=None):
    """uint8 `(H, W, 3)` pixels of an image file, turned upright by its EXIF orientation tag,
    resized to `(size, size)` when `size` is given. Only a regular file is read: a pipe, a
    device or a socket (a file replaced by a FIFO mid-run) is refused, never waited on."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        with _open_regular(path) as handle, Image.open(handle) as image:
            if size is not None and image.format == "JPEG":
                # decode at the smallest DCT scale (1/2, 1/4, 1/8) still at least size x size
                image.draft(None, (size, size))
            # Phone photos store pixels as the sensor read them and the rotation in EXIF.
            pixels = to_rgb(ImageOps.exif_transpose(image))
            return pixels if size is None else resize_image(pixels, size)
    except Exception as error:  # PIL raises several types for bad files.
        if skip:
            return None
        # Pillow names an opened file by its handle's repr; the line below names the path
        reason = "cannot identify image file" if isinstance(error, UnidentifiedImageError) else error
        raise ValueError(
            f"Cannot read image {path}: {reason} (remove or replace the file; in Python, "
            "load_split(..., on_unreadable='skip') leaves such files out)"
        ) from error


def _open_regular(path):
    """`path` opened for binary reading, refused (ValueError) unless it is a regular file. Opened
    non-blocking and checked on the open descriptor: opening a FIFO otherwise waits for a writer,
    and a check before the open could be raced by a rename."""
    handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(handle).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a device, pipe or socket"
            raise ValueError(f"not a regular file ({kind})")
        return os.fdopen(handle, "rb")
    except BaseException:
        os.close(handle)
        raise
