"""Each notebook's install line, with the GitHub URL swapped for this clone, builds a complete package."""

import json
import re
import subprocess
import sys
from pathlib import Path

URL = "git+https://github.com/clzoo/clzoo"


def install_spec(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    code = next("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    match = re.search(r"pip install [^\n]*?([\"'])(clzoo[^\"']*)\1", code)
    assert match and URL in match.group(2), f"{notebook.name}: first code cell does not install {URL}"
    return match.group(2)


def main(root, python, target):
    """Install each distinct install line once (notebooks sharing a line share the install)."""
    specs = {}
    for notebook in sorted(Path(root, "notebooks").glob("*.ipynb")):
        spec = install_spec(notebook).replace(URL, f"git+file://localhost{root}")  # a host: PEP 508
        specs.setdefault(spec, []).append(notebook.name)
    for number, (spec, notebooks) in enumerate(specs.items()):
        where = Path(target) / str(number)
        subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--target", str(where),
                        spec], check=True)
        for needed in ("clzoo/optimizers/__init__.py", "clzoo/presets/builtin/registry.json"):
            assert (where / needed).is_file(), f"{', '.join(notebooks)}: {spec} installs no {needed}"
        print(f"   {', '.join(notebooks)}: {spec} -> complete package")


if __name__ == "__main__":
    main(*sys.argv[1:])
