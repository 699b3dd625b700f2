"""Issue 70 item 3: the online linear probe (`model.online_probe`), one module plus its
registration. Its cross-entropy trains the probe only: the encoder and head train exactly as
without it, the logged loss is the contrastive loss, and its top-1 beats chance on digits."""

import keras
import numpy as np
import pytest

import clzoo
from clzoo.parts import OnlineLinearProbe, build_parts

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")


def _digits(samples=1797):
    from sklearn.datasets import load_digits

    images, labels = load_digits(return_X_y=True)
    images = (images[:samples] / 16.0).reshape(-1, 8, 8, 1).astype("float32")
    rng = np.random.default_rng(0)
    views = np.stack([images, np.clip(images + rng.normal(0, 0.1, images.shape), 0, 1)], axis=1)
    return views.astype("float32"), labels[:samples].astype("int32")


def _fit(parts, epochs=2):
    keras.utils.set_random_seed(0)
    encoder = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(32, activation="relu")])
    head = clzoo.models.ProjectionHead(hidden_dims=(32,), output_dim=16)
    model = clzoo.models.ContrastiveModel(encoder, head, parts=parts)
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss=clzoo.losses.SupConLoss())
    x, y = _digits()
    history = model.fit(x, y, batch_size=64, epochs=epochs, verbose=0, shuffle=False)
    return model, history.history


def test_the_probe_learns_and_never_moves_the_encoder():
    without, plain = _fit([])
    model, logged = _fit([OnlineLinearProbe(classes=10)])
    # the probe's gradient never reaches the encoder or the head: their weights equal a run
    # without it (same seed, same batches), and the logged loss is the contrastive loss alone
    for kept, alone in zip(model.encoder.weights + model.projection_head.weights,
                           without.encoder.weights + without.projection_head.weights):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(kept), keras.ops.convert_to_numpy(alone),
                                   rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(logged["loss"], plain["loss"], rtol=1e-6)
    assert set(logged) == {"loss", "online_probe_loss", "online_probe_top1"}
    assert logged["online_probe_top1"][-1] > 0.3  # chance: 0.1 over 10 digits
    assert logged["online_probe_loss"][-1] < logged["online_probe_loss"][0]
    kernel = model.online_probe.weights[0]
    assert tuple(kernel.shape) == (32, 10) and model.trainable_variables[-2] is kernel  # attached last


def test_the_probes_top1_counts_each_view_of_the_epoch_once():
    model, logged = _fit([OnlineLinearProbe(classes=10)], epochs=1)
    x, y = _digits()
    # the Mean metric counts each view of each sample once over the epoch
    counted = float(keras.ops.convert_to_numpy(model.online_probe_top1.count))
    assert counted == 2 * len(y)  # one hit or miss per view
    assert 0.0 <= logged["online_probe_top1"][0] <= 1.0


def test_the_probe_saves_as_a_registered_part_and_loads(tmp_path):
    model, _ = _fit([OnlineLinearProbe(classes=10)], epochs=1)
    assert model.get_config()["parts"] == [{"class_name": "online_probe", "config": {"classes": 10}}]
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert [type(part) for part in loaded.parts] == [OnlineLinearProbe]
    for got, saved in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(got, saved)


@pytest.mark.parametrize("build, message", [
    (lambda: OnlineLinearProbe(classes=1), "at least 2"),
    (lambda: OnlineLinearProbe(classes="10"), "positive integer"),
    (lambda: build_parts({"online_probe": {}, "grad_cache": {"chunk_size": 4}}), "GradCache"),
    (lambda: build_parts({"online_probe": {"classes": 3}}, spelled="model.{}"),
     "unknown recipe key 'model.online_probe.classes'"),
])
def test_bad_probe_settings_are_refused(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_labels_outside_the_classes_are_refused_before_training():
    keras.utils.set_random_seed(0)
    model = clzoo.models.ContrastiveModel(
        keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(4)]),
        clzoo.models.ProjectionHead(hidden_dims=(4,), output_dim=2), parts=[OnlineLinearProbe(3)])
    model.compile(optimizer="sgd", loss=clzoo.losses.SupConLoss())
    x = np.zeros((4, 2, 4, 4, 1), "float32")
    with pytest.raises(ValueError, match=r"3 classes; labels must lie in \[0, 3\)"):
        model.fit(x, np.array([0, 1, 2, 3]), batch_size=4, verbose=0)


