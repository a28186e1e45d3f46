"""What a user sees on the terminal (E-92, E-107): `run`'s table fitted to the terminal,
failures first, the totals line and the problems named by code, on a night of 500 runs; plurals;
`--json` on `run`, `validate` and `ingest` (shapes as docs/ documents them); `-q`; and the
progress bar: shown on a terminal only, moving while runs are chosen and within a batch."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from rich.console import Console

from evalbatch import api
from evalbatch.cli import cli
from evalbatch.commands import printing
from evalbatch.commands.progress import ProgressBar
from evalbatch.options import Resources
from evalbatch.pipeline import local
from tests.helpers import (
    EVALBATCH_BIN,
    ROOT,
    RunLog,
    make_suite,
    standard_run,
    write_events,
    write_json,
)

#: a slow family (what run prints on a terminal):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

#: the night: 500 eval runs; every fifth fails (standard_run), four are skipped (a conflicting
#: duplicate event, D-3), the rest pass; some carry warnings (no eval.completed; a negative cost)
NIGHT_RUNS = 500
SKIPPED = (7, 77, 177, 377)
FAILED = [i for i in range(NIGHT_RUNS) if i % 5 == 0 and i not in SKIPPED]
NO_COMPLETED = [i for i in range(NIGHT_RUNS) if i % 50 == 3 and i not in SKIPPED]
BAD_COST = [i for i in range(NIGHT_RUNS) if i % 100 == 11 and i not in SKIPPED]
COLUMNS = 100


def _run_id(i: int) -> str:
    return f"acme/night-{i:04d}"


def _night_run(i: int) -> list[dict[str, Any]]:
    run_id = _run_id(i)
    if i in FAILED:
        return standard_run(run_id).rows
    log = RunLog(run_id)
    log.emit("run.started", {"runId": run_id})
    log.eval_started()
    cost = -1.0 if i in BAD_COST else 0.001
    log.trial("alpha", usages=[{"inputTokens": 100, "outputTokens": 10, "costEstimateUsd": cost}])
    log.trial("beta", inputs={"orderId": "ORD-SECRET-beta", "fields": ["status"]})
    if i not in NO_COMPLETED:
        log.eval_completed()
    log.emit("run.completed", {"outcome": "completed"})
    if i in SKIPPED:
        log.rows[3] = {**log.rows[3], "sequence": 1}  # two rows with one sequence: D-3
    return log.rows


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The night's events and suite, and `run`'s outputs and terminal output over them (at
    COLUMNS columns), graded once for the module."""
    root = tmp_path_factory.mktemp("night")
    rows = [row for i in range(NIGHT_RUNS) for row in _night_run(i)]
    events = write_events(root / "events" / "night.parquet", rows)
    suites = root / "suites"
    write_json(suites / "basic.json", make_suite())
    out = root / "out"
    result = CliRunner(env={"COLUMNS": str(COLUMNS)}).invoke(
        cli, ["run", str(events), "--suites", str(suites), "--out", str(out)]
    )
    (root / "stdout.txt").write_text(result.stdout)
    (root / "stderr.txt").write_text(result.stderr)
    (root / "code.txt").write_text(str(result.exit_code))
    return {"events": events, "suites": suites, "out": out, "root": root}


def _printed(night: dict[str, Path]) -> tuple[int, list[str], str]:
    root = night["root"]
    code = int((root / "code.txt").read_text())
    return code, (root / "stdout.txt").read_text().splitlines(), (root / "stderr.txt").read_text()


def test_e92_night_is_as_built(night: dict[str, Path]) -> None:
    """A guard on the fixture: the outputs hold the failures, skips and passes it was built
    with, so the table tests below test something."""
    runs = pl.read_parquet(night["out"] / "runs.parquet")
    assert runs.height == NIGHT_RUNS
    skipped = runs.filter(~pl.col("graded"))["run_id"].to_list()
    failed = runs.filter(pl.col("graded") & ~pl.col("passed"))["run_id"].to_list()
    assert skipped == [_run_id(i) for i in SKIPPED]
    assert failed == [_run_id(i) for i in FAILED]


