"""Rewrite every built-in preset's model card from its `metadata.json`, and its checksums.

    python tests/presets/builtin_cards.py

A card is generated (`clzoo.presets.card.model_card`), never edited by hand:
`test_presets.py` checks that each built-in `README.md` is what its metadata gives today.
Re-run after `card.py` changes; this rewrites `README.md`, `checksums.json` and the
registry's `checksums_sha256` (the weights and config are untouched).
"""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = ROOT / "clzoo" / "presets" / "builtin"


def card_of(name, entry):
    """The card `name`'s metadata gives, for its registry `entry`."""
    from clzoo.presets.card import model_card

    metadata = json.loads((BUILTIN / entry["path"] / "metadata.json").read_text())
    return model_card(metadata, handle=entry["handle"])


def main():
    from clzoo.presets.format import CHECKSUMS, PRESET_FILES, sha256

    registry_path = BUILTIN / "registry.json"
    registry = json.loads(registry_path.read_text())
    for name, entry in registry.items():
        folder = BUILTIN / entry["path"]
        (folder / "README.md").write_text(card_of(name, entry))
        checksums = {f: sha256(folder / f) for f in PRESET_FILES}
        (folder / CHECKSUMS).write_text(json.dumps(checksums, indent=2) + "\n")
        entry["checksums_sha256"] = sha256(folder / CHECKSUMS)
    registry_path.write_text(json.dumps(registry, indent=2) + "\n")


if __name__ == "__main__":
    main()
