"""CONTRACT §2: eval runs and trial segments (§2.1), trialIndex (D-5), what is read from a trial
(§2.2) and judge calls (D-6)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import slow_param
from tests.logbuilder import (
    AGENT,
    HELPER,
    RUN,
    RUN2,
    Call,
    LogBuilder,
    codes_of,
    expect,
    golden,
    grade,
    severity_of,
    suite,
    summary_of,
    task_of,
    traj,
    trajectory_task,
)

# --------------------------------------------------------------------------------------------------
# §2.1 eval runs and segments
# --------------------------------------------------------------------------------------------------


def test_s2_1_a_run_without_eval_started_is_not_an_eval_run() -> None:
    """§2.1: an eval run is a runId with an eval.started; other runs get no summary (E-1)."""
    plain = LogBuilder(RUN2)
    plain.add("run.started", {"workflowId": "wf"})
    plain.trial("task-a")
    plain.add("run.completed", {"outputs": {}})
    evalrun = LogBuilder(RUN)
    evalrun.eval_started()
    evalrun.trial("task-a")
    evalrun.eval_completed()
    result = grade([plain, evalrun], [suite(golden("task-a"))])
    assert list(result.summaries) == [RUN]
    assert RUN2 not in result.skipped
    assert codes_of(result, RUN2) == []


def test_s2_1_events_before_eval_started_are_not_part_of_any_trial() -> None:
    """§2.1: a bracket, calls and usage before eval.started count for nothing."""
    log = LogBuilder()
    inv = log.started()
    log.call("billing:refund-all", {})
    log.call("crm:lookup", {})
    log.usage(inputTokens=1000, outputTokens=100, costEstimateUsd=5)
    log.completed(inv)
    log.eval_started()
    log.trial("task-a", calls=["crm:lookup"], usage=[{"costEstimateUsd": 0.25}])
    log.eval_completed()
    s = suite(golden("task-a", traj("exact", ["crm:lookup"], forbidden=["billing:refund-all"])))
    summary = summary_of(grade(log, [s]))
    task = task_of(summary, "task-a")
    assert task["trajectory"] == {
        "mode": "exact",
        "matched": True,
        "expectedCount": 1,
        "observedCount": 1,
        "matchedCount": 1,
        "forbiddenCount": 0,
    }
    assert task["efficiency"] == {
        "toolCallCount": 1,
        "modelCallCount": 1,
        "inputTokens": 10,
        "outputTokens": 5,
    }
    assert task["costUsd"] == pytest.approx(0.25)
    assert summary["totalCostUsd"] == pytest.approx(0.25)
    assert task["passed"] is True


def test_s2_1_events_after_eval_completed_are_not_part_of_any_trial() -> None:
    """§2.1: events after eval.completed belong to no trial; an eval.scored there is ignored."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", usage=[{"costEstimateUsd": 0.25}], score=1, passed=True)
    log.eval_completed()
    log.usage(costEstimateUsd=7)
    log.bracket(calls=["t:x"], usage=[{"costEstimateUsd": 3}])
    log.scored("task-a", score=0, passed=False)
    log.scored("task-b", score=1, passed=True)
    s = suite(golden("task-a"), golden("task-b"), thresholds={"passScore": 0.5})
    result = grade(log, [s])
    summary = summary_of(result)
    task_a = task_of(summary, "task-a")
    assert task_a["score"] == 1
    assert task_a["passed"] is True
    assert task_a["costUsd"] == pytest.approx(0.25)
    assert task_a["efficiency"]["modelCallCount"] == 1
    # task-b's only eval.scored came after eval.completed: it is a missing task (D-13)
    task_b = task_of(summary, "task-b")
    assert task_b["score"] == 0
    assert task_b["passed"] is False
    assert summary["totalCostUsd"] == pytest.approx(0.25)
    assert summary["aggregateScore"] == 0.5
    assert "task-missing" in codes_of(result)