def test_e92_run_table_failures_first_then_skipped_then_passed(
    night: dict[str, Path],
) -> None:
    """E-92: the table lists failures first, then the runs not graded, then passes
    (each group by run id), at most RUNS_SHOWN rows; a line counts the rest by result."""
    code, lines, _ = _printed(night)
    assert code == 3  # runs were skipped (§6)
    assert lines[0].split() == ["run", "suite", "score", "passed", "tasks", "pass@k", "pass^k"]
    rows = lines[1 : 1 + printing.RUNS_SHOWN]
    shown_ids = [row.split()[0] for row in rows]
    expected = [_run_id(i) for i in FAILED] + [_run_id(i) for i in SKIPPED]
    passed = [_run_id(i) for i in range(NIGHT_RUNS) if _run_id(i) not in expected]
    assert shown_ids == (expected + passed)[: printing.RUNS_SHOWN]
    assert all(row.split()[3] == "no" for row in rows)  # 96 failures fill the 50 rows
    hidden_failed = len(FAILED) - printing.RUNS_SHOWN
    assert lines[1 + printing.RUNS_SHOWN] == (
        f"... and {NIGHT_RUNS - printing.RUNS_SHOWN} more runs ({hidden_failed} failed, "
        f"{len(SKIPPED)} skipped, {len(passed)} passed); see runs.parquet"
    )


def test_e92_table_shows_skipped_runs_and_fits_columns(tmp_path: Path) -> None:
    """E-92: a skipped run has its own row (`skipped`, no score) between the failures
    and the passes; every line of the table fits COLUMNS, a long id wrapped rather than cut."""
    long_id = "acme/" + "a-rather-long-run-id-" * 3
    rows = [*_night_run(1), *_night_run(7), *standard_run(long_id).rows]
    events = write_events(tmp_path / "e.parquet", rows)
    write_json(tmp_path / "suites" / "basic.json", make_suite())
    out = tmp_path / "out"
    result = CliRunner(env={"COLUMNS": "70"}).invoke(
        cli, ["run", str(events), "--suites", str(tmp_path / "suites"), "--out", str(out)]
    )
    assert result.exit_code == 3, result.output
    lines = result.stdout.splitlines()
    table = lines[: next(i for i, line in enumerate(lines) if line.startswith("total:"))]
    assert all(len(line) <= 70 for line in table), table
    rows_shown = [line.split() for line in table[1:] if len(line.split()) == 7]
    assert [row[3] for row in rows_shown] == ["no", "skipped", "yes"]
    assert rows_shown[1][2:] == ["-", "skipped", "-", "-", "-"]
    run_column = table[0].index("suite")
    assert long_id in "".join(line[:run_column].strip() for line in table[1:])


def test_e92_width_follows_columns(night: dict[str, Path]) -> None:
    """E-92: the table fits the terminal (COLUMNS), not fixed widths."""
    _, lines, _ = _printed(night)
    assert max(len(line) for line in lines[: 1 + printing.RUNS_SHOWN]) <= COLUMNS


def test_e92_totals_line_over_every_run(night: dict[str, Path]) -> None:
    """E-92: the totals line counts every run, not just those shown: graded,
    passed, failed, skipped, the mean score and the cost (with how many runs knew it)."""
    _, lines, _ = _printed(night)
    runs = pl.read_parquet(night["out"] / "runs.parquet").filter("graded")
    mean = runs["aggregate_score"].mean()
    costed = runs["total_cost_usd"].drop_nulls()
    graded = NIGHT_RUNS - len(SKIPPED)
    (totals,) = [line for line in lines if line.startswith("total:")]
    cost_note = (
        f" (known for {costed.len()} of {graded} graded runs)" if costed.len() < graded else ""
    )
    assert totals == (
        f"total: {NIGHT_RUNS} eval runs, {graded} graded ({graded - len(FAILED)} passed, "
        f"{len(FAILED)} failed), {len(SKIPPED)} skipped; mean score {mean:.3f}; "
        f"cost ${costed.sum():,.4f}{cost_note}"
    )


