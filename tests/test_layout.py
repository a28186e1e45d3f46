"""The layout reads as the data flow, and imports run one way.

Packages are ranked in the order data flows through them; a module may import its own package and
the ones ranked below it, never one above. So there is no import cycle between packages; and
none between modules either, inside a package included: an import inside a function or under
`TYPE_CHECKING` counts, since it still ties the two modules together. `reference.py`, the
independent grader the fast path is checked against, imports none of it.
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
    "files": 0,
    # the stages, in the order data flows
    "inputs": 1,
    "extract": 2,
    "grade": 3,
    "reduce": 4,
    "outputs": 5,
    "pipeline": 6,
    # what is built on the pipeline
    "pairing": 7,
    "verify": 7,
    "explain": 7,
    "history": 7,
    "infer": 7,
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


def _module_name(path: Path, root: Path = ROOT) -> str:
    relative = path.relative_to(root).with_suffix("")
    names = list(relative.parts)
    if names[-1] == "__init__":
        names.pop()
    return ".".join(names)


def _imports(path: Path, package: str = "evalbatch") -> list[str]:
    """Every module of `package` that `path` imports, at any depth (imports inside functions and
    under `TYPE_CHECKING` count), each as `module.name` for `from module import name`: that
    name is a module (`from evalbatch.grade import match`) or a name in one (`import_graph`
    tells them apart)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == package]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != package:
                continue
            if node.module == package:
                found += [f"{package}.{a.name}" for a in node.names]
            else:
                found += [f"{node.module}.{a.name}" for a in node.names]
    return found


def import_graph(root: Path = ROOT, package: str = "evalbatch") -> dict[str, set[str]]:
    """Each module of the package under `root` -> the modules of it that it imports: for
    `from x import name`, the module `x.name` when there is one, else `x` (a package's name: its
    `__init__`). The parents Python imports on the way (`a` for `import a.b`) are not counted:
    they would tie every module to every `__init__`."""
    paths = {_module_name(path, root): path for path in sorted((root / package).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        targets = set()
        for name in _imports(path, package):
            while name not in paths and "." in name:
                name = name.rsplit(".", 1)[0]  # `from pkg.mod import f`: the module, pkg.mod
            if name in paths and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules that import each other, in a circle of any length: each strongly connected
    component of more than one module, sorted (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return sorted(cycles)


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
    built on it -> outputs -> reduce -> grade -> extract -> inputs -> helpers; and no modules
    import each other in a circle, inside one part either (an import inside a function or under
    `TYPE_CHECKING` counts)."""
    upward = [
        f"{source} imports {target}"
        for source, target in _edges()
        if _part(source) in RANKS
        and _part(target) in RANKS
        and RANKS[_part(target)] > RANKS[_part(source)]
    ]
    assert upward == []
    assert import_cycles(import_graph()) == []


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


def test_the_cycle_check_can_fail(tmp_path: Path) -> None:
    """The check above finds a circle however it is closed: at the top of a module, inside a
    function, under `TYPE_CHECKING`, through a name imported from a package, over three
    modules; a module importing itself or its own names is no circle, nor is a line of imports."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "sub/__init__.py": "from pkg.sub.c import C\n",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n",
        "b.py": "def f():\n    from pkg import a\n",
        "sub/c.py": "import pkg.sub.d\nfrom pkg.sub import c\nC = 1\n",
        "sub/d.py": "from pkg.sub import e\n",
        "sub/e.py": "from pkg.sub import C\nfrom pkg import line\n",
        "line.py": "from pkg import b\n",
    }
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.sub.e"] == {"pkg.sub", "pkg.line"}
    assert import_cycles(graph) == [
        ["pkg.a", "pkg.b"],
        ["pkg.sub", "pkg.sub.c", "pkg.sub.d", "pkg.sub.e"],
    ]
