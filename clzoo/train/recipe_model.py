"""The recipe's `model:` section: the encoder it names and each optional part of the model as its
own section.

```yaml
model:
  encoder: {name: airbench, whitening: true}   # a clzoo.models encoder and its builder's arguments
  embedding_dim: 128
  queue: {size: 4096, momentum: 0.99}          # absent or null: the part is off
  auxiliary: {weight: 0.5}                     # (not with grad_cache: {chunk_size: 64})
  test_time: {translate: 2}
```

Recipes written before the sections (flat keys such as `model.queue_size`) still load:
`MODEL_FLAT_KEYS` says where each flat key now lives, and `move_model_flat_keys` moves it
there. A part's switch at its "off" value (`queue_size: null`, `auxiliary_cross_entropy_weight:
0`, `test_time_flip: false`) leaves the part out; its other flat keys must then be at their
defaults (they did nothing), else they are refused, except in a run's stored `recipe.yaml`
(`load_recipe(..., stored=True)`), which earlier versions wrote with them and which must still
resume. Error lines name a key as the recipe wrote it (`spelled_as_written`).
"""

import re
from typing import Annotated, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

from clzoo.registry import did_you_mean
from clzoo.train.recipe_components import Section, as_section, floats_in, inert_key_dropped


class EncoderSpec(BaseModel):
    """`model.encoder`: a `clzoo.models.list_encoders()` name and its builder's own arguments."""

    model_config = ConfigDict(extra="allow", strict=True)
    name: str = "resnet20"

    @property
    def options(self):
        return dict(self.model_extra or {})

    @field_validator("name")
    @classmethod
    def _known_encoder(cls, name):
        from clzoo.models.registry import ENCODERS

        if name not in ENCODERS:
            raise ValueError(f"unknown encoder; known: {', '.join(ENCODERS)}." + did_you_mean(name, ENCODERS))
        return name

    @model_validator(mode="after")
    def _options_fit_the_encoder(self):
        from clzoo.models.registry import check_encoder_options

        check_encoder_options(self.name, self.options, "encoder")
        floats_in(self.options, "encoder")
        return self


class QueueSpec(Section):
    """`model.queue`: MoCo-style memory (clzoo.models.ContrastiveModel)."""

    size: PositiveInt = Field(le=1_000_000)  # keys + labels kept; each anchor meets batch + queue
    momentum: float | None = Field(None, ge=0, lt=1)  # the EMA key encoder's; None: no key encoder


class GradCacheSpec(Section):
    """`model.grad_cache`: GradCache (Gao et al. 2021), same gradients with less memory."""

    # images (views included) embedded at a time without keeping activations, then
    # back-propagated chunk by chunk: one extra forward pass; batch norm statistics per chunk
    chunk_size: PositiveInt


class AuxiliarySpec(Section):
    """`model.auxiliary`: a linear classifier on the encoder's features (airbench94's head)."""

    weight: PositiveFloat  # loss = contrastive + weight * label-smoothed cross-entropy (uses labels)
    label_smoothing: float = Field(0.2, ge=0, lt=1)  # of the auxiliary cross-entropy (airbench94's)
    # logits times this fixed scale, no bias (airbench94: 1/9 =
    # clzoo.models.auxiliary_classifier.AIRBENCH_LOGIT_SCALE)
    logit_scale: PositiveFloat = Field(1 / 9, allow_inf_nan=False)


class TestTimeSpec(Section):
    """`model.test_time`: the saved encoder averages each image's features with its mirror's."""

    # also over the image shifted by (-t, -t) and (+t, +t) pixels with their mirrors (airbench's
    # multi-crop test-time augmentation, clzoo.models.test_time_averaged); training and the
    # online kNN use the bare encoder
    translate: NonNegativeInt = Field(0, le=4)


MAX_WIDTH = 32_768  # a layer of 32,768 x 32,768 holds 1.1 billion weights (4.3 GB)
Width = Annotated[int, Field(gt=0, le=MAX_WIDTH)]


class ModelSpec(Section):
    # {name, **options}: a clzoo.models.list_encoders() name and its builder's own arguments, e.g.
    # {name: vit_small_patch4, num_layers: 2}; the image size comes from views.size
    encoder: EncoderSpec = Field(default_factory=EncoderSpec)
    # None: one layer as wide as the encoder; each width up to 32,768 (SimCLR v2: 8,192)
    head_hidden_dims: list[Width] | None = Field(None, max_length=16)
    head_batch_norm: bool = False  # batch norm between the projection head's layers
    embedding_dim: Width = 128  # the projection head's output: the embedding the loss sees (<= 32,768)
    classifier_hidden_dims: list[Width] = Field([], max_length=16)  # task soft_target: classifier widths
    # MoCo-style memory {size, momentum}: contrast each anchor against batch + the last `size`
    # keys; momentum: an EMA key encoder. null: none. Task contrastive, an embedding loss.
    queue: QueueSpec | None = None
    # GradCache {chunk_size}: the same gradients with less memory (task contrastive). null: none
    grad_cache: GradCacheSpec | None = None
    # an auxiliary classifier {weight, label_smoothing, logit_scale} on the encoder's features; it
    # uses the labels (a preset trained with it says so). Task contrastive. null: none
    auxiliary: AuxiliarySpec | None = None
    # test-time averaging {translate} of the saved encoder (airbench's flip and shifts). null: none
    test_time: TestTimeSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _sections_from_flat_keys(cls, data):
        data = move_model_flat_keys(data)
        if isinstance(data, dict) and isinstance(data.get("encoder"), str):
            data = {**data, "encoder": as_section(data["encoder"])}
        return data

    @model_validator(mode="after")
    def _parts_combine(self):
        from clzoo.steps.parts import check_parts

        chunk_size = None if self.grad_cache is None else self.grad_cache.chunk_size
        check_parts(encoder_chunk_size=chunk_size, auxiliary=self.auxiliary is not None,
                    names={"encoder_chunk_size": "model.grad_cache", "auxiliary": "model.auxiliary"},
                    received={"encoder_chunk_size": "model.grad_cache.chunk_size"})
        return self


