"""`clzoo list recipes|presets` and `clzoo presets`: the built-in recipes and presets as tables
(or JSON), read without Keras or TensorFlow."""

import argparse
import json
import os
import sys
from pathlib import Path

# clzoo.presets.names.REGISTRY, spelled out so that `clzoo --help` imports nothing of clzoo.presets
# (tests/test_cli.py checks).
PRESET_REGISTRY = Path(__file__).resolve().parent.parent / "presets" / "builtin" / "registry.json"


def add_parsers(commands):
    p = commands.add_parser("list", help="list the built-in recipes or presets")
    p.add_argument("what", choices=("recipes", "presets"), help="recipes (clzoo train NAME) or presets")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=_list)

    p = commands.add_parser("presets", help="list the built-in pretrained encoders and their numbers")
    p.add_argument("--json", action="store_true", help="print registry.json as is")
    p.set_defaults(func=_presets)


def _percent(value):
    return f"{value:.2%}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def _preset_lines(registry):
    """Table lines of `registry.json`: name, architecture, loss, data, headline kNN and probe."""
    header = ("name", "architecture", "loss", "data", "kNN top-1", "probe top-1")
    rows, notes = [], []
    for name, entry in registry.items():
        metrics = dict(entry.get("metrics") or {})
        knn_key = next((key for key in metrics if key.startswith("knn_top1_k")), None)
        knn = metrics.pop(knn_key, None)
        k = f" (k={knn_key[len('knn_top1_k'):]})" if knn_key else ""
        rows.append((name, str(entry.get("architecture", "-")), str(entry.get("loss", "-")),
                     str(entry.get("dataset", "-")), _percent(knn) + k,
                     _percent(metrics.pop("probe_top1", metrics.pop("linear_probe_top1", None)))))
        if metrics:  # anything else the registry records, e.g. fine-label numbers
            notes.append(f"  {name}: " + ", ".join(
                f"{key} {_percent(v) if isinstance(v, float) else v}" for key, v in metrics.items()))
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
             for row in [header, *rows]]
    return lines + (["", "also recorded:", *notes] if notes else [])


def _presets(args):
    """`clzoo presets`: the built-in presets and their numbers, read from registry.json."""
    registry = json.loads(PRESET_REGISTRY.read_text()) if PRESET_REGISTRY.is_file() else {}
    if args.json:
        print(json.dumps(registry, indent=2))
        return 0
    if not registry:
        print("no built-in presets")
        return 0
    print("\n".join(_preset_lines(registry)))
    print("\nTest-split top-1 (kNN: cosine-weighted). Load one with "
          "clzoo.presets.Encoder.from_preset(NAME) or `clzoo transfer NAME --data ...`.")
    return 0


def _list(args):
    """`clzoo list recipes|presets`: the built-in recipes (a table: name, task/loss, encoder,
    epochs x batch, description) or presets; `--json`: the same as JSON."""
    if args.what == "presets":
        return _presets(argparse.Namespace(json=getattr(args, "json", False)))
    from clzoo.recipes import list_recipes

    rows = [_recipe_row(name) for name in list_recipes()]
    if getattr(args, "json", False):
        print(json.dumps(rows, indent=2))
        return 0
    print("\n".join(_recipe_table(rows, _table_width())))
    print(f"\n{len(rows)} recipes. Train one with clzoo train NAME (e.g. clzoo train sincere_digits); "
          "a path to your own YAML works the same.")
    return 0


def _recipe_row(name):
    """One built-in recipe as the list shows it, read with the Keras-free checks (defaults filled
    in); a recipe that does not load says why in its description."""
    from clzoo.recipes import recipe_path
    from clzoo.train.recipe import RecipeError, load_recipe
    from clzoo.train.recipe_components import light_pass

    try:
        with light_pass():
            recipe = load_recipe(recipe_path(name))
    except RecipeError as error:
        return {"name": name, "task_loss": "-", "encoder": "-", "epochs": None, "batch_size": None,
                "description": f"(does not load: {error.lines[0]})"}
    loss = recipe.loss.name if recipe.task == "contrastive" else f"{recipe.task}/{recipe.loss.name}"
    return {"name": name, "task_loss": loss, "encoder": recipe.model.encoder.name,
            "epochs": recipe.training.epochs, "batch_size": recipe.training.batch_size,
            "description": recipe.description or ""}


def _table_width():
    """The terminal's width where the output is one (or `COLUMNS` is set); None off a terminal:
    nothing is cut."""
    import shutil

    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def _recipe_table(rows, width):
    """The lines of the recipe table; descriptions cut to `width` (None: not cut), each under its
    row, indented, where the columns leave it under 30 characters."""
    head = {"name": "name", "task_loss": "task/loss", "encoder": "encoder", "size": "epochs x batch"}
    cells = [{**row, "size": "-" if row["epochs"] is None else f"{row['epochs']} x {row['batch_size']}"}
             for row in rows]
    widths = {key: max(len(str(cell[key])) for cell in [head, *cells]) for key in head}
    left = sum(widths.values()) + 2 * len(head)
    below = width is not None and width - left < 30

    def lines(cell, description):
        columns = "  ".join(f"{str(cell[key]):<{widths[key]}}" for key in head)
        if below:
            return [columns.rstrip(), f"    {_cut(description, width - 4)}".rstrip()]
        return [f"{columns}  {_cut(description, None if width is None else width - left)}".rstrip()]

    return [line for cell, text in [(head, "description"), *((c, c["description"]) for c in cells)]
            for line in lines(cell, text)]


def _cut(text, room):
    """`text` cut at a word boundary to fit `room` characters, ending in "..." (None, or too little
    room to cut usefully: as it is)."""
    if room is None or len(text) <= room or room < 16:
        return text
    kept = text[:room - 3]
    if text[room - 3:room - 2] != " " and " " in kept:
        kept = kept.rsplit(" ", 1)[0]
    return kept.rstrip(" ,;:") + "..."
