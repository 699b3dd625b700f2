"""`Encoder.from_preset`: pretrained clzoo encoders, keras-hub style.

It lives with the presets, above the models it loads (`clzoo.models` never imports presets).
"""

from clzoo.presets.loading import BUILTIN_PRESETS, load_preset


class Encoder:
    """Entry point for pretrained encoders (the models themselves are plain `keras.Model`s).

    Example:

    >>> import clzoo
    >>> "sincere_airbench_cifar10" in clzoo.presets.Encoder.presets()
    True
    """

    @classmethod
    def from_preset(cls, handle, verify=True, trainable=False, test_time=True):
        """Load an encoder from a built-in preset name, `hf://owner/repo[@revision]` or a folder.

        Returns a `keras.Model` taking float images in [0, 1]
        `(batch, H, W, 3)` at the preset's size and returning features
        `(batch, D)`, frozen unless `trainable=True` (keras-hub and timm
        return trainable models; clzoo's are feature extractors first).
        `test_time=False` drops the preset's test-time views for a quick look on a
        CPU (one pass instead of 6 for the airbench presets; not the preset's
        features). See
        `clzoo.presets.load_preset` for the checks made and the errors raised.
        """
        return load_preset(handle, verify=verify, trainable=trainable, test_time=test_time)

    @staticmethod
    def presets():
        """`{name: registry entry}` of clzoo's built-in presets."""
        return dict(BUILTIN_PRESETS)
