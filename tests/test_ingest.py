"""`evalbatch ingest`: other event formats to the canonical Parquet layout, without loss (§1.2).

Round trips read the written Parquet back with pyarrow, rebuild each event as JSON (the
canonical columns that hold a value, the payload text, the `extra` object) and compare it with
the input event token for token: number texts (`1.0`, `1e2`, 23-digit integers), key order,
repeated keys, strings, nulls. Nothing here uses the module's own inverse (`event_json`) as the
reference.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
import sys
import zlib
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from evalbatch.cli import cli, main
from evalbatch.errors import OutputError
from evalbatch.inputs import event_files, ingest, parquet_layout
from tests.helpers import (
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    directory_state,
    fail_at_call,
    ingested_parts,
    interleaved_sample_lines,
)

RUN_A = "acme/run-ingest-0001"
RUN_B = "anon:acme/run-ingest-0002"

#: RunEventDocs as written by a host, with the texts a lossy reader would change
EVENTS_A = [
    '{"eventId":"evt-0000000000000001","runId":"acme/run-ingest-0001","sequence":0,'
    '"type":"eval.started","payload":{"suiteId":"acme.team.evals.support","suiteVersion":'
    '"1.0.0","taskCount":1,"modes":["golden"]},"timestamp":"2026-11-02T10:00:00.000Z",'
    '"schemaVersion":2}',
    '{"runId":"acme/run-ingest-0001","sequence":1,"type":"agent.tool-called","payload":'
    '{"agentId":"a","toolName":"t:x","callId":"c1","inputs":{"big":12345678901234567890123,'
    '"one":1.0,"sci":1e2,"neg0":-0.0,"tiny":0.1000000000000000055511151231257827,'
    '"text":"caf\\u00e9 \\"q\\" \\ud83d\\ude00 \\ud800","dup":1,"dup":2,"deep":[[{}],[]]}},'
    '"timestamp":"2026-11-02T10:00:00.100Z","nodeId":"node-1","causationId":'
    '"evt-0000000000000001","engineVersion":3}',
    '{"runId":"acme/run-ingest-0001","sequence":2,"type":"vendor.custom","payload":null,'
    '"nodeId":null,"engineVersion":"2.46.9","hostExtra":{"k":[1,2.50,3]},"timestamp":1700000000}',
]
EVENTS_B = [
    '{"runId":"anon:acme/run-ingest-0002","sequence":0,"type":"run.started",'
    '"payload":[1,"two",{"three":3E+0}],"schemaVersion":1}',
    '{"runId":"anon:acme/run-ingest-0002","sequence":1,"type":"run.completed"}',
]


def _tree(text: str) -> Any:
    """JSON as a token tree: numbers as their text, objects as ordered (key, value) pairs."""

    def number(raw: str) -> tuple[str, str]:
        return ("number", raw)

    return json.loads(
        text,
        object_pairs_hook=lambda pairs: ("object", pairs),
        parse_float=number,
        parse_int=number,
    )


def _expected(texts: list[str], **renames_and_defaults: Any) -> dict[tuple[str, int], Any]:
    """What each input event must come back as: its envelope (by key) and payload tree, after
    the documented mapping of aliases (`seq`, `data`) and of container defaults (runId)."""
    default_run = renames_and_defaults.get("run_id")
    found = {}
    for text in texts:
        _, pairs = _tree(text)
        envelope = {}
        for key, value in pairs:
            key = {"seq": "sequence", "data": "payload"}.get(key, key)
            envelope[key] = value
        envelope.setdefault("runId", default_run)
        payload = envelope.pop("payload", "<absent>")
        found[(envelope["runId"], int(envelope["sequence"][1]))] = (envelope, payload)
    return found


def _read_back(out_dir: Path) -> dict[tuple[str, int], Any]:
    """Every written row rebuilt as (envelope by key, payload tree), read with pyarrow alone."""
    found = {}
    for path in sorted(out_dir.rglob("*.parquet")):
        for row in pq.read_table(path).to_pylist():
            envelope: dict[str, Any] = {}
            for key, value in row.items():
                if key in ("payload", "extra") or value is None:
                    continue
                envelope[key] = ("number", str(value)) if isinstance(value, int) else value
            if row["extra"] is not None:
                envelope.update(dict(_tree(row["extra"])[1]))
            payload = "<absent>" if row["payload"] is None else _tree(row["payload"])
            key = (row["runId"], row["sequence"])
            assert key not in found, key
            found[key] = (envelope, payload)
    return found


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _write_gzip(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    return path


def _strip_run(text: str, run_id: str) -> str:
    return text.replace(f'"runId":"{run_id}",', "")


def _bundle_event(text: str) -> str:
    """A v1 debug bundle item: `seq` for sequence, `data` for payload, no runId."""
    return _strip_run(text, RUN_A).replace('"sequence":', '"seq":').replace('"payload":', '"data":')


FORMATS = {
    "ndjson": lambda d: [_write(d / "a.ndjson", "\n".join(EVENTS_A + EVENTS_B) + "\n")],
    "jsonl-named-json": lambda d: [_write(d / "a.json", "\n".join(EVENTS_A + EVENTS_B))],
    "json-array": lambda d: [_write(d / "a.json", "[" + ",\n".join(EVENTS_A + EVENTS_B) + "]")],
    "poll-response": lambda d: [
        _write(
            d / f"poll-{n}.json",
            f'{{"runId":"{run}","events":[{",".join(_strip_run(t, run) for t in texts)}],'
            '"lastSequence":2,"status":"running","isTerminal":false}',
        )
        for n, (run, texts) in enumerate([(RUN_A, EVENTS_A), (RUN_B, EVENTS_B)])
    ],
    "debug-bundle": lambda d: [
        _write(
            d / "bundle.json",
            '{"bundleVersion":"1","generatedAt":"2026-11-02T11:00:00Z","host":{"name":"h"},'
            f'"run":{{"runId":"{RUN_A}","status":"completed"}},'
            f'"events":[{",".join(_bundle_event(t) for t in EVENTS_A)}],"spans":[],'
            f'"metrics":{{"openwopCost":0,"nodeCount":1,"eventCount":{len(EVENTS_A)}}},'
            '"redactionApplied":false,"redactionMode":"mask"}',
        ),
        _write(d / "b.ndjson", "\n".join(EVENTS_B)),
    ],
    "sse": lambda d: [
        _write(
            d / "stream.sse",
            ": connected\n\n"
            + "".join(f"id: {n}\nevent: x\ndata: {t}\n\n" for n, t in enumerate(EVENTS_A))
            + "retry: 1000\n\n"
            + f"id: 1\nevent: batch\ndata: [{EVENTS_B[0]},\ndata: {EVENTS_B[1]}]\n\n",
        )
    ],
    "gzip-ndjson": lambda d: [_write_gzip(d / "a.ndjson.gz", "\n".join(EVENTS_A + EVENTS_B))],
}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_s1_2_round_trip_every_event_field(tmp_path: Path, fmt: str) -> None:
    """§1.2: each format converts without loss. Every envelope field (unknown ones and values of
    another type included, in `extra`) and the payload, token for token, come back."""
    FORMATS[fmt](tmp_path / "in")
    report = ingest.ingest_paths([tmp_path / "in"], tmp_path / "out")
    assert report.problems == []
    assert (report.events, report.runs, report.exit_code) == (5, 2, 0)
    expected = _expected(EVENTS_A, run_id=RUN_A) | _expected(EVENTS_B, run_id=RUN_B)
    assert _read_back(tmp_path / "out") == expected


def test_s1_2_sse_frame_id_and_event_fill_a_bare_event(tmp_path: Path) -> None:
    """SSE (§1.2): `id:` is the sequence and `event:` the type; a data document that lacks them
    takes them from its frame."""
    stream = _write(
        tmp_path / "s.sse",
        f'id: 7\nevent: eval.started\ndata: {{"runId":"{RUN_A}","payload":{{"taskCount":1}}}}\n\n',
    )
    report = ingest.ingest_paths([stream], tmp_path / "out")
    assert report.problems == []
    ((envelope, payload),) = _read_back(tmp_path / "out").values()
    assert envelope == {"runId": RUN_A, "sequence": ("number", "7"), "type": "eval.started"}
    assert payload == ("object", [("taskCount", ("number", "1"))])


def test_s1_2_malformed_ndjson_line_is_reported_and_the_rest_ingested(tmp_path: Path) -> None:
    """§1.2 / §6 / E-35: a malformed line in the middle of an NDJSON file is reported with its
    line number and reason; every other line is ingested. NaN is not JSON (D-7)."""
    lines = [
        EVENTS_A[0],
        '{"runId": "acme/run-ingest-0001", "sequence": 9, "type": "x", "pay',
        EVENTS_A[1],
        "",
        '{"runId":"r","sequence":5,"type":"t","payload":NaN}',
        EVENTS_A[2],
        '{"runId":"acme/run-ingest-0001","sequence":-1,"type":"t"}',
    ]
    path = _write(tmp_path / "log.ndjson", "\n".join(lines) + "\n")
    report = ingest.ingest_paths([path], tmp_path / "out")
    assert [(p.where, p.code) for p in report.problems] == [
        ("line 2", "line-invalid"),
        ("line 5", "line-invalid"),
        ("line 7", "event-invalid"),
    ]
    assert report.problems[0].message.startswith(f"{path}: line 2: not JSON (")
    assert "NaN" in report.problems[1].message
    assert report.problems[2].reason == "sequence is not an integer >= 0"
    assert (report.events, report.exit_code) == (3, 3)
    assert _read_back(tmp_path / "out") == _expected(EVENTS_A, run_id=RUN_A)


def test_s1_2_json_lines_named_json_with_a_broken_first_line(tmp_path: Path) -> None:
    """E-35: a `.json` file that is JSON lines is read line by line even when its first line is
    broken, so that line alone is lost."""
    path = _write(tmp_path / "export.json", "\n".join(["{broken", *EVENTS_A]))
    report = ingest.ingest_paths([path], tmp_path / "out")
    assert [(p.where, p.code) for p in report.problems] == [("line 1", "line-invalid")]
    assert _read_back(tmp_path / "out") == _expected(EVENTS_A, run_id=RUN_A)


def test_s1_2_malformed_sse_frame_is_reported_by_frame(tmp_path: Path) -> None:
    """SSE: a frame whose data is not JSON is named by frame number and first line; the other
    frames are ingested."""
    text = (
        f"id: 0\ndata: {EVENTS_A[0]}\n\n"
        "id: 1\nevent: x\ndata: {broken\n\n"
        f"id: 2\ndata: {EVENTS_A[2]}\n\n"
    )
    report = ingest.ingest_paths([_write(tmp_path / "s.sse", text)], tmp_path / "out")
    assert [(p.where, p.code) for p in report.problems] == [("frame 2 (line 4)", "frame-invalid")]
    assert sorted(_read_back(tmp_path / "out")) == [(RUN_A, 0), (RUN_A, 2)]


def test_s1_2_truncated_debug_bundle_is_a_problem_but_its_events_are_kept(tmp_path: Path) -> None:
    """openwop-facts §8: `truncated: true` means only a prefix of the run's events was kept; the
    prefix is ingested and the loss is reported (exit code 3), as is an eventCount that does not
    match the events."""
    bundle = (
        f'{{"bundleVersion":"1","run":{{"runId":"{RUN_A}"}},"events":'
        f"[{_bundle_event(EVENTS_A[0])}],"
        '"metrics":{"eventCount":40},"truncated":true,"truncatedReason":"size cap SECRET"}'
    )
    report = ingest.ingest_paths([_write(tmp_path / "b.json", bundle)], tmp_path / "out")
    assert [p.code for p in report.problems] == ["bundle-truncated", "bundle-count-mismatch"]
    assert [p.severity for p in report.problems] == ["warning", "warning"]
    assert "SECRET" not in " ".join(p.message for p in report.problems)
    assert (report.events, report.exit_code) == (1, 3)


@pytest.mark.slow
def test_s1_2_ingested_samples_grade_exactly_as_the_originals(tmp_path: Path) -> None:
    """§1.1 / §1.2: the samples exported as NDJSON (payload texts spliced in verbatim), ingested,
    then graded by `evalbatch run`, give byte-identical summaries to grading the original
    Parquet files."""
    lines = []
    for path in sorted(SAMPLE_EVENTS.glob("*.parquet")):
        for row in pq.read_table(path).to_pylist():
            payload = row.pop("payload")
            lines.append(json.dumps(row)[:-1] + f', "payload": {payload}}}')
    export = _write(tmp_path / "samples.ndjson", "\n".join(lines))
    runner = CliRunner()
    result = runner.invoke(cli, ["ingest", str(export), "--out", str(tmp_path / "events")])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        f"ingested {len(lines)} events of 3 runs from 1 file into {tmp_path / 'events'}/"
    )
    for name, source in (("ingested", tmp_path / "events"), ("original", SAMPLE_EVENTS)):
        graded = runner.invoke(
            cli,
            [
                "run",
                str(source),
                "--suites",
                str(SAMPLE_SUITES),
                "--out",
                str(tmp_path / name),
                "--quiet",
            ],
        )
        assert graded.exit_code == 0, graded.output
    ingested = (tmp_path / "ingested" / "summaries.jsonl").read_bytes()
    assert ingested == (tmp_path / "original" / "summaries.jsonl").read_bytes()


def test_e33_partition_names_decode_back_to_every_run_id(tmp_path: Path) -> None:
    """E-33: one directory per run, `runId=<percent-encoded id>`; ids DuckDB would read as
    another type, ids too long for a file name and ids differing only in case use `runKey=`.
    Read the way `evalbatch run` reads them, every id comes back exactly."""
    ids = [
        "acme/run-1",
        "anon:t/a b+c%d=e",
        "2026-1-2",
        "42",
        "t/" + "x" * 300,
        "Acme/Run-A",
        "acme/run-a",
    ]
    lines = [json.dumps({"runId": run, "sequence": 0, "type": "t", "payload": {}}) for run in ids]
    report = ingest.ingest_paths(
        [_write(tmp_path / "a.ndjson", "\n".join(lines))], tmp_path / "out"
    )
    assert report.problems == []
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert "runId=acme%2Frun-1" in names
    assert "runId=anon%3At%2Fa%20b%2Bc%25d%3De" in names
    assert sum(name.startswith("runKey=") for name in names) == 4  # date, number, long, case
    assert len({name.casefold() for name in names}) == len(ids)
    con = duckdb.connect()
    event_files.register(con, event_files.scan(con, [str(tmp_path / "out")]))
    read = {row[0] for row in con.execute("SELECT run_id FROM source_events").fetchall()}
    assert read == set(ids)


def test_e34_written_atomically_and_appended_never_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E-34, E-75: a failure while writing is an OutputError (exit code 4) and leaves no
    half-written or temporary file behind; a second ingest of other events of the same runs adds
    `part-1.parquet` beside `part-0.parquet`, never over it."""
    source = _write(tmp_path / "a.ndjson", "\n".join(EVENTS_A + EVENTS_B))
    out = tmp_path / "out"
    real = pq.write_table
    fail_at_call(monkeypatch, parquet_layout.pq, "write_table", 2, OSError("disk full"))
    with pytest.raises(OutputError, match="disk full"):
        ingest.ingest_paths([source], out)
    assert list(out.iterdir()) == []  # nothing visible, temporary directory removed
    monkeypatch.setattr(parquet_layout.pq, "write_table", real)

    ingest.ingest_paths([source], out)
    first = {p: p.read_bytes() for p in out.rglob("*.parquet")}
    later = _write(tmp_path / "b.ndjson", "\n".join(EVENTS_A[1:] + EVENTS_B[1:]))
    ingest.ingest_paths([later], out)
    assert {p: p.read_bytes() for p in first} == first
    parts = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert parts == [
        "runId=acme%2Frun-ingest-0001/part-0.parquet",
        "runId=acme%2Frun-ingest-0001/part-1.parquet",
        "runId=anon%3Aacme%2Frun-ingest-0002/part-0.parquet",
        "runId=anon%3Aacme%2Frun-ingest-0002/part-1.parquet",
    ]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("flush_rows", [parquet_layout.DEFAULT_FLUSH_ROWS, 2])
