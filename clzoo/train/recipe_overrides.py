"""`--set section.key=value` overrides applied to a recipe's sections: each value read as YAML,
an earlier spelling upgraded (`clzoo.train.recipe_upgrade`), a section replaced whole named with
the settings it leaves out, one key in two spellings and a part's setting after its switch off
refused."""

import yaml

from clzoo.train.recipe_components import as_section
from clzoo.train.recipe_errors import RecipeError, _short, _TurnedOn, _where
from clzoo.train.recipe_model import ModelSpec
from clzoo.train.recipe_upgrade import canonical_key, overrides_in_order, place, upgrade_override
from clzoo.train.recipe_yaml import RecipeYAMLError, parse_yaml


def _override_value(key, value, source):
    """The YAML value of one override; text such as `tfds:` (a one-key mapping in YAML) stays text."""
    try:
        parsed = parse_yaml(value)
    except RecipeYAMLError as error:
        raise RecipeError([f"{source}: override {key} ({_short(value)}): {error}"]) from None
    except yaml.YAMLError:
        return value
    if isinstance(parsed, dict) and not value.lstrip().startswith("{"):
        return value
    if isinstance(parsed, str) and ("\n" in value.strip() or "\r" in value.strip()):
        raise RecipeError([f"{source}: override {key} ({_short(value)}): a line break in a text value "
                           "(YAML would fold it into a space); give the value on one line"])
    return parsed


def _apply_overrides(raw, overrides, source):
    """Set each `a.b=value` in the upgraded `raw`, an earlier spelling's key upgraded first
    (`upgrade_override`); returns `{dotted key set: the override's key as given}` (a model part
    the file leaves off: `{its section: _TurnedOn(the override that turned it on)}`), a note per
    key given in an earlier spelling and `(override, section, {setting: value})` per section it
    replaced with settings it does not give (`_left_out` makes the notes).

    A key given twice takes its last value (the command line refuses that itself); one key in
    two spellings, or a section after one of its own keys, is refused (`_refuse_overlap`).

    Raises:
        RecipeError: a malformed override, or a value over the YAML limits.
    """
    done, spelled, notes, off, replaced, turned_on = {}, {}, [], {}, [], {}
    for key, value, typed in overrides_in_order([_split_override(item, source) for item in overrides]):
        _refuse_overlap(spelled, key, source)
        value = value if typed else _override_value(key, value, source)
        try:
            upgraded = upgrade_override(key, value, raw)
            if upgraded is not None:
                _track_parts_off(off, spelled, key, *upgraded)
                replaced += _replaced(raw, key, *upgraded)
                section = _part_section(upgraded[0])
                if section and upgraded[1] is not None and _section_at(raw, section) is None:
                    turned_on.setdefault(section, _TurnedOn(key))
                place(raw, *upgraded)
        except ValueError as error:
            raise RecipeError([f"{_where(source, key, {key: key})}: {error}"]) from None
        routed = canonical_key(key)
        done.update({key: key, routed: key, **({upgraded[0]: key} if upgraded else {})})
        if upgraded is None:
            notes.append(f"{key} = {value!r} dropped: it does nothing here (its part is off, or its "
                         "factory does not take it)")
        elif routed != key:
            notes.append(f"{key} is now {routed}" if upgraded[1] is not None else f"{key} = {value!r}: "
                         f"{upgraded[0]} is off")
    return {**turned_on, **done}, notes, replaced  # a section given whole (`model.queue={...}`): its own


def _replaced(raw, given, key, value):
    """`[(given, key, {dotted setting: value})]`: the settings of the section `key` in `raw` that
    the override `given` replaces without giving them, inside the sections it gives too (a section
    override starts from the defaults: `model={queue: {size: 32}}` leaves out the queue's momentum)."""
    node, new = _section_at(raw, key), as_section(value)
    if node is None or not isinstance(new, dict):
        return []
    return [(given, key, dict(_not_given(node, new)))]


def _not_given(old, new, prefix=""):
    """`(dotted setting, value)` of the mapping `old` that the mapping `new` does not give."""
    for name, setting in old.items():
        inner, within = as_section(new.get(name)), as_section(setting)  # `encoder: resnet18` too
        if name not in new:
            yield f"{prefix}{name}", setting
        elif isinstance(setting, dict) or isinstance(new[name], dict):  # two names: values
            if isinstance(inner, dict) and isinstance(within, dict):
                yield from _not_given(within, inner, f"{prefix}{name}.")


