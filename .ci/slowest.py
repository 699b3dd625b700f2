"""Print the slowest tests of a CI run: `python3 .ci/slowest.py DURATIONS.jsonl [N]`.

DURATIONS.jsonl is what tests/conftest.py appends with CLZOO_TEST_DURATIONS set: one line per test
phase (lane, test, phase, seconds). A test's time is its setup, call and teardown together, per lane,
so a module fixture's build shows on the test that built it.
"""

import json
import sys
from collections import defaultdict
from pathlib import Path


def slowest(lines, count):
    """The `count` largest (seconds, lane, test) over the lines, and the total seconds per lane."""
    seconds, lanes = defaultdict(float), defaultdict(float)
    for line in lines:
        row = json.loads(line)
        seconds[row["lane"], row["test"]] += row["seconds"]
        lanes[row["lane"]] += row["seconds"]
    ranked = sorted(((s, lane, test) for (lane, test), s in seconds.items()), reverse=True)
    return ranked[:count], dict(lanes)


def main(path, count="15"):
    file = Path(path)
    if not file.is_file():
        print(f"   no test durations recorded ({path})")
        return 0
    ranked, lanes = slowest(file.read_text().splitlines(), int(count))
    print(f"== the {len(ranked)} slowest tests of this run (setup + call + teardown, seconds):")
    for seconds, lane, test in ranked:
        print(f"   {seconds:7.1f}  {lane:<10} {test}")
    summed = ", ".join(f"{lane} {total:.0f} s" for lane, total in lanes.items())
    print(f"   test time summed over both workers, per lane: {summed}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
