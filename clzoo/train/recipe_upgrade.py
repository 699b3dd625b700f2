"""Recipes of earlier versions, upgraded once, where they are read: the one old-to-new key table.

The first recipes wrote flat keys (`training.momentum`, `model.queue_size`, ...); today's put each
in its section (`training.optimizer.momentum`, `model.queue.size`). `upgrade` moves a raw recipe's
flat keys (`MOVED`) into their sections before it is validated, and `upgrade_override` does the same
for one `--set` key; each moved key gets a note. Nothing past them reads a flat key. Stored records
(a run's `recipe.yaml`, a preset's metadata) carry `recipe_version`: absent means 1 (flat keys
possible), `RECIPE_VERSION` today's.

A part's switch at its "off" value (`queue_size: null`, `auxiliary_cross_entropy_weight: 0`,
`test_time_flip: false`) leaves the part out; its other flat keys then did nothing and are refused,
except at the value that meant nothing (`OFF_DEFAULTS`) and in a run's stored `recipe.yaml`
(`reading_stored_recipe`), which earlier versions wrote with them and which must still resume.

Example:

>>> from clzoo.train.recipe_upgrade import upgrade
>>> sections, notes = upgrade({"training": {"optimizer": "sgd", "momentum": 0.8}})
>>> sections["training"], notes
({'optimizer': {'name': 'sgd', 'momentum': 0.8}}, ['training.momentum is now training.optimizer.momentum'])
"""

import contextlib
import contextvars

from clzoo.train.recipe_components import (
    SECTION_DEFAULTS,
    _registry,
    as_section,
    in_light_pass,
    switched_on,
)
from clzoo.train.recipe_model import EncoderSpec

RECIPE_VERSION = 2  # 1 (or no recipe_version): the flat keys may appear; 2: sections only

# A run's stored recipe.yaml is read leniently: earlier versions stored flat keys that did
# nothing in the run (a setting of a part that was off, of an optimizer without it). The keys
# overrides gave on top of it are checked as always.
_STORED = contextvars.ContextVar("stored_recipe", default=False)
_STRICT = contextvars.ContextVar("override_keys", default=())


@contextlib.contextmanager
def reading_stored_recipe(strict=()):
    """Inside it, the keys that did nothing in a run are dropped or read as stored, not refused;
    `strict`: the dotted keys overrides gave, refused as always."""
    with switched_on(_STORED):
        token = _STRICT.set(tuple(strict))
        try:
            yield
        finally:
            _STRICT.reset(token)


def inert_key_dropped(key=None):
    """True where an inert key (`key`, dotted) is dropped or read as stored (a stored recipe, and
    no override gave it or a key inside it) rather than refused."""
    return _STORED.get() and not (key and any(given == key or given.startswith(key + ".")
                                              for given in _STRICT.get()))


_OPTIMIZER = ("momentum", "nesterov", "weight_decay", "bias_learning_rate_multiplier",
              "offset_weight_decay_multiplier", "lookahead_every", "lookahead_alpha", "trust_coefficient")
_SCHEDULE = ("warmup_epochs", "warmup_start_fraction", "final_learning_rate_fraction")
# The key-translation table: a flat key of earlier recipes -> where it lives now.
MOVED = {
    **{f"training.{key}": f"training.optimizer.{key}" for key in _OPTIMIZER},
    **{f"training.{key}": f"training.schedule.{key}" for key in _SCHEDULE},
    "model.architecture": "model.encoder.name", "model.encoder_options": "model.encoder",
    "model.queue_size": "model.queue.size", "model.momentum": "model.queue.momentum",
    "model.encoder_chunk_size": "model.grad_cache.chunk_size",
    "model.auxiliary_cross_entropy_weight": "model.auxiliary.weight",
    "model.auxiliary_label_smoothing": "model.auxiliary.label_smoothing",
    "model.auxiliary_logit_scale": "model.auxiliary.logit_scale",
    "model.test_time_flip": "model.test_time", "model.test_time_translate": "model.test_time.translate",
}
# A part's flat switch -> its value that meant "no part".
SWITCHES = {"model.queue_size": None, "model.encoder_chunk_size": None,
            "model.auxiliary_cross_entropy_weight": 0, "model.test_time_flip": False}
# A setting of a part that is off, at the value that did nothing then (None always did nothing).
OFF_DEFAULTS = {"model.auxiliary_label_smoothing": 0.2, "model.auxiliary_logit_scale": 1 / 9,
                "model.test_time_translate": 0, "training.warmup_epochs": 0}


def part_of(key):
    """`model.queue` for the flat `model.momentum` (the part section a flat model key moves into)."""
    return ".".join(MOVED[key].split(".")[:2])


