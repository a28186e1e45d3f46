"""The test suite's own conventions (docs/development.md, "Tests"), checked on its source.

- Test names are lowercase after `test_`, rule and decision ids included (`test_d15_...`,
  `test_s6_d13_...`, `test_e111_...`), as Python names are; docs/rules.md cites them so.
- Shared helpers are imported from tests/helpers.py and tests/logbuilder.py; tests/conftest.py
  holds fixtures and hooks, which pytest hands to the tests: no test module imports it.
- The code, tests and docs cite rule ids (§n, D-n: docs/rules.md) and decision ids (E-n:
  docs/decisions.md), never a tracker's numbers, which a reader of the repository cannot follow.
- The fast set (bare `pytest`) keeps a test of every rule and decision that a fast module tests:
  a test marked `slow` to keep the fast set quick never takes the last one.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent
MODULES = sorted(TESTS.glob("*.py"))
ROOT = TESTS.parent

#: a citation of a tracker's item by number, which no one holding the repository can follow
TRACKER_NUMBER = r"issues? ?#?[0-9]+|issue[0-9]+"
#: where citations are read: the package, the tests, the docs, the README and the benchmarks
CITING = ("evalbatch", "sql", "tests", "docs", "README.md", "bench", "Makefile")


#: the rule and decision ids a test's name begins with: `test_s6_d13_...` tests §6 and D-13
RULE_IDS = re.compile(r"([des][0-9]+(?:_[0-9]+)*)_")


@functools.cache
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


def _tracker_numbers(path: Path) -> list[str]:
    """The lines of `path` that cite a tracker's item by number (none in a file that is not
    UTF-8 text); this module's own pattern literal is left out."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return []
    if path == Path(__file__).resolve():
        text = text.replace(TRACKER_NUMBER, "")
    found = re.compile(TRACKER_NUMBER, re.IGNORECASE)
    return [
        f"{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if found.search(line)
    ]


def _citing_files() -> list[Path]:
    files = []
    for name in CITING:
        top = ROOT / name
        below = [top] if top.is_file() else sorted(top.rglob("*"))
        files += [
            path
            for path in below
            if path.is_file()
            and not any(
                part.startswith(".") or part == "__pycache__"
                for part in path.relative_to(ROOT).parts
            )
        ]
    return files


def test_no_tracker_numbers_are_cited() -> None:
    """Code, tests and docs cite §n, D-n and E-n, which docs/rules.md and docs/decisions.md
    define; a tracker's item number says nothing to a reader of the repository."""
    files = _citing_files()
    assert TESTS / "helpers.py" in files and ROOT / "README.md" in files
    citing = {str(p.relative_to(ROOT)): lines for p in files if (lines := _tracker_numbers(p))}
    assert not citing, f"cite the rule or decision (§n, D-n, E-n) instead: {citing}"


def _rule_ids(test_name: str) -> list[str]:
    """The ids `test_name` names first (`test_s1_1_e7_x` -> s1_1, e7), as docs/rules.md reads
    them."""
    ids, rest = [], test_name.removeprefix("test_")
    while found := RULE_IDS.match(rest):
        ids.append(found.group(1))
        rest = rest[found.end() :]
    return ids


def _marked_slow(decorators: list[ast.expr]) -> bool:
    return any(ast.unparse(d) == "pytest.mark.slow" for d in decorators)


def _tests_by_speed(tree: ast.Module) -> tuple[list[str], list[str]]:
    """A module's test names in the fast set and those marked slow (the whole module, when its
    `pytestmark` is `slow`). A test with a table counts as fast: `slow_except` keeps rows."""
    module_slow = any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
        and "pytest.mark.slow" in ast.unparse(node.value)
        for node in tree.body
    )
    fast, slow = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            (slow if module_slow or _marked_slow(node.decorator_list) else fast).append(node.name)
    return fast, slow


def _rules_without_a_fast_test(modules: list[ast.Module]) -> set[str]:
    """The ids a module of the fast set tests only in tests marked slow."""
    tested: dict[str, set[bool]] = defaultdict(set)
    for tree in modules:
        fast, slow = _tests_by_speed(tree)
        if not fast:
            continue  # a slow family: its rules are tested where it runs, in make test
        for name in fast + slow:
            for rule in _rule_ids(name):
                tested[rule].add(name in fast)
    return {rule for rule, speeds in tested.items() if True not in speeds}


def test_every_rule_a_fast_module_tests_keeps_a_test_in_the_fast_set() -> None:
    """Tests are marked slow to keep bare `pytest` quick, where a rule has many; never the last
    test of a rule or decision, so the fast set still exercises every one of them."""
    missing = _rules_without_a_fast_test([_tree(path) for path in MODULES])
    assert not missing, f"these are tested only by slow tests of fast modules: {sorted(missing)}"


def test_the_checks_find_what_they_look_for() -> None:
    """The checks see an uppercase test name, each way of importing conftest and a tracker's
    item number (and not its own pattern, nor the word alone)."""
    tree = ast.parse(
        "import conftest\nfrom tests.conftest import ROOT\nfrom tests import conftest\n"
        "def test_D15_x(): pass\nclass TestX:\n    def test_E1_y(self): pass\n"
    )
    assert _imports_conftest(tree) == [1, 2, 3]
    assert _test_names(tree) == ["test_D15_x", "test_E1_y"]
    assert _rule_ids("test_s6_d13_missing_task") == ["s6", "d13"]
    assert _rule_ids("test_s1_1_e7_struct_payload") == ["s1_1", "e7"]
    assert _rule_ids("test_cli_order") == []
    quick_and_slow = ast.parse(
        "import pytest\ndef test_d1_x(): pass\n@pytest.mark.slow\ndef test_d1_y(): pass\n"
        "@pytest.mark.slow\ndef test_d2_z(): pass\n"
    )
    assert _tests_by_speed(quick_and_slow) == (["test_d1_x"], ["test_d1_y", "test_d2_z"])
    assert _rules_without_a_fast_test([quick_and_slow]) == {"d2"}
    family = ast.parse("import pytest\npytestmark = pytest.mark.slow\ndef test_d3_x(): pass\n")
    assert _rules_without_a_fast_test([family]) == set()
    number = re.compile(TRACKER_NUMBER, re.IGNORECASE)
    word = "iss" + "ue"  # spelled apart, so that this file holds no citation itself
    cited = (f"{word.title()} 17 item 5", f"({word} 27)", f"{word}s #3", f"test_{word}26_x")
    assert all(number.search(text) for text in cited), cited
    for plain in (f"an {word}", "E-65", "§5 / D-4", f"{word} item", f"{word}? ?#?[0-9]+"):
        assert not number.search(plain), plain
