"""Recipe YAML, hardened: safe loading with limits checked on the node graph before anything expands.

A recipe is small (`recipes/` holds 2 KB at most), so a document over `MAX_RECIPE_BYTES`, with more
than `MAX_ALIASES` aliases, more than `MAX_NODES` values once aliases are expanded (a "billion
laughs"), a recursive alias or a key given twice is refused (`RecipeYAMLError`) with its line.
Exponent floats such as `1e-3` read as numbers (YAML 1.1 reads them as strings).
"""

import re
from pathlib import Path

import yaml

MAX_RECIPE_BYTES = 64 * 1024  # recipes/ holds 2 KB at most; YAML parses ~30 KB/s here
MAX_ALIASES = 100  # `*name` references in one YAML document
MAX_NODES = 10_000  # values once every alias is expanded (a "billion laughs" stops here)
_MERGE = "tag:yaml.org,2002:merge"


class RecipeYAMLError(yaml.YAMLError):
    """A YAML document refused before it is expanded: too large, too many aliases, duplicate keys."""


class _Loader(yaml.SafeLoader):
    """Safe YAML with recipe limits; `1e-3` reads as a number (YAML 1.1 reads a string).

    Aliases are counted while composing and the expanded size is measured on
    the node graph (each shared node once) before any Python object is built.
    """

    def __init__(self, stream):
        super().__init__(stream)
        self._aliases = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                line = self.peek_event().start_mark.line + 1
                raise RecipeYAMLError(f"line {line}: more than {MAX_ALIASES} aliases (*name); "
                                      "write the values out")
        return super().compose_node(parent, index)

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None:
            _check_nodes(node)
        return node


_DECIMAL = re.compile(r"^[-+]?(?:0|[1-9][0-9_]*)$")


def _decimal_int(loader, node):
    """YAML 1.1 reads `010` as 8 (octal), `1:30` as 90 (base 60), `0x10` as 16: a recipe's integers
    are decimal, so the others are refused with their line rather than read as another number."""
    text = loader.construct_scalar(node)
    if not _DECIMAL.match(text.strip()):
        raise RecipeYAMLError(f"line {node.start_mark.line + 1}: {text!r} is not a decimal integer "
                              "(YAML 1.1 would read it as octal, base 60, hex or binary); write it in "
                              "decimal, or quote it for a string")
    return yaml.SafeLoader.construct_yaml_int(loader, node)


_Loader.add_constructor("tag:yaml.org,2002:int", _decimal_int)


def _plain_float(loader, node):
    """YAML 1.1 reads `1:30.5` as 90.5 (base 60): refused like the base-60 integers."""
    text = loader.construct_scalar(node)
    if ":" in text:
        raise RecipeYAMLError(f"line {node.start_mark.line + 1}: {text!r} is a base-60 number in YAML "
                              "1.1 (read as another value); write it in decimal, or quote it for a string")
    return yaml.SafeLoader.construct_yaml_float(loader, node)


_Loader.add_constructor("tag:yaml.org,2002:float", _plain_float)

_FLOAT = re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.\d*)?[eE][-+]?\d+$|^[-+]?\d[\d_]*\.\d*$|^[-+]?\.\d+$"
                    r"|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$")
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


class _Dumper(yaml.SafeDumper):
    """Safe YAML that quotes every string `_Loader` would read as something else (`1e-3`)."""


_Dumper.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


def dump_yaml(data):
    """`data` as YAML text that `parse_yaml` reads back equal: a string such as `"1e-3"` (a run named
    so, a folder `1e5`) stays a string, where PyYAML's own dumper leaves it bare to be read as 0.001.

    Example:

    >>> from clzoo.train.recipe_yaml import dump_yaml, parse_yaml
    >>> text = dump_yaml({"name": "1e-3", "learning_rate": 0.001})
    >>> text.splitlines(), parse_yaml(text)
    (["name: '1e-3'", 'learning_rate: 0.001'], {'name': '1e-3', 'learning_rate': 0.001})
    """
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False)


