"""Write `builtin_features.json`: every built-in preset's features of three fixed images, on TensorFlow.

    KERAS_BACKEND=tensorflow python tests/presets/builtin_features.py

`test_presets.py` checks that each backend gives these features (within 1e-4), so a preset
loads to the same encoder on TensorFlow, JAX and PyTorch. Re-run after a preset changes.
"""

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
IMAGES_SEED = 0  # the fixed images: uniform [0, 1), shape (3, 32, 32, 3)


def images():
    return np.random.default_rng(IMAGES_SEED).uniform(size=(3, 32, 32, 3)).astype("float32")


def main():
    import keras

    import clzoo

    assert keras.backend.backend() == "tensorflow", "write the reference on TensorFlow"
    out = {name: clzoo.presets.Encoder.from_preset(name).predict(images(), verbose=0).tolist()
           for name in sorted(clzoo.presets.BUILTIN_PRESETS)}
    (HERE / "builtin_features.json").write_text(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
