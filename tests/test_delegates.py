"""E-102: delegates that ran as child runs (RFC 0244 §A, UQ 2).

With `trajectory.includeDelegates: true`, a dispatch inside a trial's bracket (`node.dispatched`,
`workflow-chain.event` by `childRunId`, `dispatch.joined` by `mergeOrder`) brings the child run's
`agent.tool-called` events into the observed trajectory, recursively, from any event file given:
a child's calls stand at the first event naming it, in the child's sequence order; the children a
join merged stand together, in `mergeOrder`. A child log that is not there, cannot be read whole,
is on its own path (a cycle) or belongs to another suite fails the trial closed. Without the
flag nothing changes. Every case is also graded by the reference grader, which must agree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from evalbatch import api
from evalbatch.inputs.event_files import RunFilter
from evalbatch.options import GradeOptions
from evalbatch.reference import grade_reference
from tests.helpers import read_outputs
from tests.logbuilder import (
    RUN,
    LogBuilder,
    codes_of,
    golden,
    grade,
    problems_of,
    suite,
    summary_of,
    task_of,
    traj,
    trajectory_task,
    write_raw_events,
)
from tests.test_properties import assert_same

CHILD_A = "acme/run-child-a-0000000001"
CHILD_B = "acme/run-child-b-0000000001"
GRANDCHILD = "acme/run-grandchild-00000001"
HELPER = "acme.agents.search"


def dispatched(child: str) -> dict[str, Any]:
    return {"childRunId": child, "childWorkflowId": "wf"}


def joined(*children: str) -> dict[str, Any]:
    return {
        "joinOutcome": "satisfied",
        "completedCount": len(children),
        "failedCount": 0,
        "mergeOrder": list(children),
    }


def child_log(run_id: str, *tools: str) -> LogBuilder:
    """A child run whose only events are calls of `tools`, by a helper agent."""
    log = LogBuilder(run_id)
    log.add("run.started", {"workflowId": "wf"})
    for tool in tools:
        log.call(tool, {"q": 1}, agent=HELPER)
    return log


def fan_out_parent(*, dispatch_order: tuple[str, str] = (CHILD_B, CHILD_A)) -> LogBuilder:
    """A parent eval run: one trial whose bracket calls t:before, fans out to two children
    (dispatched in `dispatch_order`, merged A then B), then calls t:after."""
    log = LogBuilder(RUN)
    log.eval_started()
    invocation = log.started()
    log.call("t:before", {})
    log.add("dispatch.fanned-out", {"fanOutPolicy": "parallel", "childCount": 2})
    for child in dispatch_order:
        log.add("node.dispatched", dispatched(child))
    log.add("dispatch.joined", joined(CHILD_A, CHILD_B))
    log.call("t:after", {})
    log.completed(invocation)
    log.scored("task", score=1, passed=True)
    log.eval_completed(aggregateScore=1, passed=True, taskCount=1, passedCount=1)
    return log


def delegate_suite(
    calls: list[str], *, mode: str = "exact", include: bool | None = True, **kw: Any
) -> dict[str, Any]:
    return suite(golden("task", traj(mode, calls, include_delegates=include, **kw)))


def checked(
    logs: list[LogBuilder], suites: list[dict[str, Any]], **options: Any
) -> api.GradeResult:
    """Grade with the engine and the reference grader; they must agree on every summary."""
    result = grade(logs, suites, **options)
    rows = [row for log in logs for row in log.rows]
    reference = grade_reference(rows, suites, GradeOptions(**options))
    assert sorted(result.summaries) == sorted(reference.summaries)
    for run_id, summary in reference.summaries.items():
        assert_same(result.summaries[run_id], summary, run_id)
    return result


def trajectory_of(result: api.GradeResult) -> dict[str, Any]:
    return task_of(summary_of(result), "task")["trajectory"]


# --- where the children's calls stand ------------------------------------------------------------


FAN_OUT_PATH = ["t:before", "t:a1", "t:a2", "t:b1", "t:after"]


@pytest.mark.slow
def test_e102_a_fanned_out_pair_stands_at_its_first_dispatch_in_merge_order() -> None:
    """The children a join merged stand together at the first dispatch of either, in
    mergeOrder (A then B), whatever order they were dispatched in."""
    logs = [fan_out_parent(), child_log(CHILD_A, "t:a1", "t:a2"), child_log(CHILD_B, "t:b1")]
    result = checked(logs, [delegate_suite(FAN_OUT_PATH)])
    assert trajectory_of(result) == {
        "mode": "exact",
        "matched": True,
        "expectedCount": 5,
        "observedCount": 5,
        "matchedCount": 5,
        "forbiddenCount": 0,
    }
    assert task_of(summary_of(result), "task")["passed"] is True
    # dispatched the other way round: the same order (mergeOrder decides)
    logs[0] = fan_out_parent(dispatch_order=(CHILD_A, CHILD_B))
    assert trajectory_of(checked(logs, [delegate_suite(FAN_OUT_PATH)]))["matched"] is True
    # B before A is not the observed order
    swapped = ["t:before", "t:b1", "t:a1", "t:a2", "t:after"]
    assert trajectory_of(checked(logs, [delegate_suite(swapped)]))["matched"] is False


@pytest.mark.slow
def test_e102_a_child_stands_where_it_was_dispatched_and_a_grandchild_inside_it() -> None:
    """One dispatch between two calls; the child dispatches a grandchild between its own two
    calls: the grandchild's calls stand there, inside the child's."""
    parent = LogBuilder(RUN)
    parent.eval_started()
    invocation = parent.started()
    parent.call("t:before", {})
    parent.add("workflow-chain.event", {"phase": "dispatch.began", "childRunId": CHILD_A})
    parent.call("t:after", {})
    parent.completed(invocation)
    parent.scored("task", score=1, passed=True)
    parent.eval_completed()
    child = child_log(CHILD_A, "t:a1")
    child.add("node.dispatched", dispatched(GRANDCHILD))
    child.call("t:a2", {}, agent=HELPER)
    grandchild = child_log(GRANDCHILD, "t:g1", "t:g2")
    path = ["t:before", "t:a1", "t:g1", "t:g2", "t:a2", "t:after"]
    result = checked([parent, child, grandchild], [delegate_suite(path)])
    assert trajectory_of(result)["matched"] is True
    assert trajectory_of(result)["observedCount"] == 6


@pytest.mark.slow
def test_e102_v1_names_of_the_dispatch_events_are_read() -> None:
    """D-1, E-102: `core.dispatch.join` and `core.workflowChain.event` are the v1 spellings."""
    parent = LogBuilder(RUN)
    parent.eval_started()
    invocation = parent.started()
    parent.add("core.workflowChain.event", {"phase": "dispatch.began", "childRunId": CHILD_B})
    parent.add("core.workflowChain.event", {"phase": "dispatch.began", "childRunId": CHILD_A})
    parent.add("core.dispatch.join", joined(CHILD_A, CHILD_B))
    parent.completed(invocation)
    parent.scored("task", score=1, passed=True)
    parent.eval_completed()
    logs = [parent, child_log(CHILD_A, "t:a1"), child_log(CHILD_B, "t:b1")]
    result = checked(logs, [delegate_suite(["t:a1", "t:b1"])])
    assert trajectory_of(result)["matched"] is True


@pytest.mark.slow
def test_e102_a_delegates_forbidden_call_fails_the_trajectory() -> None:
    """§3.2: forbidden is checked against the observed trajectory, which now holds the child's
    calls."""
    logs = [fan_out_parent(), child_log(CHILD_A, "t:a1", "t:refund-all"), child_log(CHILD_B)]
    result = checked(
        logs, [delegate_suite(["t:before", "t:a1"], mode="in-order", forbidden=["t:refund-all"])]
    )
    assert trajectory_of(result)["forbiddenCount"] == 1
    assert trajectory_of(result)["matched"] is False


# --- without includeDelegates nothing changes ------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("include", [None, False])
def test_e102_without_include_delegates_no_child_run_is_read(include: bool | None) -> None:
    """The same parent, its children missing: no problem, and the observed trajectory is the
    target agent's own calls in the bracket (§2.2)."""
    result = checked([fan_out_parent()], [delegate_suite(["t:before", "t:after"], include=include)])
    assert trajectory_of(result)["matched"] is True
    assert not [c for c in codes_of(result) if c.startswith("delegate-")]


