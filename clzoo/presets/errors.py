"""`PresetError`, importable without Keras (the CLI refuses a bad preset before loading Keras)."""


class PresetError(ValueError):
    """A preset is missing a file, fails its checksum or asks for something unsafe."""
