"""CONTRACT §3.6 suite summary (D-15 default pass score, D-17 ties, bars, trialStats, model
class) and D-4 (runs graded without a suite)."""

from __future__ import annotations

import statistics
from math import sqrt
from typing import Any

import pytest

from tests.helpers import slow_param
from tests.logbuilder import (
    ABSENT,
    LogBuilder,
    codes_of,
    golden,
    grade,
    severity_of,
    suite,
    summary_of,
    task_of,
    traj,
)


def tasks_run(
    grades: list[tuple[Any, Any]],
    *,
    suite_extra: dict[str, Any] | None = None,
    trial_extra: list[dict[str, Any]] | None = None,
    **options: Any,
):
    """One trial per task `t0, t1, …` with the given (score, passed)."""
    log = LogBuilder()
    log.eval_started(task_count=len(grades))
    for number, (score, passed) in enumerate(grades):
        extra = trial_extra[number] if trial_extra else {}
        log.trial(f"t{number}", score=score, passed=passed, **extra)
    log.eval_completed()
    s = suite(*(golden(f"t{n}") for n in range(len(grades))), **(suite_extra or {}))
    result = grade(log, [s], **options)
    return summary_of(result), result


# --------------------------------------------------------------------------------------------------
# aggregate, counts, passScore
# --------------------------------------------------------------------------------------------------


def test_s3_6_aggregate_score_task_count_and_passed_count() -> None:
    """§3.6: aggregateScore = mean task score, taskCount = suite tasks, passedCount = passed."""
    summary, _ = tasks_run([(0.5, True), (1, True), (0, False), (0.5, False)])
    assert summary["aggregateScore"] == 0.5
    assert summary["taskCount"] == 4
    assert summary["passedCount"] == 2
    assert [t["taskId"] for t in summary["tasks"]] == ["t0", "t1", "t2", "t3"]


def test_s3_6_tasks_are_in_suite_order_not_log_order() -> None:
    """§4: tasks appear in suite order."""
    log = LogBuilder()
    log.eval_started(task_count=3)
    for task_id in ("gamma", "alpha", "beta"):
        log.trial(task_id)
    log.eval_completed()
    s = suite(golden("beta"), golden("gamma"), golden("alpha"))
    summary = summary_of(grade(log, [s]))
    assert [t["taskId"] for t in summary["tasks"]] == ["beta", "gamma", "alpha"]


@pytest.mark.parametrize(
    ("suite_extra", "options", "passed"),
    [
        pytest.param({}, {}, False, id="absent-defaults-to-1.0"),
        pytest.param({"thresholds": {"maxCostUsd": 10}}, {}, False, id="thresholds-without"),
        pytest.param({}, {"default_pass_score": 0.95}, True, id="option-0.95"),
        slow_param({}, {"default_pass_score": 0.96}, False, id="option-0.96"),
        pytest.param(
            {"thresholds": {"passScore": 0.9}},
            {"default_pass_score": 1.0},
            True,
            id="declared-wins",
        ),
    ],
)
def test_d15_absent_pass_score_uses_the_default_option(
    suite_extra: dict[str, Any], options: dict[str, Any], passed: bool
) -> None:
    """D-15: absent passScore => --default-pass-score, default 1.0."""
    summary, _ = tasks_run(
        [(1, True), (0.9, True)],
        suite_extra=suite_extra,
        trial_extra=[{"usage": [{"costEstimateUsd": 0.5}]}, {}],
        **options,
    )
    assert summary["aggregateScore"] == 0.95
    assert summary["passed"] is passed


def test_d15_all_perfect_passes_the_default_bar() -> None:
    """D-15: aggregate 1.0 >= the default 1.0."""
    summary, _ = tasks_run([(1, True), (1.0, True)])
    assert summary["passed"] is True


def test_s3_6_suite_pass_reads_the_gating_aggregate_not_pass_rule() -> None:
    """§3.6: with passRule all a suite can pass while no task passed every trial."""
    log = LogBuilder()
    log.eval_started(trialCount=2, task_count=2)
    for task_id in ("task-a", "task-b"):
        log.trial(task_id, trial_index=0, score=1, passed=True)
        log.trial(task_id, trial_index=1, score=0.6, passed=False)
    log.eval_completed()
    s = suite(
        golden("task-a"),
        golden("task-b"),
        trials={"count": 2, "passRule": "all"},
        thresholds={"passScore": 0.8},
    )
    summary = summary_of(grade(log, [s]))
    assert summary["passedCount"] == 0
    assert summary["aggregateScore"] == 0.8
    assert summary["passed"] is True


