"""What runs inside `clzoo.models.ContrastiveModel`'s training step, one part per module.

- `memory_queue`: the MoCo queue of past keys and labels (`MemoryQueue`);
- `momentum`: the EMA key encoder (`MomentumEncoder`, MoCo eq. 2);
- `queue_step`: a step's loss over batch + queue, then the keys enqueued;
- `grad_cache`: GradCache's chunked step (Gao et al. 2021);
- `jax_step_guard`, `fit_labels`: the label and sample-weight checks of `fit`'s step;
- `parts`: `ModelPart`, the hooks `ContrastiveModel` calls on each of its parts (the queue's
  `QueuePart`, GradCache's `GradCacheStep`, the auxiliary classifier's `AuxiliaryPart`), and
  the rules between the parts, checked once for the model and the recipe.

Architectures, heads and the encoder registry stay in `clzoo.models`, which composes these
parts into `ContrastiveModel` (as keras-hub keeps backbones apart from the tasks built on them).
"""

from clzoo.steps.memory_queue import MemoryQueue
from clzoo.steps.momentum import MomentumEncoder
from clzoo.steps.parts import ModelPart, check_parts

__all__ = ["MemoryQueue", "ModelPart", "MomentumEncoder", "check_parts"]
