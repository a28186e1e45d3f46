"""The layout reads as the data flow, and imports run one way (layout issue, item 1).

Packages are ranked in the order data flows through them; a module may import its own package and
the ones ranked below it, never one above. So there is no import cycle between packages, and
`reference.py`, the independent grader the fast path is checked against, imports none of it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "evalbatch"

#: each part of `evalbatch`, by rank: a part may import only parts of lower or equal rank
RANKS: dict[str, int] = {
    # helpers every stage uses
    "errors": 0,
    "text": 0,
    "version": 0,
    "options": 0,
    "problems": 0,
    "jsonvalue": 0,
    # the stages, in the order data flows
    "inputs": 1,
    "extract": 2,
    "grade": 3,
    "reduce": 4,
    "outputs": 5,
    "pipeline": 6,
    # what is built on the pipeline
    "regress": 7,
    "verify": 7,
    "explain": 7,
    "history": 7,
    # what reads those: the report (history's trends) and a notebook's connection
    "publish": 8,
    "notebook": 8,
    "api": 9,
    "commands": 10,
    "cli": 10,
    "__init__": 11,
    # the independent grader: helpers only
    "reference": 0,
}


def _part(module: str) -> str:
    """`evalbatch.grade.match` -> `grade`; `evalbatch` -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    names = list(relative.parts)
    if names[-1] == "__init__":
        names.pop()
    return ".".join(names)


def _imports(path: Path) -> list[str]:
    """Every evalbatch module `path` imports, at any depth (imports inside functions count)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "evalbatch"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "evalbatch":
                continue
            if node.module == "evalbatch":
                found += [f"evalbatch.{a.name}" for a in node.names]
            else:
                found.append(node.module)
    return found


def _edges() -> list[tuple[str, str]]:
    return [
        (_module_name(path), target)
        for path in sorted(PACKAGE.rglob("*.py"))
        for target in _imports(path)
    ]


def test_every_part_of_the_package_has_a_rank() -> None:
    parts = {_part(_module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert parts <= set(RANKS), sorted(parts - set(RANKS))


def test_imports_run_one_way() -> None:
    """No module imports a part ranked above its own: commands -> api -> pipeline and what is
    built on it -> outputs -> reduce -> grade -> extract -> inputs -> helpers."""
    upward = [
        f"{source} imports {target}"
        for source, target in _edges()
        if _part(source) in RANKS
        and _part(target) in RANKS
        and RANKS[_part(target)] > RANKS[_part(source)]
    ]
    assert upward == []


def test_reference_grader_imports_nothing_of_the_fast_path() -> None:
    imported = {_part(target) for source, target in _edges() if source == "evalbatch.reference"}
    assert imported <= {"options", "problems", "errors"}, imported


@pytest.mark.parametrize(
    ("source", "target", "upward"),
    [
        ("evalbatch.grade.match", "evalbatch.pipeline.shard", True),
        ("evalbatch.inputs.ingest", "evalbatch.extract.trial_tables", True),
        ("evalbatch.pipeline.shard", "evalbatch.grade.match", False),
        ("evalbatch.api", "evalbatch.verify.host_audit", False),
    ],
)
def test_the_rank_check_can_fail(source: str, target: str, upward: bool) -> None:
    """The check above tells an upward import from a downward one."""
    assert (RANKS[_part(target)] > RANKS[_part(source)]) is upward
