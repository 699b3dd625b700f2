"""Build the Colab notebooks from the scripts in notebooks/scripts/ (the scripts are the source).

    python notebooks/build.py                     # write notebooks/<name>.ipynb for every script
    python notebooks/build.py --check             # exit 1 when a notebook's cells differ from its script
    python notebooks/build.py --execute [NAME ..] # also run them top to bottom and keep the outputs

Scripts use the "percent" cell format: a line `# %%` starts a code cell and
`# %% [markdown]` a markdown cell whose lines start with `# `.

Without --execute a notebook keeps the outputs of every code cell whose source and
every earlier code cell's source are unchanged; the others lose theirs. `--check`
compares cell sources only, so executed notebooks (outputs, execution counts) pass.
`--execute` runs each notebook through nbclient on an IPython kernel of this Python
(`sys.executable`, so the clzoo installed here; the notebook's install cell skips), in a
temporary working directory, and writes it with its printed results and plots.
Environment variables reach the kernel: `CLZOO_NOTEBOOK_TINY=1` for the CI settings;
`CLZOO_CIFAR10` defaults to `../shared/data/cifar10` beside the repository when it exists.
Saved outputs are tidied: a stream's rewritten lines (progress bars) keep their final
state, and TensorFlow's C++ start-up log lines are left out.
Executing needs `pip install nbclient nbformat ipykernel` (the `dev` extra).
"""

