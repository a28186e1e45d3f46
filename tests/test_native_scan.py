"""E-108: the native extractor and the DuckDB query give one answer.

The events pass parses payloads natively where the library is built (`make native`), and with
sql/events/event_scan.sql otherwise. These tests hold the native rows to the query's, column
by column, on drawn payloads (any JSON value, repeated keys at every depth, NaN, trailing
commas, long numbers, escaped keys, truncation) and on whole logs (the samples, byte for byte),
and check how a user learns and chooses which extractor runs. Invalid UTF-8 and damaged files
reach both paths through the files: the fault-injection suite runs on both (.ci/run).

Where the library is not built these tests are skipped, unless EVALBATCH_REQUIRE_NATIVE=1 (as
.ci/run sets it), where they fail: a build that silently failed must not pass as tested.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalbatch import api
from evalbatch.cli import cli
from evalbatch.extract import events_pass, extractor, native_scan, sql_files
from evalbatch.options import DEFAULT_BATCH_EVENTS, Resources
from tests.helpers import OUTPUT_FILES, SAMPLE_EVENTS, SAMPLE_SUITES, slow_except
from tests.strategies import NUMBER_TEXTS, PAYLOAD_TYPES, payload_texts

BUILT = extractor.library() is not None
#: rows per walk as the events pass hands them to the library
BATCH_ROWS_DEFAULT = native_scan.BATCH_ROWS
pytestmark = pytest.mark.skipif(
    not BUILT and os.environ.get("EVALBATCH_REQUIRE_NATIVE") != "1",
    reason="the native extractor is not built here (`make native`)",
)

#: event_scan's columns, f as texts (the query's are JSON, the library's VARCHAR)
COLUMNS = (
    "run_id, sequence, sequence_ok, type, ts, row_hash, graded_type, payload_json, "
    "payload_suspect, f::VARCHAR[] AS f, exact_payload, trial_index_text, suspect_payload"
)


def _rows(pairs: list[tuple[str, str | None]]) -> pa.RecordBatch:
    """event_scan's input rows for (type, payload) pairs, as the events pass hands them over."""
    n = len(pairs)
    return pa.RecordBatch.from_pydict(
        {
            "run_id": [f"acme/run-{i % 3}" for i in range(n)],
            "sequence": list(range(n)),
            "sequence_ok": [True] * n,
            "type": [t for t, _ in pairs],
            "payload": ["null" if p is None else p for _, p in pairs],
            "ts": pa.array([i * 1000 for i in range(n)], pa.timestamp("us", "UTC")),
            "row_hash": pa.array(range(n), pa.uint64()),
        }
    )


