"""Check the README quickstart's output: baselines shown and beaten, its kNN inside the README
figures' range by drift (benchmarks/readme_figures.py), no backend chatter, the wheel used."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import readme_figures  # noqa: E402  (benchmarks/readme_figures.py: the figures and their drift band)

CHATTER = re.compile(r"^(WARNING: All log messages|[IWEF]\d{4} |.*(oneDNN|cuda|absl|cpu_feature_guard|"
                     r"build\(\) was called))", re.M)


def knn_rows(log):
    """(k, trained, raw pixels, random init) in percent from `clzoo train`'s closing table."""
    k = re.search(r"^kNN top-1 \(k=(\d+),", log, re.M)
    row = {name: re.search(rf"^  {name}\s+(\d+\.\d+)%", log, re.M)
           for name in ("trained encoder", "raw pixels", r"random init \(untrained\)")}
    missing = [name for name, match in row.items() if match is None] + ([] if k else ["kNN header"])
    assert not missing, f"quickstart printed no {missing} row:\n{log[-3000:]}"
    return (int(k.group(1)), *(float(m.group(1)) for m in row.values()))


def main(log_path, clone):
    log = Path(log_path).read_text()
    k, trained, raw, random = knn_rows(log)
    print(f"   kNN (k={k}): trained {trained}%, raw pixels {raw}%, random init {random}%")
    assert trained > raw, "the trained encoder does not beat raw pixels"
    figures = readme_figures.load_figures()
    problem = readme_figures.drift(trained, k, figures)
    if problem:
        sys.exit(f"error: {problem}")
    low, high = readme_figures.drift_band(figures)
    print(f"   inside the README figures' range by drift: {low:.2f}% - {high:.2f}%")
    train_output = log.split("Successfully installed")[-1].split("\n", 1)[-1]  # after pip's lines
    chatter = CHATTER.findall(train_output)
    assert not chatter, f"backend log lines in the output: {chatter[:3]}"
    where = subprocess.run([f"{clone}/.venv/bin/python", "-c",
                            "import clzoo, clzoo.optimizers; print(clzoo.__file__)"],
                           cwd="/", capture_output=True, text=True, check=True).stdout.strip()
    assert "site-packages" in where, f"clzoo imported from {where}, not the installed wheel"
    builtin = Path(where).parent / "presets" / "builtin" / "registry.json"
    assert builtin.is_file(), f"the wheel lacks the built-in presets ({builtin})"
    print(f"   clzoo from {where}")


if __name__ == "__main__":
    main(*sys.argv[1:])
