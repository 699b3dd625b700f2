"""The metric registry: one module per name, every name a key of `evaluate`, rows and plots."""

import json
from pathlib import Path

import keras
import numpy as np
import pytest

import clzoo.eval as E
from clzoo.data.label_sets import CIFAR10_COARSE

EXPECTED = ("knn", "ncc", "probe", "calibration", "few_shot", "geometry", "separation",
            "loss_gap", "noisy_labels", "map", "retrieval", "sgd_probe", "coarse_to_fine")
CLASSES = list(CIFAR10_COARSE)  # the ten CIFAR-10 names, so coarse_to_fine can run


def test_registry_lists_every_metric_with_metadata():
    assert tuple(E.METRICS) == EXPECTED
    assert not (Path(E.__file__).parent / "metrics").exists()  # each metric sits beside its function
    for name in E.METRICS:
        entry = E.METRICS.entry(name)
        assert entry.factory.name == name and issubclass(entry.factory, E.ReportMetric)
        assert entry.factory.__name__.endswith("Report")  # not to be confused with keras.metrics
        assert entry.description and entry.metadata["source"]
        assert isinstance(entry.metadata["default"], bool)
    assert E.DEFAULT_METRICS == tuple(m for m in EXPECTED if m not in ("sgd_probe", "coarse_to_fine"))
    with pytest.raises(ValueError, match="Did you mean 'probe'"):
        E.METRICS.get("prob")


def _colour_images(labels, seed):
    """8x8 images whose mean colour depends on the class, plus noise."""
    rng = np.random.default_rng(seed)
    base = np.stack([labels * 25, 250 - labels * 25, (labels % 3) * 80], axis=-1)[:, None, None, :]
    return np.clip(base + rng.integers(-10, 10, (len(labels), 8, 8, 3)), 0, 255).astype(np.uint8)


def _pooling_encoder():
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.GlobalAveragePooling2D()(inputs)
    return keras.Model(inputs, keras.layers.Dense(6, kernel_initializer="orthogonal")(x))


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    train_y, test_y = np.repeat(np.arange(10), 8), np.repeat(np.arange(10), 3)
    train = ((_colour_images(train_y, 0)), train_y)
    test = ((_colour_images(test_y, 1)), test_y)
    keras.utils.set_random_seed(0)
    out = tmp_path_factory.mktemp("report")
    result = E.evaluate(_pooling_encoder(), (train, test), metrics="knn,ncc,probe,calibration,"
                        "few_shot,geometry,separation,loss_gap,noisy_labels,map,retrieval,sgd_probe,"
                        "coarse_to_fine", class_names=CLASSES, output_dir=out, ks=(1, 5),
                        shots=(2, 6), probe_epochs=1, verbose=False,
                        info={"model": "runs/tiny/encoder.keras"})
    return result, out


def test_evaluate_produces_every_registered_name_as_a_key(full_report):
    result, out = full_report
    written = json.loads((out / "metrics.json").read_text())
    assert written == json.loads(json.dumps(result.metrics))
    assert written["metrics"] == list(E.METRICS) == list(result.results)
    for name in E.METRICS:
        assert isinstance(written[name], dict) and written[name], name
        assert written["seconds"][name] >= 0
    # Wall time of every step, in the order they ran, and their sum.
    steps = ["load_data", "embed_train", "embed_test", *E.METRICS, "plots"]
    assert list(written["timings"]) == steps + ["total"]
    assert all(isinstance(written["timings"][s], float) and written["timings"][s] >= 0 for s in steps)
    assert written["timings"]["total"] == pytest.approx(sum(written["timings"][s] for s in steps),
                                                        abs=0.02)
    assert all(written["timings"][name] == written["seconds"][name] for name in E.METRICS)
    assert set(result.correct) == {"knn_k1", "knn_k5", "ncc", "probe", "sgd_probe"}
    for key, correct in result.correct.items():
        assert correct.dtype == bool and correct.shape == (30,), key
        assert key.split("_k")[0] in written["metrics"]  # knn_k5 -> knn, probe -> probe


