"""Output tables a dashboard can trend on (E-94, CONTRACT §4, E-53): `runs` holds when
each eval ran, its target agent, its baseline and the regression verdict and delta of its summary;
the by-k columns are native lists; each column has one type in the files, in `GradeResult` and in
`evalbatch.connect`; the schema version is bumped, and an incremental run never carries rows from
the tables of another version. Also D-9: `failed_closed` is false, never null, for a miss that is
only counted.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalbatch import api
from evalbatch.options import Resources
from evalbatch.outputs import output_format
from evalbatch.outputs.manifest import describe_file
from evalbatch.pipeline.collect import write_result
from evalbatch.reduce import stats
from tests.helpers import (
    AGENT,
    OTHER_SUITE_ID,
    ROOT,
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    SAMPLES,
    SUITE_ID,
    T0,
    RunLog,
    make_suite,
    read_outputs,
    run_python,
    summaries_of,
    write_events,
    write_json,
)
from tests.logbuilder import Call, LogBuilder, golden, grade, suite

#: a slow family (dashboard columns over graded nights):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

TASKS = tuple(f"task-{number}" for number in range(6))
NEW_RUN_COLUMNS = (
    "eval_started_at",
    "eval_completed_at",
    "target_agent_id",
    "baseline_run_id",
    "regression_verdict",
    "regression_score_delta",
)
SAMPLE_CANDIDATE = "acme/run-regress-candidate-0001"
SAMPLE_BASELINE = "acme/run-regress-baseline-0001"


def _run(
    run_id: str,
    start: datetime,
    scores: list[float],
    *,
    suite_id: str = SUITE_ID,
    baseline: str | None = None,
    completed: bool = True,
) -> RunLog:
    """A run of `TASKS` (one trial each, scored `scores`), naming `baseline` if given."""
    log = RunLog(run_id, start)
    log.emit("run.started", {"runId": run_id})
    log.eval_started(suite_id, **({"baselineRunId": baseline} if baseline else {}))
    for task, score in zip(TASKS, scores, strict=True):
        log.trial(task, score=score, passed=score >= 0.5)
    if completed:
        log.eval_completed()
    return log


def _started_at(log: RunLog, type_: str) -> datetime | None:
    return next((row["timestamp"] for row in log.rows if row["type"] == type_), None)


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Generated runs with baselines, beside the samples' regression pair: pairs whose
    candidate regressed, held or improved; a candidate whose baseline is not in the input, one
    whose baseline ran another suite, one without eval.completed, one whose brackets name two
    agents, and one without timestamps. Graded in small batches, so a candidate and its
    baseline may sit in different batches."""
    root = tmp_path_factory.mktemp("dashboard")
    events, suites = root / "events", root / "suites"
    write_json(suites / "basic.json", make_suite(task_ids=TASKS))
    write_json(suites / "other.json", make_suite(OTHER_SUITE_ID, task_ids=TASKS))
    for path in SAMPLE_SUITES.glob("*.json"):
        write_json(suites / path.name, json.loads(path.read_text()))
    logs: list[RunLog] = []
    day = timedelta(days=1)
    candidates = {
        "regressed": [0.0, 0.0, 0.1, 0.0, 0.2, 0.0],
        "held": [1.0] * 6,
        "improved": [1.0] * 6,
    }
    for number, (name, scores) in enumerate(candidates.items()):
        base_scores = [0.1] * 6 if name == "improved" else [1.0] * 6
        base = f"acme/run-{name}-base"
        logs.append(_run(base, T0 + number * day, base_scores))
        logs.append(_run(f"acme/run-{name}-cand", T0 + number * day + day, scores, baseline=base))
    logs.append(_run("acme/run-orphan", T0, [1.0] * 6, baseline="acme/run-not-in-input"))
    logs.append(_run("acme/run-other-base", T0, [1.0] * 6, suite_id=OTHER_SUITE_ID))
    logs.append(_run("acme/run-cross", T0, [1.0] * 6, baseline="acme/run-other-base"))
    logs.append(_run("acme/run-open", T0, [1.0] * 6, completed=False))
    mixed = _run("acme/run-mixed-agents", T0, [1.0] * 6)
    first_bracket = next(r for r in mixed.rows if r["type"] == "agent.invocation-started")
    first_bracket["payload"] = {**first_bracket["payload"], "agentId": "acme.agents.helper"}
    logs.append(mixed)
    for number, log in enumerate(logs):
        write_events(events / f"run-{number:02d}.parquet", log.rows)
    undated = _run("acme/run-undated", T0, [1.0] * 6)
    write_events(events / "undated.parquet", undated.rows, timestamp=None)
    for name in ("baseline", "candidate"):
        write_events(
            events / f"sample-{name}.parquet",
            pq.read_table(SAMPLES / "regress" / f"{name}.parquet").to_pylist(),
        )
    out = root / "out"
    api.write_outputs([events], out, [suites], resources=Resources(batch_events=60))
    result = api.grade_paths([events], [suites], resources=Resources(batch_events=60))
    return {"logs": {log.run_id: log for log in logs}, "out": out, "result": result}