def both_scans(
    pairs: list[tuple[str, str | None]], threads: int = 1
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """event_scan's rows for `pairs` from the query and from the library, in row order."""
    con = events_pass.new_connection(Resources(extractor="duckdb"))
    try:
        batch = _rows(pairs)
        native = native_scan.scan_batch(con, batch, threads)
        con.register("scan_rows", pa.Table.from_batches([batch]))
        con.register("native", native)
        query = sql_files.load_query("event_scan").text
        reference = con.sql(f"SELECT {COLUMNS} FROM ({query}) ORDER BY sequence").fetchall()
        walked = con.sql(f"SELECT {COLUMNS} FROM native").fetchall()
        return reference, walked
    finally:
        con.close()


def assert_same_scan(pairs: list[tuple[str, str | None]], threads: int = 1) -> None:
    reference, walked = both_scans(pairs, threads)
    assert len(walked) == len(reference)
    for (type_, payload), want, got in zip(pairs, reference, walked, strict=True):
        assert got == want, (type_, payload)


def test_e108_fields_are_event_scans_paths() -> None:
    """The library reads, per type and in f's order, exactly the paths event_scan.sql reads."""
    query = sql_files.load_query("event_scan").text
    found = re.findall(r"WHEN '([^']+)' THEN TRY\(json_extract\(payload, \[([^\]]*)\]", query)
    paths = {
        type_: [p.removeprefix("$.") for p in re.findall(r"'([^']+)'", listed)]
        for type_, listed in found
    }
    native = {t: names for t, names in native_scan.fields_by_type().items() if names}
    assert native == paths


@pytest.mark.slow
@pytest.mark.parametrize("type_", PAYLOAD_TYPES)
def test_e108_numbers_written_as_the_query_writes_them(type_: str) -> None:
    """Integers as written, doubles in yyjson's shortest form, the rest to the query (D-7).

    Every number text in one scan per path (a scan per number costs a connection each): the
    rows that differ are named by their payload."""
    fields = ("agentId", "inputs", "taskId", "trialIndex", "score", "costEstimateUsd", "modes")
    pairs: list[tuple[str, str | None]] = []
    for number in NUMBER_TEXTS:
        payload = "{" + ",".join(f'"{name}":{number}' for name in fields) + "}"
        nested = f'{{"agent":{{"agentId":{number}}},"inputs":[{number},{{"n":{number}}}]}}'
        pairs += [(type_, payload), (type_, nested)]
    reference, walked = both_scans(pairs)
    assert len(walked) == len(reference)
    differ = [
        payload
        for (_, payload), want, got in zip(pairs, reference, walked, strict=True)
        if got != want
    ]
    assert differ == []


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_e108_double_text_is_duckdbs(value: float) -> None:
    """A double's text is DuckDB's json_extract text of it, or left to the query."""
    text = native_scan.format_double(value)
    if text is None:
        assert value == 0  # only a negative zero is left: "-0" and "-0.0" differ there
        return
    want = duckdb.sql(f"SELECT json_extract('[{value!r}]', '$[0]')::VARCHAR").fetchall()[0][0]
    assert text == want


#: payloads of the drawn types, mutated as a lenient and a strict parser read differently
DRAWN_PAYLOADS = st.lists(
    st.tuples(st.sampled_from(PAYLOAD_TYPES), payload_texts()), min_size=1, max_size=8
)


@pytest.mark.slow  # 400 drawn logs, minutes; the fast set draws 20 below
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DRAWN_PAYLOADS)
def test_e108_drawn_payloads_scan_the_same(pairs: list[tuple[str, str]]) -> None:
    """Any payload, mutated as a lenient and a strict parser read differently: every column of
    every row is the query's."""
    assert_same_scan(list(pairs))


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DRAWN_PAYLOADS)
def test_e108_drawn_payloads_scan_the_same_bounded(pairs: list[tuple[str, str]]) -> None:
    """The property above on 20 drawn logs, so the fast set exercises it too."""
    assert_same_scan(list(pairs))


def test_e108_awkward_payloads_scan_the_same() -> None:
    """Texts a strict parser rejects or reads differently, and values only the query keeps."""
    payloads: list[str | None] = [
        None, "", "null", "[]", "1", '"x"', "{}", " {\"agentId\":\"a\"} ", "\ufeff{}",
        '{"agentId":"a","agentId":"b"}', '{"agent":{"agentId":"a","agentId":"b"}}',
        '{"\\u0061gentId":"x"}', '{"agentId":"a",}', '{"a":1}x', '{"a":1}{"a":1}',
        '{"trialIndex":1.0}', '{"trialIndex":1.0000000000000001}', '{"trialIndex":1}',
        '{"inputs":{"x":1234567890.12345678}}', '{"toolName":"NaN"}', '{"a":[1, ]}',
        '{"a":"x,  }"}', '{"a":"\\u0000\\u001f\\ud83d\\ude00\\/"}', '{"a":NaN}',
        '{"a":-Infinity}', '{"a":01}', "{'a':1}", '{"a":1 /* c */}', '{"a":"\x01"}',
        '{"agent":[1],"agentId":null}', '{"mergeOrder":["c1","c2"],"childRunId":"c"}',
        "[" * 2000 + "]" * 2000, '{"d":' * 1100 + "1" + "}" * 1100,
    ]  # fmt: skip
    assert_same_scan([(t, p) for t in PAYLOAD_TYPES for p in payloads])


#: text of number characters (and a few others), and the digits of a number beside it
NUMBER_RUNS = (
    st.text(alphabet="0123456789-+.eEx ,", max_size=70),
    st.text("0123456789", max_size=40),
)


@pytest.mark.slow  # 300 drawn texts, most of a minute; the fast set draws 20 below
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(*NUMBER_RUNS)
def test_d7_a_run_of_sixteen_number_characters_keeps_the_payload_text(
    text: str, digits: str
) -> None:
    """D-7: a tool call's payload text is kept exactly when 16 or more of [-+.0-9eE] stand in
    a row anywhere in it (the query's regexp), however the runs fall: at either end, cut by
    other characters, inside strings or as a number's digits."""
    assert_number_run_kept(text, digits)


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(*NUMBER_RUNS)
def test_d7_a_run_of_sixteen_number_characters_keeps_the_payload_text_bounded(
    text: str, digits: str
) -> None:
    """The property above on 20 drawn texts, so the fast set exercises it too."""
    assert_number_run_kept(text, digits)