def test_e34_the_same_export_again_adds_nothing(tmp_path: Path, flush_rows: int) -> None:
    """E-34: ingesting an export whose events are already there (the same file again,
    or a copy under another name) is recognised by the sha256 of the rows each part records, and
    adds no file; the report says how many events were already there, and the exit code is 0."""
    source = _write(tmp_path / "a.ndjson", "\n".join(EVENTS_A + EVENTS_B))
    out = tmp_path / "out"
    first = ingest.ingest_paths([source], out, flush_rows=flush_rows)
    assert (first.events_already_there, first.runs_already_there) == (0, 0)
    before = directory_state(out)
    copy = _write(tmp_path / "copy" / "renamed.jsonl", source.read_text(encoding="utf-8"))
    for again in ([source], [copy]):
        report = ingest.ingest_paths(again, out, flush_rows=flush_rows)
        assert (report.events, report.runs, report.written) == (5, 2, [])
        assert (report.events_already_there, report.runs_already_there) == (5, 2)
        assert report.exit_code == 0
        assert directory_state(out) == before
    metadata = pq.read_metadata(first.written[0]).metadata
    assert len(metadata[parquet_layout.DIGEST_KEY.encode()]) == 64


def test_e34_a_different_export_still_adds_a_part(tmp_path: Path) -> None:
    """E-34: an export with other events of a run adds a new part for that run (one
    changed event is enough), while a run whose events are all already there gets nothing."""
    out = tmp_path / "out"
    ingest.ingest_paths([_write(tmp_path / "a.ndjson", "\n".join(EVENTS_A + EVENTS_B))], out)
    changed = EVENTS_A[2].replace('"timestamp":1700000000', '"timestamp":1700000001')
    source = _write(tmp_path / "b.ndjson", "\n".join([*EVENTS_A[:2], changed, *EVENTS_B]))
    report = ingest.ingest_paths([source], out)
    assert [str(p.relative_to(out)) for p in report.written] == [
        "runId=acme%2Frun-ingest-0001/part-1.parquet"
    ]
    assert (report.events_already_there, report.runs_already_there) == (2, 1)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.parquet")) == [
        "runId=acme%2Frun-ingest-0001/part-0.parquet",
        "runId=acme%2Frun-ingest-0001/part-1.parquet",
        "runId=anon%3Aacme%2Frun-ingest-0002/part-0.parquet",
    ]


