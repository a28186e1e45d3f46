"""Outputs (CONTRACT §4): summaries.jsonl, the four tables, atomic and deterministic writing.

The mixed input used here holds the sample runs (data/samples, the regression pair included so a
`regression` block is written), two clean runs, a run with a conflicting event (skipped), a run
without a supplied suite, a run with a sequence gap and a run that is not an eval run.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from evalbatch import api, problems
from evalbatch.cli import cli
from evalbatch.inputs.suites import validate_summary
from evalbatch.outputs import outdir, writer
from evalbatch.outputs.run_inputs import RunInputs
from evalbatch.pipeline.collect import write_result
from tests.helpers import (
    AGENT,
    OTHER_SUITE_ID,
    OUTPUT_FILES,
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    SAMPLES,
    WRITTEN_FILES,
    RunLog,
    assert_content_free,
    make_suite,
    read_outputs,
    shuffled,
    standard_run,
    summaries_of,
    write_events,
    write_json,
)

FIRST, LAST = "acme/run-00-first", "acme/run-zz-last"
CONFLICT, NO_SUITE, GAP, PLAIN = (
    "acme/run-conflict",
    "acme/run-nosuite",
    "acme/run-gap",
    "acme/run-plain",
)
SAMPLE_RUNS = [
    "acme/run-fixture-miss-0001",
    "acme/run-regress-baseline-0001",
    "acme/run-regress-candidate-0001",
    "acme/run-trajectory-0001",
    "acme/run-trials-k2-0001",
]
GRADED = sorted([FIRST, LAST, NO_SUITE, GAP, *SAMPLE_RUNS])

#: CONTRACT §4: the EvalSummary fields, in this order (optional ones only when defined)
SUITE_FIELDS = [
    "suiteId",
    "suiteVersion",
    "aggregateScore",
    "passed",
    "taskCount",
    "passedCount",
    "totalCostUsd",
    "evaluatedModelClass",
    "trialStats",
    "regression",
    "tasks",
]
TASK_FIELDS = [
    "taskId",
    "score",
    "passed",
    "costUsd",
    "latencyMs",
    "trajectory",
    "trials",
    "efficiency",
    "fixtureMissCount",
]
BLOCK_FIELDS = {
    "trialStats": ["k", "passAtK", "passHatK", "scoreStderr"],
    "regression": [
        "baselineRunId",
        "scoreDelta",
        "verdict",
        "method",
        "alpha",
        "pairedTaskCount",
    ],
    "trajectory": [
        "mode",
        "matched",
        "expectedCount",
        "observedCount",
        "matchedCount",
        "forbiddenCount",
    ],
    "trials": ["n", "passedCount", "meanScore", "passAtK", "passHatK"],
    "efficiency": ["toolCallCount", "modelCallCount", "inputTokens", "outputTokens"],
}


def mixed_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in [*sorted(SAMPLE_EVENTS.glob("*.parquet")), *sorted(SAMPLES.glob("regress/*"))]:
        table = pq.read_table(path, columns=["runId", "sequence", "type", "payload", "timestamp"])
        rows += table.to_pylist()
    rows += standard_run(LAST).rows + standard_run(FIRST).rows
    corrupt = standard_run(CONFLICT).rows
    rows += [*corrupt, {**corrupt[1], "payload": {**corrupt[1]["payload"], "taskCount": 3}}]
    rows += standard_run(NO_SUITE, suite_id=OTHER_SUITE_ID).rows
    rows += [r for r in standard_run(GAP).rows if r["sequence"] != 4]
    plain = RunLog(PLAIN)
    plain.emit("run.started", {})
    plain.emit("agent.invocation-started", {"invocationId": "x", "agentId": AGENT})
    rows += plain.rows
    return rows


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The mixed input in canonical order in one file, its suites, and one graded output dir."""
    root = tmp_path_factory.mktemp("mixed")
    rows = mixed_rows()
    suites = root / "suites"
    write_json(suites / "basic.json", make_suite())
    events = write_events(root / "events" / "all.parquet", rows)
    out = root / "out"
    result = run_cli(events, suites=[SAMPLE_SUITES, suites], out=out)
    assert result.exit_code == 3, result.output  # the conflicting run is skipped
    return {"root": root, "rows": rows, "suites": [SAMPLE_SUITES, suites], "out": out}


def run_cli(*events: Path | str, suites: list[Path], out: Path, extra: tuple[str, ...] = ()) -> Any:
    args = ["run", *map(str, events)]
    for suite in suites:
        args += ["--suites", str(suite)]
    return CliRunner().invoke(cli, [*args, "--out", str(out), "--quiet", *extra])