@pytest.mark.slow
def test_e102_a_suite_without_delegates_grades_byte_for_byte_as_before(tmp_path: Path) -> None:
    """The children's logs in the input change nothing for a suite that does not include
    delegates: the outputs are those of the parent's log alone."""
    plain = delegate_suite(["t:before", "t:after"], include=None)
    alone = tmp_path / "alone"
    write_raw_events(alone / "parent.parquet", fan_out_parent().rows)
    with_children = tmp_path / "with"
    write_raw_events(with_children / "parent.parquet", fan_out_parent().rows)
    write_raw_events(
        with_children / "children.parquet",
        child_log(CHILD_A, "t:a1").rows + child_log(CHILD_B, "t:b1").rows,
    )
    outputs = []
    for events in (alone, with_children):
        out = tmp_path / f"out-{events.name}"
        api.write_outputs(events, out, suite_docs=[plain])
        outputs.append(read_outputs(out))  # run-inputs.json names the events given: not these
    assert outputs[0] == outputs[1]


# --- fail closed ----------------------------------------------------------------------------------


def _missing_problem(result: api.GradeResult, code: str) -> dict[str, Any]:
    rows = [p for p in problems_of(result) if p["code"] == code]
    assert rows, codes_of(result)
    return rows[0]


@pytest.mark.slow
def test_e102_a_missing_child_log_fails_the_trial_closed() -> None:
    """The host said passed; one child's log is not in the input: the trajectory is unmatched,
    the trial cannot pass and its gating score is 0 (D-10); a warning names the child (an id)
    at the dispatch event, never a tool name."""
    logs = [fan_out_parent(), child_log(CHILD_A, "t:a1", "t:a2")]
    result = checked(logs, [delegate_suite(FAN_OUT_PATH)])
    task = task_of(summary_of(result), "task")
    assert task["passed"] is False and task["trajectory"]["matched"] is False
    trial = result.trials.row(0, named=True)
    assert (trial["trajectory_reason"], trial["gating_score"], trial["passed"]) == (
        "delegates-unseen",
        0.0,
        False,
    )
    problem = _missing_problem(result, "delegate-log-missing")
    assert problem["severity"] == "warning"
    assert problem["sequence"] == 4  # the first dispatch of the fanned-out pair
    assert CHILD_B in problem["message"]
    assert not [tool for tool in FAN_OUT_PATH if tool in problem["message"]]
    assert result.skipped == []  # the run is graded: nothing lost