def test_e34_cli_says_the_events_were_already_there(tmp_path: Path) -> None:
    """E-34: the command says, on stdout, that a repeated export was not added
    again, and exits 0 (nothing is wrong: the events are all there)."""
    source = _write(tmp_path / "a.ndjson", "\n".join(EVENTS_A + EVENTS_B))
    args = ["ingest", str(source), "--out", str(tmp_path / "out")]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert "not added again" not in first.output
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0, again.output
    assert "not added again: 5 events already there" in again.stdout
    assert "2 runs had nothing new" in again.stdout


def test_s1_2_many_inputs_in_a_directory(tmp_path: Path) -> None:
    """One input or thousands: every known file below a directory is read (other files are
    not), events of one run spread over files land in one partition."""
    for number in range(200):
        event = {"runId": RUN_A, "sequence": number, "type": "t", "payload": {"n": number}}
        _write(tmp_path / "in" / f"d{number % 7}" / f"e{number}.jsonl", json.dumps(event))
    _write(tmp_path / "in" / "notes.txt", "not an export")
    report = ingest.ingest_paths([tmp_path / "in"], tmp_path / "out", flush_rows=64)
    assert (report.files, report.events, report.runs, report.problems) == (200, 200, 1, [])
    rows = [r for p in (tmp_path / "out").rglob("*.parquet") for r in pq.read_table(p).to_pylist()]
    assert sorted(r["sequence"] for r in rows) == list(range(200))