import argparse
import base64
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
SCRIPTS = HERE / "scripts"
REPOSITORY = "clzoo/clzoo"
METADATA = {"accelerator": "GPU", "colab": {"provenance": []},
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"}}
KERNEL = "clzoo-notebook-python"


def colab_url(name):
    """The Colab address that opens `notebooks/<name>.ipynb` from the repository."""
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/main/notebooks/{name}.ipynb"


def cells(script_text):
    """`[(cell_type, source)]` of a percent-format script."""
    out, kind, lines = [], None, []

    def flush():
        while lines and not lines[-1].strip():
            lines.pop()
        if kind is not None and lines:
            out.append((kind, "\n".join(lines)))

    for line in script_text.splitlines():
        if line.startswith("# %%"):
            flush()
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
        elif kind == "markdown":
            lines.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
        elif kind == "code":
            lines.append(line)
    flush()
    return out


def notebook(script_text):
    def source(text):
        parts = text.split("\n")
        return [part + "\n" for part in parts[:-1]] + [parts[-1]]

    return {"cells": [
        {"cell_type": kind, "id": f"cell-{index}", "metadata": {}, "source": source(text),
         **({"execution_count": None, "outputs": []} if kind == "code" else {})}
        for index, (kind, text) in enumerate(cells(script_text))],
        "metadata": METADATA, "nbformat": 4, "nbformat_minor": 5}


def sources(nb):
    """`[(cell_type, source)]` of a notebook dict: what `--check` compares."""
    return [(cell["cell_type"], "".join(cell["source"])) for cell in nb["cells"]]


def keep_outputs(new, old):
    """`new` with `old`'s outputs on each code cell whose source and earlier code cells are unchanged."""
    new_code = [cell for cell in new["cells"] if cell["cell_type"] == "code"]
    old_code = [cell for cell in old.get("cells", []) if cell["cell_type"] == "code"]
    for cell, before in zip(new_code, old_code):
        if "".join(cell["source"]) != "".join(before["source"]):
            break
        cell["outputs"] = before.get("outputs", [])
        cell["execution_count"] = before.get("execution_count")
    return new


def dumps(nb):
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


# TensorFlow's C++ start-up logs (absl format: no GPU here, CPU instructions), which say
# something about the machine that ran the notebook, not about the notebook.
TF_LOG = re.compile(r"WARNING: All log messages before absl::InitializeLog\(\) is called.*"
                    r"|[IWEF]\d{4} [\d:.]+ +\d+ [\w./-]+:\d+\] .*"
                    r"|To enable the following instructions: .* rebuild TensorFlow .*")
# tqdm's warning where ipywidgets is missing: it names this machine's site-packages (Colab has them)
TQDM_WIDGETS = re.compile(r".*TqdmWarning: IProgress not found.*"
                          r"|\s+from \.autonotebook import tqdm as notebook_tqdm")


def _terminal_text(text):
    """What a terminal shows of `text`: a carriage return or backspaces rewrite the line."""
    lines = []
    for line in text.split("\n"):
        segments = [segment for segment in line.split("\r") if segment.replace("\b", "")]
        lines.append(segments[-1].replace("\b", "") if segments else "")
    return "\n".join(lines)


def _data_placeholders():
    """{path: placeholder} of the data folders this machine gave the notebooks (a user's copy
    names its own; the header of each notebook says which setting made its outputs)."""
    folders = {}
    for variable in ("CLZOO_NOTEBOOK_DATA", "CLZOO_CIFAR10"):
        value = os.environ.get(variable, "").partition("@")[0]
        if value and Path(value).is_dir():
            folders[str(Path(value).resolve())] = "<CIFAR-10 folder>"
            folders[value] = "<CIFAR-10 folder>"
    return dict(sorted(folders.items(), key=lambda item: -len(item[0])))  # longest first


def hide_paths(text, placeholders):
    """`text` with each data folder of this machine replaced by its placeholder."""
    for path, placeholder in placeholders.items():
        text = text.replace(path, placeholder)
    return text


def _clean_outputs(cell):
    """Merge consecutive streams of a name, keep rewritten lines' final state, drop TF start-up
    logs, and name this machine's data folders by placeholder."""
    outputs = []
    for output in cell.get("outputs", []):
        if (output["output_type"] == "stream" and outputs
                and outputs[-1]["output_type"] == "stream" and outputs[-1]["name"] == output["name"]):
            outputs[-1]["text"] += output["text"]
        else:
            outputs.append(output)
    placeholders = _data_placeholders()
    for output in outputs:
        if output["output_type"] == "stream":
            output["text"] = hide_paths(_terminal_text(output["text"]), placeholders)
        elif "text/plain" in output.get("data", {}):
            output["data"]["text/plain"] = hide_paths(output["data"]["text/plain"], placeholders)
        if output["output_type"] == "stream" and output["name"] == "stderr":
            output["text"] = "".join(line for line in output["text"].splitlines(keepends=True)
                                     if not TF_LOG.fullmatch(line.rstrip("\n"))
                                     and not TQDM_WIDGETS.fullmatch(line.rstrip("\n")))
    cell["outputs"] = [output for output in outputs
                       if output["output_type"] != "stream" or output["text"].strip()]


def _kernel_manager(kernel_dir):
    """A kernel manager whose only kernel is IPython on `sys.executable` (a kernelspec in `kernel_dir`)."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    spec = Path(kernel_dir) / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python ({sys.executable})", "language": "python"}))
    return AsyncKernelManager(kernel_name=KERNEL,
                              kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernel_dir)]))


def execute(nb, cwd, timeout=600, log=None):
    """Run every cell of the notebook dict `nb` top to bottom; return it with its outputs.

    The kernel is IPython on this interpreter, started in `cwd` with this process's
    environment. Raises `nbclient.exceptions.CellExecutionError` when a cell raises;
    `timeout` is per cell, in seconds. `log(index, seconds)` is told each cell's time.
    """
    import nbformat
    from nbclient import NotebookClient

    node = nbformat.reads(json.dumps(nb), as_version=4)  # sources and texts joined
    with tempfile.TemporaryDirectory(prefix="clzoo-kernel-") as kernel_dir:
        client = NotebookClient(node, km=_kernel_manager(kernel_dir), timeout=timeout,
                                record_timing=False, resources={"metadata": {"path": str(cwd)}})
        started = {}
        if log is not None:
            client.on_cell_start = lambda cell, cell_index: started.update(t=time.perf_counter())
            client.on_cell_executed = lambda cell, cell_index, execute_reply: log(
                cell_index, time.perf_counter() - started["t"])
        client.execute(cleanup_kc=True)
    for cell in node.cells:
        cell.metadata = {}
        if cell.cell_type == "code":
            _clean_outputs(cell)
    out = json.loads(nbformat.writes(node))  # sources and texts split into lines again
    out["metadata"] = nb["metadata"]
    return out


def images(nb):
    """The PNG images (bytes) a notebook dict's outputs hold, in order."""
    return [base64.b64decode(output["data"]["image/png"])
            for cell in nb["cells"] for output in cell.get("outputs", [])
            if "image/png" in output.get("data", {})]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a notebook's cell sources differ from its script")
    parser.add_argument("--execute", nargs="*", metavar="NAME",
                        help="run these notebooks (default: all) and write them with their outputs")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per cell with --execute")
    args = parser.parse_args(argv)
    scripts = sorted(SCRIPTS.glob("*.py"))
    run = None
    if args.execute is not None:
        run = set(args.execute) or {script.stem for script in scripts}
        unknown = run - {script.stem for script in scripts}
        if unknown:
            parser.error(f"no script for {sorted(unknown)}; known: {[s.stem for s in scripts]}")
        shared = (HERE.parent.parent / "shared" / "data" / "cifar10").resolve()
        if "CLZOO_CIFAR10" not in os.environ and shared.is_dir():
            os.environ["CLZOO_CIFAR10"] = str(shared)
    stale = []
    for script in scripts:
        target = HERE / f"{script.stem}.ipynb"
        nb = notebook(script.read_text())
        old = json.loads(target.read_text()) if target.exists() else None
        if args.check:
            if old is None or sources(old) != sources(nb):
                stale.append(target.name)
            continue
        if old is not None:
            nb = keep_outputs(nb, old)
        if run is not None and script.stem in run:
            print(f"executing {target.name}", flush=True)
            began = time.perf_counter()
            with tempfile.TemporaryDirectory(prefix=f"clzoo-{script.stem}-") as cwd:
                nb = execute(nb, cwd, timeout=args.timeout,
                             log=lambda i, s: print(f"  cell {i}: {s:.1f} s", flush=True))
            print(f"  {target.name}: {time.perf_counter() - began:.0f} s", flush=True)
        target.write_text(dumps(nb))
        print(f"wrote {target}")
    if stale:
        print(f"out of date (run python notebooks/build.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
