"""One input contract (issue 43, items 1-2): uint8 [0, 255] and float [0, 1] images give the same
features from every encoder clzoo builds, saves or ships; anything else is refused before any
backend work, and a refused call leaves the encoder working, on every backend alike."""

import keras
import numpy as np
import pytest

import clzoo
from clzoo.eval.embed import embed
from clzoo.saving import load_model

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

PIXELS = np.random.default_rng(0).integers(0, 256, (6, 32, 32, 3), dtype=np.uint8)


def _encoders():
    base = clzoo.models.get_encoder("resnet8")
    return {"get_encoder": base, "flip_averaged": clzoo.models.flip_averaged(base),
            "test_time_averaged": clzoo.models.test_time_averaged(base, 1)}


@pytest.mark.large
@pytest.mark.parametrize("kind", ["get_encoder", "flip_averaged", "test_time_averaged"])
def test_uint8_and_unit_float_give_the_same_features(kind):
    encoder = _encoders()[kind]
    as_float = encoder.predict(PIXELS.astype("float32") / 255, verbose=0)
    np.testing.assert_allclose(encoder.predict(PIXELS, verbose=0), as_float, atol=1e-5)
    eager = keras.ops.convert_to_numpy(encoder(PIXELS))
    np.testing.assert_allclose(eager, as_float, atol=1e-5)
    # clzoo.eval.embed (the other entry point) agrees with predict.
    np.testing.assert_allclose(embed(encoder, PIXELS, normalize=False, verbose=False), as_float,
                               atol=1e-5)
    # uint8 really is rescaled: the raw 0..255 floats (what Keras' cast alone gives) differ.
    raw = keras.Model(encoder.inputs, encoder.outputs).predict(PIXELS, verbose=0)
    assert np.abs(raw - as_float).max() > 1e-3


@pytest.mark.parametrize("bad, says", [
    (np.zeros((2, 64, 64, 3), np.float32), "shape=(2, 64, 64, 3)"),
    (np.zeros((2, 32, 32, 1), np.float32), "shape=(2, 32, 32, 1)"),
    (np.zeros((32, 32, 3), np.uint8), "shape=(32, 32, 3)"),
    (PIXELS.astype("int64"), "dtype=int64"),
    (PIXELS.astype("float32"), "float pixels in [0, 255]"),
    (PIXELS.astype("float32") / 127.5 - 1, "float pixels in [-1"),
])
@pytest.mark.large
def test_other_inputs_are_refused_and_the_encoder_keeps_working(bad, says):
    encoder = _encoders()["flip_averaged"]
    before = encoder.predict(PIXELS, verbose=0)
    for call in (lambda: encoder.predict(bad, verbose=0), lambda: encoder(bad)):
        with pytest.raises(ValueError) as error:
            call()
        assert says in str(error.value) and "uint8 in [0, 255] or float in [0, 1]" in str(error.value)
    # JAX's predict detaches the variables; a refusal must leave them attached.
    np.testing.assert_array_equal(encoder.predict(PIXELS, verbose=0), before)


def test_keras_failure_inside_predict_leaves_the_variables():
    encoder = _encoders()["get_encoder"]
    before = encoder.predict(PIXELS, verbose=0)

    class Fail(keras.callbacks.Callback):
        def on_predict_batch_end(self, batch, logs=None):
            raise RuntimeError("a failure inside Keras' predict loop")

    with pytest.raises(RuntimeError, match="inside Keras"):
        encoder.predict(PIXELS, verbose=0, callbacks=[Fail()])
    np.testing.assert_array_equal(encoder.predict(PIXELS, verbose=0), before)


def test_a_plain_functional_encoder_loads_with_the_contract(tmp_path):
    base = _encoders()["get_encoder"]
    plain = keras.Model(base.inputs, base.outputs, name="plain")  # saved before ImageEncoder
    path = tmp_path / "encoder.keras"
    plain.save(path)
    loaded = load_model(path)
    assert isinstance(loaded, clzoo.models.ImageEncoder)
    np.testing.assert_allclose(loaded.predict(PIXELS, verbose=0),
                               plain.predict(PIXELS.astype("float32") / 255, verbose=0), atol=1e-5)


def test_image_encoder_round_trips_through_keras_saving(tmp_path):
    encoder = _encoders()["test_time_averaged"]
    path = tmp_path / "encoder.keras"
    encoder.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is clzoo.models.ImageEncoder
    np.testing.assert_allclose(loaded.predict(PIXELS, verbose=0),
                               encoder.predict(PIXELS, verbose=0), atol=1e-5)


def test_as_image_encoder_refuses_a_model_that_is_not_an_image_encoder():
    inputs = keras.Input((8,))
    with pytest.raises(ValueError, match="images \\(batch, H, W, C\\)"):
        clzoo.models.as_image_encoder(keras.Model(inputs, keras.layers.Dense(2)(inputs)))


def test_a_builtin_preset_takes_uint8():
    encoder = clzoo.presets.Encoder.from_preset("supcon_airbench_cifar10")
    assert isinstance(encoder, clzoo.models.ImageEncoder) and not encoder.trainable
    np.testing.assert_allclose(encoder.predict(PIXELS, verbose=0),
                               encoder.predict(PIXELS.astype("float32") / 255, verbose=0), atol=1e-5)


def test_fit_on_single_view_images_names_the_multi_view_shape():
    """Issue 43 item 8: TensorFlow said "Cannot take the length of shape with unknown rank"."""
    model = clzoo.models.ContrastiveModel(
        encoder=clzoo.models.get_encoder("resnet8", input_shape=(8, 8, 3)),
        projection_head=clzoo.models.ProjectionHead(output_dim=8))
    model.compile(optimizer="sgd", loss=clzoo.losses.SupConLoss())
    images = np.random.default_rng(0).random((8, 8, 8, 3)).astype("float32")
    with pytest.raises(ValueError, match=r"\(batch, views, H, W, C\).*images\[:, None\]"):
        model.fit(images, np.arange(8) % 2, epochs=1, verbose=0)