def test_cli_ingest_bad_line_exits_3_and_names_file_and_line(tmp_path: Path) -> None:
    """The command: each skipped line on stderr with file, line and reason; the totals line on
    stdout; exit code 3 (something skipped), as `run`'s."""
    path = _write(tmp_path / "log.ndjson", "\n".join([EVENTS_A[0], "{oops", EVENTS_A[1]]))
    result = CliRunner().invoke(cli, ["ingest", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 3, result.output
    assert f"skipped: {path}: line 2: not JSON" in result.stderr
    assert "[line-invalid]" in result.stderr
    assert result.stdout.startswith("ingested 2 events of 1 run from 1 file into")


@pytest.mark.parametrize("case", ["nothing-usable", "missing-path"])
def test_cli_ingest_unusable_input_exits_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: str,
) -> None:
    """Exit code 2 when nothing is usable (no event at all, or no such input), with a message
    and no traceback; nothing is written."""
    if case == "nothing-usable":
        source = _write(tmp_path / "junk.json", "{ this is not json")
    else:
        source = tmp_path / "nowhere.ndjson"
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["evalbatch", "ingest", str(source), "--out", str(out)])
    with pytest.raises(SystemExit) as exit_info:
        main()
    captured = capsys.readouterr()
    assert exit_info.value.code == 2
    assert "Traceback" not in captured.err + captured.out
    assert "evalbatch" in captured.err
    assert not out.exists() or list(out.rglob("*")) == []


