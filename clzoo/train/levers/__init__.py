"""Training levers by name: a recipe's `training.levers: [{name, **settings}]`.

A lever changes how a run trains without a recipe field, a model flag or a runner branch
of its own: it is a `Lever` (a Keras callback that may also set up the optimizer before
the first step), registered in `LEVERS` under the name recipes use. A new lever is one
module here plus its import below (the registration); the recipe builds each listed
lever to check its settings, and the runner builds them again with the run's length.

Example:

>>> from clzoo.train.levers import LEVERS, build_levers
>>> "ema" in LEVERS.list()
True
>>> [type(lever).__name__ for lever in build_levers([{"name": "ema", "momentum": 0.99}])]
['WeightAverage']
"""

from clzoo.registry import check_kwargs
from clzoo.train.levers import weight_average  # noqa: E402,F401  (registers "ema")
from clzoo.train.levers.base import LEVERS, Lever

# Filled by the runner (the run's length), never a recipe key.
RUN_ARGUMENTS = ("total_steps",)


def build_levers(specs, **run):
    """The `Lever`s of a recipe's `training.levers` list, in its order.

    Args:
        specs: list of dicts, each `{"name": <a LEVERS name>, **settings}`.
        **run: what the runner knows of the run (`total_steps`), passed to each lever.

    Raises:
        ValueError: an item that is not a mapping with a `name`, an unknown name (listing
            the known ones), a lever named twice (both would set the same thing; the last
            would win), a setting the lever does not take, or a value it refuses.
    """
    levers, named = [], {}
    for index, spec in enumerate(specs):
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise ValueError(f"levers[{index}] must be a mapping with a `name` (one of "
                             f"{', '.join(LEVERS.list())}). Received: {spec!r}")
        if spec["name"] in named:
            raise ValueError(f"levers[{index}]: {spec['name']} is already levers[{named[spec['name']]}]; "
                             "give each lever once")
        named[spec["name"]] = index
        settings = {key: value for key, value in spec.items() if key != "name"}
        factory = LEVERS.get(spec["name"])
        check_kwargs(factory, settings, f"levers[{index}]", owner=spec["name"],
                     skip=("self", "name", *RUN_ARGUMENTS))
        levers.append(factory(**settings, **run))
    return levers


__all__ = ["LEVERS", "Lever", "build_levers"]