def _section(key):
    """`queue` for `model.momentum`, `optimizer` for `training.momentum`: the section's own name."""
    return MOVED[key].split(".")[1]


def canonical_key(key):
    """The key an override sets, in the section spelling.

    Example:

    >>> from clzoo.train.recipe_upgrade import canonical_key
    >>> canonical_key("model.queue_size"), canonical_key("training.momentum")
    ('model.queue.size', 'training.optimizer.momentum')
    >>> canonical_key("model.encoder_options.whitening"), canonical_key("model.test_time_flip")
    ('model.encoder.whitening', 'model.test_time')
    """
    head = ".".join(key.split(".")[:2])
    if key == "model.encoder_options":  # the options as a whole: not the encoder's name with them
        return key
    return MOVED[head] + key[len(head):] if head in MOVED else key


def _is_off(key, value):
    """Whether `value` of the flat switch `key` means "no part" (a bool is no number here)."""
    off = SWITCHES[key]
    if off is None or off is False:
        return value is off
    return type(value) in (int, float) and value == off


def upgrade(sections):
    """`(sections, notes)`: a raw recipe with every flat key of an earlier version moved into its
    section, `recipe_version` set to `RECIPE_VERSION`, and one note per moved key.

    Raises:
        UpgradeError: (a `ValueError`) an unknown `recipe_version`, a flat key in a version-2
            recipe or given twice, a setting of a part that is off; `lines` holds one
            `<section>: <why>` each, and `upgraded`, the rest upgraded, to check on.
    """
    if not isinstance(sections, dict):
        return sections, []
    version = sections.get("recipe_version", 1)
    if type(version) is not int:
        raise UpgradeError([f"recipe_version: must be a whole number, 1 or {RECIPE_VERSION}, "
                            f"not {version!r}"])
    if version not in (1, RECIPE_VERSION):
        raise UpgradeError([f"recipe_version: {version!r} is not a version this clzoo reads (1 to "
                            f"{RECIPE_VERSION}); a newer clzoo wrote it? pip install -U clzoo"])
    out, flat = dict(sections), []
    for section in ("model", "training"):
        if isinstance(out.get(section), dict):
            out[section] = dict(out[section])
            flat += [(f"{section}.{key}", out[section].pop(key)) for key in list(out[section])
                     if f"{section}.{key}" in MOVED]
    if flat and version == RECIPE_VERSION:
        raise UpgradeError([f"{key.split('.')[0]}: {key}: the earlier spelling in a recipe_version "
                            f"{version} recipe; write {MOVED[key]}" for key, _ in flat])
    given, model = dict(flat), out.get("model") if isinstance(out.get("model"), dict) else {}
    off = {part_of(key) for key in SWITCHES if (_is_off(key, given[key]) if key in given
                                                else model.get(_section(key)) is None)}
    problems, notes = [], []
    for key, value in flat:
        try:
            notes.append(_move(out, key, value, off))
        except ValueError as error:
            problems.append(f"{key.split('.')[0]}: {error}")
    out["recipe_version"] = RECIPE_VERSION
    if problems:
        raise UpgradeError(problems, (out, notes))
    return out, notes


def _move(out, key, value, off):
    """Put the flat `key` of a file where it lives now (`off`: the part sections that are off);
    returns the note that says so."""
    model, section = out.get("model"), _section(key)
    if key.startswith("model.") and part_of(key) in off:
        if key in SWITCHES and model.get(section) is not None:
            raise ValueError(f"{key} = {value!r} turns off the part that {part_of(key)} gives: give one")
        if key not in SWITCHES and not _did_nothing(key, value):
            raise ValueError(_part_is_off(key, value))
        return f"{key} = {value!r}: {part_of(key)} is off" + (" (dropped)" * (key not in SWITCHES))
    if key.startswith("model.") and section in model and model[section] is None:
        raise ValueError(f"{key} = {value!r} sets what {part_of(key)}: null turns off: give one")
    if key.startswith("training.") and _factory_ignores(out.get("training"), key, value):
        return f"{key} = {value!r} dropped: the recipe's training.{section} does not take it"
    if key == "model.test_time_flip":
        value = _flip(value) and {}
    elif key == "model.encoder_options":
        _options(value)
    place(out, MOVED[key], value, earlier=key)
    return f"{key} is now {MOVED[key]}"


_PART_SETTINGS = {key for key in MOVED if key not in SWITCHES
                  and part_of(key) in {part_of(switch) for switch in SWITCHES}}


def _did_nothing(key, value):
    return value is None or value == OFF_DEFAULTS.get(key) or inert_key_dropped()


def _part_is_off(key, value):
    switch = next(s for s in SWITCHES if part_of(s) == part_of(key))
    return (f"{key} = {value!r}: the {part_of(key)} part is off ({switch} absent or "
            f"{SWITCHES[switch]}); turn it on or drop the key")