def test_e92_problems_named_by_code_with_counts(night: dict[str, Path]) -> None:
    """E-92: `problems:` names each code with its count, errors before warnings,
    most frequent first, with plurals; each skipped run has its stderr line."""
    _, lines, stderr = _printed(night)
    problems = pl.read_parquet(night["out"] / "problems.parquet")
    counts = problems.group_by("severity", "code").len()
    expected = []
    for severity in ("error", "warning"):
        rows = counts.filter(pl.col("severity") == severity).sort(
            ["len", "code"], descending=[True, False]
        )
        total = int(rows["len"].sum())
        named = ", ".join(f"{code} {n}" for _, code, n in rows.iter_rows())
        expected.append(f"{total} {severity}{'' if total == 1 else 's'} ({named})")
    assert f"problems: {', '.join(expected)}; see problems.parquet" in lines
    codes = set(counts["code"])
    assert "eval-incomplete" in codes and "cost-invalid" in codes
    assert sum("skipped: run acme/night-" in line for line in stderr.splitlines()) >= len(SKIPPED)


def test_e92_plurals(tmp_path: Path) -> None:
    """E-92: one of a thing is singular ("wrote 1 summary", "1 eval run",
    "1 error")."""
    events = write_events(tmp_path / "e.parquet", _night_run(1) + _night_run(7))
    write_json(tmp_path / "suites" / "basic.json", make_suite())
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["run", str(events), "--suites", str(tmp_path / "suites"), "--out", str(out)]
    )
    assert result.exit_code == 3, result.output
    assert f"wrote 1 summary to {out / 'summaries.jsonl'}" in result.stdout
    assert "total: 2 eval runs, 1 graded (1 passed, 0 failed), 1 skipped" in result.stdout
    assert "problems: 1 error (" in result.stdout
    assert [printing.plural(n, "summary") for n in (0, 1, 2)] == [
        "0 summaries",
        "1 summary",
        "2 summaries",
    ]
    assert printing.plural(2, "day") == "2 days"


