"""`import clzoo` and `import clzoo.losses` stay light: no TensorFlow under the JAX and torch backends."""

import ast
import importlib.util
import os
import subprocess
import sys

import pytest

HEAVY = ("tensorflow", "sklearn")


def _loaded_after(statements, backend, prelude=""):
    """Which of HEAVY (and keras) are in `sys.modules` after each of `statements` in turn, in one
    fresh process: a list of sorted name lists, one per statement."""
    report = f"print(sorted(m for m in {HEAVY + ('keras',)!r} if m in sys.modules))"
    code = "\n".join(["import sys", prelude, *(f"{s}\n{report}" for s in statements)])
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**env, "KERAS_BACKEND": backend}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()[-len(statements):]
    return [ast.literal_eval(line) for line in lines]


@pytest.mark.large
def test_import_clzoo_is_enough_to_load_a_full_checkpoint(tmp_path):
    path = tmp_path / "model.keras"
    save = ("import clzoo, sys\n"
            "m = clzoo.models.ContrastiveModel(clzoo.models.get_encoder('resnet20', input_shape=(8, 8, 3)),"
            " clzoo.models.ProjectionHead((64,), 4))\n"
            "m.compile(optimizer=clzoo.optimizers.LARS(0.1), loss=clzoo.losses.SINCERELoss())\n"
            "m.build((None, 2, 8, 8, 3)); m.save(sys.argv[1])")
    load = ("import clzoo, keras, sys\n"
            "m = keras.saving.load_model(sys.argv[1])\n"
            "print(type(m).__name__, type(m.loss).__name__, type(m.optimizer).__name__)")
    for code in (save, load):
        result = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                                text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-3:] == ["ContrastiveModel", "SINCERELoss", "LARS"]


@pytest.mark.large
def test_a_script_given_the_arguments_m_clzoo_still_registers_the_keras_classes():
    # Only `python -m clzoo` itself skips the registrations, not `-m clzoo` among a script's arguments.
    code = "import sys, clzoo; print('clzoo.losses' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code, "-m", "clzoo"], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-1] == "True"


# CI runs the jax case; torch's takes the same lazy imports (the slow tier runs it)
@pytest.mark.parametrize("backend", [pytest.param("jax", marks=pytest.mark.large),
                                     pytest.param("torch", marks=pytest.mark.slow)])
def test_import_clzoo_and_clzoo_losses_load_no_tensorflow_or_sklearn(backend):
    pytest.importorskip(backend)
    with_keras, with_losses, with_clzoo = _loaded_after(
        ["import keras", "import clzoo.losses", "import clzoo; clzoo.__version__"], backend)
    assert "tensorflow" not in with_losses and "keras" in with_losses
    # Keras itself imports scikit-learn when it is installed (keras.wrappers); clzoo.losses
    # adds nothing to that, and works without it.
    assert set(with_losses) == set(with_keras)
    assert "tensorflow" not in with_clzoo  # `import clzoo` registers its Keras classes only
    [blocked] = _loaded_after(
        ["import clzoo.losses, numpy as np\n"
         "clzoo.losses.SINCERELoss()(np.array([0, 1]), np.eye(2, 4, dtype='float32')[:, None])"],
        backend, prelude="sys.modules['sklearn'] = None  # import sklearn raises ImportError")
    assert "tensorflow" not in blocked


