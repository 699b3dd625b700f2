"""A griffe extension for the API pages: the tables (`STREAMS`, `BUILTIN_PRESETS`, `VIEW_RECIPES`)
render as Markdown tables made from the live objects at build time, so the page cannot drift from
the code; their raw values (dataclasses with function addresses, a 40-line dict, a `Registry`)
are not shown. A constant whose docstring is its class's (`Registry.__doc__` for `PRESETS`) loses
it: the class's constructor is not the constant's reference."""

import inspect

import griffe


def _row(*cells):
    return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"


def _table(header, rows):
    return "\n".join([_row(*header), _row(*["---"] * len(header)), *(_row(*row) for row in rows)])


def streams_table():
    from clzoo.data.streams import AUTO_ORDER, STREAMS

    rows = [(f"`{name}`", stream.description, stream.auto) for name, stream in STREAMS.items()]
    return ("The training streams, by name (recipe key `training.pipeline`; `auto` tries "
            f"{', '.join(f'`{n}`' for n in AUTO_ORDER)} in that order):\n\n"
            + _table(("Stream", "What it is", "When `auto` picks it"), rows))


def presets_table():
    from clzoo.presets.loading import BUILTIN_PRESETS

    rows = [(f"`{name}`", entry.get("architecture", ""), entry.get("loss", ""), entry.get("dataset", ""),
             f"{entry['metrics']['knn_top1_k20']:.2%}" if "knn_top1_k20" in entry.get("metrics", {}) else "")
            for name, entry in BUILTIN_PRESETS.items()]
    return ("The built-in presets, `{name: registry entry}` (`clzoo presets` lists them; "
            "`Encoder.from_preset(name)` loads one):\n\n"
            + _table(("Preset", "Architecture", "Loss", "Data", "kNN top-1 (k=20)"), rows))


def view_recipes_table():
    from clzoo.data.augmentation_settings import VIEW_RECIPES

    rows = [(f"`{name}`", description) for name, description in VIEW_RECIPES.describe().items()]
    return ("The named view recipes (`view_recipe(name)`, recipe key `views.recipe`), a `Registry`; "
            "each makes two views per image unless asked for more:\n\n"
            + _table(("Recipe", "The views it makes"), rows))


# the attribute's path on the API pages -> its table
TABLES = {"clzoo.data.STREAMS": streams_table, "clzoo.presets.BUILTIN_PRESETS": presets_table,
          "clzoo.data.VIEW_RECIPES": view_recipes_table}


class ValueTables(griffe.Extension):
    """Listed before `DoctestBlocks` in mkdocs.yml: the class docstring is compared unfenced."""

    def on_instance(self, *, node, obj, **kwargs):
        if not obj.is_attribute:
            return
        value = getattr(node, "obj", None)
        own = inspect.getdoc(type(value)) if value is not None else None
        if obj.docstring is not None and own and inspect.cleandoc(obj.docstring.value) == own:
            obj.docstring = None
        if obj.path in TABLES:
            obj.value = None
            obj.docstring = griffe.Docstring(TABLES[obj.path](), parent=obj)
