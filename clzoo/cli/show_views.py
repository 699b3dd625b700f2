"""`clzoo show-views`: a PNG grid of training images and their augmented views."""

from pathlib import Path

from clzoo.cli.arguments import add_image_size, add_overwrite, user_path, whole
from clzoo.cli.resolve import data_checks, resolved_source

# The view recipes (clzoo.data.VIEW_RECIPES, spelled out so that `clzoo --help` imports neither
# Keras nor TensorFlow; tests/test_cli.py checks them).
VIEW_RECIPE_NAMES = ("asymmetric", "digits", "randaugment", "simclr", "stacked_randaugment", "supcon")


def add_parser(commands):
    p = commands.add_parser("show-views", help="PNG grid of training images and their augmented views")
    p.add_argument("--data", required=True, help="same forms as `clzoo train --data`")
    add_image_size(p)
    p.add_argument("--recipe", default="supcon", choices=[*VIEW_RECIPE_NAMES, "airbench"],
                   help="view recipe; 'airbench': its batch-wise views, one column per epoch")
    p.add_argument("--images", type=whole(1), default=8, help="training images, one row each")
    p.add_argument("--views", type=whole(1), default=4, help="augmented views per image")
    p.add_argument("--seed", type=whole(0), default=0, help="seed of the images and views drawn")
    p.add_argument("--stream", choices=("auto", "tf_data", "device"), default="auto",
                   help="whose views: tf.data's (TensorFlow) or the device stream's (keras.ops, any "
                        "backend); auto: tf_data where TensorFlow is installed")
    p.add_argument("--output", type=user_path, default="views.png",
                   help="PNG file to write (default: views.png)")
    add_overwrite(p)
    p.set_defaults(func=_show_views)


def checks(args):
    """Before Keras: a `.png` output, TensorFlow for `--stream tf_data`, and the `--data` spec."""
    if Path(args.output).suffix.lower() != ".png":
        raise ValueError(f"--output {args.output}: show-views writes a PNG image; name a .png file")
    import importlib.util  # not clzoo.data.device_stream's check: that module imports Keras

    if args.stream == "tf_data" and importlib.util.find_spec("tensorflow") is None:
        raise ValueError("--stream tf_data: tf.data's views need TensorFlow, which is not installed "
                         "here; --stream device shows the device stream's (keras.ops, any backend)")
    data_checks(args)


def _show_views(args):
    from clzoo.data import show_views
    from clzoo.data.preview import preview_source
    from clzoo.files import locked_output

    with locked_output(args.output, args.overwrite):
        source = preview_source(resolved_source(args))  # large images: decoded at the grid's size
        # a folder stays in its files: only the images shown are decoded
        split = source.load("train", stream=source.folder is not None)
        path = show_views(split, args.output, recipe=args.recipe, images=args.images,
                          views=args.views, seed=args.seed, stream=args.stream)
    print(f"wrote {path}")
    return 0
