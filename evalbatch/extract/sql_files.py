"""The SQL stage's queries, kept as files under `sql/` and run by name.

Each file holds one SELECT and opens with a `-- name:` line and a comment saying what the relation
holds and which contract rule it implements. The files sit in sub-folders that read as the data
flow: the stage's `events/` (rows of eval runs, scanned and parsed once), `typed/` (one relation
per event type), `trials/` (the problems and cost sources read from the trial frames, which
evalbatch/extract/segments.py builds), then the queries of the stage's consumers (`provenance/`,
`verify/`, `explain/`, `export/`). A query is found by its name alone, wherever it sits.
`materialize` stores a query's result as a temporary table that later queries read by the same
name.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import duckdb

from evalbatch.errors import SqlFileError

#: the sub-folders of `sql/` that hold the SQL stage itself, in the order data flows through them
STAGE_FOLDERS = ("events", "typed", "trials")


@dataclass(frozen=True)
class SqlFile:
    """One query: its name (the relation it returns), its header comment, its text and the
    sub-folder of `sql/` it sits in ("" for the top level)."""

    name: str
    description: str
    text: str
    folder: str


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
def load(name: str) -> SqlFile:
    """Read the query `name` (`sql/**/<name>.sql`), checking its header names it."""
    path = _paths().get(name)
    if path is None:
        raise SqlFileError(f"missing SQL file {name}.sql under {sql_dir()}")
    text = path.read_text(encoding="utf-8")
    header = [line[2:].strip() for line in text.splitlines() if line.startswith("--")]
    if not header or header[0] != f"name: {name}":
        raise SqlFileError(f"{path}:1: the first line must be '-- name: {name}'")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("--")).strip()
    if not body:
        raise SqlFileError(f"{path}: empty query")
    folder = path.parent.relative_to(sql_dir()).as_posix()
    return SqlFile(
        name=name,
        description=" ".join(header[1:]),
        text=body,
        folder="" if folder == "." else folder,
    )


def all_files() -> list[SqlFile]:
    """Every query under `sql/`, by name."""
    return [load(name) for name in sorted(_paths())]


def materialize(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Run a query and keep its result as the temporary table `name`."""
    query = load(name).text
    con.execute(f'CREATE OR REPLACE TEMP TABLE "{name}" AS {query}')


def define_view(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Keep a query as the temporary view `name`, read where it is used (not stored)."""
    con.execute(f'CREATE OR REPLACE TEMP VIEW "{name}" AS {load(name).text}')


def relation(con: duckdb.DuckDBPyConnection, name: str) -> duckdb.DuckDBPyRelation:
    """A query as a relation, for fetching its rows."""
    return con.sql(load(name).text)
