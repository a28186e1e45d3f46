"""Every query under sql/ loads, names itself, documents itself and cites the contract."""

from __future__ import annotations

import re

import pytest

from evalbatch.extract import sql_files, trial_tables


def test_every_sql_file_loads_with_a_header() -> None:
    files = sql_files.all_files()
    assert {f.name for f in files} >= {
        "events",
        "event_rows",
        "duplicate_events",
        "macros",
        *trial_tables.PIPELINE,
    }
    for query in files:
        assert query.description, query.name
        assert re.search(r"(D-\d+|§\d|E-\d+)", query.description), query.name


def test_missing_query_is_reported() -> None:
    with pytest.raises(sql_files.SqlFileError):
        sql_files.load("no_such_query")
