"""What a command reuses of a run folder: its recipe's data and image_size (`eval`, `embed`,
`compare`, `transfer` without `--data`), and the next free report folder beside `eval/`."""

from pathlib import Path

RUN_TARGETS = {"eval": "model", "embed": "model", "compare": "model_a", "transfer": "preset"}


def run_defaults(args):
    """`--data` and `--image-size` left out take the run folder's own (its `recipe.yaml`: `data`,
    `image_size`), with a line saying so; `--data` is then needed only for a model of no run."""
    target = getattr(args, RUN_TARGETS.get(args.command, ""), None)
    stored, recipe = stored_recipe(target)
    if stored is None and (args.data is None or args.image_size is None) and recipe.is_file():
        if args.data is None:
            raise ValueError(f"--data is needed: {recipe} does not read as a recipe (damaged?), so "
                             "the run's data is unknown")
        print(f"note: {recipe} does not read as a recipe; its image_size is not reused "
              "(--image-size N sets one)", flush=True)
    stored = stored or {}
    if args.data is None and not isinstance(stored.get("data"), str):
        raise ValueError(f"--data is needed: {target} is not a run folder that records its data "
                         "(expected 'digits', an image folder with train/ and test/, or tfds:<name>)")
    size = stored.get("image_size")
    if args.image_size is None and size is not None and (isinstance(size, bool) or not isinstance(size, int)
                                                         or size < 1):
        raise ValueError(f"{recipe}: image_size = {size!r} is not a whole number >= 1; pass "
                         "--image-size N")
    taken = []
    if args.data is None:
        args.data = stored["data"]
        taken.append(f"--data {args.data}")
    if args.image_size is None and size is not None:
        args.image_size = size
        taken.append(f"--image-size {args.image_size}")
    if taken:
        print(f"{target}: {' and '.join(taken)}, the run's own (its recipe.yaml); pass "
              f"{'them' if len(taken) > 1 else 'it'} to choose another", flush=True)


def stored_recipe(target):
    """`(the mapping a run folder's recipe.yaml holds or None, its path)`."""
    import yaml

    recipe = Path(target) / "recipe.yaml" if target is not None else Path("recipe.yaml.none")
    if target is None or not recipe.is_file():
        return None, recipe
    try:
        stored = yaml.safe_load(recipe.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None, recipe
    return (stored if isinstance(stored, dict) else None), recipe


def unused_report_folder(out):
    """The default report folder, or beside it `eval-2`, `eval-3`, ... when it holds a report
    already (the one `clzoo train` wrote): a second look never needs `--overwrite`."""
    def used(folder):  # a link, even a dangling one, is someone's: the next number is free
        return folder.is_symlink() or folder.exists() and (not folder.is_dir() or any(folder.iterdir()))

    if not used(out):
        return out
    number = 2
    while used(out.with_name(f"{out.name}-{number}")):
        number += 1
    free = out.with_name(f"{out.name}-{number}")
    print(f"{out} holds a report already: writing {free} (--output chooses, --overwrite replaces)",
          flush=True)
    return free