def assert_number_run_kept(text: str, digits: str) -> None:
    """Both scans agree on `text` as a string member, beside a number of `digits`, and as a
    tool name (D-7)."""
    number = digits.lstrip("0") or "0"
    payloads = [
        json.dumps({"toolName": "t", "inputs": {"s": text}}),
        json.dumps({"inputs": {"s": text}}, separators=(",", ":"))[:-1] + f',"n":{number}}}',
        '{"inputs":{"n":' + number + '},"toolName":' + json.dumps(text) + "}",
    ]
    assert_same_scan([("agent.tool-called", p) for p in payloads])


def test_e108_threads_split_a_batch_without_changing_it() -> None:
    """A batch split over two threads (and rows left to the query among them) is the same."""
    pairs = [
        (PAYLOAD_TYPES[i % len(PAYLOAD_TYPES)], f'{{"agentId":"a{i}","score":{i / 7},"x":{i}}}')
        for i in range(6000)
    ]
    pairs[10] = ("agent.tool-called", '{"agentId":"a","agentId":"b"}')
    pairs[5000] = ("eval.scored", '{"score":NaN}')
    one = both_scans(pairs, threads=1)
    two = both_scans(pairs, threads=2)
    assert one[0] == one[1] == two[1]


def _grade(
    out: Path, extractor_name: str, events: list[Path], suites: list[Path], batch_events: int
) -> None:
    resources = Resources(extractor=extractor_name, batch_events=batch_events)  # type: ignore[arg-type]
    api.write_outputs([str(e) for e in events], out, [str(s) for s in suites], resources=resources)


#: (logs, events per batch, rows read in place) as ids name them; the two rows of the fast set
#: take each choice once between them, the other six run under --run-slow
LOGS = {"samples": [SAMPLE_EVENTS], "delegates": [SAMPLE_EVENTS.parent / "delegates"]}
BATCHING = {"one-batch": DEFAULT_BATCH_EVENTS, "batches-of-50-events": 50}
PLACEMENT = {"read-in-place": None, "copied-into-duckdb": 0}
BOTH_PATHS = {
    f"{placement}-{batching}-{logs}": (LOGS[logs], BATCHING[batching], PLACEMENT[placement])
    for logs in LOGS
    for batching in BATCHING
    for placement in PLACEMENT
}
FAST_BOTH_PATHS = [
    "read-in-place-one-batch-samples",
    "copied-into-duckdb-batches-of-50-events-delegates",
]


@pytest.mark.parametrize(
    ("events", "batch_events", "in_place_rows"),
    slow_except(BOTH_PATHS.values(), fast=[BOTH_PATHS[name] for name in FAST_BOTH_PATHS]),
    ids=list(BOTH_PATHS),
)
def test_e108_outputs_byte_identical_on_both_paths(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    events: list[Path],
    batch_events: int,
    in_place_rows: int | None,
) -> None:
    """summaries.jsonl and every Parquet table, byte for byte, from either extractor, in one
    batch or in many on one connection (each batch's event_scan replaces the last's), with the
    native event_scan read in place or, as a batch past IN_PLACE_ROWS is, copied into DuckDB."""
    if in_place_rows is not None:
        monkeypatch.setattr(events_pass, "IN_PLACE_ROWS", in_place_rows)
    _grade(tmp_path / "native", "native", events, [SAMPLE_SUITES], batch_events)
    _grade(tmp_path / "duckdb", "duckdb", events, [SAMPLE_SUITES], batch_events)
    names = sorted(p.name for p in (tmp_path / "duckdb").iterdir() if p.is_file())
    assert set(OUTPUT_FILES) <= set(names)
    for name in names:
        if name == "manifest.json":
            continue  # it names when and where; its hashes are checked by the tables equal
        native = (tmp_path / "native" / name).read_bytes()
        assert native == (tmp_path / "duckdb" / name).read_bytes(), name


