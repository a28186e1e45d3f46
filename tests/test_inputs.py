"""Event-log inputs (CONTRACT §1.1) and bad input (CONTRACT §6), through `evalbatch.api`.

Every layout test grades the same run written a different way and asserts the summaries (as the
exact `summaries.jsonl` text) and the problems equal those of the canonical layout: the layout of a
file must never change a grade.
"""

from __future__ import annotations

import json
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalbatch import api
from evalbatch.errors import EXIT_SKIPPED, InputError, SuiteError
from evalbatch.pipeline.collect import summaries_jsonl
from tests.helpers import (
    AGENT,
    OTHER_SUITE_ID,
    STEP,
    SUITE_ID,
    TOOL,
    V1_NAMES,
    RunLog,
    assert_problem_message,
    make_suite,
    problem_rows,
    shuffled,
    standard_run,
    write_events,
    write_json,
)

RUN = "acme/run-0001"
RUN2 = "acme/run-0002"


def grade(events: list[Path | str], suites: list[Path], **kwargs: Any) -> api.GradeResult:
    result = api.grade_paths(events, suites, **kwargs)
    for row in problem_rows(result):
        assert_problem_message(row)
    return result


def problems(result: api.GradeResult) -> list[tuple[Any, ...]]:
    return [(r["run_id"], r["sequence"], r["code"]) for r in problem_rows(result)]


@pytest.fixture(scope="module")
def canonical(tmp_path_factory: pytest.TempPathFactory) -> api.GradeResult:
    """The standard run in the canonical layout: runId/sequence/type/payload (JSON text) and an
    ISO-8601 timestamp string."""
    root = tmp_path_factory.mktemp("canonical")
    write_json(root / "suites" / "basic.json", make_suite())
    path = write_events(root / "events.parquet", standard_run(RUN).rows)
    return grade([path], [root / "suites"])


def assert_same_grade(result: api.GradeResult, canonical: api.GradeResult) -> None:
    assert summaries_jsonl(result) == summaries_jsonl(canonical)
    assert problems(result) == problems(canonical)
    assert result.exit_code == canonical.exit_code


# --------------------------------------------------------------------------------------------
# §1.1 layout


def test_s1_1_canonical_layout_grades_the_standard_run(canonical: api.GradeResult) -> None:
    """§1.1 canonical columns: the baseline every layout test compares with is a real grade."""
    summary = canonical.summaries[RUN]
    assert problems(canonical) == []
    assert canonical.exit_code == 0
    assert summary["suiteId"] == SUITE_ID
    assert summary["aggregateScore"] == 0.75
    assert summary["totalCostUsd"] == pytest.approx(0.003)
    alpha, beta = summary["tasks"]
    assert (alpha["taskId"], alpha["score"], alpha["passed"]) == ("alpha", 1.0, True)
    assert alpha["trajectory"]["matched"] is True
    # §3.5 latency: alpha has no latencyMs, so the bracket's timestamp span (4 steps) is used
    assert alpha["latencyMs"] == 4 * STEP.total_seconds() * 1000
    assert (beta["taskId"], beta["score"], beta["passed"], beta["latencyMs"]) == (
        "beta",
        0.5,
        False,
        250,
    )
    assert beta["trajectory"]["matched"] is True


