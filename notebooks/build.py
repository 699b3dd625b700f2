"""Build the Colab notebooks from the scripts in notebooks/scripts/ (the scripts are the source).

    python notebooks/build.py           # write notebooks/<name>.ipynb for every script
    python notebooks/build.py --check   # exit 1 when a notebook differs from its script

Scripts use the "percent" cell format: a line `# %%` starts a code cell and
`# %% [markdown]` a markdown cell whose lines start with `# `.
"""

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
SCRIPTS = HERE / "scripts"
METADATA = {"accelerator": "GPU", "colab": {"provenance": []},
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"}}


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
        {"cell_type": kind, "metadata": {}, "source": source(text),
         **({"execution_count": None, "outputs": []} if kind == "code" else {})}
        for kind, text in cells(script_text)],
        "metadata": METADATA, "nbformat": 4, "nbformat_minor": 5}


def render(script):
    return json.dumps(notebook(script.read_text()), indent=1, ensure_ascii=False) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    stale = []
    for script in sorted(SCRIPTS.glob("*.py")):
        target = HERE / f"{script.stem}.ipynb"
        text = render(script)
        if args.check:
            if not target.exists() or target.read_text() != text:
                stale.append(target.name)
        else:
            target.write_text(text)
            print(f"wrote {target}")
    if stale:
        print(f"out of date (run python notebooks/build.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
