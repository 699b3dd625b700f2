"""`ContrastiveModel`'s optional parts: the hooks the model calls on each (`ModelPart`), the
`PARTS` registry a recipe's `model.<part>` section names, and the context a part checks its
place in (`PartContext`, each part's `refuse`).

A part is one module registering one `ModelPart` subclass in `PARTS` under the name recipes
use; its constructor's arguments are the recipe section's keys.
"""

from typing import NamedTuple

from clzoo.registry import Registry

PARTS = Registry("model part", order=("queue", "grad_cache", "auxiliary"))


class PartContext(NamedTuple):
    """What a part (or a training lever) may refuse to run beside.

    Attributes:
        parts: the names (`PARTS`) of every part of the model, this one included.
        task: the recipe's task (`"contrastive"` for a model built by hand).
        loss: the loss's class (or factory), None where not known yet (a model built by hand).
        spelled: how a message names a part (`"model.{}"` in a recipe).
    """

    parts: tuple = ()
    task: str = "contrastive"
    loss: object = None
    spelled: str = "{}"


class ModelPart:
    """One optional part of `ContrastiveModel`'s training: a strategy the model calls by hooks.

    The model calls each hook of each of its parts in one place, so a part's code and its
    checks live in its own module and the model never branches on which parts it has. Every
    hook does nothing here; a part overrides the ones it needs:

    - `attach(model)`: create the part's layers as attributes of the model (tracked and saved
      under the attribute's name), before the encoder's for parts with `attach_first = True`
      (Keras lists weights, and saves optimizer slots, in the order layers were assigned);
    - `build(model, features_shape)`: build them once the encoder's output shape is known;
    - `outputs(model, features)`: a training output computed from the encoder's features
      (parts with `makes_outputs = True`: the auxiliary classifier's logits);
    - `batch_loss(model, x, y, y_pred, sample_weight)`: the step's loss in place of Keras'
      (the memory queue's contrast against batch + queue); None leaves Keras' loss;
    - `added_loss(model, x, y, output, sample_weight)`: a term added to the loss, given this
      part's training output;
    - `metrics(model)`: Keras metrics the part updates in `added_loss` (logged by `fit`);
    - `train_step(model, *args)`: the whole step in place of Keras' (GradCache's); None
      leaves Keras' step;
    - `check_labels(y)`, `check_compile(loss_weights)`: refusals before any work;
    - `refuse(context)`: why the part cannot run beside the others, the task or the loss of
      `context` (a `PartContext`), or None.

    `get_config()` returns the constructor's arguments (`from_config` rebuilds the part), so
    a model saves each part as `{"class_name": <PARTS name>, "config": ...}` (`serialize_part`).

    Shapes: `x` float `(batch, views, H, W, C)`; `y` the labels as the loss takes them (or
    None); `y_pred` float `(batch, views, dim)`; `features` float `(batch * views, features)`,
    views folded into the batch sample-major; a loss is a float32 scalar.

    Parts hold settings only: the layers are the model's, so saved weights keep their paths.

    Example:

    >>> from clzoo.parts.base import ModelPart
    >>> ModelPart().batch_loss(None, None, None, None, None) is None
    True
    """

    makes_outputs = False
    attach_first = False
    # settings the run fills in, never a recipe key (the auxiliary classifier's classes)
    run_arguments = ()

    def __repr__(self):
        settings = ", ".join(f"{key}={value!r}" for key, value in self.get_config().items())
        return f"{type(self).__name__}({settings})"

    def get_config(self):
        return {key: value for key, value in vars(self).items() if not key.startswith("_")}

    @classmethod
    def from_config(cls, config):
        """The part `get_config` described; a key the constructor does not take, or one it needs
        and is not given (a tampered or hand-edited `.keras` file), is refused in one line.

        Raises:
            ValueError: naming the part, the key and the keys the part takes.
        """
        check_part_config(cls, config)
        return cls(**config)

    def attach(self, model):
        pass

    def build(self, model, features_shape):
        pass

    def outputs(self, model, features):
        return None

    def batch_loss(self, model, x, y, y_pred, sample_weight):
        return None

    def added_loss(self, model, x, y, output, sample_weight):
        return None

    def metrics(self, model):
        return []

    def train_step(self, model, *args):
        return None

    def check_labels(self, y):
        pass

    def check_compile(self, loss_weights):
        pass

    def refuse(self, context):
        return None


def part_name(part):
    """The `PARTS` name of `part`'s class (its class name for an unregistered part)."""
    return next((name for name in PARTS if PARTS.get(name) is type(part)), type(part).__name__)


def check_part_config(cls, config):
    """Refuse a saved config of part class `cls` whose keys its constructor does not take (Keras
    would wrap the constructor's TypeError in five lines of the whole model's config)."""
    import inspect

    name = next((name for name in PARTS if PARTS.get(name) is cls), cls.__name__)
    if not isinstance(config, dict):
        raise ValueError(f"the .keras file's {name} config is not a mapping of settings: {config!r}")
    parameters = list(inspect.signature(cls).parameters.values())
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return  # takes any key: the constructor checks its own
    takes = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    extra = [key for key in config if key not in takes]
    if extra:
        raise ValueError(f"the .keras file's {name} config has key {extra[0]!r} that {cls.__name__} "
                         f"does not take (it takes: {', '.join(takes)})")
    needed = [p.name for p in parameters if p.name in takes and p.default is p.empty]
    missing = [key for key in needed if key not in config]
    if missing:
        raise ValueError(f"the .keras file's {name} config lacks key {missing[0]!r} that "
                         f"{cls.__name__} needs (it takes: {', '.join(takes)})")


def serialize_part(part):
    """`{"class_name": <PARTS name>, "config": part.get_config()}` (keras' serialize shape)."""
    return {"class_name": part_name(part), "config": part.get_config()}


def deserialize_part(item):
    """A `ModelPart` from `serialize_part`'s dict (a `ModelPart` is returned as it is).

    Raises:
        ValueError: not a part nor a `{"class_name", "config"}` mapping, or an unknown name.
    """
    if isinstance(item, ModelPart):
        return item
    if not isinstance(item, dict) or set(item) != {"class_name", "config"}:
        raise ValueError("A model part is a clzoo.parts.ModelPart or a mapping "
                         f"{{'class_name': <one of {', '.join(PARTS)}>, 'config': {{...}}}}. "
                         f"Received: {item!r}")
    return PARTS.get(item["class_name"]).from_config(item["config"])  # from_config checks its keys


def check_together(parts, context=None, spelled="{}"):
    """Refuse parts that do not run together, or beside `context`'s task and loss.

    Args:
        parts: the `ModelPart`s of one model.
        context: a `PartContext`; its `parts` are filled in from `parts`. Defaults to a model
            built by hand (task contrastive, loss unknown).
        spelled: how the message names a part, e.g. `"model.{}"` for a recipe's sections.

    Raises:
        ValueError: a part named twice, or the first part's reason, naming the part.
    """
    names = [part_name(part) for part in parts]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"{spelled.format(twice[0])} is given twice; give each part once")
    context = (context or PartContext())._replace(parts=tuple(names), spelled=spelled)
    for name, part in zip(names, parts):
        reason = part.refuse(context)
        if reason:
            raise ValueError(f"{spelled.format(name)}: {reason}")