def test_runs_hold_the_regression_verdict_and_delta_of_the_summary(night: dict[str, Any]) -> None:
    """E-94, §5: each run's regression_verdict and regression_score_delta are its
    summary's regression.verdict and regression.scoreDelta, null without a block; its
    baseline_run_id is the baselineRunId its eval.started names."""
    runs = {row["run_id"]: row for row in pq.read_table(night["out"] / "runs.parquet").to_pylist()}
    summaries = {s["runId"]: s["summary"] for s in summaries_of(night["out"] / "summaries.jsonl")}
    with_block = 0
    for run_id, row in runs.items():
        block = summaries.get(run_id, {}).get("regression")
        with_block += block is not None
        assert row["regression_verdict"] == (block["verdict"] if block else None), run_id
        assert row["regression_score_delta"] == (block["scoreDelta"] if block else None), run_id
        if block is not None:
            assert row["baseline_run_id"] == block["baselineRunId"]
    assert with_block == 4  # three generated pairs and the samples' pair
    assert runs[SAMPLE_CANDIDATE]["regression_verdict"] == "regressed"
    assert runs["acme/run-regressed-cand"]["regression_verdict"] == "regressed"
    assert runs["acme/run-regressed-cand"]["regression_score_delta"] < 0
    assert runs["acme/run-improved-cand"]["regression_score_delta"] > 0
    # a baseline named but not in the input, or of another suite: the id, no verdict
    for run_id, baseline in (
        ("acme/run-orphan", "acme/run-not-in-input"),
        ("acme/run-cross", "acme/run-other-base"),
    ):
        assert runs[run_id]["baseline_run_id"] == baseline
        assert runs[run_id]["regression_verdict"] is None
        assert runs[run_id]["regression_score_delta"] is None
    assert runs[SAMPLE_BASELINE]["baseline_run_id"] is None


def test_runs_hold_when_the_eval_ran_and_its_target_agent(night: dict[str, Any]) -> None:
    """E-94, §2.1: eval_started_at and eval_completed_at are the timestamps of the
    eval.started and eval.completed that bound the eval span (null when absent);
    target_agent_id is the agentId every counted trial's bracket names (null when they differ)."""
    runs = {row["run_id"]: row for row in pq.read_table(night["out"] / "runs.parquet").to_pylist()}
    for run_id, log in night["logs"].items():
        assert runs[run_id]["eval_started_at"] == _started_at(log, "eval.started"), run_id
        assert runs[run_id]["eval_completed_at"] == _started_at(log, "eval.completed"), run_id
    assert runs["acme/run-open"]["eval_completed_at"] is None
    assert runs["acme/run-open"]["eval_started_at"] is not None
    assert runs["acme/run-undated"]["eval_started_at"] is None
    assert runs["acme/run-undated"]["eval_completed_at"] is None
    assert runs["acme/run-held-cand"]["target_agent_id"] == AGENT
    assert runs[SAMPLE_CANDIDATE]["target_agent_id"] == "acme.agents.support"
    assert runs["acme/run-mixed-agents"]["target_agent_id"] is None


