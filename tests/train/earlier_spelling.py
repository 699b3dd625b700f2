"""Recipes in the earlier, flat spelling, made from today's sections: the fixtures of the tests that
check an earlier recipe (or a run folder that stored one) still loads and resumes."""

from clzoo.train.recipe_components import as_section
from clzoo.train.recipe_model import EncoderSpec
from clzoo.train.recipe_upgrade import FLAT_PARTS


def section_to_flat(model):
    """`model` with its part and encoder sections written as the flat keys of earlier recipes
    (an override in the flat spelling then meets the recipe's section).

    Example:

    >>> from tests.train.earlier_spelling import section_to_flat
    >>> section_to_flat({"encoder": "resnet8", "queue": None, "test_time": {"translate": 2}})
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
    for section, part in FLAT_PARTS.items():
        if section not in model:
            continue
        given = model.pop(section)
        if given is None:
            model[part.switch] = part.off
            continue
        if not isinstance(given, dict):
            raise ValueError(f"model.{section} = {given!r}: must be a mapping or null")
        named = {setting: key for key, setting in part.settings.items()}
        model.update({named.get(setting, f"{section}.{setting}"): value for setting, value in given.items()})
        if part.off is False:
            model[part.switch] = True
    return model
