"""Recipes in the earlier, flat spelling, made from today's sections: the fixtures of the tests that
check an earlier recipe (or a run folder that stored one) still loads and resumes."""

from clzoo.train.recipe_components import as_section
from clzoo.train.recipe_model import EncoderSpec
from clzoo.train.recipe_upgrade import MOVED, SWITCHES


def section_to_flat(model):
    """`model` with its part and encoder sections written as the flat keys of earlier recipes
    (an override in the flat spelling then meets the recipe's section).

    Example:

    >>> from tests.train.earlier_spelling import section_to_flat
    >>> model = {"encoder": "resnet8", "queue": None, "test_time": {"translate": 2}}
    >>> section_to_flat(model)  # doctest: +NORMALIZE_WHITESPACE
    {'architecture': 'resnet8', 'encoder_options': {}, 'queue_size': None,
     'test_time_translate': 2, 'test_time_flip': True}
    """
    model = dict(model)
    if "encoder" in model:
        encoder = as_section(model.pop("encoder"))
        if not isinstance(encoder, dict):
            raise ValueError(f"model.encoder = {encoder!r}: must be a name or {{name, **options}}")
        options = {key: value for key, value in encoder.items() if key != "name"}
        model.update({"architecture": encoder.get("name", EncoderSpec().name), "encoder_options": options})
    flat_of = {new: old.split(".")[1] for old, new in MOVED.items() if old.startswith("model.")}
    for switch, off in SWITCHES.items():
        section = MOVED[switch].split(".")[1]
        if section not in model:
            continue
        given = model.pop(section)
        if given is None:
            model[switch.split(".")[1]] = off
            continue
        if not isinstance(given, dict):
            raise ValueError(f"model.{section} = {given!r}: must be a mapping or null")
        model.update({flat_of.get(f"model.{section}.{setting}", f"{section}.{setting}"): value
                      for setting, value in given.items()})
        if off is False:
            model[switch.split(".")[1]] = True
    return model