def test_a_recipe_turns_the_probe_on_with_the_datas_classes():
    from clzoo.recipes import recipe_path
    from clzoo.train.recipe import RecipeError, load_recipe
    from clzoo.train.tasks import build_model

    recipe = load_recipe(recipe_path("sincere_digits"), ["model.online_probe={}"])
    assert recipe.model.parts == {"online_probe": {}} and recipe.to_dict()["model"]["online_probe"] == {}
    model = build_model(recipe, num_classes=10)
    probe = model.part("online_probe")
    assert isinstance(probe, OnlineLinearProbe) and probe.classes == 10
    with pytest.raises(RecipeError, match="online probe needs task contrastive"):
        load_recipe(None, ["task=soft_target", "loss.name=SoftTargetCrossEntropy", "views.views=1",
                           "model.online_probe={}", "model.embedding_dim=128"])


@pytest.mark.parametrize("precision", ["mixed_float16", "mixed_bfloat16"])
def test_under_mixed_precision_the_probe_still_never_moves_the_encoder(precision):
    """Hostile review: under mixed_float16 the probe's loss-scaled float16 gradient overflowed and
    the loss-scale optimizer skipped whole steps (the encoder's too); the probe computes in float32."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(precision)
    try:
        rng = np.random.default_rng(0)
        x, y = rng.random((32, 2, 4, 4, 3)).astype("float32"), np.arange(32) % 4
        runs = []
        for parts in ([], [OnlineLinearProbe(classes=4)]):
            keras.utils.set_random_seed(0)
            model = clzoo.models.ContrastiveModel(
                keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(16)]),
                clzoo.models.ProjectionHead(hidden_dims=(16,), output_dim=8), parts=parts)
            model.compile(optimizer=keras.optimizers.SGD(0.5, momentum=0.9), loss=clzoo.losses.SupConLoss())
            model.fit(x, y, batch_size=16, epochs=3, verbose=0, shuffle=False)
            runs.append(model)
        for kept, alone in zip(runs[1].encoder.weights, runs[0].encoder.weights):
            np.testing.assert_array_equal(keras.ops.convert_to_numpy(kept), keras.ops.convert_to_numpy(alone))
        steps = [int(keras.ops.convert_to_numpy(model.optimizer.iterations)) for model in runs]
        assert steps[0] == steps[1]
        assert runs[1].online_probe.compute_dtype == "float32"
    finally:
        keras.config.set_dtype_policy(previous)


def test_evaluate_leaves_the_probe_out_and_a_resume_restores_its_running_top1():
    from clzoo.train.callbacks import RestoreEpochLoss

    model, _ = _fit([OnlineLinearProbe(classes=10)], epochs=1)
    x, y = _digits()
    assert set(model.evaluate(x, y, batch_size=256, verbose=0, return_dict=True)) == {"loss"}
    others = [[metric.name, [30.0, 60.0] if metric.name == "online_probe_top1" else
               [0.0] * len(metric.variables)] for metric in model.metrics if metric.name != "loss"]
    restore = RestoreEpochLoss([4.0, 2.0], others)
    restore.set_model(model)
    restore.on_epoch_begin(0)  # a run resumed mid-epoch: the epoch's running means come back
    assert float(keras.ops.convert_to_numpy(model.online_probe_top1.result())) == pytest.approx(0.5)


def test_a_recipes_part_settings_are_complete_and_read_only():
    from clzoo.train.recipe import RecipeError, load_recipe

    with pytest.raises(RecipeError, match=r"model.grad_cache.chunk_size: required") as raised:
        load_recipe(None, ["model.grad_cache={}"])
    assert len(raised.value.lines) == 1
    recipe = load_recipe(None, ["model.queue={size: 64}"])
    with pytest.raises(AttributeError, match="read-only"):
        recipe.model.queue.size = 5
    assert recipe.model.queue.size == 64 and recipe.to_dict()["model"]["queue"]["size"] == 64