def test_s2_1_events_after_the_last_eval_scored_belong_to_no_segment() -> None:
    """§2.1/§3.6: a segment ends with its eval.scored; usage after the last one counts nowhere."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", usage=[{"costEstimateUsd": 0.25}])
    log.usage(costEstimateUsd=4)
    log.bracket(calls=["t:x"], usage=[{"costEstimateUsd": 2}])
    log.eval_completed()
    summary = summary_of(grade(log, [suite(golden("task-a"))]))
    assert task_of(summary, "task-a")["costUsd"] == pytest.approx(0.25)
    assert summary["totalCostUsd"] == pytest.approx(0.25)


def test_s2_1_eval_without_completed_is_still_graded() -> None:
    """§2.1: eval.started without eval.completed is graded, problem `eval-incomplete`."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", score=1, passed=True)
    log.trial("task-b", score=0.5, passed=False)
    result = grade(log, [suite(golden("task-a"), golden("task-b"))])
    summary = summary_of(result)
    assert summary["taskCount"] == 2
    assert summary["passedCount"] == 1
    assert summary["aggregateScore"] == 0.75
    assert severity_of(result, "eval-incomplete") == {"warning"}
    assert result.skipped == []


@pytest.mark.slow
@pytest.mark.parametrize("where", ["before-completed", "after-completed"])
def test_s2_1_second_eval_started_makes_the_run_ungradable(where: str) -> None:
    """§2.1: a second eval.started in one run -> `eval-restarted`, not graded; others graded."""
    log = LogBuilder(RUN)
    log.eval_started()
    log.trial("task-a")
    if where == "before-completed":
        log.eval_started()
        log.trial("task-a")
        log.eval_completed()
    else:
        log.eval_completed()
        log.eval_started()
    other = LogBuilder(RUN2)
    other.eval_started()
    other.trial("task-a")
    other.eval_completed()
    result = grade([log, other], [suite(golden("task-a"))])
    assert RUN not in result.summaries
    assert RUN in result.skipped
    assert severity_of(result, "eval-restarted") == {"error"}
    assert summary_of(result, RUN2)["passed"] is True


def test_s2_1_unclosed_bracket_extends_to_the_end_of_its_segment() -> None:
    """§2.1: a bracket that never completes runs through the segment end (`bracket-unclosed`)."""
    log = LogBuilder()
    log.eval_started()  # t=0
    log.started()  # t=100, never completed
    log.call("crm:lookup", {})  # t=200
    log.usage(inputTokens=20, outputTokens=2)  # t=300
    log.call("billing:refund-all", {})  # t=400
    log.scored("task-a", score=1, passed=True)  # t=500
    log.eval_completed()
    s = suite(golden("task-a", traj("in-order", ["crm:lookup"], forbidden=["billing:refund-all"])))
    result = grade(log, [s])
    task = task_of(summary_of(result), "task-a")
    assert task["trajectory"]["observedCount"] == 2
    assert task["trajectory"]["forbiddenCount"] == 1
    assert task["trajectory"]["matched"] is False
    assert task["passed"] is False
    assert task["score"] == 1
    assert task["efficiency"] == {
        "toolCallCount": 2,
        "modelCallCount": 1,
        "inputTokens": 20,
        "outputTokens": 2,
    }
    assert task["latencyMs"] == 400  # §3.5: an unclosed bracket ends at the eval.scored
    assert severity_of(result, "bracket-unclosed") == {"warning"}


