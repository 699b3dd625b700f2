"""Image folders written for the loader tests: `root/<split>/<class>/<i>.png`."""

import numpy as np
from PIL import Image


def write_image_folder(root, classes=("cat", "dog"), per_class=3, size=(8, 8), splits=("train", "test")):
    """Write `per_class` random RGB PNGs of `size` (H, W) per class and split (seeded: the same
    pixels every call); return `root`."""
    rng = np.random.default_rng(0)
    for split in splits:
        for name in classes:
            (root / split / name).mkdir(parents=True)
            for i in range(per_class):
                pixels = rng.integers(0, 256, size=size + (3,), dtype=np.uint8)
                Image.fromarray(pixels).save(root / split / name / f"{i}.png")
    return root
