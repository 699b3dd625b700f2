"""A tiny ContrastiveModel with a queue, shared by the queue tests and their distributed scripts."""

import keras
import numpy as np

import clzoo

SHAPE = (2, 4, 4, 3)  # views, H, W, C


def tiny_model(queue_size=10, momentum=0.9, learning_rate=0.1, loss=None):
    """Flatten + Dense encoder (no batch norm: keys equal the model's outputs at lr 0)."""
    keras.utils.set_random_seed(0)
    encoder = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(6)])
    head = clzoo.models.ProjectionHead(hidden_dims=(5,), output_dim=3)
    model = clzoo.models.ContrastiveModel(encoder, head, queue_size=queue_size, momentum=momentum)
    model.build((None,) + SHAPE)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate),
                  loss=loss or clzoo.losses.SINCERELoss(temperature=0.2))
    return model


def batches(n=12, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n,) + SHAPE).astype("float32"), (np.arange(n) % 3).astype("int32")


def queue_state(model):
    q = model.memory_queue
    return {k: keras.ops.convert_to_numpy(getattr(q, k).value)
            for k in ("embeddings", "labels", "pointer", "count")}