def test_s2_1_a_completion_in_a_later_segment_does_not_close_the_bracket() -> None:
    """§2.1: a completion outside the segment does not close it; it does not open anything."""
    log = LogBuilder()
    log.eval_started()  # t=0
    log.started(invocation_id="inv-1")  # t=100
    log.call("t:a", {})  # t=200
    log.scored("task-a")  # t=300: segment 1 ends, bracket unclosed
    log.call("t:x", {})  # t=400: segment 2, before its bracket
    log.usage(inputTokens=50, outputTokens=5, costEstimateUsd=0.5)  # t=500: judge call
    log.completed("inv-1")  # t=600: belongs to segment 1's invocation
    log.started(invocation_id="inv-2")  # t=700
    log.call("t:b", {})  # t=800
    log.completed("inv-2")  # t=900
    log.scored("task-b")  # t=1000
    log.eval_completed()
    s = suite(
        golden("task-a", traj("exact", ["t:a"])),
        golden("task-b", traj("exact", ["t:b"], forbidden=["t:x"])),
    )
    result = grade(log, [s])
    summary = summary_of(result)
    task_a = task_of(summary, "task-a")
    assert task_a["latencyMs"] == 200  # 100 -> its own eval.scored at 300
    assert task_a["trajectory"]["matched"] is True
    task_b = task_of(summary, "task-b")
    assert task_b["trajectory"]["observedCount"] == 1
    assert task_b["trajectory"]["forbiddenCount"] == 0
    assert task_b["trajectory"]["matched"] is True
    assert task_b["latencyMs"] == 200  # 700 -> 900
    assert task_b["efficiency"] == {
        "toolCallCount": 1,
        "modelCallCount": 0,
        "inputTokens": 0,
        "outputTokens": 0,
    }
    assert task_b["costUsd"] == pytest.approx(0.5)
    unclosed = [p for p in result.problems.to_dicts() if p["code"] == "bracket-unclosed"]
    assert len(unclosed) == 1


def test_s2_1_bracket_is_closed_only_by_the_completion_with_the_same_invocation_id() -> None:
    """§2.1: the bracket is the first started through the completion with the same invocationId;
    a nested invocation's completion does not close it."""
    log = LogBuilder()
    log.eval_started()
    log.started(AGENT, invocation_id="inv-outer")
    log.call("t:a", {})
    log.started(HELPER, invocation_id="inv-inner")
    log.call("t:b", {}, agent=HELPER)
    log.completed("inv-inner", HELPER)
    log.call("t:forbidden", {})  # the target agent, still inside its bracket
    log.usage(inputTokens=3, outputTokens=1)
    log.completed("inv-outer", AGENT)
    log.call("t:after", {})  # after the bracket: not observed, not counted
    log.usage(inputTokens=1000, outputTokens=1000)  # after the bracket: a judge call
    log.scored("task-a")
    log.eval_completed()
    s = suite(
        golden("task-a", traj("in-order", ["t:a"], forbidden=["t:forbidden", "t:after"])),
        targetAgentId=AGENT,
    )
    result = grade(log, [s])
    task = task_of(summary_of(result), "task-a")
    assert task["trajectory"]["observedCount"] == 2  # t:a and t:forbidden (target agent only)
    assert task["trajectory"]["forbiddenCount"] == 1
    assert task["trajectory"]["matched"] is False
    assert task["efficiency"] == {
        "toolCallCount": 3,  # t:a, t:b (helper), t:forbidden
        "modelCallCount": 1,
        "inputTokens": 3,
        "outputTokens": 1,
    }
    assert "bracket-unclosed" not in codes_of(result)
    assert "target-agent-mismatch" not in codes_of(result)


def test_s2_1_bracket_missing_has_no_calls_and_all_usage_is_judge_usage() -> None:
    """§2.1: no agent.invocation-started in the segment -> empty bracket (`bracket-missing`):
    no observed calls, zero efficiency counts, every usage a judge call (cost yes)."""
    log = LogBuilder()
    log.eval_started()
    log.call("t:a", {})
    log.usage(inputTokens=40, outputTokens=4, costEstimateUsd=0.5)
    log.call("t:a", {})
    log.scored("task-a", score=1, passed=True)
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"))])
    task = task_of(summary_of(result), "task-a")
    assert task["efficiency"] == {
        "toolCallCount": 0,
        "modelCallCount": 0,
        "inputTokens": 0,
        "outputTokens": 0,
    }
    assert task["costUsd"] == pytest.approx(0.5)
    assert "latencyMs" not in task  # no bracket and no host latency
    assert task["score"] == 1
    assert task["passed"] is True  # no trajectory expectation: nothing to fail
    assert severity_of(result, "bracket-missing") == {"warning"}


