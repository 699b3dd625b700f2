"""What to try when a run's loss or weights become NaN: the recipe's setting that most likely did it."""

# Settings whose values past these bounds blow up a step on their own, whatever the learning rate.
_DECAY_PER_STEP = 0.5  # learning_rate * weight_decay: the weights shrink by that fraction per step
_TRUST = 1.0  # LARS: an update as large as the weights themselves (typical 0.001)
_LOGIT_SCALE = 100.0  # the auxiliary head's logits (airbench: 1/9)


def divergence_advice(recipe):
    """One sentence for the NaN stop: the recipe's settings outside the range where training is
    known to stay finite, by name and value, else a lower `training.learning_rate`.

    Example:

    >>> from clzoo.train.divergence import divergence_advice
    >>> from clzoo.train.recipe import validate_recipe
    >>> divergence_advice(validate_recipe({}))
    'Try a lower training.learning_rate (now 0.1).'
    """
    spec = recipe.training
    settings = {**spec.optimizer.defaults(), **spec.optimizer.settings}
    suspects = []
    decay = settings.get("weight_decay") or 0
    if decay * spec.learning_rate > _DECAY_PER_STEP and decay > spec.learning_rate:  # decay's doing
        suspects.append(f"training.optimizer.weight_decay = {decay:g} (times the learning rate "
                        f"{spec.learning_rate:g}, over {_DECAY_PER_STEP} of each weight per step)")
    if (settings.get("trust_coefficient") or 0) > _TRUST:
        suspects.append(f"training.optimizer.trust_coefficient = {settings['trust_coefficient']:g} "
                        "(LARS: an update larger than the weights; typical 0.001)")
    auxiliary = recipe.model.auxiliary
    if auxiliary is not None and auxiliary.logit_scale > _LOGIT_SCALE:
        suspects.append(f"model.auxiliary.logit_scale = {auxiliary.logit_scale:g} (airbench: 1/9)")
    if suspects:
        return f"Lower {'; '.join(suspects)}, or training.learning_rate."
    return f"Try a lower training.learning_rate (now {spec.learning_rate:g})."
