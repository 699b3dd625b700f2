"""Recipes of earlier versions, upgraded once, where they are read: the one old-to-new key table.

The first recipes wrote flat keys (`training.momentum`, `model.queue_size`, ...); today's put each
in its section (`training.optimizer.momentum`, `model.queue.size`). `upgrade` moves a raw recipe's
flat keys into their sections before it is validated and names each moved key in a note;
`canonical_key` does the same for one dotted override key. Nothing past `validate_recipe` reads a
flat key. Stored records (a run's `recipe.yaml`, a preset's metadata) carry `recipe_version`:
absent means version 1 (flat keys possible), `RECIPE_VERSION` today's.

`FLAT_KEYS` (training) and `MODEL_FLAT_KEYS` / `FLAT_PARTS` (model) are the table. A part's switch at its
"off" value (`queue_size: null`, `auxiliary_cross_entropy_weight: 0`, `test_time_flip: false`)
leaves the part out; its other flat keys must then be at their defaults (they did nothing), else
they are refused, except in a run's stored `recipe.yaml` (`reading_stored_recipe`), which earlier
versions wrote with them and which must still resume.

Example:

>>> from clzoo.train.recipe_upgrade import upgrade
>>> sections, notes = upgrade({"training": {"optimizer": "sgd", "momentum": 0.8}})
>>> sections["training"], notes
({'optimizer': {'name': 'sgd', 'momentum': 0.8}}, ['training.momentum is now training.optimizer.momentum'])
"""

import contextvars
from typing import NamedTuple

from clzoo.train.recipe_components import SECTION_DEFAULTS, _registry, as_section, switched_on
from clzoo.train.recipe_model import EncoderSpec

RECIPE_VERSION = 2  # 1 (or no recipe_version): the flat keys may appear; 2: sections only


# A run's stored recipe.yaml is read leniently: earlier versions stored flat keys that did
# nothing in the run (a setting of a part that was off, of an optimizer without it), which a
# written recipe is refused for; the run they record must still resume.
_STORED = contextvars.ContextVar("stored_recipe", default=False)


def reading_stored_recipe():
    """Inside it, the earlier flat keys that did nothing in a run are dropped, not refused."""
    return switched_on(_STORED)


def inert_key_dropped():
    """True where an inert flat key is dropped (a stored recipe) rather than refused."""
    return _STORED.get()


# The key-translation table: flat `training` keys of earlier recipes -> their section.
FLAT_KEYS = {
    **dict.fromkeys(("momentum", "nesterov", "weight_decay", "bias_learning_rate_multiplier",
                     "offset_weight_decay_multiplier", "lookahead_every", "lookahead_alpha",
                     "trust_coefficient"), "optimizer"),
    **dict.fromkeys(("warmup_epochs", "warmup_start_fraction", "final_learning_rate_fraction"),
                    "schedule"),
}
# Why a factory has no use for the flat keys its section's others take.
_IGNORES = {("schedule", "constant"): "schedule constant keeps the peak learning rate throughout and "
            "would ignore it; use schedule cosine or linear, or drop the key"}
# Flat values that meant "off" for a factory without the setting (no warm-up for `constant`).
_NEUTRAL = {"warmup_epochs": (0,)}


def move_flat_keys(training):
    """`training` (a recipe's raw section) with each flat key of `FLAT_KEYS` moved into its
    section (`optimizer: sgd` + `momentum: 0.8` -> `optimizer: {name: sgd, momentum: 0.8}`).

    Raises:
        ValueError: a key given both flat and in its section; a flat key set away from its
            default that the named factory does not take (it would be ignored).
    """
    grouped = flat_training_keys({"training": training})
    if not grouped:
        return training
    training = {key: value for key, value in training.items() if key not in FLAT_KEYS}
    for section in ("optimizer", "schedule"):
        if section in grouped:
            given = training.get(section, SECTION_DEFAULTS[section])
            training[section] = _with_flat(section, given, grouped[section])
    return training


def _with_flat(section, given, flat):
    """The section `given` (a name or a mapping) with the `flat` keys of its factory moved in."""
    from clzoo.optimizers.registry import owners, settings_of

    target = as_section(given)
    registry = _registry(section)
    if not isinstance(target, dict) or target.get("name") not in registry:
        return target  # the section's own check names the problem
    target, name = dict(target), target["name"]
    taken = settings_of(registry.get(name))
    for key, value in flat.items():
        if key in target:
            raise ValueError(f"{key} is given twice, as training.{key} and training.{section}.{key}")
        if key in taken:
            target[key] = value
        elif value not in _NEUTRAL.get(key, ()) and not inert_key_dropped():
            # refused even at another factory's default (adamw + momentum 0.9): it does nothing
            if (section, name) in _IGNORES:
                raise ValueError(f"{key} = {value!r}: {_IGNORES[section, name]}")
            owned = owners(registry)[key]
            owner = f"{', '.join(owned[:-1])} and {owned[-1]}" if len(owned) > 1 else owned[0]
            raise ValueError(f"{key} is a setting of {section} {owner}, not {name}")
    return target