class Part(NamedTuple):
    """How a part's flat keys of earlier recipes map into its section."""

    switch: str  # the flat key that turned the part on
    off: object  # the switch's value that meant "no part"
    settings: dict  # flat key -> the section's setting (the switch's own, if it carries a value)


PARTS = {
    "queue": Part("queue_size", None, {"queue_size": "size", "momentum": "momentum"}),
    "grad_cache": Part("encoder_chunk_size", None, {"encoder_chunk_size": "chunk_size"}),
    "auxiliary": Part("auxiliary_cross_entropy_weight", 0, {
        "auxiliary_cross_entropy_weight": "weight", "auxiliary_label_smoothing": "label_smoothing",
        "auxiliary_logit_scale": "logit_scale"}),
    "test_time": Part("test_time_flip", False, {"test_time_translate": "translate"}),
}
# The key-translation table of `model`: flat key of earlier recipes -> (section, setting).
MODEL_FLAT_KEYS = {"architecture": ("encoder", "name"), "encoder_options": ("encoder", None),
                   **{key: (section, setting) for section, part in PARTS.items()
                      for key, setting in {part.switch: None, **part.settings}.items()}}
_SPECS = {"queue": QueueSpec, "grad_cache": GradCacheSpec, "auxiliary": AuxiliarySpec,
          "test_time": TestTimeSpec}


def part_turned_off(model, key, value):
    """`model` (a raw section) with the part left out when an override sets its flat switch `key`
    to the switch's "off" value (`test_time_flip=false`, `queue_size=null`); None otherwise.

    The override means "no part", so the part's other keys go with it, in either spelling (a
    recipe's `test_time: {translate: 1}` would otherwise refuse `test_time_flip=false`).

    Example:

    >>> from clzoo.train.recipe_model import part_turned_off
    >>> part_turned_off({"encoder": "airbench", "test_time": {"translate": 1}}, "test_time_flip", False)
    {'encoder': 'airbench', 'test_time': None}
    >>> part_turned_off({"test_time": {"translate": 1}}, "test_time_translate", 0) is None
    True
    """
    for section, part in PARTS.items():
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


def part_spec(section):
    """The section class of a model part (`"queue"` -> `QueueSpec`)."""
    return _SPECS[section]


def move_model_flat_keys(model):
    """`model` (a recipe's raw section) with each flat key of `MODEL_FLAT_KEYS` moved into its
    section (`queue_size: 4096` + `momentum: 0.99` -> `queue: {size: 4096, momentum: 0.99}`).

    Raises:
        ValueError: a flat key beside its section; a part's setting away from its default
            while the part is off (it did nothing).

    Example:

    >>> from clzoo.train.recipe_model import move_model_flat_keys
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
    for section, part in PARTS.items():
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
    fields = _SPECS[section].model_fields
    for key, value in given.items():
        if key != part.switch and value is not None and value != fields[part.settings[key]].default:
            raise ValueError(_off_message(section, key, value))


def _off_message(section, key, value):
    if section == "queue":
        from clzoo.steps.parts import check_parts

        check_parts(queue_size=None, momentum=value,
                    names={"queue_size": "model.queue_size", "momentum": "model.momentum"},
                    received={"momentum": "model.momentum"})
    if section == "test_time":
        return f"model.test_time_translate = {value!r}: shifts average mirrored pairs; set test_time_flip too"
    switch = PARTS[section].switch
    return (f"model.{key} = {value!r}: the {section} part is off (model.{switch} is "
            f"{PARTS[section].off}); turn it on or drop the key")


def section_to_flat(model):
    """`model` with its part and encoder sections written as the flat keys of earlier recipes
    (an override in the flat spelling then meets the recipe's section).

    Example:

    >>> from clzoo.train.recipe_model import section_to_flat
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
    for section, part in PARTS.items():
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


def spelled_as_written(line, written):
    """`line` with each section key (`model.queue.size`, `model.queue`) spelled as the flat key
    the recipe wrote (`model.queue_size`); `written` is the set of flat keys it used.

    Example:

    >>> from clzoo.train.recipe_model import spelled_as_written
    >>> spelled_as_written("model.grad_cache.chunk_size = 0: must be > 0", {"encoder_chunk_size"})
    'model.encoder_chunk_size = 0: must be > 0'
    """
    names = {}
    for key in written:
        section, setting = MODEL_FLAT_KEYS[key]
        if setting:
            names[f"model.{section}.{setting}"] = f"model.{key}"
        if setting is None or key == getattr(PARTS.get(section), "switch", None):
            names[f"model.{section}"] = f"model.{key}"  # the part (or the encoder's options) itself
    if "encoder_options" not in written and "architecture" in written:
        names["model.encoder"] = "model.architecture"
    if not names:
        return line
    return re.sub(r"model\.[a-z_]+(?:\.[a-z_]+)?", lambda m: names.get(m.group(0), m.group(0)), line)