def test_e107_run_q_prints_only_errors(night: dict[str, Path]) -> None:
    """E-107 (quiet is quiet, not even the line of where the outputs went): `-q` is
    `--quiet`, and a run with skipped runs prints nothing but those errors, on stderr; the exit
    code says some were skipped and the outputs are written."""
    out = night["root"] / "out-q"
    result = CliRunner().invoke(
        cli,
        ["run", str(night["events"]), "--suites", str(night["suites"]), "--out", str(out), "-q"],
    )
    assert result.exit_code == 3
    assert result.stdout == ""
    assert len(SKIPPED) == len(result.stderr.splitlines())
    assert all(line.startswith("  skipped: run ") for line in result.stderr.splitlines())
    summaries = (out / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(summaries) == NIGHT_RUNS - len(SKIPPED)


# --------------------------------------------------------------------------------------------
# --json


def _types(doc: dict[str, Any]) -> dict[str, type]:
    return {key: type(value) for key, value in doc.items()}


def test_e92_run_json_shape(night: dict[str, Path]) -> None:
    """E-92: `run --json` prints one JSON document and nothing else on stdout: where
    the files went, the totals, problem counts by severity and code, and every run in the
    table's order (docs/run.md "What `run` prints")."""
    out = night["root"] / "out-json"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            str(night["events"]),
            "--suites",
            str(night["suites"]),
            "--out",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    assert list(doc) == [
        "out",
        "files",
        "summaries",
        "incremental",
        "totals",
        "problems",
        "runs",
        "extractor",
        "exitCode",
    ]
    assert doc["out"] == str(out) and doc["exitCode"] == 3 and doc["incremental"] is None
    assert doc["files"]["summaries"] == str(out / "summaries.jsonl")
    assert set(doc["files"]) == {"summaries", "runs", "tasks", "trials", "problems", "run-inputs"}
    graded = NIGHT_RUNS - len(SKIPPED)
    assert doc["summaries"] == graded
    totals = doc["totals"]
    assert {k: totals[k] for k in ("evalRuns", "graded", "passed", "failed", "skipped")} == {
        "evalRuns": NIGHT_RUNS,
        "graded": graded,
        "passed": graded - len(FAILED),
        "failed": len(FAILED),
        "skipped": len(SKIPPED),
    }
    assert isinstance(totals["meanScore"], float) and isinstance(totals["totalCostUsd"], float)
    assert isinstance(totals["costedRuns"], int)
    problems = pl.read_parquet(out / "problems.parquet")
    assert doc["problems"]["error"] == problems.filter(pl.col("severity") == "error").height
    assert doc["problems"]["warning"] == problems.filter(pl.col("severity") == "warning").height
    assert doc["problems"]["byCode"] == dict(problems.group_by("code").len().iter_rows())
    assert len(doc["runs"]) == NIGHT_RUNS
    first = doc["runs"][0]
    assert _types(first) == {
        "runId": str,
        "suiteId": str,
        "suiteVersion": str,
        "result": str,
        "aggregateScore": float,
        "passedCount": int,
        "taskCount": int,
        "passAtK": type(None),
        "passHatK": type(None),
        "totalCostUsd": float,
    }
    results = [run["result"] for run in doc["runs"]]
    assert results == sorted(results, key=["failed", "skipped", "passed"].index)
    assert first["runId"] == _run_id(FAILED[0])
    skipped = next(run for run in doc["runs"] if run["result"] == "skipped")
    assert skipped["aggregateScore"] is None and skipped["runId"] == _run_id(SKIPPED[0])


def test_e92_run_json_incremental(tmp_path: Path) -> None:
    """E-92: with --incremental, `incremental` says what was graded and kept."""
    events = write_events(tmp_path / "e.parquet", _night_run(1) + _night_run(2))
    write_json(tmp_path / "suites" / "basic.json", make_suite())
    args = ["run", str(events), "--suites", str(tmp_path / "suites"), "--out", str(tmp_path / "o")]
    first = CliRunner().invoke(cli, [*args, "--incremental", "--json"])
    again = CliRunner().invoke(cli, [*args, "--incremental", "--json"])
    assert first.exit_code == again.exit_code == 0, first.output
    assert json.loads(first.stdout)["incremental"] == {
        "fullRegrade": True,
        "graded": 2,
        "kept": 0,
        "reason": "no manifest.json in the output directory",
        "eventFiles": 1,
        "eventFilesRead": 1,
    }
    assert json.loads(again.stdout)["incremental"] == {
        "fullRegrade": False,
        "graded": 0,
        "kept": 2,
        "reason": None,
        "eventFiles": 1,
        "eventFilesRead": 0,
    }


def test_e92_validate_json_and_quiet(tmp_path: Path) -> None:
    """E-92: `validate --json` lists every file with its suite, validity and faults,
    the conflicts and the paths it could not use, and its exit code; `-q` prints only errors."""
    good = write_json(tmp_path / "good.json", make_suite())
    bad_doc = make_suite("acme.test.evals.bad")
    bad_doc["tasks"][0]["expected"]["trajectory"]["match"] = "superset"
    bad = write_json(tmp_path / "bad.json", bad_doc)
    result = CliRunner().invoke(cli, ["validate", str(good), str(bad), "--json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert list(doc) == ["files", "conflicts", "unusable", "exitCode"]
    assert doc["exitCode"] == 1 and doc["conflicts"] == [] and doc["unusable"] == []
    files = {Path(f["path"]).name: f for f in doc["files"]}
    assert files["good.json"] == {
        "path": str(good),
        "suiteId": "acme.test.evals.basic",
        "version": "1.0.0",
        "valid": True,
        "faults": [],
    }
    assert files["bad.json"]["valid"] is False
    fault = files["bad.json"]["faults"][0]
    assert list(fault) == ["severity", "path", "message"] and fault["severity"] == "error"
    assert fault["path"].startswith("$.tasks[0]")

    gone = tmp_path / "gone.json"
    missing = json.loads(CliRunner().invoke(cli, ["validate", str(gone), "--json"]).stdout)
    assert missing["exitCode"] == 2 and [u["path"] for u in missing["unusable"]] == [str(gone)]

    quiet = CliRunner().invoke(cli, ["validate", str(good), str(bad), "-q"])
    assert quiet.exit_code == 1
    assert quiet.stdout.splitlines() and all(
        line.startswith(f"{bad}: error: ") for line in quiet.stdout.splitlines()
    )
    assert CliRunner().invoke(cli, ["validate", str(good), "--quiet"]).stdout == ""


def test_e92_ingest_json_and_plurals(tmp_path: Path) -> None:
    """E-92: `ingest --json` gives the totals, each problem (path, where, code,
    severity, message) and the files written; the totals line agrees in number."""
    rows = [
        {"runId": "acme/run-1", "sequence": 0, "type": "run.started", "payload": {}},
        {"runId": "acme/run-1", "sequence": 1, "type": "run.completed", "payload": {}},
    ]
    export = tmp_path / "log.ndjson"
    export.write_text("\n".join([json.dumps(rows[0]), "{oops", json.dumps(rows[1])]) + "\n")
    result = CliRunner().invoke(
        cli, ["ingest", str(export), "--out", str(tmp_path / "a"), "--json"]
    )
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    assert list(doc) == [
        "out",
        "files",
        "events",
        "runs",
        "written",
        "eventsAlreadyThere",
        "runsAlreadyThere",
        "suitesWritten",
        "indexFiles",
        "problems",
        "exitCode",
    ]
    assert (doc["files"], doc["events"], doc["runs"], doc["exitCode"]) == (1, 2, 1, 3)
    assert doc["indexFiles"] == []  # no Inspect eval-set index among the inputs (E-143)
    assert [Path(p).name for p in doc["written"]] == ["part-0.parquet"]
    (problem,) = doc["problems"]
    assert problem["path"] == str(export) and problem["where"] == "line 2"
    assert (problem["code"], problem["severity"]) == ("line-invalid", "error")
    plain = CliRunner().invoke(cli, ["ingest", str(export), "--out", str(tmp_path / "b")])
    assert plain.stdout.strip() == (
        f"ingested 2 events of 1 run from 1 file into {tmp_path / 'b'}/ (1 problem)"
    )
    quiet = CliRunner().invoke(cli, ["ingest", str(export), "--out", str(tmp_path / "c"), "-q"])
    assert quiet.stderr == "" and quiet.stdout.startswith("ingested 2 events")


# --------------------------------------------------------------------------------------------
# The progress bar


def test_e92_pipeline_reports_while_choosing_and_within_a_batch(
    night: dict[str, Path],
) -> None:
    """E-92: the pipeline tells a display where it is before any batch is done: while
    the incremental fingerprint pass chooses the runs, and when a batch's SQL stage is done but
    its runs are not yet graded (the bar moves within a batch); events never go back in its
    own reports."""
    seen: list[api.Progress] = []
    api.write_outputs(
        [night["events"]],
        night["root"] / "out-progress",
        [night["suites"]],
        on_batch=seen.append,
        incremental_run=True,
    )
    stages = [p.stage for p in seen]
    assert stages[0] == "choosing" and "grading" in stages
    assert stages.index("grading") > 0 and "choosing" not in stages[stages.index("grading") :]
    grading = [p for p in seen if p.stage == "grading"]
    total = grading[0].events
    assert total == sum(len(_night_run(i)) for i in range(NIGHT_RUNS))
    assert any(p.events_done == total and p.runs_done == 0 for p in grading)
    assert grading[-1].runs_done == NIGHT_RUNS and grading[-1].events_done == total


def test_e92_watch_reports_duckdbs_estimate_within_a_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """E-92: while a batch's SQL stage runs, DuckDB's estimate of its query moves
    the events read (its share of the batch) and never takes it back."""
    monkeypatch.setattr(local, "POLL_SECONDS", 3600.0)  # the test polls, not the thread

    class Connection:
        progress = -1.0

        def execute(self, _: str) -> None:
            pass

        def query_progress(self) -> float:
            return self.progress

    con = Connection()
    seen: list[local.Progress] = []
    watch = local._Watch(con, seen.append)
    try:
        watch.planned(local.event_files.BatchPlan([(None, None)], [1000], 10, 0))
        watch.reading_batch(0, 1000)
        for progress in (40.0, 25.0, -1.0, 90.0):
            con.progress = progress
            watch.poll_once()
    finally:
        watch.stop()
    estimates = [(p.events_done, p.query_done) for p in seen if p.query_done is not None]
    assert estimates == [(400, 0.4), (400, 0.4), (900, 0.9)]


def test_e92_progress_bar_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """E-92: the bar is drawn on a terminal, with events done of all, runs graded,
    the rate and the times; not when stderr is redirected, nor on a dumb terminal, nor when
    disabled (--quiet)."""
    update = local.Progress(1, 2, 250, 500, 6000, events=12000)
    terminal = io.StringIO()
    bar = ProgressBar(True, Console(file=terminal, force_terminal=True, width=100))
    assert bar.enabled
    bar.update(local.Progress(0, 0, 0, 0, 0, stage="choosing", query_done=0.5))
    bar.update(update)
    bar.close()
    drawn = terminal.getvalue()
    assert "6,000/12.0k events, 250 runs graded" in drawn

    redirected = io.StringIO()
    off = ProgressBar(True, Console(file=redirected))
    off.update(update)
    off.close()
    assert not off.enabled and redirected.getvalue() == ""

    monkeypatch.setenv("TERM", "dumb")
    dumb = ProgressBar(True, Console(file=io.StringIO(), force_terminal=True))
    assert not dumb.enabled
    monkeypatch.delenv("TERM")
    assert not ProgressBar(False, Console(file=io.StringIO(), force_terminal=True)).enabled


def _stderr_on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """`evalbatch ARGS` with stderr on a pseudo-terminal (stdout to a pipe): what stderr got."""
    main, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [str(EVALBATCH_BIN), *args],
            stdout=subprocess.DEVNULL,
            stderr=follower,
            env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", **env},
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the process closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert proc.wait() in (0, 3)
    finally:
        os.close(main)
    return b"".join(chunks).decode("utf-8", "replace")


def test_e92_run_draws_the_bar_on_a_terminal_stderr_only(
    night: dict[str, Path],
) -> None:
    """E-92: `run` with stderr on a terminal draws the bar there (to its end: every
    event and run); `-q` and TERM=dumb draw none; CliRunner's pipes got none (test above)."""
    args = ["run", str(night["events"]), "--suites", str(night["suites"])]
    drawn = _stderr_on_a_terminal([*args, "--out", str(night["root"] / "tty")], {})
    total = sum(len(_night_run(i)) for i in range(NIGHT_RUNS))
    short = f"{total / 1000:.1f}k" if total >= 10_000 else f"{total:,}"
    assert f"{short}/{short} events, {NIGHT_RUNS} runs graded" in drawn
    quiet = _stderr_on_a_terminal([*args, "--out", str(night["root"] / "tty-q"), "-q"], {})
    assert "events" not in quiet
    dumb = _stderr_on_a_terminal(
        [*args, "--out", str(night["root"] / "tty-dumb")], {"TERM": "dumb"}
    )
    assert "runs graded" not in dumb


def test_e92_run_on_pipes_prints_no_progress(night: dict[str, Path]) -> None:
    """E-92: stderr not a terminal (a pipe): no progress at all."""
    _, _, stderr = _printed(night)
    assert "events" not in stderr and "\r" not in stderr


def test_e92_progress_changes_no_output(night: dict[str, Path]) -> None:
    """The bar changes no output: a run with a display reporting writes the bytes a run without
    one writes."""
    out = night["root"] / "out-with-display"
    api.write_outputs(
        [night["events"]],
        out,
        [night["suites"]],
        on_batch=lambda _: None,
        resources=Resources(batch_events=2000),
    )
    for name in ("summaries.jsonl", "runs.parquet", "trials.parquet", "problems.parquet"):
        assert (out / name).read_bytes() == (night["out"] / name).read_bytes(), name