class Part(NamedTuple):
    """How a part's flat keys of earlier recipes map into its section."""

    switch: str  # the flat key that turned the part on
    off: object  # the switch's value that meant "no part"
    settings: dict  # flat key -> the section's setting (the switch's own, if it carries a value)
    defaults: dict  # the section's settings' defaults in the flat spelling's days


FLAT_PARTS = {
    "queue": Part("queue_size", None, {"queue_size": "size", "momentum": "momentum"}, {"momentum": None}),
    "grad_cache": Part("encoder_chunk_size", None, {"encoder_chunk_size": "chunk_size"}, {}),
    "auxiliary": Part("auxiliary_cross_entropy_weight", 0, {
        "auxiliary_cross_entropy_weight": "weight", "auxiliary_label_smoothing": "label_smoothing",
        "auxiliary_logit_scale": "logit_scale"}, {"label_smoothing": 0.2, "logit_scale": 1 / 9}),
    "test_time": Part("test_time_flip", False, {"test_time_translate": "translate"}, {"translate": 0}),
}
# The key-translation table of `model`: flat key of earlier recipes -> (section, setting).
MODEL_FLAT_KEYS = {"architecture": ("encoder", "name"), "encoder_options": ("encoder", None),
                   **{key: (section, setting) for section, part in FLAT_PARTS.items()
                      for key, setting in {part.switch: None, **part.settings}.items()}}


def part_turned_off(model, key, value):
    """`model` (a raw section) with the part left out when an override sets its flat switch `key`
    to the switch's "off" value (`test_time_flip=false`, `queue_size=null`); None otherwise.

    The override means "no part", so the part's other keys go with it, in either spelling (a
    recipe's `test_time: {translate: 1}` would otherwise refuse `test_time_flip=false`).

    Example:

    >>> from clzoo.train.recipe_upgrade import part_turned_off
    >>> part_turned_off({"encoder": "airbench", "test_time": {"translate": 1}}, "test_time_flip", False)
    {'encoder': 'airbench', 'test_time': None}
    >>> part_turned_off({"test_time": {"translate": 1}}, "test_time_translate", 0) is None
    True
    """
    for section, part in FLAT_PARTS.items():
        if key != part.switch or not _is_off(value, part.off):
            continue
        kept = {k: v for k, v in model.items() if k != section and k not in (part.switch, *part.settings)}
        return {**kept, section: None}
    return None


def _is_off(switch, off):
    """Whether a part's flat switch holds its "off" value (a bool is no number: `true` is not 1,
    `false` not 0; the section's type check names it)."""
    if off is None or off is False:
        return switch is off
    return type(switch) in (int, float) and switch == off


def move_model_flat_keys(model):
    """`model` (a recipe's raw section) with each flat key of `MODEL_FLAT_KEYS` moved into its
    section (`queue_size: 4096` + `momentum: 0.99` -> `queue: {size: 4096, momentum: 0.99}`).

    Raises:
        ValueError: a flat key beside its section; a part's setting away from its default
            while the part is off (it did nothing).

    Example:

    >>> from clzoo.train.recipe_upgrade import move_model_flat_keys
    >>> move_model_flat_keys({"queue_size": 4096, "momentum": 0.99, "test_time_flip": False})
    {'queue': {'size': 4096, 'momentum': 0.99}}
    >>> move_model_flat_keys({"test_time_translate": 2})
    Traceback (most recent call last):
    ...
    ValueError: model.test_time_translate = 2: shifts average mirrored pairs; set test_time_flip too
    """
    if not isinstance(model, dict) or not any(key in model for key in MODEL_FLAT_KEYS):
        return model
    model = dict(model)
    flat = {key: model.pop(key) for key in list(model) if key in MODEL_FLAT_KEYS}
    for key in flat:
        section = MODEL_FLAT_KEYS[key][0]
        if section in model:
            raise ValueError(f"{key} (an earlier spelling) and the {section} section are both "
                             f"given: write {MODEL_FLAT_KEYS[key][1] or 'the options'} inside {section}")
    if "architecture" in flat or "encoder_options" in flat:
        model["encoder"] = _encoder_section(flat.get("architecture", EncoderSpec().name),
                                            flat.get("encoder_options", {}))
    for section, part in FLAT_PARTS.items():
        given = {key: flat[key] for key in (part.switch, *part.settings) if key in flat}
        if given:
            _move_part(model, section, part, given)
    return model