# --------------------------------------------------------------------------------------------
# summaries.jsonl


@pytest.mark.slow
def test_s4_summaries_jsonl_one_line_per_graded_run_sorted(mixed: dict[str, Any]) -> None:
    """§4: one line per graded eval run, sorted by runId, `{"runId": ..., "summary": ...}`. A
    skipped run (§6) and a run with no eval.started (E-1) have no line."""
    text = (mixed["out"] / "summaries.jsonl").read_text(encoding="utf-8")
    assert text.endswith("\n")
    lines = text.splitlines()
    docs = [json.loads(line) for line in lines]
    assert [d["runId"] for d in docs] == GRADED
    assert CONFLICT not in text and PLAIN not in text
    for doc in docs:
        assert list(doc) == ["runId", "summary"]


def test_s4_every_summary_validates(mixed: dict[str, Any]) -> None:
    """§4: each summary validates against the package's closed EvalSummary schema."""
    for doc in summaries_of(mixed["out"] / "summaries.jsonl"):
        assert validate_summary(doc["summary"]) == [], doc["runId"]


def test_s4_summary_fields_in_contract_order(mixed: dict[str, Any]) -> None:
    """§4: "exactly the OpenWOP EvalSummary field names ... The fields, in this order"."""

    def assert_ordered(keys: list[str], order: list[str], where: str) -> None:
        assert set(keys) <= set(order), f"{where}: unknown fields {set(keys) - set(order)}"
        assert keys == [k for k in order if k in keys], where

    seen_blocks = set()
    for doc in summaries_of(mixed["out"] / "summaries.jsonl"):
        summary = doc["summary"]
        assert_ordered(list(summary), SUITE_FIELDS, doc["runId"])
        for block in ("trialStats", "regression"):
            if block in summary:
                seen_blocks.add(block)
                assert_ordered(list(summary[block]), BLOCK_FIELDS[block], block)
        for task in summary["tasks"]:
            assert_ordered(list(task), TASK_FIELDS, f"{doc['runId']} {task['taskId']}")
            for block in ("trajectory", "trials", "efficiency"):
                if block in task:
                    seen_blocks.add(block)
                    assert_ordered(list(task[block]), BLOCK_FIELDS[block], block)
    # every block but `regression` (checked on its own below) occurs in the mixed input
    assert seen_blocks >= set(BLOCK_FIELDS) - {"regression"}


def test_s4_summaries_are_content_free(mixed: dict[str, Any]) -> None:
    """§4: summaries carry ids, enums, counts and scores — never tool names or arguments."""
    text = (mixed["out"] / "summaries.jsonl").read_text(encoding="utf-8")
    assert_content_free(text)
    assert "billing:" not in text and "A-1001" not in text


@pytest.mark.slow
def test_s4_summary_invalid_is_not_written(tmp_path: Path, suite_dir: Path) -> None:
    """§4: a summary that would not validate (an id outside OpenWOP's patterns) is not written:
    problem `summary-invalid`, the run counts as skipped (exit code 3)."""
    rows = standard_run(FIRST).rows + standard_run("acme/run-badid", suite_id="Bad Suite Id").rows
    events = write_events(tmp_path / "e.parquet", rows)
    out = tmp_path / "out"
    result = run_cli(events, suites=[suite_dir], out=out)
    assert result.exit_code == 3, result.output
    assert [d["runId"] for d in summaries_of(out / "summaries.jsonl")] == [FIRST]
    found = pl.read_parquet(out / "problems.parquet").filter(pl.col("code") == "summary-invalid")
    assert found["run_id"].to_list() == ["acme/run-badid"]
    assert found["severity"].to_list() == ["error"]
    runs = pl.read_parquet(out / "runs.parquet")
    assert runs.filter(pl.col("run_id") == "acme/run-badid")["graded"].to_list() == [False]


@pytest.mark.slow
def test_s4_nothing_graded_still_writes_every_file(tmp_path: Path, suite_dir: Path) -> None:
    """§4 / §6: when every run is skipped, summaries.jsonl is written empty and the tables are
    written with their columns, so a nightly job's readers never see stale files."""
    corrupt = standard_run(CONFLICT).rows
    corrupt.append({**corrupt[3], "type": "agent.decided"})
    events = write_events(tmp_path / "e.parquet", corrupt)
    out = tmp_path / "out"
    result = run_cli(events, suites=[suite_dir], out=out)
    assert result.exit_code == 3
    assert (out / "summaries.jsonl").read_bytes() == b""
    assert pl.read_parquet(out / "tasks.parquet").height == 0
    assert pl.read_parquet(out / "problems.parquet")["code"].to_list() == ["event-conflict"]


