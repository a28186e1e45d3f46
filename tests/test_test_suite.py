"""The test suite's own conventions (docs/development.md, "Tests"), checked on its source.

- Test names are lowercase after `test_`, rule and decision ids included (`test_d15_...`,
  `test_s6_d13_...`, `test_e111_...`), as Python names are; docs/rules.md cites them so.
- Shared helpers are imported from tests/helpers.py and tests/logbuilder.py; tests/conftest.py
  holds fixtures and hooks, which pytest hands to the tests: no test module imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
MODULES = sorted(TESTS.glob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _test_names(tree: ast.Module) -> list[str]:
    return [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]


def _imports_conftest(tree: ast.Module) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        if any(name.split(".")[-1] == "conftest" for name in names):
            lines.append(node.lineno)
    return lines


def test_the_modules_are_found() -> None:
    assert TESTS / "conftest.py" in MODULES and len(MODULES) > 20


def test_test_names_are_lowercase() -> None:
    upper = {
        path.name: names
        for path in MODULES
        if (names := [name for name in _test_names(_tree(path)) if name != name.lower()])
    }
    assert not upper, upper


def test_no_test_module_imports_conftest() -> None:
    importing = {path.name: lines for path in MODULES if (lines := _imports_conftest(_tree(path)))}
    assert not importing, f"these import conftest (use tests/helpers.py): {importing}"


def test_the_checks_find_what_they_look_for() -> None:
    """The two checks see an uppercase test name and each way of importing conftest."""
    tree = ast.parse(
        "import conftest\nfrom tests.conftest import ROOT\nfrom tests import conftest\n"
        "def test_D15_x(): pass\nclass TestX:\n    def test_E1_y(self): pass\n"
    )
    assert _imports_conftest(tree) == [1, 2, 3]
    assert _test_names(tree) == ["test_D15_x", "test_E1_y"]