def _flip(value):
    if not isinstance(value, bool):
        raise ValueError(f"model.test_time_flip = {value!r}: must be true or false")
    return value


def _options(value):
    if not isinstance(value, dict):
        raise ValueError(f"model.encoder_options = {value!r}: must be a mapping of the encoder's "
                         "builder arguments")
    if "name" in value:
        raise ValueError("model.encoder_options.name: the encoder's name is model.architecture")


def _factory_ignores(training, key, value):
    """True where the flat `training` key is dropped: the factory that `training` (a raw section)
    names does not take it, and the key did nothing (a stored recipe, or its neutral value)."""
    neutral = key in OFF_DEFAULTS and value == OFF_DEFAULTS[key]
    if key not in MOVED or in_light_pass() or not (inert_key_dropped() or neutral):
        return False
    from clzoo.optimizers.registry import settings_of

    section = _section(key)
    registry, training = _registry(section), training if isinstance(training, dict) else {}
    name = as_section(training.get(section, SECTION_DEFAULTS[section]))
    name = name.get("name") if isinstance(name, dict) else None
    return name in registry and key.split(".")[1] not in settings_of(registry.get(name))


def upgrade_override(key, value, raw):
    """`(key, value)` of an override in today's spelling on the upgraded recipe `raw`, or None
    where it does nothing (a setting of a part that is off, or of a factory without it, at the
    value that meant nothing: `training.warmup_epochs=0` for `schedule: constant`).

    A part's flat switch at "off" (`model.queue_size=null`) sets the part's section to null;
    `model.test_time_flip=true` keeps or adds the section; `model.encoder_options` replaces the
    encoder's options and keeps its name. Apply a part's flat settings after the other overrides
    (`overrides_in_order`): the part's switch may come later.

    Raises:
        ValueError: a setting of a part that is off; `test_time_flip` not a bool,
            `encoder_options` not a mapping.
    """
    new, model = canonical_key(key), raw.get("model") if isinstance(raw.get("model"), dict) else {}
    if key.startswith("training.") and _factory_ignores(raw.get("training"), key, value):
        return None
    if key.startswith("model.encoder_options."):
        _options({key.split(".")[2]: value})
    if key in SWITCHES and _is_off(key, value):
        return part_of(key), None
    if key in _PART_SETTINGS and model.get(_section(key)) is None:
        if _did_nothing(key, value):
            return None
        raise ValueError(_part_is_off(key, value))
    if key == "model.test_time_flip":
        return new, _flip(value) and (model.get("test_time") or {})
    if key == "model.encoder_options":
        _options(value)
        default = EncoderSpec.model_fields["name"].default
        encoder = as_section(model.get("encoder") or default)
        name = encoder.get("name", default) if isinstance(encoder, dict) else encoder
        return MOVED[key], {"name": name, **value}
    return new, value


def overrides_in_order(items):
    """`items` (tuples whose first item is the dotted key) with the flat settings of model parts
    (`model.momentum`) last: the earlier spelling applied them with their switch, in any order."""
    return sorted(items, key=lambda item: item[0] in _PART_SETTINGS)


def place(tree, key, value, earlier=None):
    """`tree[a][b]... = value` for the dotted `key`; a section written as a name (`optimizer: sgd`)
    becomes `{name: ...}`, a part that is off (null) is turned on. `earlier`: the flat key that
    `value` was written as; a mapping then is merged into the section there, and a setting given
    in both spellings is refused.

    Raises:
        ValueError: a key inside what is not a section; a setting given in both spellings.
    """
    *parents, leaf = key.split(".")
    node = tree
    for i, part in enumerate(parents):
        inner = {} if node.get(part) is None else as_section(node[part])
        node[part] = node = dict(inner) if isinstance(inner, dict) else inner
        if not isinstance(node, dict):
            raise ValueError(f"{'.'.join(parents[:i + 1])} is not a section")
    given = as_section(node.get(leaf))
    if earlier and isinstance(value, dict) and isinstance(given, dict):
        twice, value = [f"{key}.{name}" for name in value if name in given], {**given, **value}
    else:
        twice = [key] if earlier and leaf in node else []
    if twice:
        raise ValueError(f"{', '.join(twice)} is given twice, as {earlier} and in its section: give "
                         "it once")
    node[leaf] = value


class UpgradeError(ValueError):
    """What stops an earlier recipe from upgrading; `lines`: one `<section>: <why>` each;
    `upgraded`: `(sections, notes)` without the keys refused, or None (a version it cannot read)."""

    def __init__(self, lines, upgraded=None):
        self.lines, self.upgraded = list(lines), upgraded
        super().__init__("\n".join(self.lines))