def test_e102_a_trajectory_task_with_a_missing_child_scores_0() -> None:
    logs = [fan_out_parent(), child_log(CHILD_A, "t:a1", "t:a2")]
    doc = suite(trajectory_task("task", traj("exact", FAN_OUT_PATH, include_delegates=True)))
    task = task_of(summary_of(checked(logs, [doc])), "task")
    assert (task["score"], task["passed"]) == (0.0, False)


@pytest.mark.slow
def test_e102_a_cycle_is_a_problem_not_a_hang() -> None:
    """A child naming the parent, and a grandchild naming its parent: each is on its own path,
    not followed (the read ends), and the trial fails closed."""
    child = child_log(CHILD_A, "t:a1")
    child.add("node.dispatched", dispatched(RUN))  # names the trial's own run
    child.add("node.dispatched", dispatched(GRANDCHILD))
    grandchild = child_log(GRANDCHILD, "t:g1")
    grandchild.add("node.dispatched", dispatched(CHILD_A))  # names its parent
    logs = [fan_out_parent(), child, grandchild, child_log(CHILD_B, "t:b1")]
    result = checked(logs, [delegate_suite(["t:a1", "t:g1"], mode="in-order")])
    assert trajectory_of(result)["matched"] is False
    cycles = [p for p in problems_of(result) if p["code"] == "delegate-cycle"]
    assert {RUN, CHILD_A} == {p["message"].rsplit("child run ", 1)[1] for p in cycles}


def test_e102_a_child_eval_run_of_another_suite_fails_closed() -> None:
    other = child_log(CHILD_A, "t:a1", "t:a2")
    other.rows[0] = {
        **other.rows[0],
        "type": "eval.started",
        "payload": json.dumps({"suiteId": "acme.team.evals.other", "suiteVersion": "1.0.0"}),
    }
    logs = [fan_out_parent(), other, child_log(CHILD_B, "t:b1")]
    result = checked(logs, [delegate_suite(FAN_OUT_PATH)])
    assert trajectory_of(result)["matched"] is False
    assert _missing_problem(result, "delegate-suite-mismatch")["sequence"] == 4


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["payload", "conflict", "sequence", "hidden-grandchild"])
def test_e102_a_child_log_that_cannot_be_read_whole_fails_closed(damage: str) -> None:
    child = child_log(CHILD_A, "t:a1", "t:a2")
    if damage == "payload":
        child.add("agent.tool-called", raw='{"toolName": ')
    elif damage == "conflict":
        child.rows.append({**child.rows[-1], "payload": json.dumps({"toolName": "t:other"})})
    elif damage == "sequence":
        child.add("agent.tool-called", {"toolName": "t:a3"}, sequence=-1)
    else:
        child.add("node.dispatched", {"childWorkflowId": "wf"})  # which child?
    logs = [fan_out_parent(), child, child_log(CHILD_B, "t:b1")]
    result = checked(logs, [delegate_suite(FAN_OUT_PATH)])
    assert trajectory_of(result)["matched"] is False
    assert CHILD_A in _missing_problem(result, "delegate-log-invalid")["message"]


