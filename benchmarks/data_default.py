"""Where the benchmark scripts find CIFAR-10 by default: `$CLZOO_CIFAR10`, else `tfds:cifar10`.

No path of one machine is built in. Point `CLZOO_CIFAR10` at an image folder
`<folder>/{train,test}/<class>/` (the scripts that take per-class subsets need one), or pass
`--data`.
"""

import os


def default_cifar10():
    """`$CLZOO_CIFAR10` when set, else `"tfds:cifar10"` (needs `pip install "clzoo[tfds]"`)."""
    return os.environ.get("CLZOO_CIFAR10") or "tfds:cifar10"


CIFAR10_HELP = ("CIFAR-10: an image folder <folder>/{train,test}/<class>/ or tfds:cifar10 "
                "(default $CLZOO_CIFAR10, else tfds:cifar10)")
