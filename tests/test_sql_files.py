"""Every query under sql/ loads, names itself, documents itself and cites the contract; the
folders of sql/ hold the stage in its order, and each relation of the stage has a golden case."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalbatch.extract import events_pass, segments, sql_files, trial_tables
from tests.test_sql_golden import CASES

#: the folders of sql/ that hold the queries of the stage's readers, not the stage itself
CONSUMER_FOLDERS = ("provenance", "verify", "explain", "export")


def test_every_sql_file_loads_with_a_header() -> None:
    files = sql_files.all_files()
    assert {f.name for f in files} >= {
        "scan_rows",
        "event_scan",
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
        sql_files.load_query("no_such_query")


def test_queries_sit_in_the_folders_of_the_data_flow() -> None:
    """The shared macros at the top; every query in a folder of the stage
    (events, typed, spans, trials) or of one of its readers (verify, explain, ...)."""
    folders = {f.name: f.folder for f in sql_files.all_files()}
    assert folders.pop("macros") == ""
    assert set(folders.values()) == {*sql_files.STAGE_FOLDERS, *CONSUMER_FOLDERS}


def test_the_stage_order_names_each_stage_relation_once_after_what_it_reads() -> None:
    """The stage's dependency order (`events_pass.EVENTS_PASS`, then `PIPELINE`) is the one
    list of what the stage stores: each of its relations sits in a folder of the stage, once, and
    reads (its `-- reads:` line, E-134) only the stage's inputs and relations built before it."""
    order = [*events_pass.EVENTS_PASS, *trial_tables.PIPELINE]
    assert len(order) == len(set(order))
    assert {sql_files.load_query(name).folder for name in order} <= set(sql_files.STAGE_FOLDERS)
    sql_files.check_order(order, trial_tables.STAGE_INPUTS)


def _stage_reads() -> list[tuple[str, str]]:
    """Each (relation, reader) pair of the stage's order where the reader reads the relation."""
    order = [*events_pass.EVENTS_PASS, *trial_tables.PIPELINE]
    return [
        (read, name) for name in order for read in sql_files.load_query(name).reads if read in order
    ]


@pytest.mark.parametrize(("read", "reader"), _stage_reads())
def test_e134_a_query_moved_before_what_it_reads_is_refused(read: str, reader: str) -> None:
    """E-134: the order is checked against what each query reads, so moving a query before one
    it reads (its `-- reads:` line unchanged) fails at load."""
    order = [*events_pass.EVENTS_PASS, *trial_tables.PIPELINE]
    order.remove(reader)
    order.insert(order.index(read), reader)
    with pytest.raises(sql_files.SqlFileError, match=rf"^{reader} reads {read}"):
        sql_files.check_order(order, trial_tables.STAGE_INPUTS)


def test_e134_the_moves_cover_the_typed_and_cost_queries() -> None:
    """The moves above include each per-type relation before `events` and run_cost_source
    before the relation it reads."""
    reads = _stage_reads()
    assert ("usage_events", "run_cost_source") in reads
    assert {("events", name) for name in trial_tables.FETCHED} <= set(reads)


def test_e134_fetched_relations_are_named_queries_of_the_pipeline() -> None:
    """FETCHED names its relations (not a slice of PIPELINE): each is a query of PIPELINE, the
    relations `segments` builds the trials from are among them, and run_cost_source is stored."""
    assert trial_tables.FETCHED.issubset(trial_tables.PIPELINE)
    assert "started_events" in trial_tables.FETCHED
    assert "run_cost_source" not in trial_tables.FETCHED


@pytest.mark.slow
def test_e134_each_query_reads_what_its_header_says() -> None:
    """A query's `-- reads:` line is exactly the relations its SQL names (DuckDB's parser, less
    its common table expressions); the macros read nothing."""
    for query in sql_files.all_files():
        if query.name == "macros":
            assert query.reads == ()
            continue
        assert set(query.reads) == sql_files.referenced_relations(query.text), query.name
        assert len(query.reads) == len(set(query.reads)), query.name


def test_e134_each_read_is_a_query_a_frame_or_an_input() -> None:
    """What a query reads is made somewhere: by a query of sql/, a frame of the stage
    (`trial_tables.FRAMES`) or a declared input (`sql_files.INPUTS`)."""
    files = sql_files.all_files()
    made = {f.name for f in files} | set(trial_tables.FRAMES) | set(sql_files.INPUTS)
    for query in files:
        assert set(query.reads) <= made, (query.name, set(query.reads) - made)


