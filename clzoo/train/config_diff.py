"""Where two nested configs differ (a checkpoint's against the recipe's, a run's stored recipe
against the one given on resume): the dotted path of each differing leaf and its two values."""


def differences(saved, fresh, path=""):
    """Yield `(path, saved value, fresh value)` at each place `saved` and `fresh` differ.

    Mappings are walked key by key (`saved`'s order first, then keys only `fresh` has, as Keras
    orders a config), lists of one length item by item (`path[i]`); anything else that differs
    is a leaf.

    Example:

    >>> from clzoo.train.config_diff import differences
    >>> list(differences({"training": {"epochs": 3, "levers": []}}, {"training": {"epochs": 6}}))
    [('training.epochs', 3, 6), ('training.levers', [], None)]
    """
    if isinstance(saved, dict) and isinstance(fresh, dict):
        for key in [*saved, *(k for k in fresh if k not in saved)]:
            if saved.get(key) != fresh.get(key):
                yield from differences(saved.get(key), fresh.get(key), f"{path}.{key}" if path else str(key))
    elif isinstance(saved, list) and isinstance(fresh, list) and len(saved) == len(fresh):
        for i, (a, b) in enumerate(zip(saved, fresh)):
            if a != b:
                yield from differences(a, b, f"{path}[{i}]")
    elif saved != fresh:
        yield path, saved, fresh


def short(value):
    """A value for a one-line message: a list as its length, a long repr cut at 60 characters."""
    if isinstance(value, list):
        return f"{len(value)} entries"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
