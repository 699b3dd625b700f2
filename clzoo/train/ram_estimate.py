"""Will a training step fit in this machine's memory? An estimate before the first step.

On a CPU the activations a step keeps for its backward pass live in host memory
beside everything else; a batch too large for it ends with the kernel's OOM
killer and only "Killed" on the terminal. The estimate is the float32 size of
every layer output of the encoder per image, times the images one step runs
through it: an upper bound on what the backward pass keeps (XLA fuses some
outputs away). Measured on the 2-core machine: airbench at 1,024 images per
step estimates 1.5 GB and ran at 3.9 GB RSS in all; ResNet-50 at 1,024 images
(`recipes/supcon/cifar10.yaml`) estimates 48 GB and was killed at 23.8 GB.
"""

import math

from clzoo.data.memory_budget import process_memory
from clzoo.train.recipe import RecipeError

# Share of the memory this process may use that a step's activations may take (the rest: runtime).
LIMIT_FRACTION = 0.8


def activation_bytes_per_image(encoder):
    """float32 bytes of every layer output of `encoder` for one image (nested models included).

    Args:
        encoder: a built functional `keras.Model`; outputs of unknown size
            (besides the batch) and layers called more than once are skipped.

    Returns:
        int, bytes (4 per output element, the input layer's included).

    Example:

    >>> import keras
    >>> from clzoo.train.ram_estimate import activation_bytes_per_image
    >>> inputs = keras.Input((4, 4, 3))
    >>> activation_bytes_per_image(keras.Model(inputs, keras.layers.Flatten()(inputs)))
    384
    """
    total = 0
    for layer in encoder._flatten_layers(include_self=False, recursive=True):
        try:
            outputs = layer.output
        except (AttributeError, ValueError):  # a layer called more than once, or never
            continue
        for tensor in outputs if isinstance(outputs, (list, tuple)) else [outputs]:
            dims = getattr(tensor, "shape", None)
            if dims is not None and all(d is not None for d in dims[1:]):
                total += math.prod(int(d) for d in dims[1:]) * 4  # Python ints: no int64 overflow
    return total


def check_step_memory(recipe, encoder, views, on_cpu, total=None):
    """Refuse, before training, a step whose activations would not fit in host memory.

    Args:
        recipe: the validated `Recipe` (batch size, `model.grad_cache`).
        encoder: the built encoder.
        views: views per image in a step.
        on_cpu: the step runs on the CPU (device memory is the framework's to report).
        total: the memory the process may use, in bytes. Defaults to `process_memory()`'s
            (`MemAvailable` or the room under a cgroup limit, whichever is smaller).

    Raises:
        RecipeError: naming `training.batch_size`, the estimate, the memory and the fixes.
    """
    total, source = process_memory() if total is None else (total, "given")
    if not on_cpu or not total:
        return
    images = recipe.training.batch_size * views
    chunk = recipe.model.grad_cache and recipe.model.grad_cache.chunk_size
    through = min(images, chunk) if chunk else images  # GradCache keeps one chunk's activations
    need = through * activation_bytes_per_image(encoder)
    if need > LIMIT_FRACTION * total:
        gib = 1 << 30
        raise RecipeError([
            f"training.batch_size = {recipe.training.batch_size}: {through:,} images per step "
            f"({views} view(s){', GradCache chunks of ' + str(chunk) if chunk else ''}) keep about "
            f"{need / gib:.1f} GiB of activations for the backward pass, more than "
            f"{LIMIT_FRACTION:.0%} of the {total / gib:.1f} GiB this process may use ({source}): use a "
            "smaller batch, or "
            "model.grad_cache: {chunk_size: N} (model.encoder_chunk_size in earlier recipes; GradCache: "
            "same loss, activations of one chunk at a time)"])
