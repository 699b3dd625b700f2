"""`clzoo transfer`: a pretrained encoder's linear-probe top-1 on a data set (L-BFGS on features
embedded once, or SINCERE app. J's SGD protocol), with its bootstrap interval."""

import json
from pathlib import Path

from clzoo import console
from clzoo.cli.arguments import add_bare_encoder, add_image_size, add_overwrite, float_list, user_path, whole
from clzoo.cli.resolve import BARE, data_checks, is_preset, load_encoder, model_path, resolved_source


def add_parser(commands):
    p = commands.add_parser("transfer", help="linear-probe transfer from a pretrained encoder")
    p.add_argument("preset", help="built-in preset name, hf://owner/repo, a preset folder, a run "
                                   "folder or a .keras file")
    p.add_argument("--data", help="same forms as `clzoo train --data`; default: a run "
                   "folder's own data (and its image_size)")
    add_image_size(p)
    p.add_argument("--protocol", choices=("sgd", "lbfgs"), default="lbfgs",
                   help="lbfgs (default): logistic regression on features embedded once, seconds to "
                        "minutes on a CPU; sgd: SINCERE app. J, 4 fits x 100 epochs through the encoder")
    p.add_argument("--epochs", type=whole(1), help="sgd protocol epochs (default: app. J's 100)")
    p.add_argument("--learning-rates", type=float_list,
                   help="comma-separated rates the sgd protocol chooses from on a validation split "
                        "(default: 0.01,0.1,1.0)")
    p.add_argument("--output", type=user_path, help="JSON file for the result")
    add_bare_encoder(p)
    add_overwrite(p)
    p.set_defaults(func=_transfer)


def checks(args):
    """Before Keras: the protocol's settings (their defaults filled in), a free `--output`, the
    encoder argument and the `--data` spec."""
    from clzoo.files import check_output
    from clzoo.presets.names import refuse_retired, registry

    if args.protocol == "lbfgs" and (args.epochs is not None or args.learning_rates is not None):
        raise ValueError("--epochs and --learning-rates set the sgd protocol; add --protocol sgd "
                         "(the default, lbfgs, fits once on features embedded once)")
    args.epochs = 100 if args.epochs is None else args.epochs
    args.learning_rates = [0.01, 0.1, 1.0] if args.learning_rates is None else args.learning_rates

    if args.output:  # a taken output first: it needs nothing else to be refused
        check_output(args.output, args.overwrite)
    preset = str(args.preset)
    if preset not in registry() and not preset.startswith("hf://") \
            and not Path(preset).expanduser().exists():  # a folder's files: the loaders name them
        refuse_retired(preset)
        from clzoo.registry import did_you_mean

        raise ValueError(f"no encoder {preset!r}: expected a built-in preset name (clzoo presets lists "
                         "them), hf://owner/repo, a preset folder, a run folder or a .keras file."
                         f"{did_you_mean(preset, list(registry()))}")
    if not is_preset(preset, "encoder"):
        model_path(preset)  # a run folder or .keras file: its encoder exists (before Keras)
    data_checks(args)


def _transfer(args):
    from clzoo.files import locked_output

    if not args.output:
        return _transfer_into(args)
    with locked_output(args.output, args.overwrite):
        return _transfer_into(args)


def _transfer_into(args):
    from clzoo.data.split_overlap import check_splits_apart
    from clzoo.eval.plan import forward_rate, transfer_plan
    from clzoo.eval.probe_transfer import check_input_size, transfer_probe
    from clzoo.files import atomic_write_text

    source = resolved_source(args)
    encoder, _ = load_encoder(args.preset, "encoder", bare=args.bare_encoder)
    if args.bare_encoder:
        print(f"{args.preset}{BARE}: one pass per image; not the preset's result", flush=True)
    train, test = source.load("train", stream="auto"), source.load("test", stream="auto")
    check_splits_apart(train, test, str(source))
    check_input_size(encoder, train, args.data)  # before the plan and the first fit
    rate = forward_rate(encoder, train.images, verbose=not console.is_quiet())
    print(transfer_plan(args.protocol, len(train), len(test), rate, list(args.learning_rates),
                        args.epochs), flush=True)
    result = transfer_probe(encoder, train, test, args.protocol, args.learning_rates, args.epochs)
    chosen = ("" if result.learning_rate is None else f", learning rate {result.learning_rate:g}"
              + (" chosen on the validation split" if result.learning_rates_tried > 1 else ""))
    bare = BARE if args.bare_encoder else ""
    print(f"linear-probe top-1 on {args.data}{bare}: {result.top1:.2%} (95% bootstrap interval "
          f"{result.low:.2%} - {result.high:.2%}, {result.test_images} test images{chosen})")
    if args.output:
        report = result.to_dict(preset=args.preset + bare, data=args.data)
        atomic_write_text(Path(args.output), json.dumps(report, indent=2, default=float) + "\n")
        print(f"wrote {args.output}")
    return 0