@pytest.mark.slow
def test_e108_version_and_run_json_name_the_extractor(tmp_path: Path) -> None:
    version = CliRunner().invoke(cli, ["--version"], env={"EVALBATCH_EXTRACTOR": "native"})
    assert version.exit_code == 0
    assert f"extractor: {extractor.describe('native')}" in version.output
    assert "simdjson" in extractor.describe("native")
    base = ["run", str(SAMPLE_EVENTS), "--suites", str(SAMPLE_SUITES), "--json"]
    for name, said in (("native", extractor.describe("native")), ("duckdb", "duckdb")):
        result = CliRunner().invoke(
            cli,
            [*base, "--out", str(tmp_path / name), "--extractor", name],
        )
        assert result.exit_code in (0, 3), result.output
        assert json.loads(result.output)["extractor"] == said


@pytest.mark.slow
def test_e108_without_the_library_auto_runs_the_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No library: auto takes the DuckDB path and says so; --extractor native is exit 2."""
    monkeypatch.setattr(extractor, "LIBRARY", tmp_path / "missing.so")
    extractor.library.cache_clear()
    try:
        assert extractor.describe("auto") == "duckdb"
        base = ["run", str(SAMPLE_EVENTS), "--suites", str(SAMPLE_SUITES), "--json"]
        auto = CliRunner().invoke(cli, [*base, "--out", str(tmp_path / "auto")])
        assert auto.exit_code in (0, 3), auto.output
        assert json.loads(auto.output)["extractor"] == "duckdb"
        native = CliRunner().invoke(
            cli, [*base, "--out", str(tmp_path / "native"), "--extractor", "native"]
        )
        assert native.exit_code == 2
        assert "native extractor is not built" in native.output
        assert not (tmp_path / "native" / "summaries.jsonl").exists()
    finally:
        extractor.library.cache_clear()


def test_e108_a_library_from_an_older_source_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library that loads but lacks a function the walk calls (built before the source
    changed) counts as not built: auto takes the DuckDB path instead of failing mid-run."""
    import _ctypes  # a shared library that loads here and holds none of the walk's functions

    monkeypatch.setattr(extractor, "LIBRARY", Path(_ctypes.__file__))
    extractor.library.cache_clear()
    try:
        assert extractor.library() is None
        assert extractor.describe("auto") == "duckdb"
    finally:
        extractor.library.cache_clear()


def _keyed_batch(keys: Sequence[tuple[str, int | None]]) -> pa.RecordBatch:
    """event_scan's input rows holding these (run_id, sequence) keys, in this order."""
    rows = _rows([("run.started", "{}")] * len(keys))
    return rows.set_column(0, "run_id", pa.array([run for run, _ in keys])).set_column(
        1, "sequence", pa.array([sequence for _, sequence in keys], pa.int64())
    )


def test_d3_key_blocks_hold_each_runs_consecutive_sequences() -> None:
    """A block is one run's consecutive sequence numbers, row after row; a row without a
    sequence is passed over (it has no key)."""
    keys = [("r1", 0), ("r1", 1), ("r1", 2), ("r2", 0), ("r1", 3), ("r1", 5), ("r1", None)]
    keys += [("r1", 6), ("r1", 6), ("r2", 1)]
    blocks = native_scan.key_blocks(_keyed_batch(keys))
    assert blocks is not None
    assert blocks.rows() == [
        ("r1", 0, 2), ("r2", 0, 0), ("r1", 3, 3), ("r1", 5, 6), ("r1", 6, 6), ("r2", 1, 1),
    ]  # fmt: skip


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["a", "b", "ab"]), st.integers(0, 12)), max_size=40),
    st.randoms(use_true_random=False),
    st.integers(1, 6),
)
def test_d3_key_held_twice_is_seen_however_the_rows_are_cut_and_ordered(
    keys: list[tuple[str, int]], random: Any, pieces: int
) -> None:
    """The walk's blocks say "each key held once" exactly when no (run_id, sequence) key is
    held by two rows, whatever the order the rows come in and however they are cut into
    batches (DuckDB's threads hand the files' rows over in pieces)."""
    random.shuffle(keys)
    cuts = sorted(random.randint(0, len(keys)) for _ in range(pieces - 1))
    batches = [keys[a:b] for a, b in zip([0, *cuts], [*cuts, len(keys)], strict=True)]
    blocks = [native_scan.key_blocks(_keyed_batch(b)) for b in batches if b]
    assert all(block is not None for block in blocks)
    held_once = native_scan.keys_held_once(blocks) if blocks else True
    assert held_once == (len(set(keys)) == len(keys))