def test_grade_result_equals_the_files(night: dict[str, Any]) -> None:
    """E-94: `grade_paths`' frames hold the files' rows with the files' types, the
    new columns included (the regression verdict is put in after every batch is in)."""
    result = night["result"]
    for table in output_format.TABLE_NAMES:
        written = pl.read_parquet(night["out"] / output_format.table_file(table))
        frame = getattr(result, table)
        assert frame.schema == output_format.schema(table), table
        assert frame.equals(written), table


def _arrow_types(path: Path) -> dict[str, pa.DataType]:
    return {field.name: field.type for field in pq.read_schema(path)}


def test_parquet_types_and_schema_version(night: dict[str, Any]) -> None:
    """E-94, E-53: the new columns' Parquet types (timestamps in UTC, native lists of
    doubles, costs as doubles) and the bumped schema version in every file's metadata."""
    assert output_format.SCHEMA_VERSION >= 4  # 4 added these columns; later versions keep them
    out = night["out"]
    runs = _arrow_types(out / "runs.parquet")
    assert list(runs)[: len(output_format.RUNS)] == list(output_format.RUNS)
    assert set(NEW_RUN_COLUMNS) <= set(runs)
    assert runs["eval_started_at"] == pa.timestamp("us", tz="UTC")
    assert runs["eval_completed_at"] == pa.timestamp("us", tz="UTC")
    for name in ("target_agent_id", "baseline_run_id", "regression_verdict"):
        assert pa.types.is_string(runs[name]) or pa.types.is_large_string(runs[name]), name
    assert runs["regression_score_delta"] == pa.float64()
    assert runs["total_cost_usd"] == pa.float64()
    tasks = _arrow_types(out / "tasks.parquet")
    for name in ("pass_at_k_by_k", "pass_hat_k_by_k"):
        assert pa.types.is_list(tasks[name]) or pa.types.is_large_list(tasks[name]), name
        assert tasks[name].value_type == pa.float64(), name
    assert tasks["cost_usd"] == pa.float64()
    assert _arrow_types(out / "trials.parquet")["usage_cost_usd"] == pa.float64()
    for table in output_format.TABLE_NAMES:
        metadata = pq.read_schema(out / output_format.table_file(table)).metadata
        assert metadata[b"evalbatch.schema_version"] == str(output_format.SCHEMA_VERSION).encode()


