"""Bounded input (E-115, E-116): JSON nested past the depth limit, and compressed input that
inflates past its caps, are each one clear, content-free problem of the document, line, frame or
file they are in, never a `RecursionError`, an internal error or a machine out of memory; the
rest of the input is still read. Caps are set small through the API and the options, so every
case here is a few kilobytes.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evalbatch.errors import InputError
from evalbatch.inputs import ingest, limits
from evalbatch.inputs.limits import InputLimits
from evalbatch.outputs import manifest, outdir
from evalbatch.verify import host_summaries
from tests.helpers import SAMPLE_EVENTS, SAMPLE_SUITES, assert_content_free, run_main

LIMIT = limits.MAX_JSON_DEPTH
#: a marker that must never reach a message: it sits at the bottom of every deep document
LEAF = '"SECRET-leaf"'


def nested(levels: int) -> str:
    """JSON text `levels` arrays deep around the leaf (json.dumps recurses: built as text)."""
    return "[" * levels + LEAF + "]" * levels


def deep_document(template: object, depth: int) -> str:
    """`template` as JSON text with its "@" string replaced by arrays, so that the whole
    document nests exactly `depth` deep."""
    text = json.dumps(template)
    around = limits.json_depth(text.replace('"@"', nested(100))) - 100  # the levels above "@"
    document = text.replace('"@"', nested(depth - around))
    assert limits.json_depth(document) == depth
    return document


def event_line(run_id: str, sequence: int, payload: str = "{}") -> str:
    return f'{{"runId":"{run_id}","sequence":{sequence},"type":"run.note","payload":{payload}}}'


def ingested(out: Path) -> set[tuple[str, int]]:
    """(runId, sequence) of every row written under `out`."""
    rows = [r for p in out.rglob("*.parquet") for r in pq.read_table(p).to_pylist()]
    return {(r["runId"], r["sequence"]) for r in rows}


def assert_one_line_fault(code: int, out: str, err: str, *named: str) -> None:
    """Exit 2, one line on stderr naming the limit (and `named`), no internal error, no content."""
    assert code == 2, (code, out, err)
    assert "internal error" not in err and "RecursionError" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert f"deeper than {LIMIT} levels" in err, err
    for name in named:
        assert name in err, err
    assert_content_free(out + err)


# --------------------------------------------------------------------------------------------
# E-115: the depth limit, document by document


def test_e115_the_depth_measure_skips_strings_and_counts_both_kinds_of_bracket() -> None:
    assert limits.json_depth('{"a": "[[[{{{", "b": [{"c": []}]}') == 4
    assert limits.json_depth('"\\"[" ') == 0
    # a string left open runs to the end, as for the parser (and is scanned once, not once per
    # quote in it: text of many escaped quotes costs no more than any other)
    assert limits.json_depth('"' + '\\"' * 5000 + "[" * 100) == 0
    assert limits.json_depth('[["a\\') == 2
    # the running count carries across the spans it is summed in
    many = (1 << 20) + 5
    assert limits.json_depth("[" * many + "]" * many) == many
    assert limits.json_depth(nested(LIMIT)) == LIMIT
    limits.check_depth(nested(LIMIT))
    with pytest.raises(limits.TooDeep, match=f"deeper than {LIMIT} levels"):
        limits.check_depth(nested(LIMIT + 1))


@pytest.mark.parametrize("depth", [LIMIT + 1, 2000])
@pytest.mark.parametrize("command", ["validate", "verify"])
def test_e115_deep_capabilities_document_is_exit_2_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    depth: int,
) -> None:
    """A capabilities document nested past the limit (4 KB at 2,000 deep) stops `validate` and
    `verify` with one line naming the file and the limit, never a RecursionError."""
    caps = tmp_path / "caps.json"
    caps.write_text(deep_document({"agents": {"evalSuite": {}, "x": "@"}}, depth))
    target = SAMPLE_SUITES if command == "validate" else SAMPLE_EVENTS
    code, out, err = run_main(monkeypatch, capsys, command, target, "--capabilities", caps)
    assert_one_line_fault(code, out, err, str(caps))


def test_e115_capabilities_at_the_limit_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    caps = tmp_path / "caps.json"
    block = {"supported": True, "modes": ["golden"], "trajectory": True, "fixtureMatching": True}
    caps.write_text(deep_document({"agents": {"evalSuite": block, "x": "@"}}, LIMIT))
    code, out, err = run_main(
        monkeypatch, capsys, "validate", SAMPLE_SUITES / "trajectory.json", "--capabilities", caps
    )
    assert (code, err) == (0, ""), (out, err)
    assert "the host would accept it" in out


def _deep_suite(depth: int, *, invalid: bool = False) -> str:
    """The sample trajectory suite with one expected call's args nested to make the whole
    document `depth` deep (and, when `invalid`, a fault for the schema validator to name)."""
    suite = json.loads((SAMPLE_SUITES / "trajectory.json").read_text())
    suite["tasks"][0]["expected"]["trajectory"]["calls"][1]["args"] = {"amountMinor": "@"}
    if invalid:
        suite["tasks"][1]["taskId"] = 7
    return deep_document(suite, depth)


@pytest.mark.parametrize("depth", [LIMIT + 1, 900, 2000])
def test_e115_deep_suite_is_refused_naming_the_limit(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    depth: int,
) -> None:
    """A suite one level past the limit, or deep enough to exhaust the schema validator or the
    comparisons (900) or the parser (2,000), is refused by `validate` and stops `run` (§1.3),
    in one line naming the file and the limit."""
    suite = tmp_path / "deep.json"
    suite.write_text(_deep_suite(depth))
    code, out, err = run_main(monkeypatch, capsys, "validate", suite)
    assert_one_line_fault(code, out, err, str(suite))
    code, out, err = run_main(
        monkeypatch, capsys, "run", SAMPLE_EVENTS, "--suites", suite, "--out", tmp_path / "out"
    )
    assert_one_line_fault(code, out, err, str(suite))


@pytest.mark.slow
def test_e115_suite_at_the_limit_is_validated_and_graded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A suite exactly at the limit gets a normal answer end to end: the schema validator names
    a fault of an invalid one, and a valid one grades (its deep args match no call, D-10)."""
    invalid = tmp_path / "invalid" / "deep.json"
    invalid.parent.mkdir()
    invalid.write_text(_deep_suite(LIMIT, invalid=True))
    assert limits.json_depth(invalid.read_text()) == LIMIT
    code, out, err = run_main(monkeypatch, capsys, "validate", invalid)
    assert code == 1, (out, err)
    assert "$.tasks[1].taskId: must be a string" in out

    valid = tmp_path / "valid" / "deep.json"
    valid.parent.mkdir()
    valid.write_text(_deep_suite(LIMIT))
    code, out, err = run_main(monkeypatch, capsys, "validate", valid)
    assert (code, err) == (0, ""), (out, err)
    out_dir = tmp_path / "out"
    code, out, err = run_main(
        monkeypatch, capsys, "run", SAMPLE_EVENTS, "--suites", valid, "--out", out_dir, "-q"
    )
    assert code == 0 and "internal error" not in err, (out, err)
    lines = [json.loads(x) for x in (out_dir / "summaries.jsonl").read_text().splitlines()]
    (graded,) = [x["summary"] for x in lines if x["runId"] == "acme/run-trajectory-0001"]
    (task,) = [t for t in graded["tasks"] if t["taskId"] == "in-order-match"]
    assert task["passed"] is False  # the refund's amount is 4200, not the nested arrays