@pytest.mark.parametrize("args", [["ingest"], ["ingest", "x.ndjson"]], ids=["no-input", "no-out"])
def test_cli_ingest_usage_errors_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """A usage error (no input, no --out) exits 2 with click's usage message, as for `run`."""
    monkeypatch.setattr(sys, "argv", ["evalbatch", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    captured = capsys.readouterr()
    assert exit_info.value.code == 2
    assert "Error" in captured.err and "Traceback" not in captured.err


def test_ingest_writes_the_canonical_columns(tmp_path: Path) -> None:
    """§1.1: the canonical columns with their types, then `extra` (E-32); readable by `run`."""
    report = ingest.ingest_paths([_write(tmp_path / "a.ndjson", EVENTS_A[0])], tmp_path / "out")
    schema = pq.read_schema(report.written[0])
    assert [(f.name, str(f.type)) for f in schema] == [
        ("runId", "string"),
        ("sequence", "int64"),
        ("type", "string"),
        ("payload", "string"),
        ("timestamp", "string"),
        ("eventId", "string"),
        ("schemaVersion", "int64"),
        ("nodeId", "string"),
        ("causationId", "string"),
        ("engineVersion", "int64"),
        ("extra", "string"),
    ]
    assert oct(os.stat(report.written[0]).st_mode & 0o777) != oct(0o600)


# --------------------------------------------------------------------------------------------
# E-75: a damaged gzip file keeps the whole lines before the damage


def _varied_lines(run_id: str, count: int) -> list[str]:
    """Event lines that compress poorly, so half a gzip file holds about half of them."""
    return [
        json.dumps(
            {
                "runId": run_id,
                "sequence": n,
                "type": "t",
                "payload": {"hash": hashlib.sha256(str(n).encode()).hexdigest() * 3},
            }
        )
        for n in range(count)
    ]


def _whole_lines_before(damaged: bytes) -> int:
    """How many whole lines zlib itself recovers from the start of a damaged gzip file."""
    inflater = zlib.decompressobj(wbits=31)
    try:
        data = inflater.decompress(damaged)
    except zlib.error:
        data = b""
    return data.count(b"\n")


@pytest.mark.parametrize("damage", ["cut-short", "bad-crc", "garbage-after-the-member"])
def test_e75_damaged_gzip_keeps_the_whole_lines_before_the_damage(
    tmp_path: Path, damage: str
) -> None:
    """E-75: a gzip file cut short, with a bad CRC or with garbage after its complete member
    was "nothing usable; nothing written" (exit code 2): the capped reader filled a buffer
    from the decompressor in one go and the damage dropped all of it. Now the events of the
    whole lines before the damage are ingested and the file is one problem (exit code 3),
    whose message quotes none of the file's bytes."""
    lines = _varied_lines(RUN_A, 120)
    packed = gzip.compress(("\n".join(lines) + "\n").encode())
    damaged = {
        "cut-short": packed[: len(packed) // 2],
        "bad-crc": packed[:-8] + b"\0\0\0\0" + packed[-4:],
        "garbage-after-the-member": packed + b"not gzip at all",
    }[damage]
    kept = _whole_lines_before(damaged) if damage == "cut-short" else len(lines)
    assert 0 < kept <= len(lines)
    source = tmp_path / "a.ndjson.gz"
    source.write_bytes(damaged)
    report = ingest.ingest_paths([source], tmp_path / "out")
    assert report.exit_code == 3
    assert sorted(seq for _, seq in _read_back(tmp_path / "out")) == list(range(kept))
    (problem,) = report.problems
    assert (problem.path, problem.where, problem.code) == (str(source), None, "input-unreadable")
    assert problem.reason.startswith("cannot be read (damaged gzip data")
    assert "b'" not in problem.reason and "0x" not in problem.reason


# --------------------------------------------------------------------------------------------
# E-35: SSE lines end in CRLF, LF or CR


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r", "mixed"], ids=["lf", "crlf", "cr", "mixed"])
def test_e35_sse_lines_end_in_crlf_lf_or_cr(tmp_path: Path, ending: str) -> None:
    """E-35: the SSE spec ends a line with CRLF, LF or a lone CR; a capture with CR line
    endings was one long line, "nothing usable" (exit code 2). Every ending reads the same
    events, and a bad frame is named by the same frame and line."""
    frames = [f"id: {n}\nevent: x\ndata: {t}\n\n" for n, t in enumerate(EVENTS_A)]
    frames.insert(1, "data: {not json\n\n")  # frame 2, line 7
    text = ": connected\n\n" + "".join(frames)
    if ending == "mixed":
        parts = text.split("\n")
        # a lone CR is never followed by LF here: that pair is one CRLF ending
        text = "".join(p + ("\r\n", "\n", "\r")[n % 3] for n, p in enumerate(parts[:-1]))
    else:
        text = text.replace("\n", ending)
    source = tmp_path / "stream.sse"
    source.write_bytes(text.encode())
    report = ingest.ingest_paths([source], tmp_path / "out")
    assert sorted(_read_back(tmp_path / "out")) == [(RUN_A, 0), (RUN_A, 1), (RUN_A, 2)]
    assert [(p.where, p.code) for p in report.problems] == [("frame 2 (line 7)", "frame-invalid")]


def test_e35_nothing_usable_names_the_files_read(tmp_path: Path) -> None:
    """E-35: "nothing usable in 1 input file" left the user to guess which: the line names
    the files read (the first five, then how many more), or the inputs given when no file
    was found in them."""
    for number in range(7):
        _write(tmp_path / "in" / f"f{number}.sse", "id: 1\nevent: x\n\n")
    result = CliRunner().invoke(cli, ["ingest", str(tmp_path / "in"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    named = ", ".join(str(tmp_path / "in" / f"f{n}.sse") for n in range(5))
    assert f"nothing usable in 7 input files ({named} and 2 more); nothing written" in (
        result.stderr
    )
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(
        cli, ["ingest", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert f"no input file found in {tmp_path / 'empty'}" in result.stderr


# --------------------------------------------------------------------------------------------
# E-122: an interrupted ingest is never taken for a complete one


class _Interrupted(BaseException):
    """The process stopping at a link (as a kill would: nothing after it runs)."""


@pytest.mark.slow
@pytest.mark.parametrize("at", [2, 5])
def test_e120_an_ingest_stopped_between_two_links_of_a_run_is_refused_then_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: int
) -> None:
    """E-122: an ingest stopped between two links (killed, or interrupted) left some of its
    parts in place, a run's first part without its second among them, and `run` graded the
    directory as if it were whole. The marker it made before its first link is still there:
    `scan` leaves the directory's files out and names it (file-unreadable); the next ingest
    into it undoes what was linked, then adds its own, so the directory ends as a clean
    ingest's, with no marker and no working directory."""
    source = interleaved_sample_lines(tmp_path / "samples")
    clean = tmp_path / "clean"
    ingest.ingest_paths([source], clean, flush_rows=20)
    whole = ingested_parts(clean)
    assert len(whole) > 2 * len({run for run, _ in whole})  # runs of several parts

    out = tmp_path / "out"
    fail_at_call(monkeypatch, parquet_layout.os, "link", at, _Interrupted)
    with pytest.raises(_Interrupted):
        ingest.ingest_paths([source], out, flush_rows=20)
    monkeypatch.undo()
    assert (out / parquet_layout.INCOMPLETE).is_file()
    left = ingested_parts(out)
    assert 0 < len(left) < len(whole) and left < whole
    first_run = min(run for run, _ in whole)
    assert (
        0
        < len({p for p in left if p[0] == first_run})
        < len({p for p in whole if p[0] == first_run})
    ), "a run is in place in part"

    con = duckdb.connect()
    sources = event_files.scan(con, [str(out), str(clean)])
    (problem,) = sources.problems
    assert (problem.path, problem.code) == (str(out), "file-unreadable")
    assert "an ingest into it was interrupted or is running" in problem.message
    assert "its runs may be partial" in problem.message and "ingest again" in problem.message
    assert [p for paths in sources.groups.values() for p in paths] == sorted(
        str(p) for p in clean.glob("*/part-*.parquet")
    )

    report = ingest.ingest_paths([source], out, flush_rows=20)
    assert report.exit_code == 0 and report.events_already_there == 0
    assert ingested_parts(out) == whole
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in clean.iterdir())


@pytest.mark.slow
def test_e120_run_names_the_interrupted_directory_and_grades_the_other_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E-122: `run` over an interrupted ingest's directory and another input grades the other
    one and says which directory was left out and why (exit code 3); over that directory alone
    it stops (exit code 2) with the same reason, never grading a partial log."""
    source = interleaved_sample_lines(tmp_path / "samples")
    out = tmp_path / "events"
    fail_at_call(monkeypatch, parquet_layout.os, "link", 3, _Interrupted)
    with pytest.raises(_Interrupted):
        ingest.ingest_paths([source], out, flush_rows=20)
    monkeypatch.undo()
    args = ["--suites", str(SAMPLE_SUITES), "-q"]
    both = CliRunner().invoke(
        cli, ["run", str(out), str(SAMPLE_EVENTS), *args, "--out", str(tmp_path / "a")]
    )
    assert both.exit_code == 3, both.output
    assert f"{out}: an ingest into it was interrupted or is running" in both.stderr
    alone = CliRunner().invoke(cli, ["run", str(out), *args, "--out", str(tmp_path / "b")])
    assert alone.exit_code == 2, alone.output
    assert f"{out}: an ingest into it was interrupted or is running" in alone.stderr
    assert not (tmp_path / "b" / "summaries.jsonl").exists()


def test_e120_the_directory_is_found_however_its_files_are_named(tmp_path: Path) -> None:
    """E-122: the marked directory is found above a run directory or a part named directly,
    and below a directory given that holds it; it is named as the user spelled it, the
    files below it left out, and files elsewhere kept."""
    out = tmp_path / "data" / "events"
    part = out / "runId=r" / "part-0.parquet"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"")
    other = tmp_path / "data" / "other.parquet"
    other.write_bytes(b"")
    (out / parquet_layout.INCOMPLETE).write_text("")
    find = parquet_layout.interrupted_ingests
    assert find([str(out)], [str(part)]) == {str(out): [str(part)]}
    assert find([str(part.parent)], [str(part)]) == {str(out): [str(part)]}
    assert find([str(part)], [str(part)]) == {str(out): [str(part)]}
    assert find([str(tmp_path / "data")], [str(part), str(other)]) == {str(out): [str(part)]}
    monkey = pytest.MonkeyPatch()
    with monkey.context() as m:
        m.chdir(part.parent)
        assert find(["part-0.parquet"], ["part-0.parquet"]) == {str(out): ["part-0.parquet"]}
        m.chdir(out)
        assert find(["runId=r"], ["runId=r/part-0.parquet"]) == {".": ["runId=r/part-0.parquet"]}
    (out / parquet_layout.INCOMPLETE).unlink()
    assert find([str(tmp_path / "data")], [str(part), str(other)]) == {}


def test_e120_without_locks_a_marker_is_never_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E-122: where the directory cannot be locked, a marker may be a live ingest's: the next
    ingest neither undoes it nor adds beside it (OutputError, exit code 4), and leaves the
    directory as it was."""
    source = interleaved_sample_lines(tmp_path / "samples")
    out = tmp_path / "out"
    fail_at_call(monkeypatch, parquet_layout.os, "link", 2, _Interrupted)
    with pytest.raises(_Interrupted):
        ingest.ingest_paths([source], out, flush_rows=20)
    monkeypatch.undo()
    before = directory_state(out)

    def no_locks(*_: Any, **__: Any) -> int:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(parquet_layout, "_lock_dir", no_locks)
    with pytest.raises(OutputError, match="cannot be locked to tell which"):
        ingest.ingest_paths([source], out, flush_rows=20)
    assert directory_state(out) == before
