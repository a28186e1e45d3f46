"""The SQL stage's queries, kept as files under `sql/` and run by name.

Each file holds one SELECT and opens with a `-- name:` line, a `-- reads:` line naming the
relations it reads (E-134: checked against its SQL by the tests, and against the order the stage
runs its queries in by `check_order`), and a comment saying what the relation holds and which
contract rule it implements. The files sit in sub-folders that read as the data
flow: the stage's `events/` (rows of eval runs, scanned and parsed once), `typed/` (one relation
per event type), `trials/` (the problems and cost sources read from the trial frames, which
evalbatch/extract/segments.py builds), then the queries of the stage's consumers (`provenance/`,
`verify/`, `explain/`, `export/`). A query is found by its name alone, wherever it sits.
`materialize` stores a query's result as a temporary table that later queries read by the same
name.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import duckdb

from evalbatch.errors import SqlFileError

#: the sub-folders of `sql/` that hold the SQL stage itself, in the order data flows through them
STAGE_FOLDERS = ("events", "typed", "trials")

#: the relations queries read that no query and no frame of the stage defines: made by Python
#: where the query runs (E-134)
INPUTS: dict[str, str] = {
    "source_events": "the rows of a batch's event files, one view (inputs/event_files.register)",
    "verify_trials": "the counted trials `evalbatch verify` checks (verify/host_events)",
}


@dataclass(frozen=True)
class SqlFile:
    """One query: its name (the relation it returns), its header comment, its text, the
    sub-folder of `sql/` it sits in ("" for the top level) and the relations it reads, as its
    `-- reads:` line names them (E-134)."""

    name: str
    description: str
    text: str
    folder: str
    reads: tuple[str, ...] = ()


def sql_dir() -> Path:
    """The packaged copy of `sql/` in a wheel, else the repository's `sql/` (editable installs)."""
    packaged = Path(str(resources.files("evalbatch"))) / "sql"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "sql"


@cache
def _paths() -> dict[str, Path]:
    """Every `.sql` file under `sql/`, by its name: two files of one name would make a query's
    name ambiguous, so that is an error."""
    root = sql_dir()
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.sql")):
        if path.stem in found:
            raise SqlFileError(
                f"two SQL files named {path.stem}: {found[path.stem].relative_to(root)} and "
                f"{path.relative_to(root)}"
            )
        found[path.stem] = path
    return found


@cache
def load_query(name: str) -> SqlFile:
    """Read the query `name` (`sql/**/<name>.sql`), checking its header names it and what it
    reads (an empty `-- reads:` line: nothing)."""
    path = _paths().get(name)
    if path is None:
        raise SqlFileError(f"missing SQL file {name}.sql under {sql_dir()}")
    text = path.read_text(encoding="utf-8")
    header = [line[2:].strip() for line in text.splitlines() if line.startswith("--")]
    if not header or header[0] != f"name: {name}":
        raise SqlFileError(f"{path}:1: the first line must be '-- name: {name}'")
    if len(header) < 2 or not (header[1] + " ").startswith("reads: "):
        raise SqlFileError(f"{path}:2: the second line must be '-- reads: <relations, ...>'")
    reads = tuple(r.strip() for r in header[1].removeprefix("reads:").split(",") if r.strip())
    body = "\n".join(line for line in text.splitlines() if not line.startswith("--")).strip()
    if not body:
        raise SqlFileError(f"{path}: empty query")
    folder = path.parent.relative_to(sql_dir()).as_posix()
    return SqlFile(
        name=name,
        description=" ".join(header[2:]),
        text=body,
        folder="" if folder == "." else folder,
        reads=reads,
    )


def all_files() -> list[SqlFile]:
    """Every query under `sql/`, by name."""
    return [load_query(name) for name in sorted(_paths())]


def check_order(order: Sequence[str], inputs: Iterable[str]) -> None:
    """Check that each query of `order` reads only `inputs` and the queries before it in
    `order` (E-134: each as its `-- reads:` line names them); a query run before one it reads
    would read a relation not yet there, or the previous batch's."""
    defined = set(inputs)
    for name in order:
        missing = [read for read in load_query(name).reads if read not in defined]
        if missing:
            raise SqlFileError(
                f"{name} reads {', '.join(missing)}, which no earlier query of {list(order)} "
                "defines and which is not an input"
            )
        defined.add(name)


def referenced_relations(query: str) -> set[str]:
    """The relations `query` (one SELECT) reads, as DuckDB's parser finds them: every table it
    names (FROM, JOIN, a subquery's), less the common table expressions in scope where named.
    For the check that a query's `-- reads:` line is its SQL's (E-134)."""
    with duckdb.connect() as con:
        row = con.execute("SELECT json_serialize_sql(?::VARCHAR)", [query]).fetchone()
    parsed = json.loads(row[0]) if row else {"error": True}
    if parsed.get("error"):
        raise SqlFileError(f"cannot parse the query: {parsed.get('error_message')}")
    return set(_tables(parsed["statements"], frozenset()))


def _tables(node: object, ctes: frozenset[str]) -> Iterator[str]:
    """The base tables named under `node` (json_serialize_sql's tree), less the `ctes` in
    scope."""
    if isinstance(node, list):
        for item in node:
            yield from _tables(item, ctes)
        return
    if not isinstance(node, dict):
        return
    cte_map = node.get("cte_map")
    if isinstance(cte_map, dict):
        ctes = ctes | {entry["key"] for entry in cte_map.get("map", [])}
    if node.get("type") == "BASE_TABLE" and node.get("table_name") not in ctes:
        yield node["table_name"]
    for value in node.values():
        yield from _tables(value, ctes)


def materialize(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Run a query and keep its result as the temporary table `name`."""
    query = load_query(name).text
    con.execute(f'CREATE OR REPLACE TEMP TABLE "{name}" AS {query}')


def define_view(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Keep a query as the temporary view `name`, read where it is used (not stored)."""
    con.execute(f'CREATE OR REPLACE TEMP VIEW "{name}" AS {load_query(name).text}')


def relation(con: duckdb.DuckDBPyConnection, name: str) -> duckdb.DuckDBPyRelation:
    """A query as a relation, for fetching its rows."""
    return con.sql(load_query(name).text)
