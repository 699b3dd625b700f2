"""A tiny class-per-folder image set cut from scikit-learn's digits, for fast training runs."""

from pathlib import Path

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits


def write_tiny_digits(root, train=160, test=60, classes=4):
    """Write `root/{train,test}/<digit>/<i>.png` (8x8 RGB) and return `root` as a string."""
    digits = load_digits()
    keep = digits.target < classes
    images = (digits.images[keep] * (255 / 16)).astype(np.uint8)
    labels = digits.target[keep]
    root = Path(root)
    for split, sl in (("train", slice(0, train)), ("test", slice(train, train + test))):
        for i, (image, label) in enumerate(zip(images[sl], labels[sl])):
            folder = root / split / str(label)
            folder.mkdir(parents=True, exist_ok=True)
            Image.fromarray(np.repeat(image[..., None], 3, axis=-1)).save(folder / f"{i}.png")
    return str(root)