def _encoder_section(architecture, options):
    if not isinstance(options, dict):
        raise ValueError(f"model.encoder_options = {options!r}: must be a mapping of the encoder's "
                         "builder arguments")
    if "name" in options:  # the section's own key: refused as the builder does not take it
        from clzoo.models.registry import ENCODERS, check_encoder_options

        try:
            check_encoder_options(architecture if architecture in ENCODERS else "resnet20", options)
        except ValueError as error:
            raise ValueError(f"model.encoder_options: {error}") from None
    return {"name": architecture, **options}


def _move_part(model, section, part, given):
    switch = given.get(part.switch, part.off)
    if part.off is False and not isinstance(switch, bool):
        raise ValueError(f"model.{part.switch} = {switch!r}: must be true or false")
    if not _is_off(switch, part.off):
        model[section] = {part.settings[key]: value for key, value in given.items() if key in part.settings}
        return
    if inert_key_dropped():  # a run's stored recipe: what did nothing in the run goes
        return
    defaults = part.defaults
    for key, value in given.items():
        if key != part.switch and value is not None and value != defaults.get(part.settings[key]):
            raise ValueError(_off_message(section, key, value))


def _off_message(section, key, value):
    if section == "queue":
        raise ValueError(f"model.momentum (the key encoder) needs a queue: set model.queue_size. "
                         f"Received: model.momentum={value!r}, queue_size=None")
    if section == "test_time":
        return f"model.test_time_translate = {value!r}: shifts average mirrored pairs; set test_time_flip too"
    switch = FLAT_PARTS[section].switch
    return (f"model.{key} = {value!r}: the {section} part is off (model.{switch} is "
            f"{FLAT_PARTS[section].off}); turn it on or drop the key")


def canonical_key(key):
    """The key an override sets, in the section spelling (two spellings of one key given at
    once are refused).

    Example:

    >>> from clzoo.train.recipe_upgrade import canonical_key
    >>> canonical_key("model.queue_size"), canonical_key("training.momentum")
    ('model.queue.size', 'training.optimizer.momentum')
    >>> canonical_key("model.encoder_options.whitening"), canonical_key("model.test_time_flip")
    ('model.encoder.whitening', 'model.test_time')
    """
    parts = key.split(".")
    if parts[:2] == ["model", "encoder_options"] and len(parts) == 2:
        return key  # the options as a whole: not the encoder's name with them
    if parts[0] == "model" and len(parts) > 1 and parts[1] in MODEL_FLAT_KEYS:
        section, setting = MODEL_FLAT_KEYS[parts[1]]
        return ".".join(["model", section, *([setting] if setting else []), *parts[2:]])
    if parts[0] == "training" and len(parts) == 2 and parts[1] in FLAT_KEYS:
        return f"training.{FLAT_KEYS[parts[1]]}.{parts[1]}"
    return key


