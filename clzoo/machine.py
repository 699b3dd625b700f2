"""What this machine has: its physical memory (the memory checks before a run or a decode)."""

import os


def machine_bytes():
    """Physical memory of this machine in bytes, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