# --------------------------------------------------------------------------------------------------
# bars
# --------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("max_cost", "passed"),
    [(0.3, True), (0.31, True), (0.29, False), (0, False)],
)
def test_s3_6_max_cost_bar(max_cost: float, passed: bool) -> None:
    """§3.6/D-17: passed needs totalCostUsd <= maxCostUsd; 0.1 + 0.2 against 0.3 is a tie."""
    summary, _ = tasks_run(
        [(1, True), (1, True)],
        suite_extra={"thresholds": {"passScore": 1, "maxCostUsd": max_cost}},
        trial_extra=[{"usage": [{"costEstimateUsd": 0.1}]}, {"usage": [{"costEstimateUsd": 0.2}]}],
    )
    assert summary["totalCostUsd"] == pytest.approx(0.3)
    assert summary["passed"] is passed


def test_s3_6_max_cost_bar_without_any_known_cost_fails() -> None:
    """§3.6: a declared bar that cannot be checked (no cost known) fails the suite."""
    summary, _ = tasks_run(
        [(1, True)], suite_extra={"thresholds": {"passScore": 1, "maxCostUsd": 100}}
    )
    assert "totalCostUsd" not in summary
    assert summary["passed"] is False


def _latency_run(latencies: list[Any], bar: int):
    trial_extra = [
        {"bracket": False} if latency is None else {"latencyMs": latency} for latency in latencies
    ]
    return tasks_run(
        [(1, True)] * len(latencies),
        suite_extra={"thresholds": {"passScore": 1, "maxP95LatencyMs": bar}},
        trial_extra=trial_extra,
    )


@pytest.mark.slow
@pytest.mark.parametrize(("bar", "passed"), [(1900, True), (1899, False), (2000, True)])
def test_s3_6_p95_latency_bar_is_nearest_rank(bar: int, passed: bool) -> None:
    """§3.6: nearest-rank p95 over 20 tasks at 100..2000 ms is the 19th value, 1900 (not the
    maximum, not an interpolation)."""
    summary, _ = _latency_run([100 * i for i in range(1, 21)], bar)
    assert summary["passed"] is passed


@pytest.mark.slow
@pytest.mark.parametrize(("bar", "passed"), [(300, True), (299, False)])
def test_s3_6_p95_of_three_tasks_is_the_largest(bar: int, passed: bool) -> None:
    """§3.6: rank ceil(0.95 * 3) = 3."""
    summary, _ = _latency_run([300, 100, 200], bar)
    assert summary["passed"] is passed


def test_s3_6_p95_reads_only_tasks_that_have_a_latency() -> None:
    """§3.6: the p95 is over the tasks that have a latencyMs."""
    summary, _ = _latency_run([100, None, None], 100)
    assert summary["passed"] is True


def test_s3_6_p95_bar_without_any_task_latency_fails() -> None:
    """§3.6: a declared bar that cannot be checked (no task latency known) fails the suite."""
    summary, _ = _latency_run([None, None], 10**9)
    assert all("latencyMs" not in t for t in summary["tasks"])
    assert summary["passed"] is False


# --------------------------------------------------------------------------------------------------
# D-17 ties
# --------------------------------------------------------------------------------------------------


def test_d17_suite_tie_at_pass_score_passes() -> None:
    """D-17: tasks at 0.7, 0.8, 0.9 against passScore 0.8 are a tie (a float mean gives
    0.7999999999999999)."""
    summary, _ = tasks_run(
        [(0.7, True), (0.8, True), (0.9, True)], suite_extra={"thresholds": {"passScore": 0.8}}
    )
    assert summary["aggregateScore"] == pytest.approx(0.8)
    assert summary["passed"] is True


def test_d17_just_below_the_tie_fails() -> None:
    """D-17: 0.7, 0.8, 0.89 against 0.8 is below the bar."""
    summary, _ = tasks_run(
        [(0.7, True), (0.8, True), (0.89, True)], suite_extra={"thresholds": {"passScore": 0.8}}
    )
    assert summary["passed"] is False