def test_e115_deep_host_summary_names_the_line_and_the_limit(tmp_path: Path) -> None:
    lines = tmp_path / "summaries.jsonl"
    deep = deep_document({"runId": "r", "summary": {"x": "@"}}, LIMIT + 1)
    lines.write_text('{"runId": "q", "summary": {}}\n' + deep + "\n")
    with pytest.raises(InputError) as caught:
        host_summaries.load_summaries([lines])
    assert str(caught.value).startswith(f"{lines}: line 2: nested deeper than {LIMIT} levels")
    pretty = tmp_path / "summary.json"
    pretty.write_text(deep.replace(",", ",\n"))
    with pytest.raises(InputError) as caught:
        host_summaries.load_summaries([pretty])
    assert str(caught.value).startswith(f"{pretty}: nested deeper than {LIMIT} levels")
    assert_content_free(str(caught.value))


def test_e115_tampered_output_directory_is_refused(tmp_path: Path) -> None:
    """summaries.jsonl and manifest.json are read back from a directory a user may hand on:
    a deep line is an `InputError` naming it; a deep manifest is untrusted (all is graded
    again), never a RecursionError."""
    (tmp_path / "summaries.jsonl").write_text(
        '{"runId": "a", "summary": {}}\n'
        + deep_document({"runId": "b", "summary": {"x": "@"}}, LIMIT + 1)
        + "\n"
    )
    with pytest.raises(InputError, match=f"line 2: nested deeper than {LIMIT} levels"):
        outdir.load(tmp_path)
    (tmp_path / "manifest.json").write_text(nested(2000))
    with pytest.raises(manifest.Untrusted, match="not readable JSON"):
        manifest.read_manifest(tmp_path)