def test_s2_1_target_agent_mismatch_is_a_problem_and_the_bracket_agent_stays_target() -> None:
    """§2.1: the target agent is the bracket's agentId; a different suite targetAgentId is a
    problem."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", calls=["t:a"])
    log.eval_completed()
    s = suite(golden("task-a", traj("exact", ["t:a"])), targetAgentId="acme.agents.other")
    result = grade(log, [s])
    task = task_of(summary_of(result), "task-a")
    assert task["trajectory"]["observedCount"] == 1
    assert task["trajectory"]["matched"] is True
    assert "target-agent-mismatch" in codes_of(result)


# --------------------------------------------------------------------------------------------------
# D-5 trialIndex
# --------------------------------------------------------------------------------------------------


def trials_suite(*tasks: dict[str, Any], count: int, k: int | None = None, rule: str | None = None):
    block: dict[str, Any] = {"count": count}
    if k is not None:
        block["k"] = k
    if rule is not None:
        block["passRule"] = rule
    return suite(*tasks, trials=block)


def test_d5_trial_index_1_0_counts_as_1() -> None:
    """D-5: an integral JSON number such as `1.0` is a valid trialIndex."""
    log = LogBuilder()
    log.eval_started(trialCount=2)
    log.trial("task-a", trial_index=1.0, score=1, passed=True)
    log.trial("task-a", trial_index=0, score=0.5, passed=True)
    log.eval_completed()
    result = grade(log, [trials_suite(golden("task-a"), count=2)])
    task = task_of(summary_of(result), "task-a")
    assert task["trials"]["n"] == 2
    assert task["trials"]["passedCount"] == 2
    assert task["trials"]["meanScore"] == 0.75
    assert task["passed"] is True
    codes = codes_of(result)
    assert "trial-index-invalid" not in codes
    assert "trial-duplicate" not in codes
    assert "trial-missing" not in codes


@pytest.mark.slow
@pytest.mark.parametrize("bad", [-1, 0.5, "1", True, [1], {"i": 1}])
def test_d5_invalid_trial_index_is_treated_as_absent_with_a_problem(bad: Any) -> None:
    """D-5: a trialIndex that is not an integral number >= 0 is absent (problem); the trial takes
    its position among the task's eval.scored events."""
    log = LogBuilder()
    log.eval_started(trialCount=2)
    log.trial("task-a", trial_index=0, score=1, passed=True)
    log.trial("task-a", trial_index=bad, score=0.5, passed=True)  # position 1
    log.eval_completed()
    result = grade(log, [trials_suite(golden("task-a"), count=2)])
    task = task_of(summary_of(result), "task-a")
    assert task["trials"]["n"] == 2
    assert task["trials"]["passedCount"] == 2
    assert task["trials"]["meanScore"] == 0.75
    assert "trial-index-invalid" in codes_of(result)
    assert "trial-missing" not in codes_of(result)
    assert "trial-duplicate" not in codes_of(result)


def test_d5_positional_index_counts_indexed_scored_events_too() -> None:
    """D-5: without trialIndex a trial takes its position among all of the task's eval.scored
    (indexed ones counted); other tasks' events do not shift it."""
    log = LogBuilder()
    log.eval_started(trialCount=3)
    log.trial("task-a", trial_index=2, score=0.25, passed=True)  # position 0, index 2
    log.trial("task-b", score=1, passed=True)  # task-b position 0 -> index 0
    log.trial("task-a", score=0.5, passed=True)  # position 1 -> index 1
    log.eval_completed()
    s = trials_suite(golden("task-a"), golden("task-b"), count=3, rule="any")
    result = grade(log, [s])
    summary = summary_of(result)
    task_a = task_of(summary, "task-a")
    assert task_a["trials"]["n"] == 3
    assert task_a["trials"]["passedCount"] == 2  # trial 0 is missing
    assert task_a["trials"]["meanScore"] == pytest.approx(0.25)  # (0.25 + 0.5 + 0) / 3
    task_b = task_of(summary, "task-b")
    assert task_b["trials"]["passedCount"] == 1
    assert "trial-missing" in codes_of(result)
    assert "trial-duplicate" not in codes_of(result)