@pytest.mark.slow
def test_e102_a_dispatch_in_the_bracket_that_hides_its_child_fails_closed() -> None:
    parent = fan_out_parent()
    parent.rows.insert(3, {**parent.rows[3], "type": "node.dispatched", "payload": "{"})
    for number, row in enumerate(parent.rows):
        row["sequence"] = number
    logs = [parent, child_log(CHILD_A, "t:a1", "t:a2"), child_log(CHILD_B, "t:b1")]
    result = checked(logs, [delegate_suite(FAN_OUT_PATH)])
    assert trajectory_of(result)["matched"] is False
    assert _missing_problem(result, "delegate-log-invalid")["sequence"] == 3


@pytest.mark.slow
def test_e102_a_child_in_a_damaged_file_is_named_and_the_rest_graded(tmp_path: Path) -> None:
    """The child's file is not Parquet: the file is reported (exit 3), the parent is graded and
    its trial fails closed on the child it cannot read; no traceback, nothing else lost."""
    events = tmp_path / "events"
    write_raw_events(events / "parent.parquet", fan_out_parent().rows)
    write_raw_events(events / "child-b.parquet", child_log(CHILD_B, "t:b1").rows)
    damaged = write_raw_events(events / "child-a.parquet", child_log(CHILD_A, "t:a1").rows)
    damaged.write_bytes(damaged.read_bytes()[:-20])
    report = api.write_outputs(events, tmp_path / "out", suite_docs=[delegate_suite(FAN_OUT_PATH)])
    codes = report.problems["code"].to_list()
    assert "file-unreadable" in codes and "delegate-log-missing" in codes
    assert report.exit_code == 3
    runs = pl.read_parquet(tmp_path / "out" / "runs.parquet")
    assert runs.filter(pl.col("run_id") == RUN)["graded"].to_list() == [True]


# --- what else a trial reads is unchanged --------------------------------------------------


@pytest.mark.slow
def test_e102_the_fixture_replay_and_efficiency_read_only_the_trials_own_bracket() -> None:
    """§3.3: the replay walks the bracket's calls (the children ran outside it, as runs of their
    own); §3.5: efficiency counts inside the bracket. The children's calls add no miss and no
    count."""
    fixtures = {"onMiss": "fail", "toolResponses": [{"tool": "t:before"}, {"tool": "t:after"}]}
    doc = suite(
        golden("task", traj("exact", FAN_OUT_PATH, include_delegates=True), fixtures=fixtures)
    )
    logs = [fan_out_parent(), child_log(CHILD_A, "t:a1", "t:a2"), child_log(CHILD_B, "t:b1")]
    task = task_of(summary_of(checked(logs, [doc])), "task")
    assert task["fixtureMissCount"] == 0 and task["passed"] is True
    assert task["efficiency"]["toolCallCount"] == 2


def test_e102_children_are_read_from_any_file_whatever_the_run_filter(tmp_path: Path) -> None:
    """The children sit in another file and the filter chooses only the parent: they are read
    because the parent names them."""
    events = tmp_path / "events"
    write_raw_events(events / "parent.parquet", fan_out_parent().rows)
    write_raw_events(
        events / "nested" / "children.parquet",
        child_log(CHILD_A, "t:a1", "t:a2").rows + child_log(CHILD_B, "t:b1").rows,
    )
    result = api.grade_paths(
        events,
        suite_docs=[delegate_suite(FAN_OUT_PATH)],
        run_filter=RunFilter(run_ids=(RUN,)),
    )
    assert task_of(result.summaries[RUN], "task")["trajectory"]["matched"] is True


# --- incremental runs: a parent's fingerprint covers its children ---------------------------


