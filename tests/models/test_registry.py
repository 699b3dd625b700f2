"""Every registered encoder: builds at 32x32 and 224x224, round-trips through keras.saving, trains a step."""

import keras
import numpy as np
import pytest

import clzoo

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

pytest.importorskip("keras_hub")

EXPECTED_DIM = {"resnet18": 512, "resnet34": 512, "resnet50": 2048, "resnet20": 64, "resnet8": 64,
                "resnet10_narrow": 256, "hub_resnet18": 512, "hub_resnet50": 2048,
                "vit_small_patch4": 192, "airbench": 256, "airbench_half": 128}
# Small enough to save and train a step on every backend in the test budget.
LIGHT = ["resnet20", "vit_small_patch4", "hub_resnet18"]


def _jax_on_cpu():
    import jax

    return jax.default_backend() == "cpu"


def test_registry_lists_every_encoder():
    assert set(clzoo.models.list_encoders()) == set(EXPECTED_DIM)
    with pytest.raises(ValueError, match="Unknown encoder 'resnet9'. Known: resnet18"):
        clzoo.models.get_encoder("resnet9")


@pytest.mark.large
@pytest.mark.parametrize("name", sorted(EXPECTED_DIM))
def test_builds_at_32(name):
    encoder = clzoo.models.get_encoder(name, (32, 32, 3))
    assert encoder.output_shape == (None, EXPECTED_DIM[name])


@pytest.mark.large
@pytest.mark.parametrize("name, kwargs", [("hub_resnet50", {}), ("resnet18", {}),
                                          ("vit_small_patch4", {"patch_size": 16})])
def test_builds_at_224(name, kwargs):
    encoder = clzoo.models.get_encoder(name, (224, 224, 3), **kwargs)
    assert encoder.input_shape == (None, 224, 224, 3)
    assert encoder.output_shape == (None, EXPECTED_DIM[name])


@pytest.mark.large
@pytest.mark.parametrize("name", LIGHT)
def test_round_trip_and_one_training_step(name, tmp_path):
    encoder = clzoo.models.get_encoder(name, (32, 32, 3))
    head = clzoo.models.ProjectionHead(hidden_dims=(32,), output_dim=16, batch_norm=True)
    model = clzoo.models.ContrastiveModel(encoder, head)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=clzoo.losses.SINCERELoss())
    rng = np.random.default_rng(0)
    views = rng.uniform(size=(4, 2, 32, 32, 3)).astype("float32")
    labels = np.array([0, 0, 1, 1])
    before = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    loss = model.train_on_batch(views, labels)
    assert np.isfinite(float(np.asarray(loss).reshape(-1)[0]))
    after = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    assert any(not np.allclose(a, b) for a, b in zip(after, before))  # it learned something

    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    np.testing.assert_allclose(restored.predict(views, verbose=0), model.predict(views, verbose=0),
                               rtol=1e-5, atol=1e-5)


def test_classifier_and_head_options():
    encoder = clzoo.models.get_encoder("resnet20")
    model = clzoo.models.build_classifier(encoder, 10, hidden_dims=(32,))
    model.compile(optimizer="sgd", loss=clzoo.losses.SoftTargetInfoNCELoss())
    targets = np.full((4, 10), 0.1, "float32")
    loss = model.train_on_batch(np.random.default_rng(0).uniform(size=(4, 32, 32, 3)).astype("float32"),
                                targets)
    assert np.isfinite(float(np.asarray(loss).reshape(-1)[0]))
    with pytest.raises(ValueError, match="num_classes"):
        clzoo.models.build_classifier(encoder, 0)
    linear = clzoo.models.ProjectionHead(hidden_dims=(), output_dim=4)
    z = keras.ops.convert_to_numpy(linear(np.ones((3, 8), "float32")))
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, rtol=1e-5)
    config = clzoo.models.ProjectionHead(batch_norm=True).get_config()
    assert config["batch_norm"] is True


@pytest.mark.large
@pytest.mark.parametrize("name, policy", [("resnet20", "mixed_float16"), ("resnet20", "mixed_bfloat16"),
                                          ("vit_small_patch4", "mixed_bfloat16")])
def test_one_step_under_mixed_precision(name, policy):
    if (keras.backend.backend() == "jax" and policy == "mixed_float16"
            and name.startswith("vit") and keras.config.backend() and _jax_on_cpu()):
        pytest.skip("XLA:CPU has no float16 dot_general for attention (works on GPU)")
    keras.mixed_precision.set_dtype_policy(policy)
    try:
        encoder = clzoo.models.get_encoder(name)
        model = clzoo.models.ContrastiveModel(encoder, clzoo.models.ProjectionHead((16,), 8))
        model.compile(optimizer=keras.optimizers.SGD(0.01), loss=clzoo.losses.SupConLoss())
        views = np.random.default_rng(0).uniform(size=(4, 2, 32, 32, 3)).astype("float32")
        loss = model.train_on_batch(views, np.array([0, 0, 1, 1]))
        assert np.isfinite(float(np.asarray(loss).reshape(-1)[0]))
        assert encoder.layers[-1].compute_dtype == policy.split("_")[1]
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
