"""A model trained under a mixed dtype policy (`training.precision`), exported in float32.

A mixed-precision encoder computes in bfloat16 / float16 and returns half-precision features:
Keras' export then gives a SavedModel whose `serve` returns bfloat16 and a LiteRT file that the
interpreter cannot run (its half-precision ops need TensorFlow's Flex delegate). Exports are for
inference where the input contract is float32 in [0, 1] and the features float32, so the model is
rebuilt with every layer's policy set to float32 and the same weights (which a mixed policy keeps
in float32 already).
"""

import keras


def float32_copy(model):
    """`model` itself when every layer computes in float32, else a float32 copy with its weights.

    Args:
        model: a `keras.Model` (its layers may hold `mixed_bfloat16` / `mixed_float16` policies).

    Returns:
        `keras.Model`: same class, config (but the policies) and weights; features differ from
        the half-precision model's by its rounding (about 1% of their scale for bfloat16).

    Example:

    >>> import keras
    >>> from clzoo.export.float32_copy import float32_copy
    >>> dense = keras.layers.Dense(2, dtype="mixed_bfloat16")
    >>> model = keras.Sequential([keras.Input((3,)), dense])
    >>> float32_copy(model).layers[-1].dtype_policy.name
    'float32'
    """
    layers = model._flatten_layers(include_self=False, recursive=True)  # as clzoo.compat walks a model
    if all(layer.dtype_policy.name == "float32" for layer in layers):
        return model
    copy = keras.saving.deserialize_keras_object(_in_float32(keras.saving.serialize_keras_object(model)))
    copy.set_weights(model.get_weights())
    return copy


def _in_float32(node):
    """A serialized model with each mixed `DTypePolicy` replaced by float32."""
    if isinstance(node, dict):
        config = node.get("config")
        if (node.get("class_name") == "DTypePolicy" and isinstance(config, dict)
                and str(config.get("name", "")).startswith("mixed_")):
            return {**node, "config": {**config, "name": "float32"}}
        return {key: _in_float32(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_in_float32(value) for value in node]
    return node