# --------------------------------------------------------------------------------------------
# E-115 in ingest: a deep line, frame or document is that item's problem


SMALL_DEPTH = InputLimits(max_depth=3)


@pytest.mark.parametrize(
    ("name", "text", "where", "code"),
    [
        (
            "a.ndjson",
            "\n".join([event_line("r", 0), event_line("r", 1, '{"a":[[1]]}'), event_line("r", 2)]),
            "line 2",
            "line-invalid",
        ),
        (
            "a.sse",
            "".join(
                f"data: {event_line('r', n, p)}\n\n"
                for n, p in enumerate(["{}", '{"a":[[1]]}', "{}"])
            ),
            "frame 2 (line 3)",
            "frame-invalid",
        ),
    ],
)
def test_e115_deep_line_or_frame_is_its_problem_and_the_rest_is_ingested(
    tmp_path: Path, name: str, text: str, where: str, code: str
) -> None:
    source = tmp_path / name
    source.write_text(text)
    report = ingest.ingest_paths([source], tmp_path / "out", limits=SMALL_DEPTH)
    assert ingested(tmp_path / "out") == {("r", 0), ("r", 2)}
    (problem,) = report.problems
    assert (problem.where, problem.code) == (where, code)
    assert problem.reason.startswith("nested deeper than 3 levels")
    assert report.exit_code == 3


def test_e115_deep_ndjson_line_at_the_default_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """At the default limit, through the command: a line one level past it is skipped and
    reported, one at it is ingested."""
    at = deep_document(json.loads(event_line("r", 1, '{"x":"@"}')), LIMIT)
    past = deep_document(json.loads(event_line("r", 2, '{"x":"@"}')), LIMIT + 1)
    source = tmp_path / "a.ndjson"
    source.write_text("\n".join([event_line("r", 0), at, past, event_line("r", 3)]) + "\n")
    code, out, err = run_main(monkeypatch, capsys, "ingest", source, "--out", tmp_path / "out")
    assert code == 3, (out, err)
    assert ingested(tmp_path / "out") == {("r", 0), ("r", 1), ("r", 3)}
    assert f"line 3: nested deeper than {LIMIT} levels" in err
    assert_content_free(out + err)


def test_e115_deep_json_document_is_the_files_problem(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" + event_line("r", 0, '{"a":[[1]]}') + "]")
    fine = tmp_path / "fine.json"
    fine.write_text("[" + event_line("s", 0) + "]")
    report = ingest.ingest_paths([deep, fine], tmp_path / "out", limits=SMALL_DEPTH)
    assert ingested(tmp_path / "out") == {("s", 0)}
    (problem,) = report.problems
    assert (problem.path, problem.where, problem.code) == (str(deep), None, "input-unreadable")
    assert problem.reason.startswith("nested deeper than 3 levels")


# --------------------------------------------------------------------------------------------
# E-116: caps on decompressed input


def _gzip(path: Path, lines: list[str]) -> Path:
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return path


