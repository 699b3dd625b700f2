"""The rules between `ContrastiveModel`'s optional parts, checked in one place.

`ContrastiveModel.__init__` and a recipe's `model:` section (`clzoo.train.recipe.ModelSpec`) both
call `check_parts`, each naming the arguments as its user writes them.
"""


def check_parts(queue_size=None, momentum=None, encoder_chunk_size=None, auxiliary=False,
                names=None):
    """Refuse parts that do not combine: a momentum key encoder without a queue, the auxiliary
    classifier under GradCache.

    Args:
        queue_size, momentum, encoder_chunk_size: as `ContrastiveModel` takes them.
        auxiliary: whether the auxiliary classifier is on.
        names: `{argument: how the caller spells it}` for the messages, e.g.
            `{"queue_size": "model.queue_size"}`; the argument in backticks otherwise
            (`auxiliary_classes` for `auxiliary`).

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

    if momentum is not None and queue_size is None:
        raise ValueError(f"{spelled['momentum']} (the key encoder) needs a queue: set "
                         f"{spelled['queue_size']}. Received: momentum={momentum!r}, queue_size=None")
    if auxiliary and encoder_chunk_size is not None:
        raise ValueError(f"the auxiliary classifier ({spelled['auxiliary']}) does not run under GradCache: "
                         f"unset {spelled['encoder_chunk_size']}. "
                         f"Received: encoder_chunk_size={encoder_chunk_size!r}")