def _left_out(replaced, final):
    """One note per replaced section whose settings differ in `final` (the validated recipe's
    dict): the values the override left out, the section's name among them."""
    notes = []
    for given, key, settings in replaced:
        lost = [f"{name} = {value!r}" for name, value in settings.items()
                if _value_at(final, f"{key}.{name}") != value]
        if lost:
            notes.append(f"--set {given} replaces the whole {key}, leaving out {', '.join(lost)}")
    return notes


def _section_at(tree, key):
    """The mapping at dotted `key` in `tree` (a section written as a name read as `{name: ...}`),
    or None where there is none."""
    for part in key.split("."):
        tree = as_section(tree.get(part)) if isinstance(tree, dict) else None
    return tree if isinstance(tree, dict) else None


def _value_at(tree, key):
    """The value at dotted `key` (inside a section) in `tree`, or `...` where there is none."""
    section, _, leaf = key.rpartition(".")
    return (_section_at(tree, section) or {}).get(leaf, ...)


def _split_override(item, source):
    """`(key, value, typed)` of one override: `"a.b=text"` (typed False: the text is YAML)
    or a `(key, value)` pair (typed True: never re-parsed).

    Raises:
        RecipeError: an override without `=` or without a key.
    """
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
        (key, value), sep, typed = item, "=", True
    else:
        (key, sep, value), typed = str(item).partition("="), False
    if not sep or not key.strip():
        raise RecipeError([f"{source}: overrides look like training.epochs=5. Received: {_short(item)}"])
    return key.strip(), value, typed


def _track_parts_off(off, spelled, given, key, value):
    """Refuse a setting inside a model part an earlier override turned off, and an override
    turning off a part after one of its settings (a flat switch: `model.queue_size=null`);
    `off`: `{part section: the override that turned it off}`, kept current."""
    section = next((section for section in off if key.startswith(section + ".")), None)
    if section is not None:
        if off[section] != given:
            raise ValueError(f"{key} is a setting of {section}, which the earlier --set {off[section]} "
                             "turns off: give one of them")
        del off[section]  # the same key again (`model.queue_size=64` after `=null`): on again
    name = key.split(".")[-1]
    if not (key.count(".") == 1 and key.startswith("model.")
            and (name == "test_time" or name not in ModelSpec.model_fields)):
        return
    if value is not None:
        off.pop(key, None)
        return
    inner = next((earlier for canonical, earlier in spelled.items()
                  if canonical.startswith(key + ".") and earlier != given), None)
    if inner is not None:
        raise ValueError(f"--set {given} turns off {key}, discarding the earlier --set {inner}: "
                         "give one of them")
    off[key] = given


def _part_section(key):
    """`model.<part>` around a dotted key inside a model part's section (`model.queue.size`), or None."""
    parts = key.split(".")
    if len(parts) > 2 and parts[0] == "model" and (
            parts[1] == "test_time" or parts[1] not in ModelSpec.model_fields):
        return ".".join(parts[:2])
    return None


# The earlier `model.encoder_options` is every option of model.encoder (all but its name) at once.
_OPTIONS = {"model.encoder_options": "model.encoder.*"}


def _refuse_overlap(spelled, key, source):
    """Record override `key` in `spelled` (`{canonical key: as given}`), refusing one key in two
    spellings and a section given after one of its own keys (it would silently replace it)."""
    canonical = _OPTIONS.get(key, canonical_key(key))
    other = spelled.setdefault(canonical, key)
    if other != key:
        raise RecipeError([f"{source}: overrides {other} and {key} set the same key ({canonical}); "
                           "give it once"])
    inner = next((given for earlier, given in spelled.items() if earlier.startswith(canonical + ".") or (
        canonical == "model.encoder.*" and earlier.startswith("model.encoder.")
        and earlier not in ("model.encoder.name", canonical))), None)
    if inner is not None:
        what = "every option of model.encoder" if key in _OPTIONS else "the whole section"
        raise RecipeError([f"{source}: override {key} replaces {what}, discarding the "
                           f"earlier {inner}: give {key} first, or {inner} inside it"])
