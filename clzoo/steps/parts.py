"""`ContrastiveModel`'s optional parts: the hooks the model calls on each (`ModelPart`) and the
rules between them, checked in one place (`check_parts`).

`ContrastiveModel.__init__` and a recipe's `model:` section (`clzoo.train.recipe.ModelSpec`) both
call `check_parts`, each naming the arguments as its user writes them.
"""


def check_parts(queue_size=None, momentum=None, encoder_chunk_size=None, auxiliary=False,
                names=None, received=None):
    """Refuse parts that do not combine: a momentum key encoder without a queue, the auxiliary
    classifier under GradCache.

    Args:
        queue_size, momentum, encoder_chunk_size: as `ContrastiveModel` takes them.
        auxiliary: whether the auxiliary classifier is on.
        names: `{argument: how the caller spells it}` for the messages, e.g.
            `{"queue_size": "model.queue_size"}`; the argument in backticks otherwise
            (`auxiliary_classes` for `auxiliary`).
        received: `{argument: how the caller spells its value}` for the "Received:" part,
            e.g. `{"encoder_chunk_size": "model.grad_cache.chunk_size"}`; the argument otherwise.

    Raises:
        ValueError: naming both parts and the value received.

    Example:

    >>> from clzoo.steps.parts import check_parts
    >>> check_parts(queue_size=4096, momentum=0.99)
    >>> check_parts(momentum=0.99)
    Traceback (most recent call last):
    ...
    ValueError: `momentum` (the key encoder) needs a queue: set `queue_size`. Received: ...
    """
    spelled = {"queue_size": "`queue_size`", "momentum": "`momentum`",
               "encoder_chunk_size": "`encoder_chunk_size`", "auxiliary": "`auxiliary_classes`",
               **(names or {})}
    value_of = {"momentum": "momentum", "encoder_chunk_size": "encoder_chunk_size", **(received or {})}

    if momentum is not None and queue_size is None:
        raise ValueError(f"{spelled['momentum']} (the key encoder) needs a queue: set "
                         f"{spelled['queue_size']}. Received: {value_of['momentum']}={momentum!r}, "
                         "queue_size=None")
    if auxiliary and encoder_chunk_size is not None:
        raise ValueError(f"the auxiliary classifier ({spelled['auxiliary']}) does not run under GradCache: "
                         f"unset {spelled['encoder_chunk_size']}. "
                         f"Received: {value_of['encoder_chunk_size']}={encoder_chunk_size!r}")


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
    - `train_step(model, *args)`: the whole step in place of Keras' (GradCache's); None
      leaves Keras' step;
    - `check_labels(y)`, `check_compile(loss_weights)`: refusals before any work.

    Shapes: `x` float `(batch, views, H, W, C)`; `y` the labels as the loss takes them (or
    None); `y_pred` float `(batch, views, dim)`; `features` float `(batch * views, features)`,
    views folded into the batch sample-major; a loss is a float32 scalar.

    `check_parts` holds the rules between parts. Parts hold settings only: the layers are the
    model's, so saved weights keep their paths.

    Example:

    >>> from clzoo.steps.parts import ModelPart
    >>> ModelPart().batch_loss(None, None, None, None, None) is None
    True
    """

    makes_outputs = False
    attach_first = False

    def __repr__(self):
        settings = ", ".join(f"{key}={value!r}" for key, value in vars(self).items())
        return f"{type(self).__name__}({settings})"

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

    def train_step(self, model, *args):
        return None

    def check_labels(self, y):
        pass

    def check_compile(self, loss_weights):
        pass