# --------------------------------------------------------------------------------------------
# tables


def test_s4_problems_table_columns(mixed: dict[str, Any]) -> None:
    """§4 / docs/outputs.md: the problems table has exactly run_id, sequence, code, severity,
    message; severity is the code's (problems.CODES); messages are content-free."""
    frame = pl.read_parquet(mixed["out"] / "problems.parquet")
    assert frame.schema == pl.Schema(
        {
            "run_id": pl.String,
            "sequence": pl.Int64,
            "code": pl.String,
            "severity": pl.String,
            "message": pl.String,
        }
    )
    assert frame.height > 0
    for row in frame.iter_rows(named=True):
        assert row["severity"] == problems.severity(row["code"])
        assert f"[{row['code']}]" in row["message"]
        assert_content_free(row["message"])
    codes = set(zip(frame["run_id"], frame["code"], strict=True))
    assert {
        (CONFLICT, "event-conflict"),
        (NO_SUITE, "suite-missing"),
        (GAP, "sequence-gap"),
    } <= codes


def test_s4_runs_table(mixed: dict[str, Any]) -> None:
    """§4: one row per eval run, graded or not (docs/outputs.md: suite, graded, aggregate score,
    passed, counts, cost, trial stats), agreeing with the summaries."""
    frame = pl.read_parquet(mixed["out"] / "runs.parquet")
    assert {
        "run_id",
        "suite_id",
        "suite_version",
        "graded",
        "aggregate_score",
        "passed",
        "task_count",
        "passed_count",
        "total_cost_usd",
        "k",
        "pass_at_k",
        "pass_hat_k",
    } <= set(frame.columns)
    assert frame["run_id"].to_list() == sorted([*GRADED, CONFLICT])
    graded = dict(zip(frame["run_id"], frame["graded"], strict=True))
    assert graded == {**dict.fromkeys(GRADED, True), CONFLICT: False}
    docs = {d["runId"]: d["summary"] for d in summaries_of(mixed["out"] / "summaries.jsonl")}
    for row in frame.filter("graded").iter_rows(named=True):
        summary = docs[row["run_id"]]
        assert row["aggregate_score"] == pytest.approx(summary["aggregateScore"])
        assert row["passed"] == summary["passed"]
        assert row["task_count"] == summary["taskCount"]
        assert row["passed_count"] == summary["passedCount"]


def test_s4_tasks_table(mixed: dict[str, Any]) -> None:
    """§4: one row per task of each graded run (docs/outputs.md: score, gating score, passed, n,
    passed count, pass@k, pass^k, cost, latency, trajectory matched, fixture misses)."""
    frame = pl.read_parquet(mixed["out"] / "tasks.parquet")
    assert {
        "run_id",
        "task_id",
        "score",
        "gating_score",
        "passed",
        "n",
        "passed_count",
        "pass_at_k",
        "pass_hat_k",
        "cost_usd",
        "latency_ms",
        "trajectory_matched",
        "fixture_miss_count",
    } <= set(frame.columns)
    docs = {d["runId"]: d["summary"] for d in summaries_of(mixed["out"] / "summaries.jsonl")}
    expected = [(run, t["taskId"]) for run in GRADED for t in docs[run]["tasks"]]
    assert list(zip(frame["run_id"], frame["task_id"], strict=True)) == expected


def test_s4_trials_table(mixed: dict[str, Any]) -> None:
    """§4: one row per eval.scored of a graded run, with counted / left out, scores and a
    trajectory reason code (docs/outputs.md: forbidden, missing, extra, order, no-bracket; §4 also
    names args)."""
    frame = pl.read_parquet(mixed["out"] / "trials.parquet")
    assert {
        "run_id",
        "task_id",
        "trial_index",
        "sequence",
        "counted",
        "left_out",
        "score",
        "gating_score",
        "passed",
        "trajectory_matched",
        "trajectory_reason",
        "fixture_misses",
    } <= set(frame.columns)
    scored = [r for r in mixed["rows"] if r["type"] == "eval.scored" and r["runId"] in GRADED]
    assert frame.height == len(scored)
    assert set(frame["run_id"]) == set(GRADED)
    reasons = set(frame["trajectory_reason"].drop_nulls())
    assert reasons <= {"forbidden", "order", "missing", "extra", "args", "no-bracket"}
    assert {"forbidden", "order"} <= reasons  # the trajectory sample's wrong-order, forbidden-hit


