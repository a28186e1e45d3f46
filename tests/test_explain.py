"""`evalbatch explain`: expected and observed calls side by side, and why each trial graded as it
did — in agreement with the grade `evalbatch run` gives.

Agreement is checked against `evalbatch.api.grade_paths` on every trial of every sample run; each
failure reason is checked through the `explain` command (click's CliRunner), on the samples where
they have it and on logs built with the tests/helpers.py builders where they do not.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner, Result

from evalbatch import jsonvalue
from evalbatch.api import grade_paths
from evalbatch.commands.explain import explain
from evalbatch.explain.call_args import args_difference
from evalbatch.explain.explanation import Explanation
from evalbatch.explain.json_shape import GRADE_KEYS, to_json
from evalbatch.explain.run_explanation import explain_paths
from evalbatch.explain.text_rendering import render_text
from evalbatch.explain.trajectory_findings import REASON_FINDINGS
from evalbatch.grade import match
from evalbatch.grade.trial_grading import TRAJECTORY_CHECKS
from evalbatch.options import GradeOptions
from tests.helpers import (
    AGENT,
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    SAMPLES,
    SUITE_ID,
    TOOL,
    VERSION,
    RunLog,
    make_suite,
    standard_run,
    write_events,
    write_json,
)

TRAJECTORY_RUN = "acme/run-trajectory-0001"
TRIALS_RUN = "acme/run-trials-k2-0001"
FIXTURE_RUN = "acme/run-fixture-miss-0001"
SAMPLE_RUNS = (FIXTURE_RUN, TRAJECTORY_RUN, TRIALS_RUN)
RUN = "acme/run-explain-0001"

#: trials-table column -> what explain reports for it (its `grade` carries the row itself)
AGREED_COLUMNS = (
    "task_id",
    "trial_index",
    "counted",
    "left_out",
    "score",
    "gating_score",
    "passed",
    "trajectory_matched",
    "trajectory_reason",
    "observed_count",
    "matched_count",
    "forbidden_count",
    "fixture_misses",
    "failed_closed",
    "has_bracket",
    "latency_ms",
    "tool_call_count",
    "model_call_count",
    "input_tokens",
    "output_tokens",
    "usage_cost_usd",
)


def invoke(*args: Any) -> Result:
    return CliRunner().invoke(explain, [str(a) for a in args])


def explain_json(*args: Any) -> dict[str, Any]:
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def only_trial(doc: dict[str, Any], task_id: str, index: int = 0) -> dict[str, Any]:
    (task,) = [t for t in doc["tasks"] if t["taskId"] == task_id]
    (trial,) = [t for t in task["trials"] if t["trialIndex"] == index]
    return trial


# --------------------------------------------------------------------------------------------
# Logs the samples lack, built with the tests/helpers.py builders


def calls_trial(
    log: RunLog,
    task_id: str,
    calls: Sequence[tuple[Any, ...]],
    *,
    bracket: bool = True,
    agent: str = AGENT,
    scored: dict[str, Any] | None = None,
) -> None:
    """A trial whose bracket (or, with `bracket=False`, whose bare segment) makes `calls`:
    (tool, inputs) or (tool, inputs, calling agent)."""
    invocation = f"inv-{task_id}-{len(log.rows)}"
    if bracket:
        log.emit(
            "agent.invocation-started",
            {"invocationId": invocation, "agentId": agent, "modelClass": "general"},
        )
    log.emit("provider.usage", {"inputTokens": 100, "outputTokens": 10, "costEstimateUsd": 0.001})
    for number, (tool, inputs, *by) in enumerate(calls):
        caller = by[0] if by else agent
        call = {"agentId": caller, "toolName": tool, "callId": f"c-{number}", "inputs": inputs}
        log.emit("agent.tool-called", call)
    if bracket:
        log.emit(
            "agent.invocation-completed",
            {"invocationId": invocation, "agentId": agent, "outcome": "completed"},
        )
    log.emit("eval.scored", {"taskId": task_id, "score": 1.0, "passed": True, **(scored or {})})


def built_run(tmp_path: Path, suite: dict[str, Any], trials: Sequence[dict[str, Any]]) -> Path:
    """Write one run (each trial: kwargs of `calls_trial`) and its suite; returns tmp_path."""
    log = RunLog(RUN)
    log.emit("run.started", {"runId": RUN})
    log.eval_started(taskCount=len(suite["tasks"]))
    for trial in trials:
        calls_trial(log, **trial)
    log.eval_completed()
    write_events(tmp_path / "events" / "run.parquet", log.rows)
    write_json(tmp_path / "suites" / "suite.json", suite)
    return tmp_path


def trajectory_suite(
    mode: str, calls: list[dict[str, Any]], forbidden: Sequence[str] = (), **task: Any
) -> dict[str, Any]:
    """`make_suite` with task `alpha` expecting `calls` under `mode`."""
    doc = make_suite(task_ids=("alpha",))
    trajectory: dict[str, Any] = {"match": mode, "calls": calls}
    if forbidden:
        trajectory["forbidden"] = list(forbidden)
    doc["tasks"][0]["expected"]["trajectory"] = trajectory
    doc["tasks"][0].update(task)
    return doc


def built(tmp_path: Path, *extra: Any) -> dict[str, Any]:
    return explain_json(
        tmp_path / "events", "--suites", tmp_path / "suites", "--run-id", RUN, *extra
    )


# --------------------------------------------------------------------------------------------
# Agreement with `evalbatch run`


#: every sample log: the three of data/samples/events and the regression pair
SAMPLE_LOGS = (SAMPLE_EVENTS, SAMPLES / "regress")


@pytest.fixture(scope="module")
def graded_samples() -> tuple[pl.DataFrame, dict[str, Explanation], dict[str, Any]]:
    """The trials tables and summaries `grade_paths` gives, and an explanation of every run."""
    tables, explained, summaries = [], {}, {}
    for events in SAMPLE_LOGS:
        result = grade_paths([events], [SAMPLE_SUITES])
        tables.append(result.trials)
        summaries.update(result.summaries)
        for run in result.runs.filter("graded")["run_id"]:
            explained[run] = explain_paths([events], [SAMPLE_SUITES], run)
    return pl.concat(tables), explained, summaries


def test_explain_agrees_with_run_on_every_sample_trial(
    graded_samples: tuple[pl.DataFrame, dict[str, Explanation], dict[str, Any]],
) -> None:
    """D-5, D-9, D-10, §3.2–§3.5: verdict, reason code, score, gating score and every count of
    each trial equal its row of the trials table `grade_paths` gives, for every sample run."""
    table, explained, _ = graded_samples
    assert set(SAMPLE_RUNS) < set(explained) == set(table["run_id"])
    assert len(explained) == 5
    for run_id, expl in explained.items():
        rows = table.filter(pl.col("run_id") == run_id).to_dicts()
        trials = {t.sequence: t for task in expl.tasks for t in task.trials if t.sequence}
        as_json = {t["sequence"]: t for task in to_json(expl)["tasks"] for t in task["trials"]}
        assert sorted(trials) == sorted(r["sequence"] for r in rows), run_id
        for row in rows:
            trial = trials[row["sequence"]]
            assert trial.task_id == row["task_id"] and trial.trial_index == row["trial_index"]
            assert trial.status == ("counted" if row["counted"] else "left-out")
            assert trial.left_out == row["left_out"]
            if not row["counted"]:
                continue
            assert trial.verdict == ("pass" if row["passed"] else "fail")
            assert trial.grade is not None
            for column in AGREED_COLUMNS:
                assert trial.grade.row[column] == row[column], (run_id, row["task_id"], column)
            shown = as_json[row["sequence"]]
            assert shown["verdict"] == trial.verdict
            for column, key in GRADE_KEYS.items():
                assert shown["grade"][key] == row[column], (run_id, row["task_id"], key)
            traj = trial.trajectory
            assert (traj is not None) == (row["trajectory_matched"] is not None)
            if traj is not None:
                assert traj.reason == row["trajectory_reason"]
                assert traj.matched == row["trajectory_matched"]
                assert len(traj.observed) == row["observed_count"]
                assert (
                    sum(e.observed_pos is not None for e in traj.expected) == (row["matched_count"])
                )
                assert sum(c.forbidden for c in traj.observed) == row["forbidden_count"]
                assert (not traj.findings) == traj.matched
                if traj.reason is not None:
                    assert traj.findings[0].code == traj.reason
            if trial.fixtures is not None and trial.fixtures.fixtured:
                misses = [c for c in trial.fixtures.calls if c.entry_pos is None]
                assert len(misses) == row["fixture_misses"] == trial.fixtures.misses
                assert all(c.miss is not None for c in misses)
                assert trial.fixtures.failed_closed == row["failed_closed"]


def test_explain_task_figures_equal_the_summary(
    graded_samples: tuple[pl.DataFrame, dict[str, Explanation], dict[str, Any]],
) -> None:
    """§3.5: each task header shows the EvalSummary task entry's score and passed."""
    _, explained, summaries = graded_samples
    for run_id, expl in explained.items():
        entries = {t["taskId"]: t for t in summaries[run_id]["tasks"]}
        assert [t.task_id for t in expl.tasks] == list(entries)
        for task in expl.tasks:
            assert (task.score, task.passed) == (
                entries[task.task_id]["score"],
                entries[task.task_id]["passed"],
            )


