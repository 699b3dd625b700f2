import keras
import numpy as np
import pytest

import clzoo
from clzoo.models import ContrastiveModel, ProjectionHead, cifar_resnet

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)


@pytest.mark.parametrize("architecture, width, params", [
    ("resnet20", 64, (260_000, 280_000)),
    ("resnet8", 64, (75_000, 80_000)),
    ("resnet18", 512, (11_100_000, 11_250_000)),
])
def test_cifar_resnet_shapes_and_size(architecture, width, params):
    encoder = cifar_resnet(architecture)
    assert encoder.output_shape == (None, width)
    assert params[0] <= encoder.count_params() <= params[1]
    # CIFAR stem: first conv is 3x3 stride 1, and no max-pool anywhere.
    stem = encoder.get_layer("stem_conv")
    assert stem.kernel_size == (3, 3) and stem.strides == (1, 1)
    assert not any(isinstance(layer, keras.layers.MaxPooling2D) for layer in encoder.layers)


def test_resnet_downsamples_three_times():
    encoder = cifar_resnet("resnet18")
    last = encoder.get_layer("stage4_block2_out")
    assert last.output.shape[1:3] == (4, 4)


def test_bad_architecture():
    with pytest.raises(ValueError, match="architecture='resnet9000'"):
        cifar_resnet("resnet9000")
    with pytest.raises(ValueError, match="mean"):
        cifar_resnet("resnet20", mean=(0.5,))


def test_projection_head_normalizes():
    head = ProjectionHead(hidden_dims=(16,), output_dim=8)
    z = keras.ops.convert_to_numpy(head(np.random.default_rng(0).normal(size=(5, 12)).astype("float32")))
    assert z.shape == (5, 8)
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, rtol=1e-5)
    raw = ProjectionHead(hidden_dims=(), output_dim=3, normalize=False)
    assert len(raw.hidden) == 0
    with pytest.raises(ValueError, match="output_dim=0"):
        ProjectionHead(output_dim=0)


def test_projection_head_defaults_are_what_clzoo_train_builds():
    """`ProjectionHead()` is the recipe default head (`head_hidden_dims: null`), variable for variable."""
    from clzoo.train import load_recipe
    from clzoo.train.recipe import ModelSpec
    from clzoo.train.tasks import ContrastiveTask

    spec = ModelSpec()
    assert ProjectionHead().get_config()["hidden_dims"] == spec.head_hidden_dims  # None: input width
    assert ProjectionHead().output_dim == spec.embedding_dim == 128
    recipe = load_recipe(None, ["model.embedding_dim=16"])
    keras.utils.set_random_seed(0)
    built = ContrastiveTask().build_model(recipe, clzoo.data.ViewConfig(size=16), num_classes=2)
    keras.utils.set_random_seed(0)
    explicit = ContrastiveModel(cifar_resnet("resnet20", input_shape=(16, 16, 3)),
                                ProjectionHead((64,), 16))  # what clzoo train built before: encoder width
    explicit.build((None, 2, 16, 16, 3))
    assert built.projection_head.get_config()["hidden_dims"] == [64]
    def names(model):
        return [(v.path.split("/")[-2:], tuple(v.shape)) for v in model.trainable_variables]

    assert names(built) == names(explicit)  # same variables in the same order (the optimizer's slots)
    assert len(built.weights) == len(explicit.weights)
    for a, b in zip(built.weights, explicit.weights):  # same seed: the same initial values
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))
    # Round trip of a head built with the deferred width.
    head = ProjectionHead(output_dim=4)
    head.build((None, 12))
    again = ProjectionHead.from_config(head.get_config())
    again.build((None, 12))
    assert again.hidden_dims == (12,) and len(again.trainable_variables) == 4
    with pytest.raises(ValueError, match="hidden_dims"):
        ProjectionHead(hidden_dims=(0,))


def _model():
    keras.utils.set_random_seed(0)
    return ContrastiveModel(cifar_resnet("resnet20"), ProjectionHead((32,), 16))


def test_contrastive_model_views_are_encoded_independently():
    model = _model()
    x = np.random.default_rng(0).random((3, 2, 32, 32, 3)).astype("float32")
    z = keras.ops.convert_to_numpy(model(x, training=False))
    assert z.shape == (3, 2, 16)
    # Same as encoding every image on its own (inference mode).
    single = keras.ops.convert_to_numpy(
        model.projection_head(model.encoder(x.reshape(6, 32, 32, 3), training=False)))
    np.testing.assert_allclose(z.reshape(6, 16), single, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"\(batch, views, H, W, C\)"):
        model(x[:, 0])


@pytest.mark.large
def test_save_and_load_round_trip(tmp_path):
    model = _model()
    model.compile(optimizer="sgd", loss=clzoo.losses.SINCERELoss(temperature=0.2))
    x = np.random.default_rng(1).random((4, 2, 32, 32, 3)).astype("float32")
    model.fit(x, np.array([0, 0, 1, 1]), epochs=1, verbose=0)
    model.save(tmp_path / "model.keras")
    model.encoder.save(tmp_path / "encoder.keras")
    restored = keras.saving.load_model(tmp_path / "model.keras")
    np.testing.assert_allclose(keras.ops.convert_to_numpy(restored(x)),
                               keras.ops.convert_to_numpy(model(x)), rtol=1e-5, atol=1e-6)
    assert isinstance(restored.loss, clzoo.losses.SINCERELoss)
    encoder = keras.saving.load_model(tmp_path / "encoder.keras")
    images = x[:, 0]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(encoder(images)),
                               keras.ops.convert_to_numpy(model.encoder(images)), rtol=1e-5, atol=1e-6)
