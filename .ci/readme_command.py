"""Print the README's command block named NAME (the fenced block after `<!-- ci: NAME -->`).

CI runs these blocks verbatim, so the README cannot drift from what is tested.
"""

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def command(name, text=None):
    text = README.read_text() if text is None else text
    match = re.search(rf"<!-- ci: {re.escape(name)} -->\s*```bash\n(.*?)```", text, re.S)
    if match is None:
        raise SystemExit(f"README.md has no block marked <!-- ci: {name} -->")
    return match.group(1).strip()


if __name__ == "__main__":
    print(command(sys.argv[1]))
