"""Issue 87: no module of the package over 500 lines, no function over 60 lines of code (its
docstring, comments and blank lines not counted): a reader finds one idea per module."""

import ast
from pathlib import Path

import clzoo

PACKAGE = Path(clzoo.__file__).parent
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 500, 60


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _code_lines(node, lines):
    body = node.body
    documented = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    start = body[0].end_lineno if documented else node.lineno
    return sum(1 for line in lines[start:node.end_lineno]
               if line.strip() and not line.strip().startswith("#"))


def test_no_module_is_over_500_lines():
    assert len(_modules()) > 100  # the package itself, not an empty folder
    long = {str(p.relative_to(PACKAGE)): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_no_function_is_over_60_lines_of_code():
    long = {}
    for path in _modules():
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if (n := _code_lines(node, lines)) > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(PACKAGE)}:{node.name}"] = n
    assert long == {}
