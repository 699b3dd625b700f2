"""A recipe's errors: `RecipeError` (one line per problem) and who wrote the key a problem is
about, the recipe file or an override given on top of it (`--set`), for the line's head."""

import reprlib


class RecipeError(ValueError):
    """A recipe, override or CLI value that cannot run; `lines` holds one message per problem."""

    def __init__(self, lines):
        self.lines = list(lines)
        super().__init__("\n".join(self.lines))


class _TurnedOn(str):
    """The override that turned on a model part the file leaves off (`model.queue.size=64` for
    `model.queue`): blamed for the part's own refusals (`model.queue: a queue needs task
    contrastive`) when the message names no override."""


def _where(source, key, overridden, message=""):
    """Who wrote `key`: the recipe file, or an override given on top of it (`--set`): those
    inside `key` that `message` names (a problem of a whole section, `views`), or inside the key
    it starts with (`mix would do nothing`); else the one that set `key`, or a whole section around
    it (`--set model={...}`; not `model.encoder_options`, which keeps the file's encoder name);
    else the one that turned on the part the message is about (`_TurnedOn`)."""
    named = list(_named(key, overridden, message)) if message else []
    around = max((inner for inner in overridden if key == inner or (
        key.startswith(inner + ".") and overridden[inner] == inner)), key=len, default=None)
    subject = overridden.get(message.split(":")[0]) if message else None
    named = named or ([overridden[around]] if around else []) or (
        [subject] if isinstance(subject, _TurnedOn) else [])
    return f"--set {', '.join(named)} (over {source})" if named else source


def _named(key, overridden, message):
    """The overrides inside `key` that `message` names (`_names`), or inside the key it starts
    with (`mix would do nothing`), each once."""
    head = message.split(" ")[0]
    return dict.fromkeys(given for inner, given in overridden.items()
                         if not isinstance(given, _TurnedOn)  # a fallback only (`_where`)
                         and (not key or inner.startswith(key + ".")) and (
                             inner.startswith(head + ".") or _names(message, inner)))


def _names(message, key):
    """Whether `message` names the dotted `key`: whole (a key inside it too: `model.queue.size`
    for `model.queue`), a section around it as a whole (`unset model.grad_cache`, not the subject
    `model.grad_cache:`), or its last part with its value (`knn_headline_k (7)`, `name 'x'`, `size=`)
    or quoted (`argument 'width'`, `` `size` ``), outside a suggestion (`Did you mean`)."""
    parts, told = key.split("."), message.split(" Did you mean ")[0]
    leaf, sections = parts[-1], (".".join(parts[:end]) for end in range(2, len(parts)))
    return (f"argument '{leaf}'" in told or f"`{leaf}`" in told or _stands(message, key, ("_",))
            or any(_stands(message, section, ("_", ".", ":")) for section in sections)
            or any(told[end:end + 2].startswith(("=", " (", " '", " [", " ="))
                   for end in _ends(told, leaf)))


def _stands(text, word, joins):
    """Whether `word` stands whole in `text` somewhere: after no letter, digit, `_` or `.`, and
    before no letter, digit or one of `joins`."""
    return any(not (text[end:end + 1].isalnum() or text[end:end + 1] in joins) for end in _ends(text, word))


def _ends(text, word):
    """Where each `word` in `text` that follows no letter, digit, `_` or `.` ends (no regex:
    500 overrides would outgrow `re`'s cache)."""
    start = text.find(word)
    while start >= 0:
        before = text[start - 1:start]
        if not (before.isalnum() or before in ("_", ".")):
            yield start + len(word)
        start = text.find(word, start + 1)


_REPR = reprlib.Repr()  # (keyword arguments need Python 3.12)
_REPR.maxstring, _REPR.maxother, _REPR.maxlevel = 60, 60, 2
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = 6
_REPR.maxdict = 4
MAX_LINE = 400  # characters of one error line


def _short(value):
    """A repr of `value` that stays short however large the value (a list of a million items)."""
    return _REPR.repr(value)
