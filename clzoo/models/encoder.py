"""`Encoder.from_preset`: pretrained clzoo encoders, keras-hub style."""


class Encoder:
    """Entry point for pretrained encoders (the models themselves are plain `keras.Model`s).

    Example:

    >>> import clzoo
    >>> sorted(clzoo.models.Encoder.presets())[:1]  # doctest: +SKIP
    ['sincere_resnet20_cifar10']
    """

    @classmethod
    def from_preset(cls, handle, verify=True):
        """Load an encoder from a built-in preset name, `hf://owner/repo` or a preset folder.

        Returns a frozen `keras.Model` taking float images in [0, 1]
        `(batch, H, W, 3)` at the preset's size and returning features
        `(batch, D)`. See `clzoo.presets.load_preset` for the checks made.
        """
        from clzoo.presets import load_preset

        return load_preset(handle, verify=verify)

    @staticmethod
    def presets():
        """`{name: registry entry}` of clzoo's built-in presets."""
        from clzoo.presets import BUILTIN_PRESETS

        return dict(BUILTIN_PRESETS)