def test_d5_positional_index_without_any_trial_index() -> None:
    """D-5: three unindexed eval.scored of one task are trials 0, 1, 2."""
    log = LogBuilder()
    log.eval_started(trialCount=3)
    for score in (1, 0, 1):
        log.trial("task-a", score=score, passed=bool(score))
    log.eval_completed()
    result = grade(log, [trials_suite(golden("task-a"), count=3, k=2)])
    trials = task_of(summary_of(result), "task-a")["trials"]
    assert trials == {
        "n": 3,
        "passedCount": 2,
        "meanScore": pytest.approx(2 / 3),
        "passAtK": pytest.approx(1.0),
        "passHatK": pytest.approx(1 / 3),
    }
    assert "trial-missing" not in codes_of(result)
    assert "trial-extra" not in codes_of(result)


def test_d5_repeated_trial_keeps_the_first_and_leaves_the_later_out() -> None:
    """D-5: a repeated (taskId, trialIndex) keeps the first in log order (problem); the later one
    counts for nothing: no score, cost, latency or efficiency."""
    log = LogBuilder()
    log.eval_started(trialCount=2)
    log.trial(
        "task-a",
        calls=["t:a"],
        usage=[{"costEstimateUsd": 0.125}],
        trial_index=0,
        score=1,
        passed=True,
        latencyMs=100,
    )
    log.trial(
        "task-a",
        calls=["t:a", "t:a", "t:a"],
        usage=[{"costEstimateUsd": 0.5, "inputTokens": 999}],
        trial_index=0,
        score=0,
        passed=False,
        latencyMs=9000,
    )
    log.trial(
        "task-a",
        calls=["t:a"],
        usage=[{"costEstimateUsd": 0.25}],
        trial_index=1,
        score=1,
        passed=True,
        latencyMs=300,
    )
    log.eval_completed()
    result = grade(log, [trials_suite(golden("task-a"), count=2)])
    task = task_of(summary_of(result), "task-a")
    assert task["score"] == 1
    assert task["passed"] is True
    assert task["trials"]["passedCount"] == 2
    assert task["costUsd"] == pytest.approx(0.375)
    assert task["latencyMs"] == 200
    assert task["efficiency"] == {
        "toolCallCount": 1,
        "modelCallCount": 1,
        "inputTokens": 10,
        "outputTokens": 5,
    }
    assert "trial-duplicate" in codes_of(result)


def test_d5_trial_index_at_or_above_count_is_left_out_as_trial_extra() -> None:
    """D-5: a trial with index >= trials.count is left out (`trial-extra`) and counts for
    nothing: no score, cost, latency, efficiency or model class."""
    log = LogBuilder()
    log.eval_started(trialCount=2)
    for index in (0, 1):
        log.trial(
            "task-a",
            calls=["t:a"],
            usage=[{"costEstimateUsd": 0.25}],
            model_class="coding",
            trial_index=index,
            score=1,
            passed=True,
            latencyMs=100,
        )
    log.trial(
        "task-a",
        calls=["t:a", "t:b", "t:c"],
        usage=[{"costEstimateUsd": 4, "inputTokens": 500}],
        model_class="writing",
        trial_index=2,
        score=0,
        passed=False,
        latencyMs=5000,
    )
    log.eval_completed()
    result = grade(log, [trials_suite(golden("task-a"), count=2)])
    summary = summary_of(result)
    task = task_of(summary, "task-a")
    assert task["trials"]["n"] == 2
    assert task["trials"]["passedCount"] == 2
    assert task["score"] == 1
    assert task["costUsd"] == pytest.approx(0.5)
    assert summary["totalCostUsd"] == pytest.approx(0.5)
    assert task["latencyMs"] == 100
    assert task["efficiency"]["toolCallCount"] == 1
    assert task["efficiency"]["inputTokens"] == 10
    assert summary["evaluatedModelClass"] == "coding"
    assert "trial-extra" in codes_of(result)