def _padded(run_id: str, sequence: int, size: int) -> str:
    """An event line of about `size` bytes that compresses to almost nothing."""
    return event_line(run_id, sequence, json.dumps({"pad": "a" * size}))


def test_e116_gzip_line_over_the_cap_is_that_lines_problem(tmp_path: Path) -> None:
    source = _gzip(
        tmp_path / "a.ndjson.gz",
        [event_line("r", 0), _padded("r", 1, 5000), event_line("r", 2), _padded("r", 3, 900)],
    )
    report = ingest.ingest_paths(
        [source], tmp_path / "out", limits=InputLimits(max_line_bytes=1000, max_ratio=10**6)
    )
    assert ingested(tmp_path / "out") == {("r", 0), ("r", 2), ("r", 3)}
    (problem,) = report.problems
    assert (problem.where, problem.code) == ("line 2", "line-invalid")
    assert problem.reason == "longer than 1,000 bytes, the cap on one line (--max-line-bytes)"


def test_e116_line_at_the_cap_is_read(tmp_path: Path) -> None:
    line = _padded("r", 0, 100)
    line = line.replace('"pad": "', '"pad": "' + "a" * (200 - len(line)))
    assert len(line) == 200
    source = tmp_path / "a.ndjson"
    source.write_text(line + "\n" + line.replace('"r"', '"s"'))
    report = ingest.ingest_paths([source], tmp_path / "out", limits=InputLimits(max_line_bytes=200))
    assert report.problems == []
    assert ingested(tmp_path / "out") == {("r", 0), ("s", 0)}
    report = ingest.ingest_paths(
        [source], tmp_path / "out2", limits=InputLimits(max_line_bytes=199)
    )
    assert [p.where for p in report.problems] == ["line 1", "line 2"]


def test_e116_sse_frame_over_the_cap_is_that_frames_problem(tmp_path: Path) -> None:
    big = _padded("r", 1, 3000)
    half = len(big) // 2
    frames = [
        f"data: {event_line('r', 0)}\n\n",
        f"data: {big[:half]}\ndata: {big[half:]}\n\n",  # each line under the cap, the frame over
        f"data: {event_line('r', 2)}\n\n",
    ]
    source = tmp_path / "a.sse"
    source.write_text("".join(frames))
    report = ingest.ingest_paths(
        [source], tmp_path / "out", limits=InputLimits(max_line_bytes=2000)
    )
    assert ingested(tmp_path / "out") == {("r", 0), ("r", 2)}
    (problem,) = report.problems
    assert (problem.where, problem.code) == ("frame 2 (line 3)", "frame-invalid")
    assert "the cap on one SSE frame" in problem.reason


def test_e116_json_document_over_the_cap(tmp_path: Path) -> None:
    """A whole JSON document past the line cap is the file's problem; JSON lines under a
    `.json` name, past the cap as one document, are read line by line."""
    array = tmp_path / "array.json"
    array.write_text("[" + ",".join(event_line("r", n) for n in range(40)) + "]")
    lines = tmp_path / "lines.json"
    lines.write_text("\n".join(event_line("s", n) for n in range(40)))
    report = ingest.ingest_paths(
        [array, lines], tmp_path / "out", limits=InputLimits(max_line_bytes=500)
    )
    assert ingested(tmp_path / "out") == {("s", n) for n in range(40)}
    (problem,) = report.problems
    assert (problem.path, problem.where, problem.code) == (str(array), None, "input-unreadable")
    assert "the cap on one JSON document" in problem.reason