def test_explain_json_is_plain_and_stable(
    graded_samples: tuple[pl.DataFrame, dict[str, Explanation], dict[str, Any]],
) -> None:
    """§4 (team-facing output): `to_json` is JSON-serializable with the documented keys."""
    _, explained, _ = graded_samples
    doc = to_json(explained[TRIALS_RUN])
    assert json.loads(json.dumps(doc)) == doc
    assert list(doc) == [
        "explainVersion",
        "runId",
        "suiteId",
        "suiteVersion",
        "gradedFrom",
        "graded",
        "notGraded",
        "options",
        "filter",
        "problems",
        "notes",
        "tasks",
    ]
    assert doc["explainVersion"] == 1 and doc["gradedFrom"] == "suite"
    trial = only_trial(doc, "refund-approved", 1)
    assert list(trial) == [
        "taskId",
        "trialIndex",
        "sequence",
        "status",
        "verdict",
        "leftOut",
        "why",
        "grade",
        "bracket",
        "trajectory",
        "fixtures",
        "judgeCalls",
        "problems",
    ]
    assert trial["grade"]["trajectoryReason"] == "forbidden"
    assert trial["trajectory"]["findings"][0]["code"] == "forbidden"
    assert render_text(explained[TRIALS_RUN]).count("\n  trial ") == 9