def test_d5_trials_of_unknown_tasks_count_for_nothing() -> None:
    """D-5/D-13: an eval.scored for a taskId not in the suite is left out (`task-unknown`): its
    cost, latency and model class count nowhere."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", usage=[{"costEstimateUsd": 0.25}], model_class="coding")
    log.trial("ghost", usage=[{"costEstimateUsd": 3}], model_class="writing", score=0)
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"))])
    summary = summary_of(result)
    assert [t["taskId"] for t in summary["tasks"]] == ["task-a"]
    assert summary["taskCount"] == 1
    assert summary["totalCostUsd"] == pytest.approx(0.25)
    assert summary["evaluatedModelClass"] == "coding"
    assert summary["passed"] is True
    assert "task-unknown" in codes_of(result)


# --------------------------------------------------------------------------------------------------
# §2.2 observed trajectory, efficiency events
# --------------------------------------------------------------------------------------------------


def _mixed_agent_log() -> LogBuilder:
    """One bracket of AGENT with a call of its own, a delegate's call and a call naming no agent."""
    log = LogBuilder()
    log.eval_started()
    log.trial(
        "task-a",
        calls=[
            Call("t:a", {}),
            Call("t:delegate", {}, agent=HELPER),
            Call("t:anon", {}, agent=None),
        ],
    )
    log.eval_completed()
    return log


def test_s2_2_observed_trajectory_is_the_target_agents_calls_only() -> None:
    """§2.2: only calls whose agentId is the target agent; a call naming no agent is not the
    target agent's. Efficiency counts every agent's calls."""
    s = suite(golden("task-a", traj("exact", ["t:a"])))
    task = task_of(summary_of(grade(_mixed_agent_log(), [s])), "task-a")
    assert task["trajectory"]["matched"] is True
    assert task["trajectory"]["observedCount"] == 1
    assert task["efficiency"]["toolCallCount"] == 3


def test_s2_2_include_delegates_takes_every_call_in_the_bracket() -> None:
    """§2.2: `includeDelegates: true` takes every agent.tool-called in the bracket."""
    s = suite(
        golden(
            "task-a",
            traj("exact", ["t:a", "t:delegate", "t:anon"], include_delegates=True),
        )
    )
    task = task_of(summary_of(grade(_mixed_agent_log(), [s])), "task-a")
    assert task["trajectory"]["matched"] is True
    assert task["trajectory"]["observedCount"] == 3
    assert task["trajectory"]["matchedCount"] == 3


@pytest.mark.slow
@pytest.mark.parametrize(
    ("include", "forbidden_tool", "matched", "count"),
    [
        (False, "t:delegate", True, 0),
        (True, "t:delegate", False, 1),
        (False, "t:anon", True, 0),
        (True, "t:anon", False, 1),
    ],
)
def test_s2_2_forbidden_delegate_call_counts_only_with_include_delegates(
    include: bool, forbidden_tool: str, matched: bool, count: int
) -> None:
    """§3.2/§2.2: forbidden is checked against the observed trajectory."""
    s = suite(
        golden(
            "task-a",
            traj("in-order", ["t:a"], forbidden=[forbidden_tool], include_delegates=include),
        )
    )
    task = task_of(summary_of(grade(_mixed_agent_log(), [s])), "task-a")
    assert task["trajectory"]["matched"] is matched
    assert task["trajectory"]["forbiddenCount"] == count
    assert task["passed"] is matched