@pytest.mark.slow
def test_s1_1_column_aliases_run_id_seq_data(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§1.1: `run_id`, `seq` and `data` are accepted for runId, sequence and payload."""
    path = write_events(
        tmp_path / "aliases.parquet",
        standard_run(RUN).rows,
        names={"runId": "run_id", "sequence": "seq", "payload": "data"},
    )
    assert_same_grade(grade([path], [suite_dir]), canonical)


@pytest.mark.slow
def test_s1_1_each_alias_alone(tmp_path: Path, suite_dir: Path, canonical: api.GradeResult) -> None:
    """§1.1: each alias is accepted next to canonical names for the other columns (one file per
    alias, one run per file)."""
    aliases = {"runId": "run_id", "sequence": "seq", "payload": "data"}
    for number, (canonical_name, alias) in enumerate(aliases.items()):
        write_events(
            tmp_path / "in" / f"{alias}.parquet",
            standard_run(f"acme/run-{number}").rows,
            names={canonical_name: alias},
        )
    result = grade([tmp_path / "in"], [suite_dir])
    assert problems(result) == []
    assert len(result.summaries) == len(aliases)
    for summary in result.summaries.values():
        assert summary == canonical.summaries[RUN]


@pytest.mark.slow
def test_s1_1_unknown_extra_columns_are_ignored(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§1.1: "unknown extra columns are ignored", optional envelope columns included."""
    rows = standard_run(RUN).rows
    n = len(rows)
    extra = {
        "eventId": pa.array([f"evt-{i}" for i in range(n)]),
        "schemaVersion": pa.array([2] * n, pa.int64()),
        "nodeId": pa.array([None] * n, pa.string()),
        "causationId": pa.array([f"evt-{i - 1}" if i else None for i in range(n)]),
        "engineVersion": pa.array(["9.9.9"] * n),
        "exporter_batch": pa.array([7] * n, pa.int32()),
        "weird struct": pa.array([{"x": i, "y": [i]} for i in range(n)]),
        "run": pa.array(["not-the-run-id"] * n),
    }
    path = write_events(tmp_path / "extra.parquet", rows, extra=extra)
    assert_same_grade(grade([path], [suite_dir]), canonical)


def test_s1_1_e7_struct_payload_null_fields_dropped(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§1.1 / E-7: a struct payload column is read as its JSON with null fields dropped at every
    depth. The inferred struct is the union of all events' fields, so alpha's eval.scored has a
    null `latencyMs`, beta's a null `trialIndex` (would be `trial-index-invalid`), one usage a null
    `costEstimateUsd` (would be `cost-invalid`) and alpha's call inputs a null `fields` (would break
    the exact args match)."""
    path = write_events(tmp_path / "struct.parquet", standard_run(RUN).rows, payload="struct")
    payload_type = pq.read_schema(path).field("payload").type
    assert pa.types.is_struct(payload_type)
    result = grade([path], [suite_dir])
    assert_same_grade(result, canonical)
    assert result.summaries[RUN]["tasks"][0]["trajectory"]["matched"] is True


def test_s1_1_struct_payload_under_data_alias(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§1.1: the `data` alias may hold a struct too."""
    path = write_events(
        tmp_path / "struct.parquet",
        standard_run(RUN).rows,
        payload="struct",
        names={"payload": "data"},
    )
    assert_same_grade(grade([path], [suite_dir]), canonical)


def test_s1_1_map_payload_read_as_its_json(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§1.1: "a struct/map column is read as its JSON". The map's values are typed JSON
    (map<string, arrow.json>), so the payload reads exactly as the JSON text does."""
    path = write_events(tmp_path / "map.parquet", standard_run(RUN).rows, payload="map")
    assert pa.types.is_map(pq.read_schema(path).field("payload").type)
    assert_same_grade(grade([path], [suite_dir]), canonical)


def test_s1_1_payload_json_text_as_binary_column(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§1.1 payload as JSON text: UTF-8 JSON stored in a plain binary column (no string
    annotation, as some writers do) is still the JSON text."""
    path = write_events(tmp_path / "binary.parquet", standard_run(RUN).rows, payload="binary")
    assert_same_grade(grade([path], [suite_dir]), canonical)


def test_s1_1_timestamp_as_parquet_timestamp(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§1.1: `timestamp` may be a Parquet timestamp (UTC-adjusted or naive) instead of an ISO
    string; the bracket span that makes alpha's latency (§3.5) is the same."""
    for kind in ("parquet", "naive"):
        path = write_events(
            tmp_path / "in" / f"{kind}.parquet",
            standard_run(f"acme/run-{kind}").rows,
            timestamp=kind,
        )
        assert pa.types.is_timestamp(pq.read_schema(path).field("timestamp").type)
    result = grade([tmp_path / "in"], [suite_dir])
    assert problems(result) == []
    assert list(result.summaries) == ["acme/run-naive", "acme/run-parquet"]
    for summary in result.summaries.values():
        assert summary == canonical.summaries[RUN]
        assert summary["tasks"][0]["latencyMs"] == 400


@pytest.mark.slow
def test_s1_1_timestamp_iso_with_offset(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§1.1 ISO-8601 timestamps: the same instants written with a +02:00 offset give the same
    span."""
    rows = standard_run(RUN).rows
    plus_two = timezone(timedelta(hours=2))
    for row in rows:
        row["timestamp"] = row["timestamp"].astimezone(plus_two).isoformat(timespec="milliseconds")
    assert rows[0]["timestamp"].endswith("+02:00")
    path = write_events(tmp_path / "offset.parquet", rows)
    assert_same_grade(grade([path], [suite_dir]), canonical)


def test_s1_1_no_timestamp_column(tmp_path: Path, suite_dir: Path) -> None:
    """§1.1: `timestamp` is optional. Without it a bracket has no span, so a trial without
    `latencyMs` has no latency (§3.5, E-17), and the run is still graded."""
    path = write_events(tmp_path / "nots.parquet", standard_run(RUN).rows, timestamp=None)
    result = grade([path], [suite_dir])
    alpha, beta = result.summaries[RUN]["tasks"]
    assert "latencyMs" not in alpha
    assert beta["latencyMs"] == 250
    assert result.exit_code == 0


@pytest.mark.slow
def test_s1_1_row_order_means_nothing(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§1.1: "Order of rows in files means nothing: order is (runId, sequence)"."""
    rows = standard_run(RUN).rows + standard_run(RUN2).rows
    in_order = grade([write_events(tmp_path / "ordered.parquet", rows)], [suite_dir])
    backwards = sorted(rows, key=lambda r: (r["sequence"], r["runId"]), reverse=True)
    path = write_events(tmp_path / "shuffled.parquet", shuffled(rows, 1))
    path2 = write_events(tmp_path / "backwards" / "b.parquet", backwards)
    result = grade([path], [suite_dir])
    assert summaries_jsonl(grade([path2], [suite_dir])) == summaries_jsonl(in_order)
    assert summaries_jsonl(result) == summaries_jsonl(in_order)
    assert problems(result) == problems(in_order) == []
    assert result.summaries[RUN] == canonical.summaries[RUN]


# --------------------------------------------------------------------------------------------
# §1.1 how inputs are named: files, directories, globs, hive partitions


@pytest.fixture
def spread(tmp_path: Path) -> Path:
    """Two runs in a nested tree, plus a file that is not `*.parquet`."""
    root = tmp_path / "tree"
    write_events(root / "a.parquet", standard_run(RUN).rows)
    write_events(root / "sub" / "deeper" / "b.parquet", standard_run(RUN2).rows)
    (root / "sub" / "README.txt").write_text("not an event file")
    return root


def test_s1_1_input_single_file(spread: Path, suite_dir: Path) -> None:
    """§1.1: an input may be one file; only its runs are graded."""
    result = grade([spread / "a.parquet"], [suite_dir])
    assert list(result.summaries) == [RUN]


@pytest.mark.slow
def test_s1_1_input_directory_is_recursive(spread: Path, suite_dir: Path) -> None:
    """§1.1: a directory contributes every Parquet file below it, at any depth; other files in it
    are not event files."""
    result = grade([spread], [suite_dir])
    assert list(result.summaries) == [RUN, RUN2]
    assert problems(result) == []


@pytest.mark.slow
@pytest.mark.parametrize("pattern", ["**/*.parquet", "sub/*/b.parquet", "*.parquet"])
def test_s1_1_input_glob(spread: Path, suite_dir: Path, pattern: str) -> None:
    """§1.1: an input may be a glob (recursive `**` included)."""
    expected = {"**/*.parquet": [RUN, RUN2], "sub/*/b.parquet": [RUN2], "*.parquet": [RUN]}
    result = grade([str(spread / pattern)], [suite_dir])
    assert list(result.summaries) == expected[pattern]


@pytest.mark.slow
def test_s1_1_input_file_named_twice_is_read_once(
    spread: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§1.1 / D-3: a file given directly, inside a directory and through a glob is one input; its
    rows are not conflicting duplicates of themselves."""
    result = grade(
        [spread / "a.parquet", spread, str(spread / "*.parquet")],
        [suite_dir],
    )
    assert list(result.summaries) == [RUN, RUN2]
    assert result.summaries[RUN] == canonical.summaries[RUN]
    assert problems(result) == []


@pytest.mark.slow
def test_s1_1_several_files_with_different_aliases_and_payload_kinds(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§1.1: one run's rows split over files whose columns use different aliases, payload kinds
    and timestamp types are read as one log."""
    rows = shuffled(standard_run(RUN).rows, 7)
    third = len(rows) // 3
    files = [
        write_events(tmp_path / "p1.parquet", rows[:third]),
        write_events(
            tmp_path / "p2.parquet",
            rows[third : 2 * third],
            names={"runId": "run_id", "sequence": "seq", "payload": "data"},
            timestamp="parquet",
        ),
        write_events(
            tmp_path / "p3.parquet",
            rows[2 * third :],
            names={"sequence": "seq"},
            payload="struct",
        ),
    ]
    assert_same_grade(grade(files, [suite_dir]), canonical)


@pytest.mark.slow
def test_s1_1_hive_partitioned_directories(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§1.1 "hive-partitioned or not": date=.../part-N.parquet directories are read; the partition
    column is an extra column and changes nothing."""
    rows = standard_run(RUN).rows
    root = tmp_path / "hive"
    write_events(root / "date=2026-11-02" / "part-0.parquet", rows[:6])
    write_events(root / "date=2026-11-02" / "part-1.parquet", rows[6:12])
    write_events(root / "date=2026-11-03" / "part-0.parquet", rows[12:])
    assert_same_grade(grade([root], [suite_dir]), canonical)
    glob_result = grade([str(root / "date=*" / "*.parquet")], [suite_dir])
    assert_same_grade(glob_result, canonical)


@pytest.mark.slow
def test_s1_1_hive_partitioned_and_plain_inputs_together(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§1.1 "Inputs are one or more files, directories or globs, hive-partitioned or not": a plain
    file, a date=... directory and a date=.../region=... directory given together are all read
    (files with different partition keys are not one dataset)."""
    plain = write_events(tmp_path / "plain.parquet", standard_run("acme/run-plain-file").rows)
    by_date = tmp_path / "by-date"
    write_events(by_date / "date=2026-11-02" / "part-0.parquet", standard_run("acme/run-d").rows)
    by_region = tmp_path / "by-region"
    write_events(
        by_region / "date=2026-11-02" / "region=eu" / "part-0.parquet",
        standard_run("acme/run-r").rows,
    )
    result = grade([plain, by_date, by_region], [suite_dir])
    assert list(result.summaries) == ["acme/run-d", "acme/run-plain-file", "acme/run-r"]
    for summary in result.summaries.values():
        assert summary == canonical.summaries[RUN]
    assert problems(result) == []


def _without_run_column(path: Path) -> None:
    table = pq.read_table(path)
    pq.write_table(table.drop(["runId"]), path)


@pytest.mark.slow
def test_s1_1_hive_partition_directory_supplies_run_id(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§1.1 hive partitioning: files under runId=<id>/ directories that lack a runId column take it
    from the partition (a '/' in the id written as %2F, as Hive escapes it)."""
    root = tmp_path / "by-run"
    first = write_events(root / "runId=acme%2Frun-0001" / "part-0.parquet", standard_run(RUN).rows)
    second = write_events(root / "runId=run-0002" / "part-0.parquet", standard_run("run-0002").rows)
    _without_run_column(first)
    _without_run_column(second)
    result = grade([root], [suite_dir])
    assert list(result.summaries) == [RUN, "run-0002"]
    assert summaries_jsonl(result).splitlines()[0] == summaries_jsonl(canonical).strip()
    assert problems(result) == []


@pytest.mark.slow
def test_d1_v1_type_names_map_to_v2(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """D-1: v1 spellings of the invocation and tool events grade exactly as the v2 names."""
    rows = standard_run(RUN).rows
    assert {r["type"] for r in rows} >= set(V1_NAMES)
    for row in rows:
        row["type"] = V1_NAMES.get(row["type"], row["type"])
    path = write_events(tmp_path / "v1.parquet", rows)
    assert_same_grade(grade([path], [suite_dir]), canonical)


def test_d1_unknown_types_are_ignored(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """D-1: "Unknown types are ignored, never an error" (here after the run completed, so no trial
    span moves)."""
    log = standard_run(RUN)
    log.emit("vendor.custom-thing", {"anything": [1, 2, 3]})
    log.emit("agent.toolCalledLater", {"toolName": TOOL})
    path = write_events(tmp_path / "unknown.parquet", log.rows)
    result = grade([path], [suite_dir])
    assert summaries_jsonl(result) == summaries_jsonl(canonical)
    assert problems(result) == []


def test_e1_runs_without_eval_started_are_not_eval_runs(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§2.1 / E-1: a runId with no eval.started gives no summary and no problem."""
    plain = RunLog("acme/run-plain")
    plain.emit("run.started", {})
    plain.emit("agent.invocation-started", {"invocationId": "i", "agentId": AGENT})
    plain.emit("run.completed", {})
    path = write_events(tmp_path / "mixed.parquet", standard_run(RUN).rows + plain.rows)
    assert_same_grade(grade([path], [suite_dir]), canonical)


# --------------------------------------------------------------------------------------------
# D-3 duplicates


def test_d3_identical_duplicates_are_one_event(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """D-3: rows with one (runId, sequence), one type and JSON-equal payloads (key order ignored,
    1 equals 1.0) are one event (exports retry), in the same file or in another."""
    rows = standard_run(RUN).rows
    retried = []
    for row in rows:
        payload = row["payload"]
        if isinstance(payload, dict):
            flipped = dict(reversed(list(payload.items())))
            if payload.get("score") == 1.0:
                flipped["score"] = 1
            retried.append({**row, "payload": json.dumps(flipped)})
    first = write_events(tmp_path / "a.parquet", rows + retried[:5])
    second = write_events(tmp_path / "b.parquet", retried[5:])
    assert_same_grade(grade([first, second], [suite_dir]), canonical)


def test_d3_duplicate_keeps_earliest_timestamp(tmp_path: Path, suite_dir: Path) -> None:
    """D-3: "of these the earliest timestamp is kept": a retried bracket start stamped later
    changes nothing; one stamped earlier becomes the start of the span (§3.5 latency)."""
    expected = {"acme/run-later": (1000, 400), "acme/run-earlier": (-1000, 1400)}
    rows = []
    for run_id, (shift_ms, _) in expected.items():
        run_rows = standard_run(run_id).rows
        start = next(r for r in run_rows if r["type"] == "agent.invocation-started")
        copy = {**start, "timestamp": start["timestamp"] + timedelta(milliseconds=shift_ms)}
        rows += [copy, *run_rows]
    result = grade([write_events(tmp_path / "dup.parquet", rows)], [suite_dir])
    assert problems(result) == []
    for run_id, (_, latency) in expected.items():
        assert result.summaries[run_id]["tasks"][0]["latencyMs"] == latency


# --------------------------------------------------------------------------------------------
# §6 bad input


@pytest.fixture
def good_file(tmp_path: Path) -> Path:
    return write_events(tmp_path / "in" / "good.parquet", standard_run(RUN).rows)


def _file_problem(result: api.GradeResult, code: str) -> list[dict[str, Any]]:
    rows = problem_rows(result, code)
    for row in rows:
        assert row["severity"] == "error"
        assert row["run_id"] is None
    return rows


@pytest.mark.slow
def test_s6_file_missing_required_column(
    tmp_path: Path, suite_dir: Path, good_file: Path, canonical: api.GradeResult
) -> None:
    """§6 missing/renamed columns: each such file is reported (`columns-missing`, naming the
    column and the file) and left out; every other file is graded; the result says something was
    skipped (exit code 3)."""
    cases = {  # file -> (columns dropped, columns renamed, the column the message must name)
        "no-type": (["type"], {}, "type"),
        "no-payload": (["payload"], {}, "payload"),
        "no-sequence": (["sequence"], {}, "sequence"),
        "runId-renamed": ([], {"runId": "run"}, "runId"),
    }
    bad_files = {}
    for name, (dropped, rename, column) in cases.items():
        bad = write_events(tmp_path / "in" / f"{name}.parquet", standard_run(f"acme/{name}").rows)
        table = pq.read_table(bad).drop(dropped)
        table = table.rename_columns([rename.get(c, c) for c in table.column_names])
        pq.write_table(table, bad)
        bad_files[str(bad)] = column
    result = grade([tmp_path / "in"], [suite_dir])
    assert list(result.summaries) == [RUN]
    assert result.summaries[RUN] == canonical.summaries[RUN]
    rows = _file_problem(result, "columns-missing")
    assert len(rows) == len(cases)
    for path, column in bad_files.items():
        (message,) = [r["message"] for r in rows if path in r["message"]]
        assert f"missing required column(s) {column}" in message
    assert result.exit_code == EXIT_SKIPPED == 3


def _cut_middle(data: bytes) -> bytes:
    """Bytes cut out of the data pages; the footer (and its magic) stays whole."""
    return data[:200] + data[400:]


def test_s6_file_not_parquet_or_truncated(
    tmp_path: Path, suite_dir: Path, good_file: Path, canonical: api.GradeResult
) -> None:
    """§6 "a file that is not Parquet or is truncated": problem `file-unreadable` naming each such
    file; every other file is still graded; the result says something was skipped (exit code 3)."""
    data = write_events(tmp_path / "whole.parquet", standard_run(RUN2).rows).read_bytes()
    bad = {
        "text": b"runId,sequence,type,payload\nnot,parquet,at,all\n",
        "truncated-tail": data[: len(data) // 2],
        "no-footer-magic": data[:-4],
        "empty": b"",
    }
    for name, content in bad.items():
        (tmp_path / "in" / f"{name}.parquet").write_bytes(content)
    result = grade([tmp_path / "in"], [suite_dir])
    assert list(result.summaries) == [RUN]
    assert result.summaries[RUN] == canonical.summaries[RUN]
    rows = _file_problem(result, "file-unreadable")
    assert sorted(r["message"].split(": ")[2] for r in rows) == sorted(
        str(tmp_path / "in" / f"{name}.parquet") for name in bad
    )
    assert result.exit_code == 3


def test_s6_file_with_cut_data_pages_is_unreadable_not_fatal(
    tmp_path: Path, suite_dir: Path, good_file: Path, canonical: api.GradeResult
) -> None:
    """§6 truncated file: bytes cut out of the data pages while the footer stays whole (so the
    file's columns can be listed) must still be `file-unreadable` for that file alone, with every
    other file graded, not an error that loses the whole input."""
    data = write_events(tmp_path / "whole.parquet", standard_run(RUN2).rows).read_bytes()
    bad = tmp_path / "in" / "cut.parquet"
    bad.write_bytes(_cut_middle(data))
    result = grade([tmp_path / "in"], [suite_dir])
    assert list(result.summaries) == [RUN]
    assert result.summaries[RUN] == canonical.summaries[RUN]
    rows = _file_problem(result, "file-unreadable")
    assert len(rows) == 1 and str(bad) in rows[0]["message"]
    assert result.exit_code == 3


def test_s6_all_files_unusable_raises_input_error(tmp_path: Path, suite_dir: Path) -> None:
    """§6: when no file can be used the input is unusable: a clear error naming every file and
    why (the CLI turns it into exit code 2)."""
    text = tmp_path / "in" / "a.parquet"
    text.parent.mkdir()
    text.write_text("hello")
    nocols = write_events(tmp_path / "in" / "b.parquet", standard_run(RUN).rows)
    pq.write_table(pq.read_table(nocols).drop(["type"]), nocols)
    with pytest.raises(InputError) as err:
        api.grade_paths([tmp_path / "in"], [suite_dir])
    message = str(err.value)
    assert str(text) in message and str(nocols) in message
    assert "type" in message


def test_s6_no_event_file_at_path(tmp_path: Path, suite_dir: Path) -> None:
    """§6: a path or glob that names nothing is unusable input, said in one line."""
    with pytest.raises(InputError, match="no event file"):
        api.grade_paths([tmp_path / "nothing-here.parquet"], [suite_dir])
    with pytest.raises(InputError, match="no event file"):
        api.grade_paths([str(tmp_path / "*.parquet")], [suite_dir])


@pytest.mark.slow
def test_s6_d3_conflicting_duplicate_skips_only_that_run(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§6 / D-3: same (runId, sequence) with different content: the run is corrupt and not graded
    (`event-conflict` naming the sequence); every other run is graded; exit code 3."""
    corrupt = standard_run(RUN2).rows
    scored = next(r for r in corrupt if r["type"] == "eval.scored")
    twin = {**scored, "payload": {**scored["payload"], "score": 0.0}}
    path = write_events(tmp_path / "e.parquet", standard_run(RUN).rows + corrupt + [twin])
    result = grade([path], [suite_dir])
    assert list(result.summaries) == [RUN]
    assert result.summaries[RUN] == canonical.summaries[RUN]
    assert (RUN2, scored["sequence"], "event-conflict") in problems(result)
    assert problem_rows(result, "event-conflict")[0]["severity"] == "error"
    assert result.skipped == [RUN2]
    runs = {r["run_id"]: r["graded"] for r in result.runs.to_dicts()}
    assert runs == {RUN: True, RUN2: False}
    assert result.exit_code == 3


@pytest.mark.slow
def test_s6_d3_conflicting_type_same_sequence(tmp_path: Path, suite_dir: Path) -> None:
    """D-3: same key, different type is a conflict too (across files)."""
    rows = standard_run(RUN).rows
    twin = {**rows[2], "type": "agent.decided"}
    first = write_events(tmp_path / "a.parquet", rows)
    second = write_events(tmp_path / "b.parquet", [twin])
    result = grade([first, second], [suite_dir])
    assert result.summaries == {}
    assert problems(result) == [(RUN, 2, "event-conflict")]
    assert result.exit_code == 3


@pytest.mark.slow
def test_s6_d3_sequence_gap_is_a_warning(tmp_path: Path, suite_dir: Path) -> None:
    """§6 / D-3 / E-5: a gap in `sequence` is a warning at the event after the gap; the run is
    graded and the exit code stays 0. A log that does not start at 0 is not a gap."""
    rows = standard_run(RUN).rows
    returned = next(r for r in rows if r["type"] == "agent.tool-returned")
    kept = [r for r in rows if r is not returned and r["sequence"] != 0]
    result = grade([write_events(tmp_path / "gap.parquet", kept)], [suite_dir])
    assert problems(result) == [(RUN, returned["sequence"] + 1, "sequence-gap")]
    assert problem_rows(result)[0]["severity"] == "warning"
    assert RUN in result.summaries
    assert result.exit_code == 0


def test_s6_eval_started_without_eval_completed(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§6 / §2.1: an eval.started without eval.completed is still graded (warning
    `eval-incomplete` at the eval.started)."""
    rows = [
        r for r in standard_run(RUN).rows if r["type"] not in ("eval.completed", "run.completed")
    ]
    result = grade([write_events(tmp_path / "open.parquet", rows)], [suite_dir])
    assert problems(result) == [(RUN, 1, "eval-incomplete")]
    assert result.summaries[RUN] == canonical.summaries[RUN]
    assert result.exit_code == 0


@pytest.mark.slow
def test_s6_unclosed_bracket(tmp_path: Path, suite_dir: Path) -> None:
    """§6 / §2.1: a bracket whose completion never comes runs to the end of the segment (warning
    `bracket-unclosed` at the invocation's start); the run is graded."""
    log = RunLog(RUN)
    log.emit("run.started", {})
    log.eval_started()
    log.trial("alpha", close=False)
    log.trial("beta", inputs={"orderId": "ORD-SECRET-beta", "fields": ["status"]})
    log.eval_completed()
    result = grade([write_events(tmp_path / "e.parquet", log.rows)], [suite_dir])
    assert problems(result) == [(RUN, 2, "bracket-unclosed")]
    alpha = result.summaries[RUN]["tasks"][0]
    assert alpha["trajectory"]["observedCount"] == 1
    # an unclosed bracket ends at the segment's last event, the eval.scored (§3.5): 4 steps
    assert alpha["latencyMs"] == 400
    assert result.exit_code == 0


@pytest.mark.slow
def test_s6_d13_unknown_task_left_out(
    tmp_path: Path, suite_dir: Path, canonical: api.GradeResult
) -> None:
    """§6 / D-13: an eval.scored for a taskId not in the suite is left out (`task-unknown`)."""
    log = standard_run(RUN)
    log.rows = [r for r in log.rows if r["type"] not in ("eval.completed", "run.completed")]
    log.now = log.rows[-1]["timestamp"]
    log.trial("gamma-unknown")
    completed = log.eval_completed()
    result = grade([write_events(tmp_path / "e.parquet", log.rows)], [suite_dir])
    summary = result.summaries[RUN]
    assert [t["taskId"] for t in summary["tasks"]] == ["alpha", "beta"]
    assert summary["taskCount"] == 2
    assert summary["totalCostUsd"] == canonical.summaries[RUN]["totalCostUsd"]
    assert problems(result) == [(RUN, completed - 1, "task-unknown")]
    assert result.exit_code == 0


@pytest.mark.slow
def test_s6_d13_missing_task(tmp_path: Path, canonical: api.GradeResult) -> None:
    """§6 / D-13: a suite task with no trial in the log scores 0 and fails (`task-missing`)."""
    suites = tmp_path / "suites3"
    write_json(suites / "s.json", make_suite(task_ids=("alpha", "beta", "delta")))
    path = write_events(tmp_path / "e.parquet", standard_run(RUN).rows)
    result = grade([path], [suites])
    summary = result.summaries[RUN]
    delta = summary["tasks"][2]
    assert delta["taskId"] == "delta"
    assert (delta["score"], delta["passed"]) == (0, False)
    assert delta.get("costUsd") == 0
    assert "latencyMs" not in delta and "efficiency" not in delta and "trajectory" not in delta
    assert summary["taskCount"] == 3
    assert summary["aggregateScore"] == pytest.approx(0.5)
    codes = [p[2] for p in problems(result)]
    assert codes == ["task-missing"]
    assert result.exit_code == 0


def test_s6_d11_score_out_of_range_fails_closed(tmp_path: Path, suite_dir: Path) -> None:
    """§6 / D-11: a score outside 0..1 or not a JSON number makes the trial score 0, passed false
    (`score-invalid` at the eval.scored); the run is graded. One run per bad score."""
    bad_scores: dict[str, Any] = {
        "acme/run-above": 1.5,
        "acme/run-below": -0.25,
        "acme/run-text": "0.5",
        "acme/run-bool": True,
        "acme/run-null": None,
    }
    rows = []
    for run_id, score in bad_scores.items():
        log = RunLog(run_id)
        log.emit("run.started", {})
        log.eval_started()
        log.trial("alpha", score=score)
        log.trial("beta", inputs={"orderId": "ORD-SECRET-beta", "fields": ["status"]})
        log.eval_completed()
        rows += log.rows
    result = grade([write_events(tmp_path / "e.parquet", rows)], [suite_dir])
    assert sorted(result.summaries) == sorted(bad_scores)
    for summary in result.summaries.values():
        alpha = summary["tasks"][0]
        assert (alpha["score"], alpha["passed"]) == (0, False)
    assert problems(result) == [(run_id, 7, "score-invalid") for run_id in sorted(bad_scores)]
    assert result.exit_code == 0


def test_s6_payload_not_json_on_graded_type(tmp_path: Path, suite_dir: Path) -> None:
    """§6 / D-3: a payload that is not JSON on a type grading reads makes the run ungradable
    (`payload-invalid`); on any other type it is a warning and the event is ignored."""
    bad = standard_run(RUN).rows
    scored = next(r for r in bad if r["type"] == "eval.scored")
    scored["payload"] = '{"taskId": "alpha", "score": 1.0,'
    ignored = standard_run(RUN2).rows
    returned = next(r for r in ignored if r["type"] == "agent.tool-returned")
    returned["payload"] = "not json at all"
    result = grade([write_events(tmp_path / "e.parquet", bad + ignored)], [suite_dir])
    assert list(result.summaries) == [RUN2]
    assert problems(result) == [
        (RUN, scored["sequence"], "payload-invalid"),
        (RUN2, returned["sequence"], "payload-ignored"),
    ]
    assert result.exit_code == 3


# --------------------------------------------------------------------------------------------
# §1.3 / §6 suites


def _two_suite_runs(tmp_path: Path) -> Path:
    """RUN claims SUITE_ID, RUN2 claims OTHER_SUITE_ID."""
    return write_events(
        tmp_path / "e.parquet",
        standard_run(RUN).rows + standard_run(RUN2, suite_id=OTHER_SUITE_ID).rows,
    )


def test_s1_3_invalid_suite_skips_its_runs_only(tmp_path: Path, canonical: api.GradeResult) -> None:
    """§1.3 / §6: a run whose suite is invalid is not graded (`suite-invalid`, naming the fault's
    JSON path); runs of other suites are graded; exit code 3."""
    suites = tmp_path / "suites2"
    write_json(suites / "good.json", make_suite())
    invalid = make_suite(OTHER_SUITE_ID, trials={"count": 2, "k": 3})
    write_json(suites / "bad.json", invalid)
    result = grade([_two_suite_runs(tmp_path)], [suites])
    assert list(result.summaries) == [RUN]
    assert result.summaries[RUN] == canonical.summaries[RUN]
    rows = problem_rows(result, "suite-invalid")
    assert [(r["run_id"], r["sequence"], r["severity"]) for r in rows] == [(RUN2, 1, "error")]
    assert "$.trials.k" in rows[0]["message"]
    assert result.skipped == [RUN2]
    assert result.exit_code == 3


def test_s1_3_conflicting_suite_copies(tmp_path: Path, canonical: api.GradeResult) -> None:
    """§1.3: two suite files with one suiteId and version but different content: the runs claiming
    it are not graded (`suite-conflict`); other runs are."""
    suites = tmp_path / "suites2"
    write_json(suites / "good.json", make_suite())
    write_json(suites / "other-a.json", make_suite(OTHER_SUITE_ID))
    write_json(
        suites / "nested" / "other-b.json",
        make_suite(OTHER_SUITE_ID, thresholds={"passScore": 0.5}),
    )
    result = grade([_two_suite_runs(tmp_path)], [suites])
    assert list(result.summaries) == [RUN]
    assert result.summaries[RUN] == canonical.summaries[RUN]
    rows = problem_rows(result, "suite-conflict")
    assert [(r["run_id"], r["severity"]) for r in rows] == [(RUN2, "error")]
    assert result.exit_code == 3


@pytest.mark.slow
def test_s1_3_identical_suite_copies_are_one_suite(
    tmp_path: Path, canonical: api.GradeResult
) -> None:
    """§1.3: "identical copies are one suite" (key order and 1 vs 1.0 do not matter, D-7)."""
    suites = tmp_path / "suites2"
    doc = make_suite(thresholds={"passScore": 1})
    write_json(suites / "a.json", doc)
    reordered = dict(reversed(list(doc.items())))
    reordered["thresholds"] = {"passScore": 1.0}
    write_json(suites / "copies" / "b.json", reordered)
    path = write_events(tmp_path / "e.parquet", standard_run(RUN).rows)
    result = grade([path], [suites, suites / "copies" / "b.json"])
    assert result.summaries == canonical.summaries
    assert problems(result) == []
    assert result.exit_code == 0


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        json.dumps({"version": "1.0.0", "modes": ["golden"], "tasks": []}),
        json.dumps({"suiteId": 7, "version": "1.0.0"}),
        json.dumps([make_suite()]),
        json.dumps({**make_suite(), "version": ""}),
        json.dumps({**make_suite(), "suiteId": ""}),
    ],
    ids=[
        "not-json",
        "no-suiteId",
        "suiteId-not-string",
        "not-an-object",
        "version-empty",  # E-85: names nothing; its runs are never graded from the host record
        "suiteId-empty",
    ],
)
def test_s1_3_unmatchable_suite_file_stops_before_grading(
    tmp_path: Path, suite_dir: Path, good_file: Path, text: str
) -> None:
    """§1.3: a suite file that is not JSON, or has no non-empty string suiteId and version,
    stops the command before grading (SuiteError; exit code 2 in the CLI), naming the file."""
    broken = suite_dir / "broken.json"
    broken.write_text(text, encoding="utf-8")
    with pytest.raises(SuiteError) as err:
        api.grade_paths([good_file], [suite_dir])
    assert str(broken) in str(err.value)


def test_d4_run_without_suite_is_graded_from_host_record(tmp_path: Path, suite_dir: Path) -> None:
    """D-4: a run whose suite is not supplied is graded from eval.scored, with a `suite-missing`
    warning naming the run and its eval.started; exit code 0."""
    path = write_events(tmp_path / "e.parquet", standard_run(RUN, suite_id=OTHER_SUITE_ID).rows)
    result = grade([path], [suite_dir])
    summary = result.summaries[RUN]
    assert summary["suiteId"] == OTHER_SUITE_ID
    assert [t["taskId"] for t in summary["tasks"]] == ["alpha", "beta"]
    assert all("trajectory" not in t for t in summary["tasks"])
    assert problems(result) == [(RUN, 1, "suite-missing")]
    assert result.exit_code == 0
