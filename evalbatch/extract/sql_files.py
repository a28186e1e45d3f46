"""The SQL stage's queries, kept as files under `sql/` and run by name.

Each file holds one SELECT and opens with a `-- name:` line and a comment saying what the relation
holds and which contract rule it implements. `materialize` stores a query's result as a temporary
table that later queries read by the same name.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import duckdb

from evalbatch.errors import SqlFileError


@dataclass(frozen=True)
class SqlFile:
    """One query: its name (the relation it returns), its header comment and its text."""

    name: str
    description: str
    text: str


def sql_dir() -> Path:
    """The packaged copy of `sql/` in a wheel, else the repository's `sql/` (editable installs)."""
    packaged = Path(str(resources.files("evalbatch"))) / "sql"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "sql"


@cache
def load(name: str) -> SqlFile:
    """Read `sql/<name>.sql`, checking its header names it."""
    path = sql_dir() / f"{name}.sql"
    if not path.is_file():
        raise SqlFileError(f"missing SQL file {path}")
    text = path.read_text(encoding="utf-8")
    header = [line[2:].strip() for line in text.splitlines() if line.startswith("--")]
    if not header or header[0] != f"name: {name}":
        raise SqlFileError(f"{path}:1: the first line must be '-- name: {name}'")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("--")).strip()
    if not body:
        raise SqlFileError(f"{path}: empty query")
    return SqlFile(name=name, description=" ".join(header[1:]), text=body)


def all_files() -> list[SqlFile]:
    """Every query under `sql/`, by name."""
    return [load(path.stem) for path in sorted(sql_dir().glob("*.sql"))]


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