@pytest.mark.parametrize(
    ("tokens", "counted"),
    [
        pytest.param(-5, 0, id="negative"),
        slow_param(1.5, 0, id="fractional"),
        pytest.param("100", 0, id="string"),
        slow_param(None, 0, id="null"),
        slow_param(True, 0, id="boolean"),
        pytest.param(2.0, 2, id="integral-float"),
    ],
)
def test_s2_2_usage_with_invalid_token_count_is_a_model_call_counting_zero_tokens(
    tokens: Any, counted: int
) -> None:
    """§2.2: a usage whose inputTokens is not an integral number >= 0 is still a model call;
    that count is 0 (problem)."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", usage=[{"inputTokens": tokens, "outputTokens": 4}, {"inputTokens": 6}])
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"))])
    task = task_of(summary_of(result), "task-a")
    assert task["efficiency"] == {
        "toolCallCount": 0,
        "modelCallCount": 2,
        "inputTokens": counted + 6,
        "outputTokens": 9,
    }
    if counted == 0:
        assert "usage-tokens-invalid" in codes_of(result)
    else:
        assert "usage-tokens-invalid" not in codes_of(result)


# --------------------------------------------------------------------------------------------------
# D-6 judge calls
# --------------------------------------------------------------------------------------------------


def test_d6_usage_outside_the_bracket_is_a_judge_call_cost_yes_efficiency_no() -> None:
    """D-6: a provider.usage in the segment but outside the bracket (before or after it) is a
    judge call: included in cost, excluded from efficiency."""
    log = LogBuilder()
    log.eval_started()
    log.usage(inputTokens=700, outputTokens=70, costEstimateUsd=0.125)  # before the bracket
    log.bracket(
        calls=["t:a"], usage=[{"inputTokens": 100, "outputTokens": 10, "costEstimateUsd": 0.25}]
    )
    log.usage(inputTokens=900, outputTokens=90, costEstimateUsd=0.5)  # after the bracket
    log.scored("task-a")
    log.eval_completed()
    summary = summary_of(grade(log, [suite(golden("task-a"))]))
    task = task_of(summary, "task-a")
    assert task["efficiency"] == {
        "toolCallCount": 1,
        "modelCallCount": 1,
        "inputTokens": 100,
        "outputTokens": 10,
    }
    assert task["costUsd"] == pytest.approx(0.875)
    assert summary["totalCostUsd"] == pytest.approx(0.875)


def test_d18_bracket_missing_trajectory_task_scores_zero() -> None:
    """D-18 with §3.4: a trajectory task whose segment has no bracket is unmatched: score 0."""
    log = LogBuilder()
    log.eval_started()
    log.call("t:a", {})
    log.scored("task-a", score=1, passed=True)
    log.eval_completed()
    s = suite(trajectory_task("task-a", traj("subset", [expect("t:a")])))
    task = task_of(summary_of(grade(log, [s])), "task-a")
    assert task["score"] == 0
    assert task["passed"] is False
    assert task["trajectory"]["matched"] is False
    assert task["trajectory"]["observedCount"] == 0


@pytest.mark.slow
def test_s2_1_eval_scored_before_eval_started_belongs_to_no_trial() -> None:
    """§2.1: an eval.scored before eval.started is not a trial."""
    log = LogBuilder()
    log.trial("task-a", score=1, passed=True)
    log.eval_started(task_count=2)
    log.trial("task-b", score=1, passed=True)
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"), golden("task-b"), thresholds={"passScore": 0})])
    summary = summary_of(result)
    assert task_of(summary, "task-a")["score"] == 0
    assert task_of(summary, "task-a")["passed"] is False
    assert summary["passedCount"] == 1
    assert "task-missing" in codes_of(result)


@pytest.mark.slow
def test_d5_left_out_trials_count_no_fixture_misses() -> None:
    """D-5/§3.3: a trial-extra's fixture misses are not the task's."""
    log = LogBuilder()
    log.eval_started(trialCount=1)
    log.trial("task-a", calls=["t:a"], trial_index=0)
    log.trial("task-a", calls=["t:x", "t:y"], trial_index=1)  # extra
    log.eval_completed()
    s = suite(
        golden("task-a", fixtures={"toolResponses": [{"tool": "t:a"}], "onMiss": "fail"}),
        trials={"count": 1},
    )
    task = task_of(summary_of(grade(log, [s])), "task-a")
    assert task["fixtureMissCount"] == 0
    assert task["passed"] is True


@pytest.mark.slow
def test_d5_trial_index_must_be_integral_as_written() -> None:
    """D-5 with D-7: 1.0000000000000001 is not an integral JSON number (only a double rounds it
    to 1): it is treated as absent, so the trial takes its position (0) and the later
    trialIndex 1 is no duplicate."""
    log = LogBuilder()
    log.eval_started(trialCount=2)
    log.bracket()
    log.add(
        "eval.scored",
        raw='{"taskId": "task-a", "score": 1, "passed": true, "trialIndex": 1.0000000000000001}',
    )
    log.trial("task-a", trial_index=1, score=1, passed=True)
    log.eval_completed()
    result = grade(log, [trials_suite(golden("task-a"), count=2)])
    task = task_of(summary_of(result), "task-a")
    assert task["trials"]["passedCount"] == 2
    assert task["passed"] is True
    codes = codes_of(result)
    assert "trial-index-invalid" in codes
    assert "trial-duplicate" not in codes
    assert "trial-missing" not in codes
