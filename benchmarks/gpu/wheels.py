"""The wheels a lent GPU machine needs to run clzoo: what clzoo requires that its image lacks.

Walks clzoo's run-time requirements (no extras) and theirs, through the distributions installed
here, for Python 3.12 on Linux (the GPU machines), and prints `name==version` (the version
installed here) for each one not in `device_packages.txt`. `pack.sh` downloads these.

    python benchmarks/gpu/wheels.py
"""

import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

# Carried although the image has them: a carried wheel needs a recent version, and the image's
# version is not recorded (pydantic 2.14 and pydantic-core 2.50 need typing-extensions >= 4.16).
CARRIED_ANYWAY = ("typing-extensions",)
DEVICE = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
          "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
          "platform_python_implementation": "CPython", "os_name": "posix", "extra": ""}


def normalized(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def device_packages(path=None):
    """The normalized names of the distributions the GPU image holds (`device_packages.txt`),
    less `CARRIED_ANYWAY`."""
    lines = (path or Path(__file__).with_name("device_packages.txt")).read_text().splitlines()
    names = {normalized(line.strip()) for line in lines if line.strip() and not line.startswith("#")}
    return names - set(CARRIED_ANYWAY)


def requirements(name):
    """The run-time requirements of the installed distribution `name` on the GPU machine."""
    found = []
    for text in metadata.requires(name) or []:
        requirement = Requirement(text)
        if requirement.marker is None or requirement.marker.evaluate(DEVICE):
            found.append(requirement.name)
    return found


def missing(root="clzoo", present=None):
    """`{normalized name: installed version}` of everything `root` needs that the image lacks.

    A distribution the image holds is not walked further (its own needs are the image's).
    `LookupError` names a requirement that is not installed here (it could not be pinned).
    """
    present = device_packages() if present is None else present
    try:
        queue = requirements(root)
    except metadata.PackageNotFoundError:
        raise LookupError(f"{root} is not installed in this Python ({sys.executable}): "
                          "run with the environment that has it (PYTHON=.venv/bin/python)") from None
    needed, seen = {}, set()
    while queue:
        name = normalized(queue.pop())
        if name in seen or name in present:
            continue
        seen.add(name)
        try:
            needed[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            raise LookupError(f"{name} (needed by {root}) is not installed here: "
                              "pip install it first") from None
        queue.extend(requirements(name))
    return dict(sorted(needed.items()))


if __name__ == "__main__":
    try:
        wheels = missing()
    except LookupError as error:
        sys.exit(f"wheels.py: {error}")
    print("\n".join(f"{name}=={version}" for name, version in wheels.items()))