def upgrade(sections):
    """`(sections, notes)`: a raw recipe with every flat key of an earlier version moved into its
    section, `recipe_version` set to `RECIPE_VERSION`, and one note per moved key.

    Raises:
        UpgradeError: (a `ValueError`) an unknown `recipe_version`, a flat key beside its own
            section, a flat key another factory or an off part would ignore (see
            `move_flat_keys`, `move_model_flat_keys`); `lines` holds one `<section>: <why>` each.
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
    out, notes, problems = dict(sections), [], []
    for section, table, move in (("model", MODEL_FLAT_KEYS, move_model_flat_keys),
                                 ("training", FLAT_KEYS, move_flat_keys)):  # the recipe's order
        raw = out.get(section)
        moved = [key for key in raw if key in table] if isinstance(raw, dict) else []
        if not moved:
            continue
        if version == RECIPE_VERSION:  # today's records write sections only
            problems.append(f"{section}: " + ", ".join(f"{section}.{key}" for key in moved)
                            + f": the earlier spelling in a recipe_version {version} recipe; write "
                            + ", ".join(canonical_key(f"{section}.{key}") for key in moved))
            continue
        try:
            out[section] = move(raw)
        except ValueError as error:
            problems.append(f"{section}: {error}")
            continue
        notes += [f"{section}.{key} is now {canonical_key(f'{section}.{key}')}" for key in moved]
    if problems:
        raise UpgradeError(problems)
    out["recipe_version"] = RECIPE_VERSION
    return out, notes


class UpgradeError(ValueError):
    """What stops an earlier recipe from upgrading; `lines`: one `<section>: <why>` each."""

    def __init__(self, lines):
        self.lines = list(lines)
        super().__init__("\n".join(self.lines))


def upgrade_override(raw, key, value):
    """An override `key=value` on the upgraded recipe `raw`, in today's spelling.

    Returns `(key, value)` to set, or None where it is applied here: a flat `training` key goes
    into its section as a recipe's would (`move_flat_keys`: refused for a factory without it);
    a part's flat switch at "off" (`model.queue_size=null`) removes the part; a setting of a part
    that is off is refused, or dropped at its default (it would do nothing).
    `model.encoder_options` replaces the options and keeps the name; `model.test_time_flip=true`
    keeps or adds the part.

    Raises:
        ValueError: a flat key its section or factory would ignore; a switch of the wrong type.
    """
    parts, routed = key.split("."), canonical_key(key)
    if len(parts) != 2 or not isinstance(raw.get(parts[0], {}), dict):
        return routed, value
    section = raw.setdefault(parts[0], {})
    if parts[0] == "training" and parts[1] in FLAT_KEYS:
        name = FLAT_KEYS[parts[1]]
        given = as_section(section.get(name, SECTION_DEFAULTS[name]))
        if isinstance(given, dict):  # the override replaces the recipe's own setting
            given = {k: v for k, v in given.items() if k != parts[1]}
        section[name] = move_flat_keys({name: given, parts[1]: value})[name]
        return None
    if parts[0] != "model" or parts[1] not in MODEL_FLAT_KEYS:
        return routed, value
    return _model_override(raw, section, parts[1], routed, value)


def _model_override(raw, model, flat, routed, value):
    off = part_turned_off(model, flat, value)
    if off is not None:
        raw["model"] = off
        return None
    where, setting = MODEL_FLAT_KEYS[flat]
    if flat == "encoder_options":
        name = as_section(model.get("encoder") or EncoderSpec().name)
        return "model.encoder", _encoder_section(name.get("name", EncoderSpec().name)
                                                 if isinstance(name, dict) else name, value)
    if where == "encoder":
        return routed, value
    part = FLAT_PARTS[where]
    if flat == part.switch and setting is None:  # test_time_flip: true
        if not isinstance(value, bool):
            raise ValueError(f"model.{flat} = {value!r}: must be true or false")
        return f"model.{where}", model.get(where) or {}
    if model.get(where) is None and flat != part.switch:
        if value is None or value == part.defaults.get(part.settings[flat]):
            return None  # a setting of a part that is off, at its default: nothing to do
        raise ValueError(_off_message(where, flat, value))
    return routed, value


def flat_training_keys(raw):
    """`{section: {flat key: value}}` of the flat `training` keys a raw recipe writes."""
    training = raw.get("training") if isinstance(raw, dict) else None
    out = {}
    for key, value in (training.items() if isinstance(training, dict) else ()):
        if key in FLAT_KEYS:
            out.setdefault(FLAT_KEYS[key], {})[key] = value
    return out


def with_written_flat(key, value, written_flat):
    """The value of an override of a whole `training` section (`training.optimizer=adamw`) with
    the flat keys the recipe file wrote for it moved in, as an earlier recipe's would be.

    Raises:
        ValueError: a flat key of the file that the new factory does not take (`move_flat_keys`).
    """
    section = key.split(".")[1] if key.count(".") == 1 and key.startswith("training.") else None
    if section not in written_flat:
        return value
    return move_flat_keys({section: value, **written_flat[section]})[section]


def switches_first(overrides):
    """`overrides` (tuples whose first item is the dotted key) with each flat setting of a model
    part (`model.momentum`) moved after the part's switch or section given later
    (`model.queue_size`, `model.queue`): the earlier spelling applied them together, in any order.

    Example:

    >>> from clzoo.train.recipe_upgrade import switches_first
    >>> switches_first([("model.momentum", 0.9), ("training.epochs", 3), ("model.queue_size", 64)])
    [('training.epochs', 3), ('model.queue_size', 64), ('model.momentum', 0.9)]
    """
    def part_of(item):
        parts = item[0].split(".")
        if parts[0] != "model" or len(parts) != 2:
            return None, False
        if parts[1] in FLAT_PARTS:
            return parts[1], True
        section = MODEL_FLAT_KEYS.get(parts[1], (None,))[0]
        return (section, parts[1] == FLAT_PARTS[section].switch) if section in FLAT_PARTS else (None, False)
    kinds = [part_of(item) for item in overrides]
    ordered, waiting = [], {}
    for index, (item, (part, switch)) in enumerate(zip(overrides, kinds)):
        switch_later = any(p == part and s for p, s in kinds[index + 1:])
        if part is not None and not switch and switch_later:
            waiting.setdefault(part, []).append(item)
            continue
        ordered.append(item)
        if switch:
            ordered += waiting.pop(part, [])
    return ordered + [item for items in waiting.values() for item in items]