def _children(node):
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _check_nodes(root):
    """Refuse duplicate keys, recursive aliases and more than `MAX_NODES` values once expanded.

    Walks the composed graph iteratively; a node shared through aliases is
    measured once and counted at each use, so nothing is expanded.
    """
    sizes, open_nodes, stack = {}, set(), [(root, "", False)]
    while stack:
        node, path, done = stack.pop()
        if done:
            open_nodes.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(c)] for c in _children(node))
            if sizes[id(node)] > MAX_NODES:
                raise RecipeYAMLError(f"{path or 'the document'} holds more than {MAX_NODES:,} "
                                      "values once aliases are expanded; a recipe is far smaller")
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_nodes:
            raise RecipeYAMLError(f"line {node.start_mark.line + 1}: {path or 'the document'} "
                                  "contains itself (a recursive alias)")
        open_nodes.add(id(node))
        stack.append((node, path, True))
        if isinstance(node, yaml.MappingNode):
            _refuse_duplicate_keys(node, path)
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else "?"
                stack += [(key, path, False), (value, f"{path}.{name}".lstrip("."), False)]
        else:
            stack += [(c, path, False) for c in _children(node)]


def _refuse_duplicate_keys(node, path):
    seen = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE:
            continue  # `<<: *base` merges; explicit keys may override merged ones
        line = key.start_mark.line + 1
        if key.value in seen:
            dotted = f"{path}.{key.value}".lstrip(".")
            raise RecipeYAMLError(f"line {line}: duplicate key {dotted!r} (first on line "
                                  f"{seen[key.value]}); give each key once")
        seen[key.value] = line


def parse_yaml(text):
    """`yaml.safe_load` with the recipe limits, and exponent floats such as `1e-3` read as numbers.

    Raises:
        RecipeYAMLError: text over `MAX_RECIPE_BYTES`, more than `MAX_ALIASES`
            aliases, more than `MAX_NODES` values once aliases are expanded, a
            recursive alias, or a key given twice in one mapping.
        yaml.YAMLError: text that is not YAML.
    """
    if len(text) > MAX_RECIPE_BYTES:
        raise RecipeYAMLError(f"{len(text):,} characters; a recipe is at most "
                              f"{MAX_RECIPE_BYTES:,}")
    try:
        return yaml.load(text, Loader=_Loader)
    except RecursionError:
        raise RecipeYAMLError("nested too deeply") from None


def yaml_reason(error):
    """`line L, column C: problem` of a YAML error, else its first line."""
    mark, problem = getattr(error, "problem_mark", None), getattr(error, "problem", None)
    if mark is not None and problem:
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


def read_recipe_file(path, source):
    """The recipe file at `path` as a dict (`{}` for None), its `name` defaulting to the file's
    stem; a missing, oversized, empty or non-mapping file, or YAML that is not valid or over the
    limits, is a `RecipeError` naming `source`."""
    from clzoo.train.recipe_errors import RecipeError

    if path is None:
        return {}
    path = Path(path)
    if not path.is_file():
        raise RecipeError([f"{source}: recipe file not found"])
    if path.stat().st_size > MAX_RECIPE_BYTES:
        raise RecipeError([f"{source}: {path.stat().st_size:,} bytes; a recipe is at most "
                           f"{MAX_RECIPE_BYTES:,} (is this the right file?)"])
    try:
        with open(path, encoding="utf-8") as handle:
            raw = parse_yaml(handle.read(MAX_RECIPE_BYTES + 1))
    except RecipeYAMLError as error:
        raise RecipeError([f"{source}: {error}"]) from None
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise RecipeError([f"{source}: not valid YAML ({yaml_reason(error)})"]) from None
    if raw is None or raw == {}:
        raise RecipeError([f"{source}: the recipe is empty; give at least `data:` and the "
                           "sections to change (see recipes/)"])
    if not isinstance(raw, dict):
        raise RecipeError([f"{source}: a recipe must be a YAML mapping, not a "
                           f"{type(raw).__name__}"])
    raw.setdefault("name", path.stem)
    return raw