@pytest.mark.slow
def test_d17_pass_rule_mean_tie_passes() -> None:
    """D-17: passRule mean with trials at 0.7, 0.8, 0.9 against passScore 0.8 passes the task."""
    log = LogBuilder()
    log.eval_started(trialCount=3)
    for index, score in enumerate([0.7, 0.8, 0.9]):
        log.trial("task-a", trial_index=index, score=score, passed=False)
    log.eval_completed()
    s = suite(
        golden("task-a"),
        trials={"count": 3, "passRule": "mean"},
        thresholds={"passScore": 0.8},
    )
    summary = summary_of(grade(log, [s]))
    task = task_of(summary, "task-a")
    assert task["passed"] is True
    assert task["trials"]["passedCount"] == 0
    assert summary["passedCount"] == 1
    assert summary["passed"] is True


def test_d17_cost_bar_tie_across_many_small_costs() -> None:
    """D-17: ten usages of 0.1 sum to exactly 1.0 against maxCostUsd 1.0."""
    summary, _ = tasks_run(
        [(1, True)],
        suite_extra={"thresholds": {"passScore": 1, "maxCostUsd": 1.0}},
        trial_extra=[{"usage": [{"costEstimateUsd": 0.1}] * 10}],
    )
    assert summary["totalCostUsd"] == pytest.approx(1.0)
    assert summary["passed"] is True


# --------------------------------------------------------------------------------------------------
# trialStats
# --------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_s3_6_trial_stats_means_and_stderr() -> None:
    """§3.6: trialStats k, the means of per-task passAtK/passHatK over all suite tasks (a missing
    task counts 0), scoreStderr = sample stdev of per-task meanScore / sqrt(taskCount)."""
    log = LogBuilder()
    log.eval_started(trialCount=3, task_count=3)
    for index in range(3):
        log.trial("task-a", trial_index=index, score=1, passed=True)
    for index, ok in enumerate([True, False, False]):
        log.trial("task-b", trial_index=index, score=1 if ok else 0, passed=ok)
    log.eval_completed()
    s = suite(
        golden("task-a"),
        golden("task-b"),
        golden("task-c"),
        trials={"count": 3, "k": 2},
        thresholds={"passScore": 0},
    )
    summary = summary_of(grade(log, [s]))
    means = [1, 1 / 3, 0]
    stats = summary["trialStats"]
    assert list(stats) == ["k", "passAtK", "passHatK", "scoreStderr"]
    assert stats["k"] == 2
    assert stats["passAtK"] == pytest.approx((1 + 2 / 3 + 0) / 3, rel=1e-9)
    assert stats["passHatK"] == pytest.approx((1 + 0 + 0) / 3, rel=1e-9)
    assert stats["scoreStderr"] == pytest.approx(statistics.stdev(means) / sqrt(3), rel=1e-9)
    assert summary["aggregateScore"] == pytest.approx(sum(means) / 3)


@pytest.mark.slow
def test_s3_6_score_stderr_is_omitted_for_a_single_task() -> None:
    """§3.6: scoreStderr is omitted when taskCount < 2."""
    log = LogBuilder()
    log.eval_started(trialCount=2)
    log.trial("task-a", trial_index=0, score=1, passed=True)
    log.trial("task-a", trial_index=1, score=0, passed=False)
    log.eval_completed()
    summary = summary_of(grade(log, [suite(golden("task-a"), trials={"count": 2, "k": 1})]))
    assert summary["trialStats"] == {
        "k": 1,
        "passAtK": pytest.approx(0.5),
        "passHatK": pytest.approx(0.5),
    }


# --------------------------------------------------------------------------------------------------
# evaluatedModelClass
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("classes", "expected"),
    [
        pytest.param(["coding", "coding"], "coding", id="same"),
        pytest.param(["coding", "writing"], None, id="differ"),
        slow_param(["coding", ABSENT], None, id="one-without"),
        pytest.param(["turbo", "turbo"], None, id="not-in-enum"),
        slow_param(["Coding", "Coding"], None, id="enum-is-case-sensitive"),
        pytest.param(["general", "no-bracket"], "general", id="trial-without-bracket-ignored"),
    ],
)
def test_s3_6_evaluated_model_class(classes: list[Any], expected: str | None) -> None:
    """§3.6: written when every counted trial that has a bracket carries the same modelClass
    from the OpenWOP enum; else omitted."""
    log = LogBuilder()
    log.eval_started(task_count=len(classes))
    for number, model_class in enumerate(classes):
        if model_class == "no-bracket":
            log.trial(f"t{number}", bracket=False)
        else:
            log.trial(f"t{number}", model_class=model_class)
    log.eval_completed()
    s = suite(*(golden(f"t{n}") for n in range(len(classes))))
    summary = summary_of(grade(log, [s]))
    assert summary.get("evaluatedModelClass") == expected