# --------------------------------------------------------------------------------------------
# Each failure reason, through the command


def sample(*extra: Any) -> Result:
    return invoke(SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, *extra)


def test_cli_forbidden_tool() -> None:
    """§3.2: a call to a forbidden tool makes the trajectory unmatched whatever the mode; the
    call is flagged and named first."""
    result = sample("--run-id", TRAJECTORY_RUN, "--task-id", "forbidden-hit")
    assert result.exit_code == 0, result.output
    assert "trial 0  FAIL  forbidden" in result.stdout
    assert "billing:refund-all" in result.stdout and "FORBIDDEN" in result.stdout
    assert "why: O2 billing:refund-all: a forbidden tool" in result.stdout
    trial = only_trial(
        explain_json(SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--run-id", TRAJECTORY_RUN),
        "forbidden-hit",
    )
    finding = trial["trajectory"]["findings"][0]
    assert (finding["code"], finding["why"], finding["observedPos"]) == (
        "forbidden",
        "forbidden-tool",
        2,
    )


def test_cli_missing_call_never_made(tmp_path: Path) -> None:
    """§3.2 any-order: an expected call no observed call can be paired with is `missing`; a
    tool never called says so."""
    suite = trajectory_suite("any-order", [{"tool": TOOL}, {"tool": "billing:refund-SECRET"}])
    built_run(tmp_path, suite, [{"task_id": "alpha", "calls": [(TOOL, {"orderId": "A"})]}])
    trial = only_trial(built(tmp_path), "alpha")
    assert trial["grade"]["trajectoryReason"] == "missing"
    finding = trial["trajectory"]["findings"][0]
    assert (finding["code"], finding["why"], finding["expectedPos"]) == (
        "missing",
        "not-called",
        1,
    )
    text = invoke(tmp_path / "events", "--suites", tmp_path / "suites", "--run-id", RUN).stdout
    assert "FAIL  missing" in text and "E1 billing:refund-SECRET: never called" in text


def test_cli_argument_mismatch_names_the_path() -> None:
    """D-7, §3.2 exact: an argument mismatch names the JSON path with the expected and the
    observed value, side by side with the call it was compared with."""
    result = sample("--run-id", TRAJECTORY_RUN, "--task-id", "exact-args-mismatch")
    assert result.exit_code == 0, result.output
    assert "FAIL  missing" in result.stdout
    assert "$.amountMinor: expected 4200, observed 4300" in result.stdout
    assert any(
        line.lstrip().startswith("1  billing:refund") and "  x  1  " in line
        for line in result.stdout.splitlines()
    ), result.stdout
    trial = only_trial(
        explain_json(SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--run-id", TRAJECTORY_RUN),
        "exact-args-mismatch",
    )
    finding = trial["trajectory"]["findings"][0]
    assert finding["why"] == "args-differ"
    assert finding["diff"] == {"path": "$.amountMinor", "expected": "4200", "observed": "4300"}


def test_cli_argument_mismatch_nested_subset_path(tmp_path: Path) -> None:
    """D-8: under subset, objects recurse and arrays compare whole; the path reaches the first
    differing array element."""
    args = {"order": {"id": "A", "items": [1, 2]}}
    suite = trajectory_suite("in-order", [{"tool": TOOL, "args": args, "argsMatch": "subset"}])
    observed = {"order": {"id": "A", "items": [1, 3], "note": "x"}, "extra": True}
    built_run(tmp_path, suite, [{"task_id": "alpha", "calls": [(TOOL, observed)]}])
    finding = only_trial(built(tmp_path), "alpha")["trajectory"]["findings"][0]
    assert finding["diff"] == {"path": "$.order.items[1]", "expected": "2", "observed": "3"}


def test_cli_extra_call_in_exact_mode(tmp_path: Path) -> None:
    """§3.2 exact: |O| must equal |E|; the call beyond the expected ones is `extra`."""
    calls = [(TOOL, {"orderId": "ORD-SECRET-alpha"}), (TOOL, {"orderId": "again"})]
    built_run(tmp_path, make_suite(task_ids=("alpha",)), [{"task_id": "alpha", "calls": calls}])
    trial = only_trial(built(tmp_path), "alpha")
    assert trial["grade"]["trajectoryReason"] == "extra"
    finding = trial["trajectory"]["findings"][0]
    assert (finding["code"], finding["why"], finding["observedPos"]) == ("extra", "extra-call", 1)
    text = invoke(tmp_path / "events", "--suites", tmp_path / "suites", "--run-id", RUN).stdout
    assert "FAIL  extra" in text and "EXTRA" in text


def test_cli_subset_call_not_allowed(tmp_path: Path) -> None:
    """§3.2 subset: an observed call no expected call allows fails the mode; explain names that
    call; the trials table's reason code for it is `extra` (E-58)."""
    suite = make_suite(task_ids=("alpha", "beta"))
    for task, tools in zip(suite["tasks"], ([TOOL], [TOOL, "crm:get-SECRET"]), strict=True):
        task["expected"]["trajectory"] = {"match": "subset", "calls": [{"tool": t} for t in tools]}
    observed = [(TOOL, {}), ("billing:refund-SECRET", {"a": 1})]
    built_run(
        tmp_path,
        suite,
        [{"task_id": "alpha", "calls": observed}, {"task_id": "beta", "calls": observed}],
    )
    doc = built(tmp_path)
    table = grade_paths([tmp_path / "events"], [tmp_path / "suites"]).trials.sort("sequence")
    for task_id, reason in zip(("alpha", "beta"), table["trajectory_reason"], strict=True):
        trial = only_trial(doc, task_id)
        assert reason == "extra" and trial["grade"]["trajectoryReason"] == reason
        (finding,) = trial["trajectory"]["findings"]
        assert (finding["code"], finding["why"], finding["observedPos"]) == (
            "extra",
            "unexpected-tool",
            1,
        )


def test_cli_order() -> None:
    """§3.2 in-order: every expected call is matched, but not as a subsequence: `order`, with
    the expected call that has no match after the previous one."""
    result = sample("--run-id", TRAJECTORY_RUN, "--task-id", "wrong-order", "--trial", 0)
    assert result.exit_code == 0, result.output
    assert "trial 0  FAIL  order" in result.stdout
    assert "E1 billing:refund: no matching call after O1 (O0 matches it" in result.stdout
    assert "gating 0: the trajectory is unmatched (order, D-10)" in result.stdout


def test_cli_exact_order_tool_differs(tmp_path: Path) -> None:
    """§3.2 exact: the right calls in the wrong places: the first position whose call differs."""
    suite = trajectory_suite("exact", [{"tool": TOOL}, {"tool": "billing:refund-SECRET"}])
    calls = [("billing:refund-SECRET", {}), (TOOL, {})]
    built_run(tmp_path, suite, [{"task_id": "alpha", "calls": calls}])
    trial = only_trial(built(tmp_path), "alpha")
    assert trial["grade"]["trajectoryReason"] == "order"
    finding = trial["trajectory"]["findings"][0]
    assert (finding["why"], finding["expectedPos"], finding["observedPos"]) == (
        "tool-differs",
        0,
        0,
    )


def test_cli_fixture_miss_failed_closed() -> None:
    """§3.3, D-9: a call no toolResponses entry serves is a miss; with onMiss fail the trial
    fails closed (score 0, passed false); the entry that came closest is compared."""
    result = sample("--run-id", FIXTURE_RUN)
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "trial 0  FAIL  failed closed" in text
    assert "fixtures (onMiss fail): 1 miss, failed closed (D-9)" in text
    assert "F1 (exact) differs at $.amountMinor: expected 1999, observed 2999" in text
    doc = explain_json(SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--run-id", FIXTURE_RUN)
    served = only_trial(doc, "served-refund")["fixtures"]
    assert [c["entryPos"] for c in served["calls"]] == [0, 1, 2]
    missed = only_trial(doc, "missed-refund")
    assert [c["entryPos"] for c in missed["fixtures"]["calls"]] == [0, None]
    assert missed["fixtures"]["calls"][1]["miss"]["diff"]["path"] == "$.amountMinor"
    assert (missed["grade"]["score"], missed["grade"]["passed"]) == (0.0, False)
    assert missed["grade"]["failedClosed"] is True


def test_cli_fixture_miss_on_miss_default(tmp_path: Path) -> None:
    """D-9: an absent onMiss counts misses only, and fails closed with --on-miss-default fail,
    as `run` grades with the same option."""
    suite = make_suite(task_ids=("alpha",))
    suite["tasks"][0]["fixtures"] = {
        "toolResponses": [
            {"tool": TOOL, "args": {"orderId": "other"}, "argsMatch": "exact", "response": {}}
        ]
    }
    built_run(
        tmp_path, suite, [{"task_id": "alpha", "calls": [(TOOL, {"orderId": "ORD-SECRET-alpha"})]}]
    )
    counted = only_trial(built(tmp_path), "alpha")
    assert counted["fixtures"]["misses"] == 1 and counted["grade"]["passed"] is True
    assert counted["fixtures"]["onMiss"] == "count"
    failed = only_trial(built(tmp_path, "--on-miss-default", "fail"), "alpha")
    assert failed["grade"]["failedClosed"] is True and failed["grade"]["score"] == 0.0
    result = grade_paths(
        [tmp_path / "events"], [tmp_path / "suites"], options=GradeOptions(on_miss_default="fail")
    )
    assert result.trials["failed_closed"].to_list() == [True]


def test_cli_no_bracket(tmp_path: Path) -> None:
    """D-18: a trial whose segment has no agent.invocation-started cannot show its path: the
    trajectory is unmatched (`no-bracket`), observedCount 0, and its usage is a judge call (D-6)."""
    built_run(
        tmp_path,
        make_suite(task_ids=("alpha",)),
        [
            {
                "task_id": "alpha",
                "calls": [(TOOL, {"orderId": "ORD-SECRET-alpha"})],
                "bracket": False,
            }
        ],
    )
    trial = only_trial(built(tmp_path), "alpha")
    assert trial["grade"]["trajectoryReason"] == "no-bracket"
    assert trial["grade"]["observedCount"] == 0 and trial["grade"]["hasBracket"] is False
    assert trial["trajectory"]["findings"][0]["code"] == "no-bracket"
    assert trial["judgeCalls"]["count"] == 1
    assert [p["code"] for p in trial["problems"]] == ["bracket-missing"]
    text = invoke(tmp_path / "events", "--suites", tmp_path / "suites", "--run-id", RUN).stdout
    assert "FAIL  no-bracket" in text and "(D-18)" in text


def test_cli_left_out_trials(tmp_path: Path) -> None:
    """D-5, E-8: a trial index >= trials.count and a repeated index are left out and count for
    nothing; explain says which and why, as the trials table does; a task scored never
    in the log shows as missing (D-12, D-13)."""
    suite = make_suite(task_ids=("alpha", "beta"), trials={"count": 2, "k": 1})
    ok = [(TOOL, {"orderId": "ORD-SECRET-alpha"})]
    trials = [
        {"task_id": "alpha", "calls": ok, "scored": {"trialIndex": 0}},
        {"task_id": "alpha", "calls": ok, "scored": {"trialIndex": 0}},
        {"task_id": "alpha", "calls": ok, "scored": {"trialIndex": 2}},
    ]
    built_run(tmp_path, suite, trials)
    doc = built(tmp_path, "--task-id", "alpha")
    (task,) = doc["tasks"]
    states = [(t["trialIndex"], t["status"], t["leftOut"]) for t in task["trials"]]
    assert states == [
        (0, "counted", None),
        (0, "left-out", "trial-duplicate"),
        (1, "missing", None),
        (2, "left-out", "trial-extra"),
    ]
    table = grade_paths([tmp_path / "events"], [tmp_path / "suites"]).trials
    assert table.sort("sequence")["left_out"].to_list() == [None, "trial-duplicate", "trial-extra"]
    text = invoke(tmp_path / "events", "--suites", tmp_path / "suites", "--run-id", RUN).stdout
    assert "LEFT OUT  trial-extra" in text and "trial index 2 >= trials.count 2 (D-5)" in text
    assert "already taken by eval.scored event" in text
    assert "trial 1  MISSING" in text and "(D-12)" in text
    assert "task beta" in text and "the task has no trial at all (D-13)" in text


def test_cli_other_agents_calls_are_not_in_the_path(tmp_path: Path) -> None:
    """§2.2: a call by another agent inside the bracket is not in the observed trajectory
    (without includeDelegates) but is counted in efficiency; explain lists it apart."""
    calls = [
        ("crm:helper-SECRET", {}, "acme.agents.helper"),
        (TOOL, {"orderId": "ORD-SECRET-alpha"}),
    ]
    built_run(tmp_path, make_suite(task_ids=("alpha",)), [{"task_id": "alpha", "calls": calls}])
    trial = only_trial(built(tmp_path), "alpha")
    assert trial["verdict"] == "pass"
    assert trial["grade"]["observedCount"] == 1 and trial["grade"]["toolCallCount"] == 2
    (other,) = trial["trajectory"]["others"]
    assert (other["tool"], other["agentId"], other["pos"]) == (
        "crm:helper-SECRET",
        "acme.agents.helper",
        None,
    )
    text = invoke(tmp_path / "events", "--suites", tmp_path / "suites", "--run-id", RUN).stdout
    assert "not in the path (agent acme.agents.helper)" in text


def test_cli_unusable_events_exit_2(tmp_path: Path) -> None:
    """§6: no readable event file is one line and exit 2."""
    (tmp_path / "junk.parquet").write_text("not parquet", encoding="utf-8")
    result = invoke(tmp_path / "junk.parquet", "--run-id", RUN)
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("evalbatch: ")


def test_cli_unknown_run_is_one_line_exit_2() -> None:
    """§6: a run id that is not an eval run of the events is a clear one-line error, exit 2."""
    result = sample("--run-id", "acme/no-such-run")
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("evalbatch: no eval run acme/no-such-run")
    assert TRAJECTORY_RUN in lines[0]


def test_cli_unknown_task_or_trial_exit_2() -> None:
    """§6: --task-id or --trial naming nothing in the run is one line and exit 2."""
    result = sample("--run-id", TRIALS_RUN, "--task-id", "nope")
    assert result.exit_code == 2 and "has no task nope" in result.stderr
    result = sample("--run-id", TRIALS_RUN, "--task-id", "order-status", "--trial", 7)
    assert result.exit_code == 2 and "has no trial 7" in result.stderr


def test_cli_suite_missing_grades_from_host_record() -> None:
    """D-4: without the run's suite, explain shows the host-record grade `run` gives (no
    trajectory or fixture checks), and says so."""
    result = invoke(SAMPLE_EVENTS, "--run-id", TRAJECTORY_RUN)
    assert result.exit_code == 0, result.output
    assert "not given: graded from the host record" in result.stdout
    doc = explain_json(SAMPLE_EVENTS, "--run-id", TRAJECTORY_RUN)
    assert doc["gradedFrom"] == "host-record"
    assert [p["code"] for p in doc["problems"]] == ["suite-missing"]
    table = grade_paths([SAMPLE_EVENTS]).trials.filter(pl.col("run_id") == TRAJECTORY_RUN)
    verdicts = {t["taskId"]: t["trials"][0]["verdict"] for t in doc["tasks"]}
    assert verdicts == {
        r["task_id"]: "pass" if r["passed"] else "fail" for r in table.iter_rows(named=True)
    }
    assert all(t["trials"][0]["trajectory"] is None for t in doc["tasks"])


def test_cli_run_not_graded_exit_3(tmp_path: Path) -> None:
    """§1.3, §6: a run whose suite is invalid is not graded; explain prints why, exit 3."""
    bad = make_suite(task_ids=("alpha",))
    bad["tasks"][0]["expected"]["trajectory"]["match"] = "superset"
    built_run(tmp_path, bad, [{"task_id": "alpha", "calls": []}])
    result = invoke(tmp_path / "events", "--suites", tmp_path / "suites", "--run-id", RUN)
    assert result.exit_code == 3
    assert "NOT GRADED" in result.stdout and "suite-invalid" in result.stdout


def test_cli_judge_calls_and_numbers() -> None:
    """D-6, D-14, §3.5: a judge call is outside the bracket: in the trial's cost, not in its
    efficiency counts; latency comes from the host's latencyMs."""
    doc = explain_json(
        SAMPLE_EVENTS,
        "--suites",
        SAMPLE_SUITES,
        "--run-id",
        TRIALS_RUN,
        "--task-id",
        "apology-tone",
    )
    trial = only_trial(doc, "apology-tone", 0)
    assert trial["judgeCalls"] == {
        "count": 1,
        "inputTokens": 500,
        "outputTokens": 20,
        "costUsd": 0.0005,
    }
    grade = trial["grade"]
    assert (grade["modelCallCount"], grade["inputTokens"], grade["usageCostUsd"]) == (
        1,
        300,
        0.0025,
    )
    assert grade["latencySource"] == "host" and grade["costSource"] == "usage"
    text = sample("--run-id", TRIALS_RUN, "--task-id", "apology-tone", "--trial", 0).stdout
    assert "judge: 1 model call outside the bracket" in text


def test_standard_run_explains_with_conftest_suite(tmp_path: Path, suite_dir: Path) -> None:
    """§3.2, §3.4: helpers.py's clean run: alpha passes, beta fails on its output grade only."""
    write_events(tmp_path / "run.parquet", standard_run(RUN).rows)
    doc = explain_json(tmp_path / "run.parquet", "--suites", suite_dir, "--run-id", RUN)
    assert [only_trial(doc, t)["verdict"] for t in ("alpha", "beta")] == ["pass", "fail"]
    beta = only_trial(doc, "beta")
    assert beta["grade"]["trajectoryMatched"] is True and beta["grade"]["score"] == 0.5
    assert beta["grade"]["latencySource"] == "host"
    assert (doc["suiteId"], doc["suiteVersion"]) == (SUITE_ID, VERSION)


# --------------------------------------------------------------------------------------------
# Where arguments differ


ARGS_CASES: list[tuple[str, Any, Any, str | None]] = [
    # (argsMatch, expected, observed, path of the first difference or None)
    ("exact", {"n": 1}, {"n": 1.0}, None),
    ("exact", {"n": 1}, {"n": True}, "$.n"),
    ("exact", {"a": 1}, {"a": 1, "b": 2}, "$.b"),
    ("exact", {"a": 1, "b": 2}, {"a": 1}, "$.b"),
    ("exact", {"l": [1, 2]}, {"l": [1, 2, 3]}, "$.l[2]"),
    ("exact", {"odd key": None}, {"odd key": 0}, '$["odd key"]'),
    ("exact", None, {}, "$"),
    ("subset", {}, {"a": 1}, None),
    ("subset", {"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, None),
    ("subset", {"a": {"b": 1}}, {"a": {"c": 2}}, "$.a.b"),
    ("subset", {"a": [1]}, {"a": [1, 2]}, "$.a[1]"),
    ("subset", {"a": 1}, [1], "$"),
    ("subset", 5, 5.0, None),
    ("ignore", {"a": 1}, {}, None),
]


@pytest.mark.parametrize(("mode", "expected", "observed", "path"), ARGS_CASES)
def test_args_difference_agrees_with_args_match(
    mode: str, expected: Any, observed: Any, path: str | None
) -> None:
    """D-7, D-8: a difference is found exactly when `jsonvalue.args_match` (the grader's test)
    says the arguments do not match, at the first differing path."""
    exp = jsonvalue.parse_value(json.dumps(expected))
    obs = jsonvalue.parse_value(json.dumps(observed))
    diff = args_difference(mode, exp, obs)
    assert (diff is None) == jsonvalue.args_match(mode, exp, obs)  # type: ignore[arg-type]
    assert (diff.path if diff else None) == path


# --------------------------------------------------------------------------------------------
# The per-call functions agree with the counts the grader uses


def random_pairs(seed: int, trials: int = 300) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Random candidate pairs (trial_key, e_pos, o_idx, ok) and each trial's expected count."""
    rng = random.Random(seed)
    rows, counts = [], []
    for key in range(trials):
        n_e, n_o = rng.randint(0, 4), rng.randint(0, 5)
        counts.append({"trial_key": key, "expected_count": n_e})
        for e in range(n_e):
            for o in range(n_o):
                if rng.random() < 0.5:
                    rows.append(
                        {"trial_key": key, "e_pos": e, "o_idx": o, "ok": rng.random() < 0.7}
                    )
    schema = {"trial_key": pl.Int64, "e_pos": pl.Int64, "o_idx": pl.Int64, "ok": pl.Boolean}
    return pl.DataFrame(rows, schema=schema), pl.DataFrame(
        counts, schema=pl.Schema({"trial_key": pl.Int64, "expected_count": pl.Int64})
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_match_detail_agrees_with_the_grader_counts(seed: int) -> None:
    """§3.2, §3.3: `matching_pairs` is a one-to-one matching of `maximum_matching`'s size over ok
    pairs, `in_order_pairs` walks to `in_order_found`'s verdict, and `fixture_assignment` serves
    every call `replay_fixtures` does not count as a miss."""
    pairs, trials = random_pairs(seed)
    edges = match.matching_pairs(pairs)
    ok = {(k, e, o) for k, e, o, good in pairs.iter_rows() if good}
    assert all(edge in ok for edge in edges.iter_rows())
    assert edges.select("trial_key", "e_pos").is_unique().all()
    assert edges.select("trial_key", "o_idx").is_unique().all()
    sizes = dict(edges.group_by("trial_key").len().iter_rows())
    assert sizes == dict(match.maximum_matching(pairs).iter_rows())

    walk = match.in_order_pairs(trials, pairs)
    found = dict(match.in_order_found(trials, pairs).iter_rows())
    walked: dict[int, bool] = {key: True for key in trials["trial_key"]}
    for key, _, o_idx in walk.iter_rows():
        walked[key] = walked[key] and o_idx is not None
    assert walked == found

    fixtures = pairs.rename({"e_pos": "f_pos"})
    calls = pairs.select("trial_key", "o_idx").unique()
    served = match.fixture_assignment(fixtures)
    assert served.select("trial_key", "o_idx").is_unique().all()
    assert served.select("trial_key", "f_pos").is_unique().all()
    misses = dict(match.replay_fixtures(calls, fixtures).iter_rows())
    per_trial = dict(calls.group_by("trial_key").len().iter_rows())
    served_count = dict(served.group_by("trial_key").len().iter_rows())
    assert misses == {k: n - served_count.get(k, 0) for k, n in per_trial.items()}


def test_findings_are_the_grader_checks_in_its_order(tmp_path: Path) -> None:
    """§3.2, D-18: explain shows a finding for each check `grade.TRAJECTORY_CHECKS` failed, in
    that order, up to the first one after which nothing more is reported: a forbidden call and a
    missing expected call are both named, forbidden first (the trials table's reason); a trial
    without a bracket names only `no-bracket`, though its segment calls a forbidden tool."""
    assert set(REASON_FINDINGS) == {check.reason for check in TRAJECTORY_CHECKS}
    forbidden_tool = "billing:refund-all-SECRET"
    suite = trajectory_suite(
        "in-order", [{"tool": TOOL}, {"tool": "billing:refund-SECRET"}], [forbidden_tool]
    )
    suite["tasks"].append(copy.deepcopy(suite["tasks"][0]) | {"taskId": "beta"})
    calls = [(TOOL, {"orderId": "A"}), (forbidden_tool, {})]
    built_run(
        tmp_path,
        suite,
        [
            {"task_id": "alpha", "calls": calls},
            {"task_id": "beta", "calls": calls, "bracket": False},
        ],
    )
    doc = built(tmp_path)
    found = only_trial(doc, "alpha")
    assert found["grade"]["trajectoryReason"] == "forbidden"
    assert [(f["code"], f["why"]) for f in found["trajectory"]["findings"]] == [
        ("forbidden", "forbidden-tool"),
        ("missing", "not-called"),
    ]
    bare = only_trial(doc, "beta")
    assert bare["grade"]["trajectoryReason"] == "no-bracket"
    assert [f["code"] for f in bare["trajectory"]["findings"]] == ["no-bracket"]