def test_every_metric_has_rows_and_its_plots_are_written(full_report):
    result, out = full_report
    report = (out / "report.md").read_text()
    assert report.startswith("# clzoo evaluation of tiny/encoder.keras on in-memory arrays")
    plotted = {name: [p.filename for p in r.plots] for name, r in result.results.items() if r.plots}
    assert plotted == {"calibration": ["reliability.png"], "map": ["embedding_map.png"],
                       "separation": ["separation.png", "separation_per_class.png"]}
    for name, metric in result.results.items():
        assert metric.name == name and metric.rows, name
        for label, value in metric.rows:
            assert isinstance(label, str) and isinstance(value, str) and value, (name, label)
            assert f"| `{name}` | {label} | {value} |" in report
        for plot in metric.plots:
            png = (out / plot.filename).read_bytes()
            assert png[:8] == b"\x89PNG\r\n\x1a\n" and f"]({plot.filename})" in report
        assert f"| `{name}` | {metric.seconds} |" in report  # seconds per metric
    for step in ("load_data", "embed_train", "embed_test", "plots"):
        assert f"| `{step}` | {json.loads((out / 'metrics.json').read_text())['timings'][step]} |" \
            in report
    assert "| total | " in report


def test_plots_name_the_model_and_label_their_axes(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from clzoo.eval import plots

    figures = []
    real_save = plots._save
    plots._save = lambda fig, path: figures.append(fig) or path
    try:
        x, y = np.random.default_rng(0).normal(size=(30, 4)), np.arange(30) % 3
        sep = E.target_noise_separation(x, y, x + 0.1, y)
        plots.separation_histogram(sep, tmp_path / "a.png", model="my_preset")
        plots.per_class_separation(sep, tmp_path / "b.png", ["a", "b", "c"], model="my_preset")
        rel = E.reliability(np.full((4, 2), 0.5), [0, 1, 0, 1])
        plots.reliability_diagram(rel, tmp_path / "c.png", model="my_preset")
        plots.embedding_map(x[:, :2], y, tmp_path / "d.png", model="my_preset")
    finally:
        plots._save = real_save
    for fig in figures:
        titles = [ax.get_title() for ax in fig.axes] + [fig._suptitle.get_text() if fig._suptitle else ""]
        assert any("my_preset" in t for t in titles)
        xlabel = fig.axes[0].get_xlabel() or fig._supxlabel.get_text()
        ylabel = fig.axes[0].get_ylabel() or fig._supylabel.get_text()
        assert "(" in xlabel and "(" in ylabel, (xlabel, ylabel)  # units in parentheses
        assert fig.legends or any(ax.get_legend() for ax in fig.axes)
        plt.close(fig)


def test_metric_needs_are_checked_before_any_metric_runs(capsys):
    x, y = np.eye(4), np.array([0, 0, 1, 1])
    with pytest.raises(ValueError, match="sgd_probe.*needs the encoder"):
        E.evaluate_embeddings(x, y, x, y, "knn,sgd_probe")
    assert "[clzoo eval] knn" not in capsys.readouterr().out
    with pytest.raises(ValueError, match="class names"):
        E.evaluate_embeddings(x, y, x, y, "coarse_to_fine", verbose=False)


def test_progress_lines_name_each_metric(capsys):
    x, y = np.eye(4), np.array([0, 0, 1, 1])
    E.evaluate_embeddings(x, y, x, y, "knn,ncc", ks=(1,), timings={"load_model": 1.5})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0::2] == ["[clzoo eval] 2/3 knn ...", "[clzoo eval] 3/3 ncc ..."]
    assert [line.rsplit(":", 1)[0] for line in lines[1::2]] == ["[clzoo eval] 2/3 knn",
                                                                "[clzoo eval] 3/3 ncc"]
    assert all(line.endswith(" s") for line in lines[1::2])