def test_s3_6_model_class_reads_the_bracket_start_not_nested_invocations() -> None:
    """§3.6: the modelClass is the one on the trial bracket's agent.invocation-started."""
    log = LogBuilder()
    log.eval_started()
    outer = log.started(model_class="research")
    inner = log.started("acme.agents.helper", model_class="coding")
    log.completed(inner, "acme.agents.helper")
    log.completed(outer)
    log.scored("task-a")
    log.eval_completed()
    summary = summary_of(grade(log, [suite(golden("task-a"))]))
    assert summary["evaluatedModelClass"] == "research"


# --------------------------------------------------------------------------------------------------
# D-4 no suite
# --------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_d4_run_without_its_suite_is_graded_from_the_host_record() -> None:
    """D-4: no suite: graded from eval.scored; tasks in order of first appearance; no
    trajectory or fixture checks; problem suite-missing (warning); passRule all."""
    log = LogBuilder()
    log.eval_started(task_count=2)
    log.trial("zeta", calls=["billing:refund-all"], score=0.5, passed=True)
    log.trial("alpha", score=1, passed=True, bracket=False)
    log.eval_completed()
    other_version = suite(golden("zeta"), version="2.0.0")  # not this run's suite
    result = grade(log, [other_version], default_pass_score=0.75)
    summary = summary_of(result)
    assert summary["suiteId"] == "acme.team.evals.support"
    assert summary["suiteVersion"] == "1.0.0"
    assert [t["taskId"] for t in summary["tasks"]] == ["zeta", "alpha"]
    assert summary["taskCount"] == 2
    assert summary["passedCount"] == 2
    assert summary["aggregateScore"] == 0.75
    assert summary["passed"] is True  # 0.75 >= the default pass score option
    for task in summary["tasks"]:
        assert "trajectory" not in task
        assert "fixtureMissCount" not in task
        assert "trials" not in task
    assert "trialStats" not in summary
    assert severity_of(result, "suite-missing") == {"warning"}


@pytest.mark.slow
def test_d4_trial_blocks_without_trial_count_use_observed_trials_and_k_1() -> None:
    """D-4: without trialCount, trial blocks appear when some task has more than one trial;
    n = the task's observed trial count, k = 1; passRule all."""
    log = LogBuilder()
    log.eval_started(task_count=2)
    log.trial("zeta", score=1, passed=True)
    log.trial("alpha", score=1, passed=True)
    log.trial("zeta", score=0, passed=False)
    log.eval_completed()
    summary = summary_of(grade(log, []))
    assert [t["taskId"] for t in summary["tasks"]] == ["zeta", "alpha"]
    zeta = task_of(summary, "zeta")
    assert zeta["trials"] == {
        "n": 2,
        "passedCount": 1,
        "meanScore": 0.5,
        "passAtK": pytest.approx(0.5),
        "passHatK": pytest.approx(0.5),
    }
    assert zeta["passed"] is False
    alpha = task_of(summary, "alpha")
    assert alpha["trials"] == {
        "n": 1,
        "passedCount": 1,
        "meanScore": 1,
        "passAtK": 1,
        "passHatK": 1,
    }
    assert summary["trialStats"]["k"] == 1
    assert summary["passedCount"] == 1
    assert summary["aggregateScore"] == 0.75


@pytest.mark.slow
def test_d4_trial_count_plays_the_suites_trials_count() -> None:
    """D-4: with eval.started.trialCount, n = trialCount and k = trialCount; trial-extra and
    trial-missing apply."""
    log = LogBuilder()
    log.eval_started(task_count=2, trialCount=2)
    log.trial("task-a", trial_index=0, score=1, passed=True)
    log.trial("task-a", trial_index=1, score=1, passed=True)
    log.trial("task-a", trial_index=2, score=0, passed=False)  # extra
    log.trial("task-b", trial_index=0, score=1, passed=True)  # trial 1 missing
    log.eval_completed()
    result = grade(log, [], default_pass_score=0.5)
    summary = summary_of(result)
    task_a = task_of(summary, "task-a")
    assert task_a["trials"] == {
        "n": 2,
        "passedCount": 2,
        "meanScore": 1,
        "passAtK": 1,
        "passHatK": 1,
    }
    assert task_a["passed"] is True
    task_b = task_of(summary, "task-b")
    assert task_b["trials"]["n"] == 2
    assert task_b["trials"]["passedCount"] == 1
    assert task_b["trials"]["meanScore"] == 0.5
    assert task_b["trials"]["passAtK"] == pytest.approx(1.0)  # k = 2: 1 - C(1,2)/C(2,2)
    assert task_b["trials"]["passHatK"] == 0
    assert task_b["passed"] is False
    assert summary["trialStats"]["k"] == 2
    codes = codes_of(result)
    assert "trial-extra" in codes
    assert "trial-missing" in codes


