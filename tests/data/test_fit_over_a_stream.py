"""Issue 57 item 6: `model.fit(clzoo.data.batches(..., epochs=2), epochs=2)` without
`steps_per_epoch` ran all 10 batches in fit's first epoch and replayed them in the second (20
steps, silently); it now takes one stream epoch per fit epoch, and a fit longer than the stream
is refused with the `epochs` to build it with."""

import keras
import numpy as np
import pytest

import clzoo
from clzoo.data import ViewConfig, batches, from_arrays

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")


def _model():
    keras.utils.set_random_seed(0)
    encoder = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(6)])
    head = clzoo.models.ProjectionHead(hidden_dims=(5,), output_dim=3)
    model = clzoo.models.ContrastiveModel(encoder, head)
    model.compile(optimizer="sgd", loss=clzoo.losses.SupConLoss())
    return model


def test_fit_takes_one_stream_epoch_per_epoch_and_refuses_a_longer_fit():
    rng = np.random.default_rng(0)
    split = from_arrays(rng.integers(0, 256, (40, 8, 8, 3)).astype("uint8"), np.arange(40) % 4)
    stream = batches(split, "views", batch_size=8, epochs=2, views=ViewConfig(size=8))
    model = _model()
    history = model.fit(stream, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and int(model.optimizer.iterations) == 10  # not 20
    with pytest.raises(ValueError, match=r"15 steps \(3 epochs of 5\) but the stream holds 10 "
                                         r"batches: build it with clzoo.data.batches\(\.\.\., epochs=3\)"):
        _model().fit(stream, epochs=3, verbose=0)
    resumed = batches(split, "views", batch_size=8, epochs=2, start_step=5, views=ViewConfig(size=8))
    model = _model()
    model.fit(resumed, epochs=2, initial_epoch=1, verbose=0)  # the run's second epoch, as Keras counts
    assert int(model.optimizer.iterations) == 5
