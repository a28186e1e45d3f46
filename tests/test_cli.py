"""The `evalbatch` command end to end: `run` and `validate`, their options and exit codes.

In-process tests use click's CliRunner on `evalbatch.cli.cli`, or call the console-script entry
point `evalbatch.cli.main` with a patched argv (it maps user-facing errors to exit code 2). A few
tests start the installed console script as a real subprocess.

Exit codes (CONTRACT §6, `evalbatch run --help`): 0 every run graded; 3 some run or file skipped;
2 unusable input or a usage error. `validate`: 0 valid, 1 some suite invalid, 2 a file cannot be
read as JSON or a path holds no suite (E-85).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from evalbatch.cli import cli
from tests.helpers import (
    EVALBATCH_BIN,
    ROOT,
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    SUITE_ID,
    TOOL,
    WRITTEN_FILES,
    assert_content_free,
    make_suite,
    run_main,
    standard_run,
    summaries_of,
    write_events,
    write_json,
)

#: a slow family (every command end to end, the installed script in new processes):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

RUN = "acme/run-0001"
SAMPLE_RUNS = ["acme/run-fixture-miss-0001", "acme/run-trajectory-0001", "acme/run-trials-k2-0001"]


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


@dataclass
class Console:
    """What one run of the installed console script gave."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The installed console script, started as a user runs it, several commands at once (each
    start costs the interpreter's import time, so they run side by side)."""
    root = tmp_path_factory.mktemp("console")
    suites = root / "suites"
    write_json(suites / "basic.json", make_suite())
    unusable = root / "unusable" / "a.parquet"
    unusable.parent.mkdir()
    unusable.write_text("not parquet")
    broken_suite = root / "broken.json"
    broken_suite.write_text("{ not json")
    commands = {
        "run-samples": ["run", "data/samples/events", "--suites", "data/samples/suites"],
        "unusable": ["run", str(unusable.parent), "--suites", str(suites)],
        "validate-broken": ["validate", str(broken_suite)],
    }
    procs = {}
    for name, args in commands.items():
        if args[0] == "run":
            args = [*args, "--out", str(root / f"out-{name}")]
        procs[name] = subprocess.Popen(
            [str(EVALBATCH_BIN), *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    results: dict[str, Any] = {"root": root, "unusable-file": unusable, "broken": broken_suite}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=120)
        results[name] = Console(proc.returncode, stdout, stderr)
    return results


def assert_no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text, text
        assert "internal error" not in text, text


@pytest.fixture
def events_file(tmp_path: Path) -> Path:
    return write_events(tmp_path / "events" / "good.parquet", standard_run(RUN).rows)


# --------------------------------------------------------------------------------------------
# run: the samples


def test_s4_run_samples_prints_table_and_writes_outputs(tmp_path: Path) -> None:
    """§4: `evalbatch run data/samples/events --suites data/samples/suites --out DIR` exits 0,
    prints a per-run table and where the outputs went, and writes summaries.jsonl and the four
    tables."""
    out = tmp_path / "out"
    result = invoke("run", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--out", out)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = lines[0].split()
    assert header[:3] == ["run", "suite", "score"]
    for run_id in SAMPLE_RUNS:
        assert any(line.startswith(run_id) for line in lines), result.stdout
    trials_row = next(line for line in lines if line.startswith("acme/run-trials-k2-0001"))
    assert "acme.support.evals.trials@1.0.0" in trials_row
    assert "0.833" in trials_row and "yes" in trials_row and "1/3" in trials_row
    assert f"wrote 3 summaries to {out / 'summaries.jsonl'}" in result.stdout
    assert f"tables to {out}" in result.stdout
    assert sorted(p.name for p in out.iterdir()) == sorted(WRITTEN_FILES)
    assert [s["runId"] for s in summaries_of(out / "summaries.jsonl")] == SAMPLE_RUNS


def test_s4_console_script_run_samples(console: dict[str, Any]) -> None:
    """§4 through the installed console script (`main()`): exit code 0, outputs written, nothing
    on stderr."""
    out = console["root"] / "out-run-samples"
    proc = console["run-samples"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "wrote 3 summaries" in proc.stdout
    assert [s["runId"] for s in summaries_of(out / "summaries.jsonl")] == SAMPLE_RUNS
    for name in ("runs", "tasks", "trials", "problems"):
        assert (out / f"{name}.parquet").is_file()


def test_s4_run_quiet_prints_nothing_on_a_clean_run(
    tmp_path: Path, suite_dir: Path, events_file: Path
) -> None:
    """`--quiet` (E-107): nothing on stdout or stderr on a clean run; the outputs are there."""
    out = tmp_path / "out"
    result = invoke("run", events_file, "--suites", suite_dir, "--out", out, "--quiet")
    assert result.exit_code == 0
    assert result.stdout == "" and result.stderr == ""
    assert len((out / "summaries.jsonl").read_text(encoding="utf-8").splitlines()) == 1


# --------------------------------------------------------------------------------------------
# run: options


def test_d15_default_pass_score_option(tmp_path: Path, suite_dir: Path, events_file: Path) -> None:
    """D-15 / D-17: absent `passScore` means `--default-pass-score` (default 1.0). The standard
    run's gating mean is exactly 0.75: it fails at 1.0 and 0.8, and an exact tie at 0.75 passes."""
    verdicts = {}
    for bar in (None, "0.8", "0.75"):
        out = tmp_path / f"out-{bar}"
        extra = [] if bar is None else ["--default-pass-score", bar]
        result = invoke("run", events_file, "--suites", suite_dir, "--out", out, *extra)
        assert result.exit_code == 0, result.output
        (line,) = summaries_of(out / "summaries.jsonl")
        verdicts[bar] = line["summary"]["passed"]
    assert verdicts == {None: False, "0.8": False, "0.75": True}


def test_d9_on_miss_default_option(tmp_path: Path, events_file: Path) -> None:
    """D-9: with `fixtures.onMiss` absent a miss is only counted (`--on-miss-default count`, the
    default); `--on-miss-default fail` fails the trial closed (score 0, passed false)."""
    suite = make_suite()
    suite["tasks"][0]["fixtures"] = {
        "toolResponses": [
            {
                "tool": TOOL,
                "args": {"orderId": "ORD-SECRET-other"},
                "argsMatch": "exact",
                "response": {"status": "delivered"},
            }
        ]
    }
    suites = tmp_path / "suites"
    write_json(suites / "s.json", suite)
    alphas = {}
    for choice in (None, "count", "fail"):
        out = tmp_path / f"out-{choice}"
        extra = [] if choice is None else ["--on-miss-default", choice]
        result = invoke("run", events_file, "--suites", suites, "--out", out, *extra)
        assert result.exit_code == 0, result.output
        (line,) = summaries_of(out / "summaries.jsonl")
        alpha = line["summary"]["tasks"][0]
        alphas[choice] = (alpha["score"], alpha["passed"], alpha["fixtureMissCount"])
    assert alphas == {None: (1.0, True, 1), "count": (1.0, True, 1), "fail": (0, False, 1)}


def test_threads_option(tmp_path: Path) -> None:
    """`--threads N` sets the engine's threads; the grade is the same (§4 determinism across
    thread counts is checked byte for byte in test_outputs.py)."""
    out = tmp_path / "out"
    result = invoke("run", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--out", out, "--threads", "1")
    assert result.exit_code == 0, result.output
    assert [s["runId"] for s in summaries_of(out / "summaries.jsonl")] == SAMPLE_RUNS


# --------------------------------------------------------------------------------------------
# run: usage errors and bad input


@pytest.mark.parametrize(
    "args",
    [
        ["run"],
        ["run", "--suites", str(SAMPLE_SUITES)],
        ["run", str(SAMPLE_EVENTS), "--bogus"],
        ["run", str(SAMPLE_EVENTS), "--threads", "0"],
        ["run", str(SAMPLE_EVENTS), "--threads", "many"],
        ["run", str(SAMPLE_EVENTS), "--default-pass-score", "1.5"],
        ["run", str(SAMPLE_EVENTS), "--on-miss-default", "sometimes"],
        ["validate"],
        ["grade-everything"],
    ],
    ids=[
        "no-events",
        "suites-only",
        "unknown-option",
        "threads-0",
        "threads-text",
        "pass-score-range",
        "on-miss-choice",
        "validate-no-suites",
        "unknown-command",
    ],
)
def test_usage_errors_exit_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
) -> None:
    """A usage error exits with code 2 and a usage message, through click and through `main()`,
    before anything is written."""
    monkeypatch.chdir(tmp_path)
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "Error" in result.output
    code, out, err = run_main(monkeypatch, capsys, *args)
    assert code == 2
    assert "Error" in err
    assert_no_traceback(out, err)
    assert not (tmp_path / "out").exists()


def test_s6_cli_skipped_file_exits_3_and_grades_the_rest(
    tmp_path: Path, suite_dir: Path, events_file: Path
) -> None:
    """§6 through the CLI: a file missing a required column is skipped and reported (stderr line
    and problems.parquet), the other file's run is graded and written, exit code 3."""
    bad = write_events(tmp_path / "events" / "bad.parquet", standard_run("acme/run-bad").rows)
    pq.write_table(pq.read_table(bad).drop(["type"]), bad)
    text = tmp_path / "events" / "text.parquet"
    text.write_text("definitely not parquet")
    out = tmp_path / "out"
    result = invoke("run", tmp_path / "events", "--suites", suite_dir, "--out", out)
    assert result.exit_code == 3, result.output
    assert [s["runId"] for s in summaries_of(out / "summaries.jsonl")] == [RUN]
    skipped = [line for line in result.stderr.splitlines() if "skipped:" in line]
    assert any(str(bad) in line and "[columns-missing]" in line for line in skipped)
    assert any(str(text) in line and "[file-unreadable]" in line for line in skipped)
    assert "problems: 2 error" in result.stdout
    codes = pl.read_parquet(out / "problems.parquet")["code"].to_list()
    assert sorted(codes) == ["columns-missing", "file-unreadable"]


def test_s6_cli_skipped_run_exits_3(tmp_path: Path, suite_dir: Path) -> None:
    """§6 through the CLI: a run with a conflicting duplicate event is skipped (exit 3), its
    `skipped:` line names the run, the event and the rule, and carries no tool name."""
    corrupt = standard_run("acme/run-corrupt").rows
    tool_call = next(r for r in corrupt if r["type"] == "agent.tool-called")
    twin = {**tool_call, "payload": {**tool_call["payload"], "inputs": {"orderId": "SECRET-2"}}}
    events = write_events(tmp_path / "e.parquet", standard_run(RUN).rows + corrupt + [twin])
    out = tmp_path / "out"
    result = invoke("run", events, "--suites", suite_dir, "--out", out)
    assert result.exit_code == 3, result.output
    (line,) = [line for line in result.stderr.splitlines() if "skipped:" in line]
    assert f"run acme/run-corrupt, event {tool_call['sequence']}" in line
    assert "[event-conflict]" in line
    assert_content_free(result.output)
    assert [s["runId"] for s in summaries_of(out / "summaries.jsonl")] == [RUN]


def test_s6_console_script_all_files_unusable_exit_2(console: dict[str, Any]) -> None:
    """§6: when no file can be used, the installed command exits 2 with a clear one-line message
    naming the file, no traceback, and writes nothing."""
    proc = console["unusable"]
    assert proc.returncode == 2
    assert proc.stderr.startswith("evalbatch: no usable event file")
    assert len(proc.stderr.strip().splitlines()) == 1
    assert str(console["unusable-file"]) in proc.stderr
    assert_no_traceback(proc.stdout, proc.stderr)
    assert not (console["root"] / "out-unusable").exists()


def test_s6_missing_events_path_exit_2(
    tmp_path: Path,
    suite_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """§6: an events path that names nothing is unusable input: exit 2, one line, no outputs."""
    out = tmp_path / "out"
    code, stdout, err = run_main(
        monkeypatch, capsys, "run", tmp_path / "nope", "--suites", suite_dir, "--out", out
    )
    assert code == 2
    assert err.startswith("evalbatch: no event file")
    assert len(err.strip().splitlines()) == 1
    assert_no_traceback(stdout, err)
    assert not out.exists()


@pytest.mark.parametrize(
    "text",
    ["{ not json", json.dumps({"version": "1.0.0", "tasks": []})],
    ids=["not-json", "no-suiteId"],
)
def test_s1_3_cli_unmatchable_suite_stops_before_grading(
    tmp_path: Path,
    suite_dir: Path,
    events_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
) -> None:
    """§1.3: a suite file that is not JSON or lacks suiteId stops `run` before grading: exit 2, a
    message naming the file, no traceback, and no output written."""
    broken = suite_dir / "broken.json"
    broken.write_text(text)
    out = tmp_path / "out"
    code, stdout, err = run_main(
        monkeypatch, capsys, "run", events_file, "--suites", suite_dir, "--out", out
    )
    assert code == 2
    assert err.startswith(f"evalbatch: {broken}")
    assert_no_traceback(stdout, err)
    assert not out.exists()


def test_s6_cli_file_with_cut_data_pages(
    tmp_path: Path,
    suite_dir: Path,
    events_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """§6 truncated file through the command: bytes cut from a file's data pages (footer intact)
    skip that file (exit 3) while the good file is graded and written, rather than an internal
    error that loses every run."""
    data = write_events(tmp_path / "whole.parquet", standard_run("acme/run-cut").rows).read_bytes()
    (tmp_path / "events" / "cut.parquet").write_bytes(data[:200] + data[400:])
    out = tmp_path / "out"
    code, stdout, err = run_main(
        monkeypatch, capsys, "run", tmp_path / "events", "--suites", suite_dir, "--out", out
    )
    assert_no_traceback(stdout, err)
    assert code == 3, err
    assert [s["runId"] for s in summaries_of(out / "summaries.jsonl")] == [RUN]


def test_s6_cli_payload_not_json(
    tmp_path: Path,
    suite_dir: Path,
    events_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """§6 / D-3 "a payload that is not JSON" through the command: the run is reported
    (`payload-invalid`) and skipped (exit 3), the other run is graded, and no message echoes the
    payload."""
    rows = standard_run("acme/run-badjson").rows
    call = next(r for r in rows if r["type"] == "agent.tool-called")
    call["payload"] = '{"toolName": "crm:lookup-order-SECRET", "inputs": {"orderId": "SECRET"'
    write_events(tmp_path / "events" / "bad.parquet", rows)
    out = tmp_path / "out"
    code, stdout, err = run_main(
        monkeypatch, capsys, "run", tmp_path / "events", "--suites", suite_dir, "--out", out
    )
    assert_content_free(stdout + err)
    assert_no_traceback(stdout, err)
    assert code == 3, err
    assert [s["runId"] for s in summaries_of(out / "summaries.jsonl")] == [RUN]


# --------------------------------------------------------------------------------------------
# validate (§1.3)


def test_s1_3_validate_valid_suites_exit_0() -> None:
    """§1.3: `evalbatch validate` on valid suites prints `ok` per file and exits 0."""
    result = invoke("validate", SAMPLE_SUITES)
    assert result.exit_code == 0, result.output
    files = sorted(SAMPLE_SUITES.glob("*.json"))
    assert len(files) == 5  # trajectory, trials, fixture-miss, regression, delegates
    for path in files:
        assert f"{path}: ok" in result.stdout


def test_s1_3_validate_warnings_only_exit_0(tmp_path: Path) -> None:
    """§3.2: `args` without `argsMatch` is compared under `ignore`, and validate warns about it;
    warnings do not make the suite invalid (exit 0)."""
    suite = make_suite()
    del suite["tasks"][0]["expected"]["trajectory"]["calls"][0]["argsMatch"]
    path = write_json(tmp_path / "warn.json", suite)
    result = invoke("validate", path)
    assert result.exit_code == 0, result.output
    assert f"{path}: warning: $.tasks[0].expected.trajectory.calls[0].args:" in result.stdout


def test_s1_3_validate_invalid_suite_prints_json_paths_exit_1(tmp_path: Path) -> None:
    """§1.3: validation "names the JSON path of each fault"; an invalid suite exits 1, valid files
    next to it are still reported ok."""
    suite = make_suite(trials={"count": 2, "k": 3, "passRule": "most"})
    suite["tasks"][0]["expected"]["trajectory"]["match"] = "superset"
    suite["tasks"][1]["taskId"] = "alpha"
    suite["tasks"][1]["expected"]["trajectory"]["calls"][0]["argsMatch"] = "fuzzy"
    bad = write_json(tmp_path / "suites" / "bad.json", suite)
    good = write_json(tmp_path / "suites" / "good.json", make_suite("acme.test.evals.good"))
    result = invoke("validate", tmp_path / "suites")
    assert result.exit_code == 1, result.output
    assert f"{good}: ok" in result.stdout
    errors = [line for line in result.stdout.splitlines() if line.startswith(f"{bad}: error: $.")]
    paths = {line.split(": ")[2] for line in errors}
    assert {
        "$.trials.k",
        "$.trials.passRule",
        "$.tasks[0].expected.trajectory.match",
        "$.tasks[1].taskId",
        "$.tasks[1].expected.trajectory.calls[0].argsMatch",
    } <= paths
    superset = next(line for line in errors if "trajectory.match" in line)
    assert "any-order" in superset
    assert_content_free(result.stdout)


def test_s1_3_validate_conflicting_copies_exit_1(tmp_path: Path) -> None:
    """§1.3: two files with one suiteId and version and different content are a conflict
    (exit 1); identical copies are fine (exit 0)."""
    same = tmp_path / "same"
    write_json(same / "a.json", make_suite())
    write_json(same / "b.json", make_suite())
    assert invoke("validate", same).exit_code == 0
    differ = tmp_path / "differ"
    write_json(differ / "a.json", make_suite())
    write_json(differ / "b.json", make_suite(thresholds={"passScore": 0.5}))
    result = invoke("validate", differ)
    assert result.exit_code == 1, result.output
    assert "error:" in result.stdout and SUITE_ID in result.stdout


@pytest.mark.parametrize(
    "text",
    ["{ not json", '{"suiteId": "a", "version": "1.0.0",}'],
    ids=["not-json", "trailing-comma"],
)
def test_s1_3_validate_unreadable_suite_exit_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
) -> None:
    """§1.3 / docs/validate.md: `validate` exits 2 when a file cannot be read as JSON, with a
    one-line message naming the file and no traceback (a JSON document without suiteId is an
    invalid suite, exit 1: E-85, tests/test_fail_closed_cli.py)."""
    path = tmp_path / "broken.json"
    path.write_text(text)
    code, out, err = run_main(monkeypatch, capsys, "validate", path)
    assert code == 2
    assert err.startswith(f"evalbatch: {path}")
    assert_no_traceback(out, err)


def test_s1_3_console_script_validate_unreadable_exit_2(console: dict[str, Any]) -> None:
    """The installed `evalbatch validate` exits 2 on a file that is not JSON, naming it."""
    proc = console["validate-broken"]
    assert proc.returncode == 2
    assert str(console["broken"]) in proc.stderr and "not JSON" in proc.stderr
    assert_no_traceback(proc.stdout, proc.stderr)