def test_connect_holds_the_files_types(night: dict[str, Any], tmp_path: Path) -> None:
    """E-94: the graded tables of `evalbatch.connect` have the files' SQL types
    (costs DOUBLE in both, by-k DOUBLE[], times TIMESTAMP WITH TIME ZONE)."""
    events = tmp_path / "events"
    for path in SAMPLE_EVENTS.glob("*.parquet"):
        write_events(events / path.name, pq.read_table(path).to_pylist())
    con = api.connect([events], [SAMPLE_SUITES])
    files = duckdb.connect()
    try:
        for table in output_format.TABLE_NAMES:
            path = night["out"] / output_format.table_file(table)
            in_files = files.sql(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()
            in_connect = con.sql(f"DESCRIBE SELECT * FROM {table}").fetchall()
            assert [r[:2] for r in in_connect] == [r[:2] for r in in_files], table
    finally:
        con.close()
        files.close()


def test_by_k_columns_are_lists_equal_to_the_json_they_replace(night: dict[str, Any]) -> None:
    """E-94, E-52: pass_at_k_by_k and pass_hat_k_by_k hold, element k-1, exactly the
    numbers the JSON arrays of schema version 3 held (`json.dumps` of the exact formula at each
    k, read back), and `list_extract(x, k)` reads pass^k at k in SQL."""
    rows = pq.read_table(night["out"] / "tasks.parquet").to_pylist()
    with_trials = [r for r in rows if r["pass_at_k"] is not None]
    assert with_trials
    for row in with_trials:
        at_k, hat_k = stats.pass_by_k(row["n"], row["passed_count"])
        assert row["pass_at_k_by_k"] == json.loads(json.dumps(at_k))
        assert row["pass_hat_k_by_k"] == json.loads(json.dumps(hat_k))
        assert len(row["pass_hat_k_by_k"]) == row["n"]
    assert all(r["pass_at_k_by_k"] is None for r in rows if r["pass_at_k"] is None)
    path = night["out"] / "tasks.parquet"
    at_two = duckdb.execute(
        f"SELECT list_extract(pass_hat_k_by_k, 2) FROM read_parquet('{path}') "
        f"WHERE run_id = '{SAMPLE_CANDIDATE}' AND task_id = 'refund-window'"
    ).fetchall()
    row = next(
        r for r in rows if r["run_id"] == SAMPLE_CANDIDATE and r["task_id"] == "refund-window"
    )
    assert at_two == [(row["pass_hat_k_by_k"][1],)]


def test_an_incremental_run_over_tables_of_the_previous_version_regrades_everything(
    night: dict[str, Any], tmp_path: Path
) -> None:
    """E-94, E-50: previous outputs of schema version 3 (no new columns, a manifest
    that names no schema version, its file records true) are not carried from: everything is
    graded again, the reason names the schema version, and the files equal a full run's."""
    events, suites = night["out"].parent / "events", night["out"].parent / "suites"
    out = tmp_path / "out"
    api.write_outputs([events], out, [suites], incremental_run=True)
    old_runs = pq.read_table(out / "runs.parquet").drop_columns(list(NEW_RUN_COLUMNS))
    metadata = {**old_runs.schema.metadata, b"evalbatch.schema_version": b"3"}
    pq.write_table(old_runs.replace_schema_metadata(metadata), out / "runs.parquet")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["settings"].pop("schema_version", None)  # an older evalbatch wrote none
    manifest["files"]["runs.parquet"] = describe_file(out / "runs.parquet").__dict__
    (out / "manifest.json").write_text(json.dumps(manifest))
    report = api.write_outputs([events], out, [suites], incremental_run=True)
    assert report.full_regrade
    assert report.regrade_reason is not None and "schema_version" in report.regrade_reason
    fresh = tmp_path / "fresh"
    api.write_outputs([events], fresh, [suites])
    assert read_outputs(out) == read_outputs(fresh)


# --------------------------------------------------------------------------------------------
# D-9: failed_closed is a boolean for every trial


@pytest.mark.parametrize(
    ("on_miss", "default", "failed"),
    [
        (None, "count", False),  # the fixed case: was null
        (None, "fail", True),
        ("live", "fail", False),
        ("fail", "count", True),
    ],
)
def test_failed_closed_is_true_or_false_for_a_fixture_miss(
    on_miss: str | None, default: str, failed: bool, tmp_path: Path
) -> None:
    """E-94, D-9: a trial with a fixture miss has failed_closed true when its onMiss,
    as read, is fail, and false otherwise (never null), in `GradeResult` and trials.parquet."""
    block: dict[str, Any] = {"toolResponses": []}
    if on_miss is not None:
        block["onMiss"] = on_miss
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", calls=[Call("t:x", {})], score=1, passed=True)
    log.eval_completed()
    result = grade(log, [suite(golden("task-a", fixtures=block))], on_miss_default=default)
    write_result(result, tmp_path)
    for trials in (result.trials, pl.read_parquet(tmp_path / "trials.parquet")):
        row = trials.row(0, named=True)
        assert row["fixture_misses"] == 1
        assert row["failed_closed"] is failed
        assert row["passed"] is not failed


def test_the_readme_example_is_what_the_samples_give(tmp_path: Path) -> None:
    """E-94, the docs' examples made from real runs: the query over
    `out/regress` in docs/outputs.md prints exactly the output shown under it."""
    page = (ROOT / "docs" / "outputs.md").read_text(encoding="utf-8")
    section = page[page.index("What a dashboard trends on") : page.index("## Schema versions")]
    code, shown = re.findall(r"```(?:python)?\n(.*?)```", section, flags=re.S)
    api.write_outputs([SAMPLES / "regress"], tmp_path / "out" / "regress", [SAMPLE_SUITES])
    printed = run_python(code, cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.strip() == shown.strip()
