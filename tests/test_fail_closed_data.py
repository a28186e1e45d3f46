"""§6, one bad value never stops everything: each data fault is a problem row for its own
run or file, never an internal error, and every other run in the same input is still graded.

Each case is a log of two clean runs plus one run (or file) carrying the fault. The rules are
docs/decisions.md E-76..E-81 (value ranges, damaged files, null types, the trial limit), with E-3,
D-14 and §3.5 for what an invalid value does. Problem messages are checked for the planted content
markers of tests/helpers.py (`LEAK_MARKERS`): the tool name and arguments carry `SECRET`.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalbatch import api, problems
from evalbatch.inputs.suites import validate_suite
from evalbatch.reduce import stats
from evalbatch.reference import grade_reference
from tests.helpers import (
    SUITE_ID,
    assert_content_free,
    assert_problem_message,
    iso,
    make_suite,
    run_main,
    standard_run,
    write_events,
    write_json,
)
from tests.logbuilder import LogBuilder, golden, grade, suite, traj

#: a slow family (damaged data through every command):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

BAD = "acme/bad-0001"
GOOD = ("acme/good-0001", "acme/good-0002")

Rows = list[dict[str, Any]]


def _good_rows() -> Rows:
    return [row for run in GOOD for row in standard_run(run).rows]


def _bad_rows() -> Rows:
    return standard_run(BAD).rows


def _first(rows: Rows, type_: str) -> dict[str, Any]:
    return next(r for r in rows if r["type"] == type_)


def _with_number(row: dict[str, Any], field: str, number: str) -> None:
    """Set a payload field to a JSON number written as `number` (1e400 has no Python float)."""
    payload = (
        dict(row["payload"]) if isinstance(row["payload"], dict) else json.loads(row["payload"])
    )
    payload.pop(field, None)
    row["payload"] = json.dumps(payload)[:-1] + f', "{field}": {number}}}'


@pytest.fixture(scope="module")
def canonical(tmp_path_factory: pytest.TempPathFactory) -> api.GradeResult:
    """The clean runs graded alone: what every case must still give for them."""
    root = tmp_path_factory.mktemp("canonical")
    write_json(root / "suites" / "basic.json", make_suite())
    path = write_events(root / "events.parquet", _good_rows())
    return api.grade_paths([path], [root / "suites"])


def _grade(tmp_path: Path, *files: tuple[str, Rows]) -> api.GradeResult:
    write_json(tmp_path / "suites" / "basic.json", make_suite())
    for name, rows in files:
        write_events(tmp_path / "events" / name, rows)
    return api.grade_paths([tmp_path / "events"], [tmp_path / "suites"])


def _assert_good_runs_graded(result: api.GradeResult, canonical: api.GradeResult) -> None:
    for run in GOOD:
        assert result.summaries[run] == canonical.summaries[run], run
    for row in result.problems.to_dicts():
        assert_problem_message(row)


def _problems(result: api.GradeResult, run: str | None = BAD) -> set[tuple[Any, ...]]:
    return {
        (r["sequence"], r["code"], r["severity"])
        for r in result.problems.to_dicts()
        if r["run_id"] == run
    }


def _reference_agrees(rows: Rows, result: api.GradeResult) -> None:
    """The per-record reference grader skips the same runs (tests/test_properties.py's check)."""
    as_text = [
        {
            **row,
            "payload": row["payload"]
            if isinstance(row["payload"], str)
            else json.dumps(row["payload"]),
            "timestamp": iso(row["timestamp"]),
        }
        for row in rows
    ]
    reference = grade_reference(as_text, [make_suite()])
    assert sorted(reference.skipped) == sorted(result.skipped)
    assert sorted(reference.summaries) == sorted(result.summaries)


# --------------------------------------------------------------------------------------------
# E-76 / E-3: sequences


@pytest.mark.parametrize("sequence", [2**63 - 1, -(2**63), -1, 2**53])
def test_e76_sequence_outside_its_range_is_sequence_invalid(
    tmp_path: Path, canonical: api.GradeResult, sequence: int
) -> None:
    """E-76: a sequence outside 0..2^53-1 (2^63-1 and -2^63 overflowed the gap arithmetic: an
    internal error for the whole input) is `sequence-invalid` for its run alone; exit 3."""
    bad = _bad_rows()
    bad[3]["sequence"] = sequence
    result = _grade(tmp_path, ("events.parquet", _good_rows() + bad))
    assert (None, "sequence-invalid", "error") in _problems(result)
    assert result.skipped == [BAD]
    assert result.exit_code == 3
    _assert_good_runs_graded(result, canonical)
    _reference_agrees(_good_rows() + bad, result)


def test_e76_largest_sequence_is_accepted(tmp_path: Path, canonical: api.GradeResult) -> None:
    """E-76: 2^53-1 is still a sequence (the event after eval.completed is outside the eval)."""
    bad = _bad_rows()
    bad[-1]["sequence"] = problems.MAX_SEQUENCE
    result = _grade(tmp_path, ("events.parquet", _good_rows() + bad))
    assert BAD in result.summaries
    assert (problems.MAX_SEQUENCE, "sequence-gap", "warning") in _problems(result)


@pytest.mark.parametrize("fraction", [1.5, 3.5])
def test_e3_fractional_sequence_is_sequence_invalid_not_a_conflict(
    tmp_path: Path, canonical: api.GradeResult, fraction: float
) -> None:
    """E-3/E-76: a double `sequence` of 1.5 or 3.5 is not an integer: `sequence-invalid`. (DuckDB
    rounded it into the next event's number, which was reported as an `event-conflict`.)"""
    rows = _good_rows() + _bad_rows()
    numbers = [float(r["sequence"]) for r in rows]
    index = next(i for i, r in enumerate(rows) if r["runId"] == BAD and r["sequence"] == 3)
    numbers[index] = fraction
    table = pa.table(
        {
            "runId": [r["runId"] for r in rows],
            "sequence": pa.array(numbers, pa.float64()),
            "type": [r["type"] for r in rows],
            "payload": [json.dumps(r["payload"]) for r in rows],
            "timestamp": [iso(r["timestamp"]) for r in rows],
        }
    )
    write_json(tmp_path / "suites" / "basic.json", make_suite())
    pq.write_table(table, tmp_path / "events.parquet")
    result = api.grade_paths([tmp_path / "events.parquet"], [tmp_path / "suites"])
    codes = {code for _, code, _ in _problems(result)}
    assert "sequence-invalid" in codes
    assert "event-conflict" not in codes
    assert result.skipped == [BAD]
    _assert_good_runs_graded(result, canonical)


# --------------------------------------------------------------------------------------------
# E-77: costs, latencies, token counts


#: (event type, field, out-of-range number, an invalid value the contract already names)
RANGE_CASES = [
    ("provider.usage", "costEstimateUsd", "1e20", "-1"),
    ("provider.usage", "costEstimateUsd", "1e400", "-1"),
    ("eval.scored", "costUsd", "1e20", "-1"),
    ("eval.scored", "costUsd", "1e400", "-1"),
    ("eval.scored", "latencyMs", "1e300", "-5"),
    ("provider.usage", "inputTokens", "8e18", "-1"),
]


@pytest.mark.parametrize(("type_", "field", "number", "invalid"), RANGE_CASES)
def test_e77_out_of_range_number_is_the_invalid_value_it_resembles(
    tmp_path: Path,
    canonical: api.GradeResult,
    type_: str,
    field: str,
    number: str,
    invalid: str,
) -> None:
    """E-77 (D-14, §3.5, §2.2): a cost of 1e20 or 1e400, a latency of 1e300 or a token count of
    8e18 (summed past 64 bits) stopped the whole input; now it is graded exactly as the same run
    with a negative value, which the contract already calls invalid (same problems, same
    summary), and the other runs are graded as ever."""

    def run_with(value: str) -> Rows:
        rows = _bad_rows()
        targets = [r for r in rows if r["type"] == type_]
        for row in targets[:2] if field == "inputTokens" else targets[:1]:
            _with_number(row, field, value)
        return rows

    out_of_range = _grade(tmp_path / "a", ("e.parquet", _good_rows() + run_with(number)))
    negative = _grade(tmp_path / "b", ("e.parquet", _good_rows() + run_with(invalid)))
    assert out_of_range.summaries[BAD] == negative.summaries[BAD]
    assert _problems(out_of_range) == _problems(negative)
    if field != "latencyMs":  # an invalid latency falls back to the bracket span silently (§3.5)
        assert _problems(out_of_range)
    _assert_good_runs_graded(out_of_range, canonical)
    _reference_agrees(_good_rows() + run_with(number), out_of_range)


def test_e81_bracket_span_across_the_timestamp_range_does_not_overflow(
    tmp_path: Path, canonical: api.GradeResult
) -> None:
    """E-81: a bracket from year -290000 to 290000 (DuckDB reads both) overflowed 64-bit
    microseconds and stopped everything. Since E-124 neither parses (no span, no latency); the
    widest span left, year 1 to year 9999, is graded to the millisecond."""
    for name, first, last, latency in [
        ("wide", "-290000-01-01T00:00:00Z", "290000-01-01T00:00:00Z", None),
        ("years", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", 315_537_897_599_999),
    ]:
        bad = _bad_rows()
        _first(bad, "agent.invocation-started")["timestamp"] = first
        _first(bad, "agent.invocation-completed")["timestamp"] = last
        result = _grade(tmp_path / name, ("events.parquet", _good_rows() + bad))
        alpha = next(t for t in result.summaries[BAD]["tasks"] if t["taskId"] == "alpha")
        assert alpha.get("latencyMs") == latency, name
        _assert_good_runs_graded(result, canonical)


# --------------------------------------------------------------------------------------------
# E-124: a timestamp names a year from 1 to 9999

#: timestamps outside years 1..9999 in UTC (E-124), and two that never parsed (month 13, 30
#: February) and an offset no parser reads, which must give the same grade
OUT_OF_RANGE_TIMESTAMPS = [
    "0000-01-01T00:00:00Z",
    "-0001-01-01T00:00:00Z",
    "10000-01-01T00:00:00Z",
    "294247-01-01T00:00:00Z",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "infinity",
    "2026-13-01T00:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-11-02T10:00:00+1500:00",
]


def _stamped(stamp: Any, types: tuple[str, ...] | None = None) -> Rows:
    """The bad run with `stamp` as the timestamp of its events of `types` (None: every one)."""
    rows = _bad_rows()
    for row in rows:
        if types is None or row["type"] in types:
            row["timestamp"] = stamp
    return rows


@pytest.mark.parametrize("stamp", OUT_OF_RANGE_TIMESTAMPS)
@pytest.mark.parametrize("where", ["every-event", "eval-started", "bracket"])
def test_e124_timestamp_outside_years_1_to_9999_does_not_parse(
    tmp_path: Path, canonical: api.GradeResult, stamp: str, where: str
) -> None:
    """E-124: a timestamp of year 0 stopped `run` with an internal error (its eval.started's
    time became a Python datetime). Outside years 1 to 9999 (UTC) a timestamp does not parse,
    as `not a time` does: the same summary and problems, no eval_started_at, the run graded;
    the reference reads it alike."""
    types = {
        "every-event": None,
        "eval-started": ("eval.started",),
        "bracket": ("agent.invocation-started", "agent.invocation-completed"),
    }[where]
    bad = _stamped(stamp, types)
    result = _grade(tmp_path / "a", ("e.parquet", _good_rows() + bad))
    unparsed = _grade(tmp_path / "b", ("e.parquet", _good_rows() + _stamped("not a time", types)))
    assert result.summaries[BAD] == unparsed.summaries[BAD]
    assert _problems(result) == _problems(unparsed)
    assert (
        result.runs.filter(pl.col("run_id") == BAD)
        .select("eval_started_at", "eval_completed_at")
        .rows()
        == unparsed.runs.filter(pl.col("run_id") == BAD)
        .select("eval_started_at", "eval_completed_at")
        .rows()
    )
    if where != "bracket":
        assert result.runs.filter(pl.col("run_id") == BAD)["eval_started_at"].item() is None
    _assert_good_runs_graded(result, canonical)
    _reference_agrees(_good_rows() + bad, result)
    reference = grade_reference(
        [{**r, "payload": json.dumps(r["payload"]), "timestamp": iso(r["timestamp"])} for r in bad],
        [make_suite()],
    )
    latencies = [t.get("latencyMs") for t in reference.summaries[BAD]["tasks"]]
    assert latencies == [t.get("latencyMs") for t in result.summaries[BAD]["tasks"]]


@pytest.mark.parametrize("micros", [-62_167_219_200_000_000, 253_402_300_800_000_000])
def test_e124_parquet_timestamp_of_year_0_or_10000_does_not_parse(
    tmp_path: Path, canonical: api.GradeResult, micros: int
) -> None:
    """E-124: a Parquet timestamp column holds year 0 and year 10000 too (microseconds since
    the epoch); such a value does not parse, as a null one does, and the run is graded."""

    def write(name: str, value: int | None) -> api.GradeResult:
        rows = _good_rows() + _bad_rows()
        stamps = [
            value if r["runId"] == BAD else int(r["timestamp"].timestamp() * 1_000_000)
            for r in rows
        ]
        column = pa.array(stamps, pa.timestamp("us", tz="UTC"))
        write_json(tmp_path / name / "suites" / "basic.json", make_suite())
        write_events(
            tmp_path / name / "events" / "e.parquet",
            rows,
            timestamp=None,
            extra={"timestamp": column},
        )
        return api.grade_paths([tmp_path / name / "events"], [tmp_path / name / "suites"])

    result, nulls = write("range", micros), write("nulls", None)
    assert result.summaries[BAD] == nulls.summaries[BAD]
    assert result.runs.filter(pl.col("run_id") == BAD)["eval_started_at"].item() is None
    _assert_good_runs_graded(result, canonical)


@pytest.mark.parametrize("stamp", ["0000-01-01T00:00:00Z", "10000-01-01T00:00:00Z"])
def test_e124_verify_and_conformance_read_a_year_0_timestamp(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stamp: str,
) -> None:
    """E-124: `verify` and `verify --conformance` stopped with an internal error on a year-0
    timestamp; they now answer as for a timestamp that does not parse (same exit code)."""
    answers = {}
    for name, value in [("range", stamp), ("unparsed", "not a time")]:
        root = tmp_path / name
        write_json(root / "suites" / "basic.json", make_suite())
        write_events(root / "events" / "e.parquet", _good_rows() + _stamped(value))
        for flags in ([], ["--conformance"]):
            code, _, stderr = run_main(
                monkeypatch, capsys, "verify", root / "events", "--suites", root / "suites", *flags
            )
            assert "internal error" not in stderr, stderr
            answers[name, tuple(flags)] = code
    assert answers["range", ()] == answers["unparsed", ()]
    assert answers["range", ("--conformance",)] == answers["unparsed", ("--conformance",)]


def test_e124_export_otel_writes_no_time_past_what_nanoseconds_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-124: `export otel` stopped with an internal error on a timestamp of year 3000 (past
    2262, 64-bit nanoseconds overflow); such a record is written without a time."""
    write_json(tmp_path / "suites" / "basic.json", make_suite())
    events = write_events(
        tmp_path / "events" / "e.parquet", _good_rows() + _stamped("3000-01-01T00:00:00Z")
    )
    out = tmp_path / "out"
    code, _, stderr = run_main(
        monkeypatch, capsys, "run", events, "--suites", tmp_path / "suites", "--out", out
    )
    assert code == 0, stderr
    target = tmp_path / "otel.jsonl"
    code, _, stderr = run_main(
        monkeypatch, capsys, "export", "otel", out, "--events", events, "--out", target
    )
    assert code == 0, stderr
    records = [
        (record, resource)
        for line in target.read_text(encoding="utf-8").splitlines()
        for resource in json.loads(line)["resourceLogs"]
        for scope in resource["scopeLogs"]
        for record in scope["logRecords"]
    ]
    assert records
    timed = [record for record, _ in records if "timeUnixNano" in record]
    assert len(timed) == 2 * len(GOOD)  # the clean runs' trials; none of the bad run's


# --------------------------------------------------------------------------------------------
# E-78: trials per task


def test_e78_trial_count_above_the_limit_makes_the_run_ungradable(
    tmp_path: Path, canonical: api.GradeResult
) -> None:
    """E-78: a no-suite run claiming `trialCount: 1000000000` hung the job (pass@k for every k);
    it is `trial-count-limit` on its eval.started, an error, and the other runs are graded."""
    bad = standard_run(BAD, suite_id="acme.test.evals.unknown").rows
    started = _first(bad, "eval.started")
    started["payload"] = {**started["payload"], "trialCount": 1_000_000_000}
    result = _grade(tmp_path, ("events.parquet", _good_rows() + bad))
    assert _problems(result) == {(started["sequence"], "trial-count-limit", "error")}
    assert result.skipped == [BAD]
    assert result.exit_code == 3
    _assert_good_runs_graded(result, canonical)
    _reference_agrees(_good_rows() + bad, result)


def test_e78_trial_count_at_the_limit_is_graded(tmp_path: Path) -> None:
    """E-78: the limit itself is a trial count: graded, the trials the log lacks missing."""
    log = LogBuilder()
    log.eval_started("acme.team.evals.other", trialCount=problems.MAX_TRIALS)
    log.trial("a", score=1, passed=True)
    log.eval_completed()
    result = grade(log)
    (task,) = result.summaries[log.run_id]["tasks"]
    assert task["trials"]["n"] == problems.MAX_TRIALS
    assert task["trials"]["passAtK"] == 1.0  # k = n: some trial passed


def test_e78_suite_trials_count_above_the_limit_is_invalid(tmp_path: Path) -> None:
    """E-78 (§1.3): a suite `trials.count` of 1e6 hung the job; it fails validation at
    `$.trials.count`, so its runs are `suite-invalid` and `validate` exits 1."""
    too_many = make_suite(trials={"count": 1_000_000, "k": 1})
    faults = [f for f in validate_suite(too_many) if f.severity == "error"]
    assert [f.path for f in faults] == ["$.trials.count"]
    assert str(problems.MAX_TRIALS) in faults[0].message
    assert not validate_suite(make_suite(trials={"count": problems.MAX_TRIALS}))

    write_json(tmp_path / "suites" / "big.json", too_many)
    write_json(tmp_path / "suites" / "other.json", make_suite("acme.test.evals.other"))
    rows = _good_rows() + standard_run(BAD).rows
    for row in rows:
        if row["runId"] != BAD and row["type"] == "eval.started":
            row["payload"] = {**row["payload"], "suiteId": "acme.test.evals.other"}
    write_events(tmp_path / "events.parquet", rows)
    result = api.grade_paths([tmp_path / "events.parquet"], [tmp_path / "suites"])
    assert (1, "suite-invalid", "error") in _problems(result)
    assert result.skipped == [BAD]
    assert sorted(result.summaries) == sorted(GOOD)


def test_e78_e52_pass_by_k_is_the_exact_formula_bit_for_bit() -> None:
    """E-78/E-52: the running products give, for every k, the float nearest the exact formula:
    the same value `float(pass_at_k(n, c, k))` gives (§3.5: agreement to 1e-9 at least)."""
    for n in range(1, 41):
        for c in range(n + 1):
            at_k, hat_k = stats.pass_by_k(n, c)
            assert at_k == [float(stats.pass_at_k(n, c, k)) for k in range(1, n + 1)]
            assert hat_k == [float(stats.pass_hat_k(n, c, k)) for k in range(1, n + 1)]
    n, c = problems.MAX_TRIALS, 4321
    at_k, hat_k = stats.pass_by_k(n, c)
    for k in (1, 2, 17, 999, 5000, n):
        assert at_k[k - 1] == float(stats.pass_at_k(n, c, k))
        assert hat_k[k - 1] == float(stats.pass_hat_k(n, c, k))


# --------------------------------------------------------------------------------------------
# E-79 / E-22: damaged files, content-free messages


def _binary_as_string(values: list[bytes]) -> pa.Array:
    """A string column holding bytes that are not UTF-8 (as a broken exporter writes them)."""
    return pa.array(values, pa.binary()).view(pa.string())


def _file_with(rows: Rows, **columns: pa.Array) -> pa.Table:
    return pa.table(
        {
            "runId": pa.array([r["runId"] for r in rows]),
            "sequence": pa.array([r["sequence"] for r in rows], pa.int64()),
            "type": pa.array([r["type"] for r in rows]),
            "payload": pa.array([json.dumps(r["payload"]) for r in rows]),
            "timestamp": pa.array([iso(r["timestamp"]) for r in rows]),
        }
        | columns
    )


def _invalid_utf8_run_ids(rows: Rows) -> pa.Table:
    return _file_with(rows, runId=_binary_as_string([b"acme/bad-0001\xff" for _ in rows]))


def _invalid_utf8_payload(rows: Rows) -> pa.Table:
    payloads = [json.dumps(r["payload"]).encode() for r in rows]
    call = next(i for i, r in enumerate(rows) if r["type"] == "agent.tool-called")
    payloads[call] = payloads[call].replace(b"SECRET", b"SECRET\xff\xfe", 1)
    return _file_with(rows, payload=_binary_as_string(payloads))


def _damaged_run_id_pages(path: Path) -> None:
    """Overwrite the runId column's first data page header: the footer still reads."""
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    data = bytearray(path.read_bytes())
    start = chunk.data_page_offset
    data[start : start + 24] = b"\xff" * 24
    path.write_bytes(bytes(data))


def _damaged_file(tmp_path: Path, kind: str) -> Path:
    write_json(tmp_path / "suites" / "basic.json", make_suite())
    write_events(tmp_path / "events" / "a.parquet", _good_rows())
    bad = tmp_path / "events" / "b.parquet"
    if kind == "run-id-utf8":
        pq.write_table(_invalid_utf8_run_ids(_bad_rows()), bad)
    elif kind == "run-id-pages":
        pq.write_table(_file_with(_bad_rows()), bad, use_dictionary=False, compression="NONE")
        _damaged_run_id_pages(bad)
    else:
        pq.write_table(_invalid_utf8_payload(_bad_rows()), bad)
    return bad


@pytest.mark.parametrize(
    ("kind", "role"),
    [("run-id-utf8", "runId"), ("run-id-pages", "runId"), ("payload-utf8", "payload")],
)
def test_e79_damaged_file_is_a_file_problem_and_the_rest_is_graded(
    tmp_path: Path, canonical: api.GradeResult, kind: str, role: str
) -> None:
    """E-79/E-22: invalid UTF-8 or damaged pages in the runId column failed the pass that plans
    the batches (internal error); invalid UTF-8 in a tool call's payload put the payload, tool
    name and arguments, into the message. Now the file is `file-unreadable` (exit 3), named with
    the damaged column's role and nothing of its content, and the other file's runs are graded."""
    bad = _damaged_file(tmp_path, kind)
    result = api.grade_paths([tmp_path / "events"], [tmp_path / "suites"])
    (row,) = [r for r in result.problems.to_dicts() if r["code"] == "file-unreadable"]
    assert str(bad) in row["message"]
    assert f"its {role} column" in row["message"]
    assert_content_free(row["message"])
    assert sorted(result.summaries) == sorted(GOOD)
    assert result.exit_code == 3
    _assert_good_runs_graded(result, canonical)


def test_e79_binary_payload_that_is_not_utf8_is_payload_invalid(
    tmp_path: Path, canonical: api.GradeResult
) -> None:
    """E-79 (D-3): a BLOB payload column whose bytes are not UTF-8 stopped the whole read; the
    event is a payload that is not JSON (`payload-invalid` on a graded type), for its run only."""
    rows = _good_rows() + _bad_rows()
    payloads = [json.dumps(r["payload"]).encode() for r in rows]
    call = next(
        i for i, r in enumerate(rows) if r["runId"] == BAD and r["type"] == "agent.tool-called"
    )
    payloads[call] = payloads[call].replace(b"SECRET", b"SECRET\xff", 1)
    write_json(tmp_path / "suites" / "basic.json", make_suite())
    pq.write_table(
        _file_with(rows, payload=pa.array(payloads, pa.binary())), tmp_path / "e.parquet"
    )
    result = api.grade_paths([tmp_path / "e.parquet"], [tmp_path / "suites"])
    assert _problems(result) == {(rows[call]["sequence"], "payload-invalid", "error")}
    assert result.skipped == [BAD]
    _assert_good_runs_graded(result, canonical)


# --------------------------------------------------------------------------------------------
# E-80: a null type


def test_e80_null_type_is_type_missing_and_cannot_hide_a_forbidden_call() -> None:
    """E-80: a row with a null type was dropped silently, so a forbidden call in it went
    unseen (forbiddenCount 1 -> 0). It is `type-missing`, an error naming the event; the run is
    not graded and another run in the same input is."""
    tasks = [golden("a", traj("any-order", forbidden=["shell:rm"]))]
    hidden = LogBuilder()
    hidden.eval_started()
    hidden.started()
    sequence = hidden.call("shell:rm", {"path": "/SECRET"})
    hidden.completed("inv-1")
    hidden.scored("a")
    hidden.eval_completed()
    hidden.rows[sequence]["type"] = None
    other = LogBuilder("acme/run-0000000000000002")
    other.eval_started()
    other.trial("a", calls=[("kb:search", {"q": 1})])
    other.eval_completed()

    result = grade([hidden, other], [suite(*tasks)])
    rows = [r for r in result.problems.to_dicts() if r["run_id"] == hidden.run_id]
    assert [(r["sequence"], r["code"], r["severity"]) for r in rows] == [
        (sequence, "type-missing", "error")
    ]
    assert result.skipped == [hidden.run_id]
    assert other.run_id in result.summaries
    for row in rows:
        assert_problem_message(row)
    reference = grade_reference(hidden.rows + other.rows, [suite(*tasks)])
    assert sorted(reference.skipped) == [hidden.run_id]


# --------------------------------------------------------------------------------------------
# Every command, end to end


@dataclass(frozen=True)
class Case:
    """A fault planted in a third run (or file) beside two clean runs."""

    build: Callable[[Path], None]  # writes tmp/events/ and tmp/suites/
    run_exit: int  # `evalbatch run`'s exit code: 3 when the run or file is skipped
    bad_explained: bool  # whether `explain --run-id BAD` finds the run (not for a left-out file)


def _plain(mutate: Callable[[Rows], None], suite_id: str = SUITE_ID) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        bad = standard_run(BAD, suite_id=suite_id).rows
        mutate(bad)
        write_json(root / "suites" / "basic.json", make_suite())
        write_events(root / "events" / "e.parquet", _good_rows() + bad)

    return build


def _set(index: int, **fields: Any) -> Callable[[Rows], None]:
    def mutate(rows: Rows) -> None:
        rows[index].update(fields)

    return mutate


def _number(type_: str, field: str, number: str) -> Callable[[Rows], None]:
    return lambda rows: _with_number(_first(rows, type_), field, number)


def _trial_count(rows: Rows) -> None:
    started = _first(rows, "eval.started")
    started["payload"] = {**started["payload"], "trialCount": 1_000_000_000}


def _null_type(rows: Rows) -> None:
    _first(rows, "agent.tool-called")["type"] = None


def _damaged(kind: str) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        _damaged_file(root, kind)

    return build


def _every_row(**fields: Any) -> Callable[[Rows], None]:
    def mutate(rows: Rows) -> None:
        for row in rows:
            row.update(fields)

    return mutate


CASES = {
    "sequence-max": Case(_plain(_set(3, sequence=2**63 - 1)), 3, True),
    "sequence-min": Case(_plain(_set(3, sequence=-(2**63))), 3, True),
    "usage-cost-1e400": Case(
        _plain(_number("provider.usage", "costEstimateUsd", "1e400")), 0, True
    ),
    "scored-cost-1e20": Case(_plain(_number("eval.scored", "costUsd", "1e20")), 0, True),
    "latency-1e300": Case(_plain(_number("eval.scored", "latencyMs", "1e300")), 0, True),
    "trial-count": Case(_plain(_trial_count, "acme.test.evals.unknown"), 3, True),
    "null-type": Case(_plain(_null_type), 3, True),
    "run-id-utf8": Case(_damaged("run-id-utf8"), 3, False),
    "run-id-pages": Case(_damaged("run-id-pages"), 3, False),
    "payload-utf8": Case(_damaged("payload-utf8"), 3, False),
    "timestamp-year-0": Case(_plain(_every_row(timestamp="0000-01-01T00:00:00Z")), 0, True),
    "timestamp-year-10000": Case(_plain(_every_row(timestamp="10000-01-01T00:00:00Z")), 0, True),
    "run-id-empty": Case(_plain(_every_row(runId="")), 0, False),
    "run-id-blank": Case(_plain(_every_row(runId=" \t")), 0, False),
}


@pytest.fixture
def no_warnings() -> Iterator[None]:
    """E-84: no Polars or numpy warning reaches a user."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_s6_every_command_contains_the_fault(
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_warnings: None,
) -> None:
    """§6: on these inputs `run` exits 0 or 3 with the clean runs' summaries written; `verify`,
    `sql`, `explain` and `regress` do their work on the clean runs, never ending in "internal
    error"; and nothing printed or written carries content (E-79)."""
    case = CASES[name]
    case.build(tmp_path)
    events, suites, out = tmp_path / "events", tmp_path / "suites", tmp_path / "out"

    code, stdout, stderr = run_main(
        monkeypatch, capsys, "run", events, "--suites", suites, "--out", out
    )
    assert code == case.run_exit, stderr
    lines = (out / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    written = [json.loads(line)["runId"] for line in lines]
    assert set(GOOD) <= set(written)
    messages = pl.read_parquet(out / "problems.parquet")["message"].to_list()
    for text in [stdout, stderr, *messages]:
        assert_content_free(text)

    outputs = {
        "verify": ["verify", events, "--suites", suites],
        "sql": ["sql", events, "--suites", suites, "-e", "SELECT run_id FROM summaries"],
        "explain": ["explain", events, "--suites", suites, "--run-id", GOOD[0]],
        "regress": [
            "regress",
            events,
            events,
            "--suites",
            suites,
            "--base-run-id",
            GOOD[0],
            "--cand-run-id",
            GOOD[1],
        ],
    }
    if case.bad_explained:
        outputs["explain-bad"] = ["explain", events, "--suites", suites, "--run-id", BAD]
    found = pl.read_parquet(out / "problems.parquet").filter(pl.col("severity") == "error")
    # a file left out, or a run of a compared pair not graded (each side holds both runs)
    lost = found.height > 0
    for command, args in outputs.items():
        code, stdout, stderr = run_main(monkeypatch, capsys, *args)
        assert "internal error" not in stderr, (command, stderr)
        if command == "regress" and lost and code == 2:
            # E-65: a side with a file it could not read may have lost a run of any suite, and
            # a pair whose run was not graded compared nothing: exit 2 with the reason
            assert code == 2 and "nothing was compared" in stderr, (command, stderr)
            assert_content_free(stdout + stderr)
            continue
        assert code != 2, (command, stderr)
        if command == "sql":
            assert code == 0 and all(run in stdout for run in GOOD), stdout
        if command in ("explain", "regress"):
            assert code == 0, (command, stderr)
        if not command.startswith("explain"):  # explain shows tool names by design (E-59)
            assert_content_free(stdout + stderr)


@pytest.mark.parametrize("column", ["runId", "type"])
def test_e79_run_id_or_type_as_bytes_is_a_file_problem(tmp_path: Path, column: str) -> None:
    """§1.1, E-79: `runId` and `type` are strings. Stored as bytes (BLOB), DuckDB's text cast
    would escape them (`acme/run-\\xFF`) and grade the run under an id that is not the log's, so
    the file is left out (`columns-missing`, exit 3) and the others are graded."""
    good = write_events(tmp_path / "good.parquet", standard_run("acme/run-good").rows)
    table = pq.read_table(write_events(tmp_path / "b.parquet", standard_run("acme/run-b").rows))
    index = table.schema.get_field_index(column)
    as_bytes = pa.array([v.encode() for v in table[column].to_pylist()], pa.binary())
    pq.write_table(table.set_column(index, column, as_bytes), tmp_path / "b.parquet")
    result = api.grade_paths(
        [good, tmp_path / "b.parquet"], [write_json(tmp_path / "s.json", make_suite())]
    )
    assert list(result.summaries) == ["acme/run-good"]
    lost = result.problems.filter(pl.col("code") == "columns-missing")
    assert lost.height == 1 and "b.parquet" in lost["message"][0]
    assert result.exit_code == 3


@pytest.mark.parametrize("blank", ["", " ", "\u3000"], ids=repr)
def test_e3_a_log_of_blank_run_ids_holds_no_run_for_any_command(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    blank: str,
) -> None:
    """E-3: a log whose runId is `""` or `" "` was graded (exit 0, a summary with `"runId":
    ""`), verified and passed conformance. Its rows name no run: `run` has nothing to grade
    and says how many rows had no runId, and `verify` (with `--conformance` too) has nothing to
    verify, each exit 2."""
    rows = [{**row, "runId": blank} for row in _bad_rows()]
    events = write_events(tmp_path / "events" / "e.parquet", rows)
    suites = write_json(tmp_path / "suites" / "basic.json", make_suite()).parent
    code, _, stderr = run_main(
        monkeypatch, capsys, "run", events, "--suites", suites, "--out", tmp_path / "out"
    )
    assert code == 2 and f"({len(rows)} row(s) without a runId)" in stderr, stderr
    assert not (tmp_path / "out").exists()
    for flags in ([], ["--conformance"]):
        code, _, stderr = run_main(
            monkeypatch, capsys, "verify", events, "--suites", suites, *flags
        )
        assert code == 2, (flags, stderr)


@pytest.mark.parametrize("error", ["InterruptException", "OutOfMemoryException"])
def test_e79_a_stopped_or_full_pass_does_not_reread_every_file(
    monkeypatch: pytest.MonkeyPatch, error: str
) -> None:
    """E-79: a failed read makes every file be read once more to find the damaged ones. A pass
    that was interrupted (another batch failed to write) or ran out of memory says nothing
    about the files: it is raised at once, without that second full read."""
    from evalbatch.inputs import event_files

    def stopped() -> None:
        raise getattr(duckdb, error)("stopped")

    def reread(*args: object) -> list[object]:
        raise AssertionError("every file read again")

    monkeypatch.setattr(event_files, "find_unreadable", reread)
    with pytest.raises(getattr(duckdb, error)):
        event_files.leaving_out_damaged(duckdb.connect(), event_files.Sources(), stopped)
