"""airbench encoders (shapes, parameters, refusals) and the test-time flip wrapper (values, saving)."""

import keras
import numpy as np
import pytest

import clzoo
from clzoo.saving import load_model

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

X = np.random.default_rng(0).uniform(size=(4, 32, 32, 3)).astype("float32")


@pytest.mark.large
@pytest.mark.parametrize("name, dim, params", [("airbench", 256, 1_972_536),
                                               ("airbench_half", 128, 497_976)])
def test_airbench_shapes_and_size(name, dim, params):
    encoder = clzoo.models.get_encoder(name)
    assert encoder.output_shape == (None, dim)
    assert encoder.count_params() == params
    # global max pooling of GELU outputs: features are bounded below by GELU's minimum
    assert keras.ops.convert_to_numpy(encoder(X, training=False)).min() > -0.2


def test_airbench_refuses_what_it_cannot_take():
    with pytest.raises(ValueError, match=r"height and width >= 16.*\(8, 8, 3\)"):
        clzoo.models.airbench_net("airbench", input_shape=(8, 8, 3))
    with pytest.raises(ValueError, match="must be one of"):
        clzoo.models.airbench_net("airbench_quarter")
    with pytest.raises(ValueError, match="one finite number per channel"):
        clzoo.models.airbench_net(input_shape=(32, 32, 1))


def test_flip_averaged_is_the_mean_over_the_mirror_image(tmp_path):
    encoder = clzoo.models.get_encoder("airbench_half")
    wrapped = clzoo.models.flip_averaged(encoder)
    expected = (keras.ops.convert_to_numpy(encoder(X, training=False))
                + keras.ops.convert_to_numpy(encoder(X[:, :, ::-1].copy(), training=False))) / 2
    np.testing.assert_allclose(keras.ops.convert_to_numpy(wrapped(X)), expected, rtol=1e-5, atol=1e-6)
    # mirror-invariant by construction, unlike the bare encoder
    np.testing.assert_allclose(keras.ops.convert_to_numpy(wrapped(X[:, :, ::-1].copy())), expected,
                               rtol=1e-5, atol=1e-6)
    assert not np.allclose(keras.ops.convert_to_numpy(encoder(X[:, :, ::-1].copy(), training=False)),
                           keras.ops.convert_to_numpy(encoder(X, training=False)), atol=1e-4)
    assert len(wrapped.weights) == len(encoder.weights)  # shared, not copied
    path = tmp_path / "flip.keras"
    wrapped.save(path)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(load_model(path)(X)),
                                  keras.ops.convert_to_numpy(wrapped(X)))
    config = keras.saving.serialize_keras_object(wrapped)
    rebuilt = clzoo.saving.deserialize(config, safe_mode=True)
    assert rebuilt.output_shape == (None, 128)


def test_flip_refuses_non_image_models():
    dense = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    with pytest.raises(ValueError, match=r"images \(batch, H, W, C\)"):
        clzoo.models.flip_averaged(dense)
    with pytest.raises(ValueError, match="expects images"):
        clzoo.models.HorizontalFlip()(np.zeros((2, 3), "float32"))


def test_truncated_model_file_is_named_not_reported_missing(tmp_path):
    path = tmp_path / "encoder.keras"
    clzoo.models.get_encoder("resnet20").save(path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match="not a readable .keras archive"):
        load_model(path)
    with pytest.raises(FileNotFoundError, match="no saved model"):
        load_model(tmp_path / "missing.keras")