def test_e134_referenced_relations() -> None:
    """Tables named in FROM, JOIN and subqueries count; a common table expression does not
    where it is in scope, and a table of its name outside that scope does."""
    query = """
        WITH a AS (SELECT * FROM t1), b AS (SELECT * FROM a JOIN t2 USING (k))
        SELECT * FROM b
        SEMI JOIN t3 ON t3.k = b.k
        WHERE b.k IN (SELECT k FROM t4) AND EXISTS (SELECT 1 FROM (WITH t5 AS (FROM t6) FROM t5))
        UNION ALL SELECT * FROM a2
    """
    assert sql_files.referenced_relations(query) == {"t1", "t2", "t3", "t4", "t6", "a2"}
    assert sql_files.referenced_relations("SELECT 1") == set()
    assert sql_files.referenced_relations("SELECT * FROM (WITH x AS (SELECT 1) FROM x), x") == {"x"}
    with pytest.raises(sql_files.SqlFileError, match="cannot parse"):
        sql_files.referenced_relations("SELECT FROM WHERE")


def test_the_span_rule_is_written_once() -> None:
    """span_calls, span_usage and span_brackets are placed
    in their spans and segments (§2.1, E-2) by the one function `segments.place`, over their
    per-type relations, and no query of sql/ repeats the rule."""
    assert {"span_scored", "span_calls", "span_usage", "span_brackets"} <= set(segments.FRAMES)
    assert "span_events" not in sql_files.load_query("macros").text
    stage = [f for f in sql_files.all_files() if f.folder in sql_files.STAGE_FOLDERS]
    assert not [f.name for f in stage if re.search(r"\bASOF\b", f.text, re.IGNORECASE)]


def test_every_stage_relation_has_a_golden_case() -> None:
    """Each relation in sql/events, typed, spans and trials, and each frame
    the stage builds from its scan (`trial_tables.FRAMES`), has its case in
    tests/test_sql_golden.py."""
    stage = {f.name for f in sql_files.all_files() if f.folder in sql_files.STAGE_FOLDERS}
    assert stage | set(trial_tables.FRAMES) == set(CASES)


def test_every_frame_says_what_a_row_is_and_cites_the_contract() -> None:
    """The frames of the stage are documented as its queries are (a header naming the rules);
    none shares a name with a query of the stage, and a reader's query of a frame's name (for
    readers that fetch it by name) only reads that frame."""
    files = {f.name: f for f in sql_files.all_files()}
    for name, description in trial_tables.FRAMES.items():
        assert re.search(r"(D-\d+|§\d|E-\d+)", description), name
        if name in files:
            assert files[name].folder not in sql_files.STAGE_FOLDERS, name
            assert files[name].text == f"SELECT * FROM {name}", name


@pytest.fixture
def sql_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty `sql/` the loader reads instead of the repository's."""
    monkeypatch.setattr(sql_files, "sql_dir", lambda: tmp_path)
    sql_files.load_query.cache_clear()
    sql_files._paths.cache_clear()
    yield tmp_path
    sql_files.load_query.cache_clear()
    sql_files._paths.cache_clear()


def test_a_query_is_found_by_name_in_any_folder(sql_root: Path) -> None:
    (sql_root / "typed").mkdir()
    (sql_root / "typed" / "q.sql").write_text(
        "-- name: q\n-- reads: a, b\n-- One row (§2.2).\nSELECT 1\n"
    )
    assert sql_files.load_query("q") == sql_files.SqlFile(
        "q", "One row (§2.2).", "SELECT 1", "typed", ("a", "b")
    )


def test_a_query_must_say_what_it_reads(sql_root: Path) -> None:
    """E-134: the line after the name lists what the query reads (empty: nothing)."""
    (sql_root / "q.sql").write_text("-- name: q\n-- One row (§2.2).\nSELECT 1\n")
    with pytest.raises(sql_files.SqlFileError, match="reads"):
        sql_files.load_query("q")
    sql_files.load_query.cache_clear()
    (sql_root / "q.sql").write_text("-- name: q\n-- reads:\n-- One row (§2.2).\nSELECT 1\n")
    assert sql_files.load_query("q").reads == ()


def test_two_files_of_one_name_are_an_error(sql_root: Path) -> None:
    """A name must say which query it is: the same name in two folders is refused."""
    for folder in ("spans", "verify"):
        (sql_root / folder).mkdir()
        text = "-- name: q\n-- reads:\n-- One row (§2.2).\nSELECT 1\n"
        (sql_root / folder / "q.sql").write_text(text)
    with pytest.raises(sql_files.SqlFileError, match="two SQL files named q"):
        sql_files.load_query("q")