def _log_with_duplicates(path: Path) -> Path:
    """The sample log with, at its end, a second copy of one run's event (one event: D-3) and
    a conflicting copy of another's, far from the rows they repeat."""
    files = sorted(SAMPLE_EVENTS.glob("*.parquet"))
    table = pa.concat_tables([pq.read_table(f) for f in files])
    rows = table.to_pylist()
    scored = [r for r in rows if r["type"] == "eval.scored"]
    same = {**scored[0], "timestamp": "2026-11-02T13:00:00.000Z"}
    payload = json.loads(scored[-1]["payload"])
    clash = {**scored[-1], "payload": json.dumps({**payload, "score": 0.125})}
    pq.write_table(pa.Table.from_pylist([*rows, same, clash], schema=table.schema), path)
    return path


@pytest.mark.slow
def test_d3_duplicates_apart_in_the_log_are_found_on_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key held twice whose rows reach the walk in different batches, far apart, is one
    event or a conflict (D-3) on the native path as on the DuckDB path: the same outputs."""
    monkeypatch.setattr(native_scan, "BATCH_ROWS", 4)
    log = _log_with_duplicates(tmp_path / "events.parquet")
    _grade(tmp_path / "native", "native", [log], [SAMPLE_SUITES], DEFAULT_BATCH_EVENTS)
    _grade(tmp_path / "duckdb", "duckdb", [log], [SAMPLE_SUITES], DEFAULT_BATCH_EVENTS)
    codes = pq.read_table(tmp_path / "duckdb" / "problems.parquet").column("code").to_pylist()
    assert "event-conflict" in codes  # the conflicting copy is seen
    names = sorted(p.name for p in (tmp_path / "duckdb").iterdir() if p.is_file())
    for name in names:
        if name != "manifest.json":
            native = (tmp_path / "native" / name).read_bytes()
            assert native == (tmp_path / "duckdb" / name).read_bytes(), name


@pytest.mark.slow
@pytest.mark.parametrize("walk_rows", [BATCH_ROWS_DEFAULT, 2], ids=["one-walk", "walks-of-2-rows"])
def test_e22_damaged_file_found_mid_walk_is_a_file_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walk_rows: int
) -> None:
    """A file whose payload column holds invalid UTF-8 is `file-unreadable` and the other
    file's runs are graded, on the native path as on DuckDB's, also when DuckDB meets the damage
    while the walk streams its rows (its error then reaches Python through the Arrow stream as
    an OSError, which the damaged-file pass did not take for DuckDB's: exit 4, the payload in
    the message)."""
    from tests.test_fail_closed_data import _damaged_file

    monkeypatch.setattr(native_scan, "BATCH_ROWS", walk_rows)
    bad = _damaged_file(tmp_path, "payload-utf8")
    graded = {}
    for name in ("native", "duckdb"):
        result = api.grade_paths(
            [tmp_path / "events"],
            [tmp_path / "suites"],
            resources=Resources(extractor=name),  # type: ignore[arg-type]
        )
        (row,) = [r for r in result.problems.to_dicts() if r["code"] == "file-unreadable"]
        assert str(bad) in row["message"]
        assert "SECRET" not in row["message"]
        graded[name] = sorted(result.summaries)
    assert graded["native"] == graded["duckdb"]
    assert graded["native"]


def test_e22_damage_met_while_the_walk_streams_is_duckdbs_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DuckDB's error in producing the walk's rows after the stream has started (a damaged file
    read late) reached Python as an OSError from the Arrow stream, which the damaged-file pass
    does not take for DuckDB's: the run ended "could not be written" (exit 4) with the damaged
    value in the message. It is raised as DuckDB's own error, as on the DuckDB path."""
    late_failure = (
        "SELECT 'acme/run-' || (i // 100) AS run_id, i AS sequence, true AS sequence_ok, "
        "'run.started' AS type, CASE WHEN i < 50000 THEN '{}' ELSE error('damaged') END "
        "AS payload, NULL::TIMESTAMPTZ AS ts, hash(i) AS row_hash FROM range(50001) AS t(i)"
    )
    monkeypatch.setattr(events_pass, "_SCAN_INPUT", late_failure)
    monkeypatch.setattr(native_scan, "BATCH_ROWS", 1024)
    con = events_pass.new_connection(Resources(extractor="native"))
    try:
        with pytest.raises(duckdb.Error, match="damaged"):
            events_pass._scan_natively(con)
    finally:
        con.close()
