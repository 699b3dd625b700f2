"""Names of the hidden files a writer keeps beside its output (temporary file, staging folder, lock)."""

import hashlib

NAME_MAX = 255  # bytes in one file name (ext4, XFS, APFS, NTFS)


def sibling_prefix(name, tag, room=0):
    """`.{name}.{tag}`, the start of a hidden name beside the output `name`; for a long `name`,
    its start and a hash of all of it, so that `room` more bytes (a random part, a suffix) still
    make a legal file name. A legal 255-byte output name would otherwise fail on its temporary
    file ("File name too long").

    Example:

    >>> from clzoo.hidden_names import sibling_prefix
    >>> sibling_prefix("features.npz", "lock")
    '.features.npz.lock'
    >>> len(sibling_prefix("x" * 255, "staging-", room=8).encode()) + 8 <= 255
    True
    """
    prefix = f".{name}.{tag}"
    if len(prefix.encode()) + room <= NAME_MAX:
        return prefix
    digest = hashlib.blake2b(name.encode(), digest_size=4).hexdigest()
    keep = NAME_MAX - room - len(tag.encode()) - len(digest) - 3
    short = name.encode()[:keep].decode(errors="ignore")
    return f".{short}~{digest}.{tag}"