@pytest.mark.slow
def test_e102_a_changed_child_log_regrades_the_parent(tmp_path: Path) -> None:
    events, out = tmp_path / "events", tmp_path / "out"
    doc = delegate_suite(FAN_OUT_PATH)
    write_raw_events(events / "parent.parquet", fan_out_parent().rows)
    write_raw_events(events / "child-a.parquet", child_log(CHILD_A, "t:a1", "t:a2").rows)
    write_raw_events(events / "child-b.parquet", child_log(CHILD_B, "t:b1").rows)
    first = api.write_outputs(events, out, suite_docs=[doc], incremental_run=True)
    assert first.full_regrade
    fingerprint = pl.read_parquet(out / "runs.parquet")["events_fingerprint"][0]
    # carried_runs counts the eval runs kept: the parent (its children are not eval runs)
    again = api.write_outputs(events, out, suite_docs=[doc], incremental_run=True)
    assert (again.full_regrade, again.carried_runs) == (False, 1)  # nothing changed
    # the child's log changes: its parent is graded again (only child A is kept), and now
    # fails its path
    write_raw_events(events / "child-b.parquet", child_log(CHILD_B, "t:other").rows)
    changed = api.write_outputs(events, out, suite_docs=[doc], incremental_run=True)
    assert (changed.full_regrade, changed.carried_runs) == (False, 0)
    runs = pl.read_parquet(out / "runs.parquet")
    assert runs["events_fingerprint"][0] != fingerprint
    summary = json.loads((out / "summaries.jsonl").read_text())["summary"]
    assert summary["tasks"][0]["trajectory"]["matched"] is False
    # and equals a full regrade, byte for byte
    full = tmp_path / "full"
    api.write_outputs(events, full, suite_docs=[doc])
    for name in ("summaries.jsonl", "runs.parquet", "tasks.parquet", "trials.parquet"):
        assert (out / name).read_bytes() == (full / name).read_bytes(), name
    # a child log that goes away regrades it too
    (events / "child-a.parquet").unlink()
    gone = api.write_outputs(events, out, suite_docs=[doc], incremental_run=True)
    assert gone.carried_runs == 0  # the parent is graded again
    assert "delegate-log-missing" in gone.problems["code"].to_list()


# --- explain and verify read the same rule ------------------------------------------------------


@pytest.mark.slow
def test_e102_explain_names_the_child_run_of_each_call(tmp_path: Path) -> None:
    from evalbatch.explain import render_text, to_json

    events = tmp_path / "events"
    write_raw_events(events / "parent.parquet", fan_out_parent().rows)
    write_raw_events(
        events / "children.parquet",
        child_log(CHILD_A, "t:a1", "t:a2").rows + child_log(CHILD_B, "t:b1").rows,
    )
    suites = tmp_path / "suite.json"
    suites.write_text(json.dumps(delegate_suite(FAN_OUT_PATH)))
    explanation = api.explain_paths(events, suites, run_id=RUN)
    observed = to_json(explanation)["tasks"][0]["trials"][0]["trajectory"]["observed"]
    assert [(c["tool"], c.get("fromRunId")) for c in observed] == [
        ("t:before", None),
        ("t:a1", CHILD_A),
        ("t:a2", CHILD_A),
        ("t:b1", CHILD_B),
        ("t:after", None),
    ]
    assert observed[1]["agentId"] == HELPER and observed[1]["callPos"] is None
    text = render_text(explanation)
    assert f"in child run {CHILD_A}" in text and f"in child run {CHILD_B}" in text
    # without the children: the finding names each missing child run
    (events / "children.parquet").unlink()
    text = render_text(api.explain_paths(events, suites, run_id=RUN))
    assert f"child run {CHILD_A} (named at event 4) has no event in the input" in text


@pytest.mark.slow
def test_e102_verify_recomputes_with_the_children() -> None:
    """The host recorded a pass; with the children there the recomputation agrees. Without them
    the run cannot be recomputed from this input: not verified (exit 3, the missing child named
    by its code), never a finding against the host, whose evidence the auditor lacks (E-105)."""
    doc = delegate_suite(FAN_OUT_PATH)
    logs = [fan_out_parent(), child_log(CHILD_A, "t:a1", "t:a2"), child_log(CHILD_B, "t:b1")]
    rows = [row for log in logs for row in log.rows]
    agrees = api.verify_events(rows, [doc])
    assert agrees.verdict == "agrees", agrees.findings
    without = api.verify_events(logs[0].rows, [doc])
    assert without.verdict == "not-verified" and without.exit_code == 3
    assert without.findings == []
    (run,) = without.runs
    assert run.graded_from is None and run.problems == ["delegate-log-missing"]


@pytest.mark.slow
def test_e102_incremental_nights_count_eval_runs_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The manifest also keeps the child runs (E-102), which are not eval runs: the second night
    keeps 1 eval run and grades 0 (it said "graded -4, kept 5"). The first incremental night
    under -q prints nothing: a missing manifest is no damage to report (E-107)."""
    from tests.helpers import SAMPLES, run_main

    args = ["run", SAMPLES / "delegates", "--suites", SAMPLES / "suites", "--out", tmp_path]
    code, stdout, stderr = run_main(monkeypatch, capsys, *args, "--incremental", "-q")
    assert (code, stdout, stderr) == (0, "", "")
    code, stdout, _ = run_main(monkeypatch, capsys, *args, "--incremental")
    assert code == 0
    assert "incremental: graded 0 new or changed eval runs, kept 1 unchanged" in stdout