def _import_graph():
    """`{module: set of clzoo modules it imports}` read from clzoo's source (imports in functions too)."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1] / "clzoo"
    files = {".".join(f.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): f
             for f in root.rglob("*.py")}

    def owner(name):
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for module, path in files.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {owner(a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets |= {owner(f"{node.module}.{a.name}") for a in node.names}
        graph[module] = {t for t in targets if t.startswith("clzoo") and t != module}
    return graph


def _room(module):
    return ".".join(module.split(".")[:2])


def test_rooms_form_no_circle_and_models_sit_below_presets():
    rooms = {}
    for module, targets in _import_graph().items():
        rooms.setdefault(_room(module), set()).update(_room(t) for t in targets if _room(t) != _room(module))
    rooms.pop("clzoo", None)  # the package face: imports subpackages on first use only
    assert "clzoo.presets" not in rooms["clzoo.models"] and "clzoo.models" in rooms["clzoo.presets"]
    placed, order = set(), []
    while len(placed) < len(rooms):  # peel the rooms that import only placed ones: a circle never peels
        ready = sorted(r for r, ts in rooms.items() if r not in placed and ts - {"clzoo"} <= placed)
        assert ready, f"import circle among {sorted(set(rooms) - placed)}"
        placed |= set(ready)
        order += ready
    assert order.index("clzoo.models") < order.index("clzoo.presets") < order.index("clzoo.cli")
    # the command: the top room, imported only by `python -m clzoo`'s entry (clzoo/__main__.py)
    assert [r for r, ts in rooms.items() if "clzoo.cli" in ts] == ["clzoo.__main__"]
    # issue 60: the training step's parts sit below the models that compose them
    assert order.index("clzoo.parts") < order.index("clzoo.models")
    assert "clzoo.models" not in rooms["clzoo.parts"]


def test_the_command_modules_import_down_only_and_form_no_circle():
    """clzoo.cli: the package face builds the parser from the command modules, which share what sits
    below them (resolve, arguments, errors); none imports the face, and none a module that imports it."""
    graph = {m: {t for t in ts if _room(t) == "clzoo.cli"} - {m}
             for m, ts in _import_graph().items() if _room(m) == "clzoo.cli"}
    assert "clzoo.cli.train" in graph and "clzoo.cli.resolve" in graph["clzoo.cli.eval"]
    assert not [m for m, ts in graph.items() if "clzoo.cli" in ts and m != "clzoo.cli.__main__"]
    placed = set()
    while len(placed) < len(graph):
        ready = {m for m, ts in graph.items() if m not in placed and ts <= placed}
        assert ready, f"import circle among {sorted(set(graph) - placed)}"
        placed |= ready


def test_clzoo_models_encoder_names_its_new_home():
    import clzoo.models
    import clzoo.presets

    assert clzoo.presets.Encoder.presets() == dict(clzoo.presets.BUILTIN_PRESETS)
    with pytest.raises(AttributeError, match="clzoo.presets.Encoder"):
        clzoo.models.Encoder  # noqa: B018


@pytest.mark.slow  # after touching code that reads docstrings (the recipe reference, shared docs)
def test_clzoo_imports_under_python_OO():
    """Docstrings are stripped under -OO; the shared-docstring code must not need them."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-OO", "-c", "import clzoo, clzoo.losses, clzoo.metrics"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_package_requires_no_backend_and_offers_each_as_an_extra():
    """Issue 69 item 2: tensorflow and tensorboard were hard dependencies (a 5.3 GB venv for a JAX
    user; pip then reported "clzoo requires tensorflow" after a hand-made install without it)."""
    from importlib import metadata

    requires = metadata.requires("clzoo") or []
    plain = [r for r in requires if "extra ==" not in r]
    assert not [r for r in plain if r.split()[0].lower().startswith(("tensorflow", "tensorboard",
                                                                      "jax", "torch"))], plain
    extras = {r.split("extra ==")[1].strip().strip("'\"") for r in requires if "extra ==" in r}
    assert {"tensorflow", "jax", "torch"} <= extras


@pytest.mark.large
def test_import_clzoo_on_tensorflow_drops_its_start_up_lines_unless_asked():
    """Issue 69 item 9: TensorFlow's INFO / WARNING lines around the README's preset snippet (TF 2.17+
    prints them while loading, whatever TF_CPP_MIN_LOG_LEVEL says); TF_CPP_MIN_LOG_LEVEL=0 keeps them."""
    pytest.importorskip("tensorflow")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    start_up = ("absl::InitializeLog", "oneDNN custom operations", "cpu_feature_guard")
    printed = {}
    for level in (None, "0"):
        result = subprocess.run([sys.executable, "-c", "import clzoo, tensorflow; print('ok')"],
                                capture_output=True, text=True, timeout=300,
                                env={**env, "KERAS_BACKEND": "tensorflow",
                                     **({"TF_CPP_MIN_LOG_LEVEL": level} if level else {})})
        assert result.stdout.strip() == "ok", result.stderr[-3000:]
        printed[level] = [line for line in result.stderr.splitlines() if any(s in line for s in start_up)]
    assert printed[None] == [] and printed["0"], printed


def test_cuinit_failing_without_an_nvidia_driver_is_not_printed_as_an_error(monkeypatch):
    """Issue 85 item 10: every Python process with TensorFlow printed `E... failed call to cuInit:
    UNKNOWN ERROR (303)` on a machine without a GPU. Dropped where no NVIDIA driver is loaded; kept
    where one is (then it is a real fault)."""
    from clzoo import console

    line = ("E0000 00:00:1796671692.562409    2882 cuda_platform.cc:52] failed call to cuInit: "
            "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n")
    monkeypatch.setattr(console, "NVIDIA_DRIVER", "/nonexistent/nvidia/version")
    assert console._is_noise(line)
    monkeypatch.setattr(console, "NVIDIA_DRIVER", __file__)  # a driver is there
    assert not console._is_noise(line)
    assert not console._is_noise("E0000 00:00:1.0    1 x.cc:1] another error\n")
    if os.path.exists("/proc/driver/nvidia/version") or importlib.util.find_spec("tensorflow") is None:
        return
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "CUDA_VISIBLE_DEVICES")}
    result = subprocess.run([sys.executable, "-c", "import clzoo, keras; keras.ops.ones((2,)); print('ok')"],
                            capture_output=True, text=True, timeout=300,
                            env={**env, "KERAS_BACKEND": "tensorflow"})
    assert result.stdout.strip() == "ok", result.stderr[-3000:]
    assert "cuInit" not in result.stderr, result.stderr
