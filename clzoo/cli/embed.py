"""`clzoo embed`: a model's embeddings and labels of a data set, written to `.npz` or `.parquet`."""

from clzoo.cli.arguments import add_bare_encoder, add_image_size, add_overwrite, user_path
from clzoo.cli.resolve import BARE, load_encoder, model_and_data_checks, resolved_source


def add_parser(commands):
    p = commands.add_parser("embed", help="write a model's embeddings and labels to .npz or .parquet")
    p.add_argument("model", help="run folder, .keras file, or preset (name, hf://owner/repo, folder)")
    p.add_argument("--data", help="same forms as `clzoo train --data`; default: a run "
                   "folder's own data (and its image_size)")
    add_image_size(p)
    p.add_argument("--output", type=user_path, required=True,
                   help="embeddings.npz (numpy) or embeddings.parquet (needs pyarrow)")
    p.add_argument("--split", choices=("train", "test", "both"), default="both",
                   help="which split(s) to embed (default: both, with a split column)")
    p.add_argument("--space", choices=("encoder", "projection"), default="encoder",
                   help="encoder features, or the projection head's embeddings (a run's checkpoint)")
    p.add_argument("--normalize", action="store_true", help="L2-normalize each embedding")
    add_bare_encoder(p)
    add_overwrite(p)
    p.set_defaults(func=_embed)


def checks(args):
    """Before Keras: the output's suffix (and pyarrow for `.parquet`), the model and `--data`."""
    from clzoo.export.embeddings import check_output

    check_output(args.output)  # a bad suffix or a missing pyarrow, before any work
    model_and_data_checks(args, args.model)
    if not args.data_summary.labelled and args.split == "test":
        raise ValueError(f"--split test: --data {args.data!r} is an unlabelled folder (no train/ or "
                         "test/ sub-folders), one split of images: --split train (or both) embeds it")


def _embed(args):
    from clzoo.files import locked_output

    with locked_output(args.output, args.overwrite):
        return _embed_into(args)


def _embed_into(args):
    from clzoo.export.embeddings import embed_splits, write_embeddings

    source = resolved_source(args)
    encoder, path = load_encoder(args.model, args.space, args.bare_encoder)
    if args.bare_encoder:
        print(f"{args.model}{BARE}: these are not the model's features", flush=True)
    both = ("train", "test") if source.labelled else ("train",)  # an unlabelled folder: one split
    splits = both if args.split == "both" else (args.split,)
    table = embed_splits(encoder, source, splits, normalize=args.normalize)
    written = write_embeddings(args.output, table)
    paths = "with image paths" if "paths" in table else "no image paths (not an image folder)"
    labels = "labels" if source.labelled else "label 0 (an unlabelled folder: its one split)"
    print(f"wrote {written}: {len(table['labels'])} embeddings of dimension "
          f"{table['embeddings'].shape[1]} ({', '.join(splits)}), {labels}, {paths}")
    return 0
