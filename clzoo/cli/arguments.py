"""The argparse pieces every command's parser shares: the one-line-error parser, argument types
(whole numbers, number lists, output paths), `--version` and the options several commands take."""

import argparse
import math
import os
import sys

from clzoo.version import __version__


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: the message and where help is, without the usage block."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def whole(low):
    """argparse type: a whole number >= `low` ("2.5" and "0" name the argument and the value)."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {low}. Received: {text!r}")
        return value

    return parse


def user_path(text):
    """argparse type of an output path: `~` expanded (`--output=~/x` reaches us unexpanded; it
    made a folder named "~"); a name that is not valid UTF-8 is refused (TensorBoard's writer and
    the reports' JSON cannot name it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(text).decode("ascii", "backslashreplace")
        raise argparse.ArgumentTypeError(f"{shown}: the name is not valid UTF-8; choose one that "
                                         "is") from None
    return os.path.expanduser(text)


def number_list(cast, valid, expected):
    """argparse type: comma-separated numbers, each `cast` and `valid`; `expected` says what."""

    def parse(text):
        try:
            values = [cast(v) for v in text.split(",")]
        except ValueError:
            values = []
        if not values or not all(valid(v) for v in values):
            raise argparse.ArgumentTypeError(f"expected {expected}. Received: {text!r}")
        return values

    return parse


int_list = number_list(int, lambda v: v >= 1, "comma-separated whole numbers >= 1, e.g. 1,5,20")
float_list = number_list(float, lambda v: math.isfinite(v) and v > 0,
                         "comma-separated positive numbers, e.g. 0.01,0.1")


def add_overwrite(p):
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing output (by default an existing file or non-empty "
                        "folder is refused)")


def add_bare_encoder(p):
    p.add_argument("--bare-encoder", action="store_true",
                   help="the encoder without its test-time views (the airbench presets average 6 "
                        "passes per image): about 6x faster on a CPU for a quick look; results are "
                        "labelled as the bare encoder's, not the preset's")


def add_image_size(p):
    p.add_argument("--image-size", type=whole(1), metavar="N",
                   help="resize every image to NxN on load (image folders of mixed sizes; as "
                        "Keras' image_dataset_from_directory, aspect ratio not kept)")


class VersionAction(argparse.Action):
    """`--version`: clzoo's version, and Keras' from its package metadata (nothing imported)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib import metadata

        from clzoo.console import keras_backend_name

        def version(package):
            try:
                return metadata.version(package)
            except metadata.PackageNotFoundError:
                return "not installed"

        backend = keras_backend_name()
        package = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}.get(backend)
        engine = f"{backend} {version(package)}" if package else backend
        if backend not in ("tensorflow", "jax", "torch", "numpy", "openvino"):  # Keras' own list
            engine = f"{backend!r}, not a backend Keras knows (tensorflow, jax, torch, numpy, openvino)"
        print(f"clzoo {__version__} (keras {version('keras')}, backend {engine}, "
              f"python {sys.version.split()[0]})")
        parser.exit()