def test_d4_trial_count_1_makes_a_repeated_task_an_extra_trial() -> None:
    """D-4: trialCount 1: a second eval.scored of a task (position 1) is trial-extra; trial blocks
    appear because trialCount is present."""
    log = LogBuilder()
    log.eval_started(trialCount=1)
    log.trial("task-a", score=1, passed=True)
    log.trial("task-a", score=0, passed=False)
    log.eval_completed()
    result = grade(log, [])
    summary = summary_of(result)
    task = task_of(summary, "task-a")
    assert task["score"] == 1
    assert task["passed"] is True
    assert task["trials"]["n"] == 1
    assert summary["trialStats"]["k"] == 1
    assert "trial-extra" in codes_of(result)


def test_d4_a_task_seen_only_in_left_out_trials_is_still_a_task() -> None:
    """D-4: a taskId seen only in left-out trials is a task with all its trials missing."""
    log = LogBuilder()
    log.eval_started(trialCount=1, task_count=2)
    log.trial("task-a", trial_index=0, score=1, passed=True)
    log.trial("task-x", trial_index=5, score=1, passed=True)
    log.eval_completed()
    summary = summary_of(grade(log, []))
    assert [t["taskId"] for t in summary["tasks"]] == ["task-a", "task-x"]
    task_x = task_of(summary, "task-x")
    assert task_x["score"] == 0
    assert task_x["passed"] is False
    assert task_x["trials"]["passedCount"] == 0
    assert summary["taskCount"] == 2
    assert summary["aggregateScore"] == 0.5


def test_d4_no_eval_scored_at_all() -> None:
    """D-4: a no-suite run with no eval.scored: taskCount 0, aggregateScore 0, no trialStats,
    not passed."""
    log = LogBuilder()
    log.eval_started(trialCount=3)
    log.eval_completed()
    summary = summary_of(grade(log, [], default_pass_score=0))
    assert summary["taskCount"] == 0
    assert summary["passedCount"] == 0
    assert summary["aggregateScore"] == 0
    assert summary["passed"] is False
    assert summary["tasks"] == []
    assert "trialStats" not in summary


def test_d4_no_suite_keeps_host_scores_and_costs() -> None:
    """D-4: the host's score and passed are used as recorded; D-11 still applies; costs too."""
    log = LogBuilder()
    log.eval_started(task_count=2)
    log.trial("task-a", score=0.25, passed=False, usage=[{"costEstimateUsd": 0.5}])
    log.trial("task-b", score="high", passed=True)
    log.eval_completed()
    result = grade(log, [])
    summary = summary_of(result)
    assert task_of(summary, "task-a")["score"] == 0.25
    assert task_of(summary, "task-a")["passed"] is False
    assert task_of(summary, "task-b")["score"] == 0
    assert task_of(summary, "task-b")["passed"] is False
    assert summary["totalCostUsd"] == 0.5
    assert "score-invalid" in codes_of(result)


def test_e2_scored_after_completed_is_not_a_task_of_a_no_suite_run() -> None:
    """§2.1/E-2: an eval.scored after eval.completed belongs to no trial, and its taskId is not a
    task of a no-suite run."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a")
    log.eval_completed()
    log.scored("late")
    summary = summary_of(grade(log, []))
    assert [t["taskId"] for t in summary["tasks"]] == ["task-a"]


@pytest.mark.slow
def test_d4_without_its_suite_no_trajectory_is_checked() -> None:
    """D-4 contrast: the same log with its suite supplied is checked against the trajectory."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", calls=["billing:refund-all"], score=1, passed=True)
    log.eval_completed()
    with_suite = summary_of(
        grade(
            log, [suite(golden("task-a", traj("in-order", [], forbidden=["billing:refund-all"])))]
        )
    )
    without = summary_of(grade(log, []))
    assert task_of(with_suite, "task-a")["passed"] is False
    assert task_of(without, "task-a")["passed"] is True