#: the one nesting the tables have: a value per k, as native lists (E-52)
BY_K_COLUMNS = {("tasks", "pass_at_k_by_k"), ("tasks", "pass_hat_k_by_k")}


def test_s4_tables_are_flat_and_content_free(mixed: dict[str, Any]) -> None:
    """§4: "Parquet, flat columns": one row per run, task, trial or problem and a scalar per
    column, but for the by-k columns, a list of doubles indexed by k (E-52: a dashboard
    plots them without parsing; no struct, no list of lists); tables are content-free like the
    summaries."""
    for name in ("runs", "tasks", "trials", "problems"):
        frame = pl.read_parquet(mixed["out"] / f"{name}.parquet")
        for column, dtype in frame.schema.items():
            if (name, column) in BY_K_COLUMNS:
                assert dtype == pl.List(pl.Float64), f"{name}.{column} is {dtype}"
                continue
            assert not dtype.is_nested(), f"{name}.{column} is {dtype}"
            if dtype == pl.String:
                for value in frame[column].drop_nulls():
                    assert_content_free(value)


# --------------------------------------------------------------------------------------------
# determinism


@pytest.mark.slow
def test_s4_same_input_twice_is_byte_identical(mixed: dict[str, Any], tmp_path: Path) -> None:
    """§4: "the same inputs give byte-identical outputs" (all five files)."""
    out = tmp_path / "again"
    run_cli(mixed["root"] / "events", suites=mixed["suites"], out=out)
    assert read_outputs(out) == read_outputs(mixed["out"])


@pytest.mark.slow
def test_s4_file_order_and_splits_do_not_change_bytes(
    mixed: dict[str, Any], tmp_path: Path
) -> None:
    """§4 / §1.1: byte-identical outputs whatever the file order: the rows shuffled into
    different file splits, and the same files named in a different order."""
    rows = mixed["rows"]
    reference = read_outputs(mixed["out"])
    layouts = {"three": (3, 11), "five": (5, 12)}
    for name, (parts, seed) in layouts.items():
        mixed_up = shuffled(rows, seed)
        files = [
            write_events(tmp_path / name / f"part-{i}.parquet", mixed_up[i::parts])
            for i in range(parts)
        ]
        out = tmp_path / f"out-{name}"
        result = run_cli(*files, suites=mixed["suites"], out=out)
        assert result.exit_code == 3
        assert read_outputs(out) == reference, name
        if name == "three":
            out_rev = tmp_path / "out-reversed"
            run_cli(*reversed(files), suites=list(reversed(mixed["suites"])), out=out_rev)
            assert read_outputs(out_rev) == reference


@pytest.mark.slow
def test_s4_thread_count_does_not_change_bytes(mixed: dict[str, Any], tmp_path: Path) -> None:
    """§4 / D-17: byte-identical outputs with --threads 1 and --threads 2."""
    events = mixed["root"] / "events"
    run_cli(events, suites=mixed["suites"], out=tmp_path / "t1", extra=("--threads", "1"))
    run_cli(events, suites=mixed["suites"], out=tmp_path / "t2", extra=("--threads", "2"))
    assert read_outputs(tmp_path / "t1") == read_outputs(tmp_path / "t2")
    assert read_outputs(tmp_path / "t1") == read_outputs(mixed["out"])


# --------------------------------------------------------------------------------------------
# atomic writing


def test_s4_no_temporary_files_left(mixed: dict[str, Any]) -> None:
    """§4 "write aside, then rename": after a run the out dir holds the five outputs and the
    record of what the run was given (E-118) only."""
    assert sorted(p.name for p in mixed["out"].iterdir()) == sorted(WRITTEN_FILES)


@pytest.mark.slow
def test_s4_existing_outputs_are_replaced(mixed: dict[str, Any], tmp_path: Path) -> None:
    """§4: an existing out dir with old outputs (from a bigger earlier run, or garbage) gets
    every one of them replaced by the new outputs; nothing is appended."""
    out = tmp_path / "out"
    out.mkdir()
    for name in OUTPUT_FILES:
        (out / name).write_bytes(b"stale output from an earlier night\n" * 50)
    events = write_events(tmp_path / "e.parquet", standard_run(FIRST).rows)
    result = run_cli(events, suites=mixed["suites"], out=out)
    assert result.exit_code == 0, result.output
    fresh = tmp_path / "fresh"
    run_cli(events, suites=mixed["suites"], out=fresh)
    assert read_outputs(out) == read_outputs(fresh)
    assert [d["runId"] for d in summaries_of(out / "summaries.jsonl")] == [FIRST]
    assert sorted(p.name for p in out.iterdir()) == sorted(WRITTEN_FILES)


