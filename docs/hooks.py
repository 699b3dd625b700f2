"""MkDocs hooks: the site's front page is README.md, so the two never drift apart.

Links the README makes into `docs/` become links between pages; its other relative links
(notebooks, recipes) point at the repository on GitHub.
"""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
BLOB = "https://github.com/clzoo/clzoo/blob/main/"


def front_page(text):
    """README.md's text with its links rewritten for a page at the site's root."""
    def link(match):
        target = match.group(1)
        if target.startswith(("http://", "https://", "#")):
            return match.group(0)
        if target.startswith("docs/"):
            return f"]({target[len('docs/'):]})"
        return f"]({BLOB}{target})"

    return re.sub(r"\]\(([^)]+)\)", link, text)


def on_page_read_source(page, config, **kwargs):
    if page.file.src_uri == "index.md":
        return front_page(README.read_text())
    return None
