"""Check the README quickstart's output: baselines shown and beaten, no backend chatter, the wheel used."""

import re
import subprocess
import sys
from pathlib import Path

CHATTER = re.compile(r"^(WARNING: All log messages|[IWEF]\d{4} |.*(oneDNN|cuda|absl|cpu_feature_guard|"
                     r"build\(\) was called))", re.M)


def main(log_path, clone):
    log = Path(log_path).read_text()
    row = {name: re.search(rf"^  {name}\s+(\d+\.\d+)%", log, re.M)
           for name in ("trained encoder", "raw pixels", r"random init \(untrained\)")}
    missing = [name for name, match in row.items() if match is None]
    assert not missing, f"quickstart printed no {missing} row:\n{log[-3000:]}"
    trained, raw, random = (float(m.group(1)) for m in row.values())
    print(f"   kNN: trained {trained}%, raw pixels {raw}%, random init {random}%")
    assert trained > raw, "the trained encoder does not beat raw pixels"
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