def test_s4_failed_write_keeps_previous_file(
    mixed: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§4 atomic writing: a write that fails half way leaves the previous file whole and no
    temporary file behind."""
    out = tmp_path / "out"
    out.mkdir()
    old = b"previous trials table"
    (out / "trials.parquet").write_bytes(old)
    result = api.grade_paths([mixed["root"] / "events"], mixed["suites"])
    real = writer.TableWriter.close

    def failing(self: writer.TableWriter) -> None:
        if "trial_index" in self.schema:
            raise OSError("disk full")  # half a file is on disk by now
        real(self)

    monkeypatch.setattr(writer.TableWriter, "close", failing)
    with pytest.raises(OSError, match="disk full"):
        write_result(result, out)
    assert (out / "trials.parquet").read_bytes() == old
    leftovers = {p.name for p in out.iterdir()} - set(OUTPUT_FILES)
    assert leftovers == set()


def test_s4_output_files_get_ordinary_permissions(mixed: dict[str, Any], tmp_path: Path) -> None:
    """§4 atomic writing, where the contract is silent ("what a careful user would expect"): the
    outputs are ordinary files for the analysts who read them, with the permissions any file the
    user creates gets (0666 less the umask), not the private 0600 of a temporary file."""
    probe = tmp_path / "probe"
    probe.write_text("x")
    expected = stat.S_IMODE(os.stat(probe).st_mode)
    for name in WRITTEN_FILES:
        mode = stat.S_IMODE(os.stat(mixed["out"] / name).st_mode)
        assert mode == expected, f"{name}: {oct(mode)} != {oct(expected)}"


# --------------------------------------------------------------------------------------------
# run-inputs.json (E-118)


def test_e118_every_run_records_the_paths_it_was_given(
    mixed: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E-118: every run writes run-inputs.json, the event and suite paths exactly as given
    (relative ones stay relative; no suite given is none), read back with the outputs
    (`outdir.load`, as the report reads it); the five outputs do not depend on how the paths
    were spelled. A write that is given no paths (`write_result`) leaves no record of the
    previous run's."""
    events, suites = mixed["root"] / "events" / "all.parquet", mixed["suites"]
    assert outdir.load(mixed["out"]).inputs == RunInputs(
        events=(str(events),), suites=tuple(map(str, suites))
    )
    monkeypatch.chdir(mixed["root"])
    relative = [Path(os.path.relpath(p)) for p in suites]
    result = run_cli("events", suites=relative, out=tmp_path / "relative")
    assert result.exit_code == 3, result.output
    read = outdir.load(tmp_path / "relative")
    assert read.inputs == RunInputs(events=("events",), suites=tuple(map(str, relative)))
    assert read_outputs(tmp_path / "relative") == read_outputs(mixed["out"])

    result = run_cli("events", suites=[], out=tmp_path / "host")
    assert outdir.load(tmp_path / "host").inputs == RunInputs(events=("events",), suites=())

    write_result(api.grade_paths("events", relative), tmp_path / "relative")
    assert sorted(p.name for p in (tmp_path / "relative").iterdir()) == sorted(OUTPUT_FILES)
    assert outdir.load(tmp_path / "relative").inputs is None


def test_run_out_naming_a_file_is_a_usage_error(tmp_path: Path, suite_dir: Path) -> None:
    """`run --out FILE` (or a path under a file) says the path is a file, not a directory, as a
    usage error (exit 2), and writes nothing: not the OS's "File exists" as a write fault."""
    target = tmp_path / "night.txt"
    target.write_text("kept")
    for out, said in (
        (target, f"--out {target} is a file, not a directory"),
        (target / "sub" / "dir", f"--out {target}/sub/dir is under {target}, which is a file"),
    ):
        result = run_cli(SAMPLE_EVENTS, suites=[suite_dir], out=out)
        assert result.exit_code == 2, result.output
        assert said in result.stderr and "exists" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert target.read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["night.txt", suite_dir.name]


def test_run_help_names_the_files_out_gets() -> None:
    """`run --help` says what --out gets: the outputs and run-inputs.json on every run (E-118),
    manifest.json only with --incremental, which alone writes it."""
    from evalbatch.commands.run import run

    (option,) = [p for p in run.params if p.name == "out_dir"]
    said = " ".join((getattr(option, "help", None) or "").split())
    assert "summaries.jsonl" in said and "run-inputs.json" in said
    assert said.count("manifest.json") == 1 and "with --incremental, manifest.json" in said