def test_e116_compressed_file_over_the_member_cap(tmp_path: Path) -> None:
    """Past the cap on one compressed file, the file is read no further: the events before are
    kept, it is that file's problem, and the next file is ingested whole."""
    first = _gzip(tmp_path / "a.ndjson.gz", [event_line("r", n) for n in range(100)])
    second = _gzip(tmp_path / "b.ndjson.gz", [event_line("s", n) for n in range(10)])
    cap = 20 * (len(event_line("r", 50)) + 1)  # 20 lines of about 60 bytes
    report = ingest.ingest_paths(
        [first, second],
        tmp_path / "out",
        limits=InputLimits(max_member_bytes=cap, max_ratio=10**6),
    )
    rows = ingested(tmp_path / "out")
    kept = {n for run, n in rows if run == "r"}
    assert 0 < len(kept) <= 20 and kept == set(range(len(kept)))
    assert {n for run, n in rows if run == "s"} == set(range(10))
    (problem,) = report.problems
    assert (problem.path, problem.where, problem.code) == (str(first), None, "input-unreadable")
    assert problem.reason == (
        f"read only in part: it decompresses past the cap of {cap:,} bytes (--max-member-bytes)"
    )
    assert report.exit_code == 3


def test_e116_compression_ratio_cap(tmp_path: Path) -> None:
    """A file that inflates more than the ratio allows, once past the floor, is read no
    further, and a file beside it is ingested; the same file under a ratio it keeps is
    ingested whole."""
    bomb = _gzip(tmp_path / "bomb.ndjson.gz", [_padded("r", n, 20_000) for n in range(50)])
    assert bomb.stat().st_size * 50 < 50 * 20_000  # it inflates more than 50 times
    fine = tmp_path / "fine.ndjson"
    fine.write_text(event_line("s", 0))
    tight = InputLimits(max_ratio=50, ratio_floor_bytes=64 << 10)
    report = ingest.ingest_paths([bomb, fine], tmp_path / "out", limits=tight)
    (problem,) = report.problems
    assert (problem.path, problem.where, problem.code) == (str(bomb), None, "input-unreadable")
    assert "decompressed bytes per compressed byte" in problem.reason
    assert "--max-ratio" in problem.reason
    assert ("s", 0) in ingested(tmp_path / "out")
    assert len(ingested(tmp_path / "out")) < 51

    loose = InputLimits(max_ratio=10**6, ratio_floor_bytes=64 << 10)
    report = ingest.ingest_paths([bomb], tmp_path / "out2", limits=loose)
    assert report.problems == []
    assert len(ingested(tmp_path / "out2")) == 50


def test_e116_ingest_options_set_the_caps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--max-line-bytes`, `--max-member-bytes` and `--max-ratio` reach the read as
    `InputLimits`; a size takes a unit; a size below one byte is a usage error."""
    from evalbatch import api

    given: list[InputLimits] = []
    real = api.ingest_paths

    def spy(*args: object, **options: object) -> ingest.IngestReport:
        assert isinstance(options["limits"], InputLimits)
        given.append(options["limits"])
        return real(*args, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(api, "ingest_paths", spy)
    source = _gzip(tmp_path / "a.ndjson.gz", [event_line("r", 0), _padded("r", 1, 5000)])
    code, out, err = run_main(
        monkeypatch,
        capsys,
        *("ingest", source, "--out", tmp_path / "out", "--max-line-bytes", "4KiB"),
        *("--max-member-bytes", "1MiB", "--max-ratio", "7"),
    )
    assert code == 3, (out, err)
    assert "line 2: longer than 4 KiB, the cap on one line (--max-line-bytes)" in err
    assert given == [InputLimits(max_line_bytes=4096, max_member_bytes=1 << 20, max_ratio=7)]
    run_main(monkeypatch, capsys, "ingest", source, "--out", tmp_path / "o2")
    assert given[-1] == limits.DEFAULT_LIMITS
    code, out, err = run_main(
        monkeypatch, capsys, "ingest", source, "--out", tmp_path / "o3", "--max-line-bytes", "0"
    )
    assert code == 2 and "a size is from 1 byte" in err, (out, err)


def test_e116_capped_reader_never_reads_past_the_member_cap() -> None:
    """The member cap is exact: what comes out stops at it, and one byte more is the breach."""
    import io

    data = io.BytesIO(b"x" * 10_000)
    capped = io.BufferedReader(
        limits.CappedReader(data, lambda: 10_000, InputLimits(max_member_bytes=4096)), 1 << 20
    )
    assert len(capped.read(4096)) == 4096
    assert data.tell() == 4096
    with pytest.raises(limits.TooLarge):
        capped.read(1)
    assert data.tell() == 4097
