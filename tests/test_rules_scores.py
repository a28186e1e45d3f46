"""CONTRACT §3.4–§3.5: trial score and pass, gating score (D-10), bad host data (D-11), task
entries: missing trials and tasks (D-12, D-13), pass@k / pass^k, trajectory block, efficiency,
cost (D-14) and latency."""

from __future__ import annotations

from fractions import Fraction
from math import comb
from typing import Any

import pytest

from tests.helpers import slow_except, slow_param
from tests.logbuilder import (
    ABSENT,
    LogBuilder,
    codes_of,
    golden,
    grade,
    rubric,
    suite,
    summary_of,
    task_of,
    traj,
    trajectory_task,
)

# --------------------------------------------------------------------------------------------------
# §3.4 trial score and pass; D-10 gating
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("calls", "host_score", "host_passed", "score", "passed"),
    [
        pytest.param(["t:a"], 0.2, False, 1, True, id="matched-host-low"),
        pytest.param(["t:b"], 1, True, 0, False, id="unmatched-host-high"),
        pytest.param(["t:a"], ABSENT, ABSENT, 1, True, id="matched-no-host-grade"),
        pytest.param(["t:a"], "0.5", "yes", 1, True, id="matched-bad-host-grade"),
    ],
)
def test_s3_4_trajectory_kind_scores_1_when_matched_else_0(
    calls: list[str], host_score: Any, host_passed: Any, score: int, passed: bool
) -> None:
    """§3.4: kind trajectory: score 1 if matched else 0, passed = matched; the host's score and
    passed are not read (D-11 covers golden/rubric only)."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", calls=calls, score=host_score, passed=host_passed)
    log.eval_completed()
    s = suite(trajectory_task("task-a", traj("exact", ["t:a"])))
    summary = summary_of(grade(log, [s]))
    task = task_of(summary, "task-a")
    assert task["score"] == score
    assert task["passed"] is passed
    assert summary["aggregateScore"] == score
    assert summary["passed"] is passed


@pytest.mark.parametrize("make", [golden, rubric], ids=["golden", "rubric"])
def test_s3_4_golden_unmatched_trajectory_fails_but_keeps_the_output_score(make: Any) -> None:
    """§3.4/D-10: golden/rubric with an unmatched trajectory: passed false, score stays the
    output score; the gating score is 0, so the suite does not pass."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", calls=["t:b", "t:a"], score=0.9, passed=True)
    log.eval_completed()
    s = suite(make("task-a", traj("in-order", ["t:a", "t:b"])), thresholds={"passScore": 0.5})
    summary = summary_of(grade(log, [s]))
    task = task_of(summary, "task-a")
    assert task["score"] == 0.9
    assert task["passed"] is False
    assert task["trajectory"]["matched"] is False
    assert summary["aggregateScore"] == 0.9
    assert summary["passedCount"] == 0
    assert summary["passed"] is False


def test_s3_4_golden_matched_trajectory_still_needs_the_host_pass() -> None:
    """§3.4: golden passed = eval.scored.passed AND trajectory matched."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", calls=["t:a"], score=0.9, passed=False)
    log.eval_completed()
    s = suite(golden("task-a", traj("exact", ["t:a"])), thresholds={"passScore": 0.5})
    summary = summary_of(grade(log, [s]))
    task = task_of(summary, "task-a")
    assert task["score"] == 0.9
    assert task["passed"] is False
    assert task["trajectory"]["matched"] is True
    # the suite reads the gating aggregate (0.9 >= 0.5), not passedCount
    assert summary["passed"] is True


def test_d10_pass_rule_mean_reads_gating_scores() -> None:
    """D-10: passRule mean compares the mean gating score (0 for an unmatched trial) with
    passScore; meanScore stays the mean output score."""
    log = LogBuilder()
    log.eval_started(trialCount=2)
    log.trial("task-a", calls=["t:a"], trial_index=0, score=1, passed=True)
    log.trial("task-a", calls=["t:x"], trial_index=1, score=1, passed=True)
    log.eval_completed()
    s = suite(
        golden("task-a", traj("exact", ["t:a"])),
        trials={"count": 2, "k": 1, "passRule": "mean"},
        thresholds={"passScore": 0.75},
    )
    summary = summary_of(grade(log, [s]))
    task = task_of(summary, "task-a")
    assert task["trials"]["meanScore"] == 1
    assert task["trials"]["passedCount"] == 1
    assert task["score"] == 1
    assert task["passed"] is False  # gating mean 0.5 < 0.75
    assert summary["aggregateScore"] == 1
    assert summary["passed"] is False  # gating aggregate 0.5 < 0.75


def test_d10_pass_rule_mean_passes_when_every_trial_matched() -> None:
    """D-10: the same log with matched trajectories passes on its output scores."""
    log = LogBuilder()
    log.eval_started(trialCount=2)
    log.trial("task-a", calls=["t:a"], trial_index=0, score=1, passed=True)
    log.trial("task-a", calls=["t:a"], trial_index=1, score=0.5, passed=False)
    log.eval_completed()
    s = suite(
        golden("task-a", traj("exact", ["t:a"])),
        trials={"count": 2, "k": 1, "passRule": "mean"},
        thresholds={"passScore": 0.75},
    )
    summary = summary_of(grade(log, [s]))
    task = task_of(summary, "task-a")
    assert task["passed"] is True  # mean gating 0.75 >= 0.75
    assert task["trials"]["passedCount"] == 1
    assert summary["passed"] is True


# --------------------------------------------------------------------------------------------------
# D-11 bad host data
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_score",
    [
        pytest.param("0.5", id="string"),
        pytest.param(1.5, id="above-1"),
        slow_param(-0.1, id="negative"),
        slow_param(True, id="true"),
        slow_param(None, id="null"),
        pytest.param(ABSENT, id="missing"),
        slow_param([0.5], id="array"),
    ],
)
def test_d11_invalid_score_fails_the_trial_closed(bad_score: Any) -> None:
    """D-11: a score missing, not a JSON number or outside 0..1: score 0, passed false, problem;
    its gating score is 0 too."""
    log = LogBuilder()
    log.eval_started(task_count=2)
    log.trial("task-a", score=bad_score, passed=True)
    log.trial("task-b", score=1, passed=True)
    log.eval_completed()
    s = suite(golden("task-a"), golden("task-b"), thresholds={"passScore": 0.75})
    result = grade(log, [s])
    summary = summary_of(result)
    task = task_of(summary, "task-a")
    assert task["score"] == 0
    assert task["passed"] is False
    assert summary["aggregateScore"] == 0.5
    assert summary["passed"] is False
    assert "score-invalid" in codes_of(result)


@pytest.mark.parametrize("good_score", [0, 1, 0.0, 1.0])
def test_d11_scores_at_the_bounds_are_valid(good_score: Any) -> None:
    """D-11: 0 and 1 are inside 0..1."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", score=good_score, passed=True)
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"), thresholds={"passScore": 0})])
    task = task_of(summary_of(result), "task-a")
    assert task["score"] == good_score
    assert task["passed"] is True
    assert "score-invalid" not in codes_of(result)


@pytest.mark.slow
@pytest.mark.parametrize(
    "bad_passed",
    [
        pytest.param(ABSENT, id="missing"),
        pytest.param("true", id="string"),
        pytest.param(1, id="number"),
        pytest.param(None, id="null"),
    ],
)
def test_d11_invalid_passed_fails_the_pass_and_keeps_the_score(bad_passed: Any) -> None:
    """D-11: passed missing or not a boolean: passed false, the score and gating score kept."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", score=0.7, passed=bad_passed)
    log.eval_completed()
    s = suite(golden("task-a"), thresholds={"passScore": 0.7})
    result = grade(log, [s])
    summary = summary_of(result)
    task = task_of(summary, "task-a")
    assert task["score"] == 0.7
    assert task["passed"] is False
    assert summary["passedCount"] == 0
    assert summary["passed"] is True  # the gating aggregate 0.7 >= passScore 0.7
    assert "passed-invalid" in codes_of(result)


# --------------------------------------------------------------------------------------------------
# D-12 missing trials, D-13 missing tasks
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "pass_score", "passed"),
    [("all", None, False), ("any", None, True), ("mean", 0.5, True), ("mean", 0.6, False)],
)
def test_d12_a_missing_trial_counts_as_failed_with_score_0(
    rule: str, pass_score: float | None, passed: bool
) -> None:
    """D-12: a trial the log lacks counts as failed with score 0 and gating score 0."""
    log = LogBuilder()
    log.eval_started(trialCount=3)
    log.trial("task-a", trial_index=0, score=1, passed=True)
    log.trial("task-a", trial_index=1, score=0.5, passed=True)
    log.eval_completed()
    thresholds = {} if pass_score is None else {"thresholds": {"passScore": pass_score}}
    s = suite(golden("task-a"), trials={"count": 3, "passRule": rule}, **thresholds)
    result = grade(log, [s])
    task = task_of(summary_of(result), "task-a")
    assert task["trials"] == {
        "n": 3,
        "passedCount": 2,
        "meanScore": 0.5,
        "passAtK": pytest.approx(1.0),  # k = n = 3: 1 - C(1,3)/C(3,3)
        "passHatK": 0,  # c < k
    }
    assert task["score"] == 0.5
    assert task["passed"] is passed
    assert "trial-missing" in codes_of(result)


def test_d13_missing_task_entry_shape() -> None:
    """D-13: a suite task with no trial: score 0, passed false, trials all zero, costUsd 0 (the
    run has costs), fixtureMissCount 0 (it is fixtured), no latency, efficiency or trajectory."""
    log = LogBuilder()
    log.eval_started(task_count=2, trialCount=2)
    for index in (0, 1):
        log.trial(
            "task-b",
            calls=["t:a"],
            usage=[{"costEstimateUsd": 0.25}],
            trial_index=index,
            score=1,
            passed=True,
            latencyMs=100,
        )
    log.eval_completed()
    s = suite(
        golden(
            "task-a",
            traj("exact", ["t:a"]),
            fixtures={"toolResponses": [], "onMiss": "fail"},
        ),
        golden("task-b"),
        trials={"count": 2, "k": 1},
        thresholds={"passScore": 0.5},
    )
    result = grade(log, [s])
    summary = summary_of(result)
    task = task_of(summary, "task-a")
    assert task == {
        "taskId": "task-a",
        "score": 0,
        "passed": False,
        "costUsd": 0,
        "trials": {"n": 2, "passedCount": 0, "meanScore": 0, "passAtK": 0, "passHatK": 0},
        "fixtureMissCount": 0,
    }
    assert list(task) == ["taskId", "score", "passed", "costUsd", "trials", "fixtureMissCount"]
    assert summary["taskCount"] == 2
    assert summary["passedCount"] == 1
    assert summary["aggregateScore"] == 0.5
    assert summary["passed"] is True  # 0.5 >= 0.5: a missing task counts like a failed one
    assert summary["trialStats"]["passAtK"] == 0.5
    assert "task-missing" in codes_of(result)


def test_d13_missing_task_without_run_costs_has_no_cost() -> None:
    """D-13/D-14: a missing task gets costUsd only when the run has a cost source."""
    log = LogBuilder()
    log.eval_started(task_count=2)
    log.trial("task-b")
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"), golden("task-b"))])
    summary = summary_of(result)
    assert task_of(summary, "task-a") == {"taskId": "task-a", "score": 0, "passed": False}
    assert "totalCostUsd" not in summary
    assert summary["passed"] is False


def test_d13_unknown_task_is_left_out() -> None:
    """D-13: an eval.scored for a taskId not in the suite is left out (`task-unknown`)."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", score=1, passed=True)
    log.trial("not-in-suite", score=0, passed=False, usage=[{"costEstimateUsd": 1}])
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"))])
    summary = summary_of(result)
    assert [t["taskId"] for t in summary["tasks"]] == ["task-a"]
    assert summary["aggregateScore"] == 1
    assert summary["passed"] is True
    assert task_of(summary, "task-a")["costUsd"] == 0
    assert summary["totalCostUsd"] == 0
    assert "task-unknown" in codes_of(result)


# --------------------------------------------------------------------------------------------------
# pass@k, pass^k
# --------------------------------------------------------------------------------------------------


def pass_at_k(n: int, c: int, k: int) -> Fraction:
    return Fraction(0) if c == 0 else 1 - Fraction(comb(n - c, k), comb(n, k))


def pass_hat_k(n: int, c: int, k: int) -> Fraction:
    return Fraction(0) if c < k else Fraction(comb(c, k), comb(n, k))


def close(value: float, exact: Fraction) -> bool:
    return abs(value - float(exact)) <= 1e-9 * max(1.0, abs(float(exact)))


@pytest.mark.parametrize(
    ("n", "c", "k"),
    # the fast set: a general case, c = 0, c = n, k = 1, k = n
    slow_except(
        [
            (5, 4, 3),
            (5, 2, 3),
            (4, 2, 2),
            (3, 0, 2),
            (3, 3, 2),
            (10, 3, 5),
            (10, 7, 5),
            (6, 3, 1),
            (1, 1, 1),
            (1, 0, 1),
            (8, 1, 8),
            (8, 8, 8),
            (20, 10, 10),
        ],
        fast=[(5, 4, 3), (3, 0, 2), (3, 3, 2), (6, 3, 1), (8, 1, 8)],
    ),
)
def test_s3_5_pass_at_k_and_pass_hat_k_formulas(n: int, c: int, k: int) -> None:
    """§3.5: passAtK = 1 - C(n-c,k)/C(n,k) (0 when c = 0), passHatK = C(c,k)/C(n,k) (0 when
    c < k), within 1e-9 relative; meanScore the mean trial score; passRule all."""
    log = LogBuilder()
    log.eval_started(trialCount=n)
    for index in range(n):
        ok = index < c
        log.trial("task-a", trial_index=index, score=1 if ok else 0, passed=ok)
    log.eval_completed()
    s = suite(golden("task-a"), trials={"count": n, "k": k})
    summary = summary_of(grade(log, [s]))
    task = task_of(summary, "task-a")
    trials = task["trials"]
    assert trials["n"] == n
    assert trials["passedCount"] == c
    assert close(trials["meanScore"], Fraction(c, n))
    assert close(trials["passAtK"], pass_at_k(n, c, k))
    assert close(trials["passHatK"], pass_hat_k(n, c, k))
    assert close(task["score"], Fraction(c, n))
    assert task["passed"] is (c == n)
    assert summary["trialStats"]["k"] == k


@pytest.mark.slow
def test_s3_5_rfc_worked_example_n5_c4_k3() -> None:
    """§3.5/RFC 0244 §B example: n 5, c 4, k 3 -> meanScore 0.8, passAtK 1, passHatK 0.4,
    passed false under `all`."""
    log = LogBuilder()
    log.eval_started(trialCount=5)
    for index, ok in enumerate([True, True, False, True, True]):
        log.trial(
            "task-a", calls=["t:a"] if ok else ["t:b"], trial_index=index, score=1, passed=True
        )
    log.eval_completed()
    s = suite(
        trajectory_task("task-a", traj("in-order", ["t:a"])),
        trials={"count": 5, "k": 3, "passRule": "all"},
    )
    task = task_of(summary_of(grade(log, [s])), "task-a")
    assert task["trials"] == {
        "n": 5,
        "passedCount": 4,
        "meanScore": pytest.approx(0.8, rel=1e-9),
        "passAtK": pytest.approx(1.0, rel=1e-9),
        "passHatK": pytest.approx(0.4, rel=1e-9),
    }
    assert task["passed"] is False


def test_s3_5_k_defaults_to_count() -> None:
    """§3.5: k absent => n."""
    log = LogBuilder()
    log.eval_started(trialCount=3)
    for index, ok in enumerate([True, True, False]):
        log.trial("task-a", trial_index=index, score=1 if ok else 0, passed=ok)
    log.eval_completed()
    summary = summary_of(grade(log, [suite(golden("task-a"), trials={"count": 3})]))
    trials = task_of(summary, "task-a")["trials"]
    assert close(trials["passAtK"], pass_at_k(3, 2, 3))
    assert trials["passHatK"] == 0
    assert summary["trialStats"]["k"] == 3


def test_s3_5_no_trials_block_means_no_trials_entry() -> None:
    """§3.5: `trials` on a task is present only when the suite has a trials block."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a")
    log.eval_completed()
    summary = summary_of(grade(log, [suite(golden("task-a"))]))
    assert "trials" not in task_of(summary, "task-a")
    assert "trialStats" not in summary


# --------------------------------------------------------------------------------------------------
# trajectory block, efficiency
# --------------------------------------------------------------------------------------------------


def test_s3_5_trajectory_block_describes_the_highest_trial_index_present() -> None:
    """§3.5: the block is for the last observed trial: highest trialIndex present, not the last
    in log order and not a missing one."""
    log = LogBuilder()
    log.eval_started(trialCount=3)
    log.trial("task-a", calls=["t:a", "t:b"], trial_index=1)  # matched, 2 observed
    log.trial("task-a", calls=["t:x", "t:z", "t:a"], trial_index=0)  # unmatched, forbidden
    log.eval_completed()
    s = suite(
        golden("task-a", traj("in-order", ["t:a"], forbidden=["t:x"])),
        trials={"count": 3, "passRule": "any"},
    )
    task = task_of(summary_of(grade(log, [s])), "task-a")
    assert task["trajectory"] == {
        "mode": "in-order",
        "matched": True,
        "expectedCount": 1,
        "observedCount": 2,
        "matchedCount": 1,
        "forbiddenCount": 0,
    }
    assert task["trials"]["passedCount"] == 1


def test_s3_5_efficiency_is_the_mean_over_observed_trials() -> None:
    """§3.5/§C: efficiency = per-trial counts inside the brackets, averaged over the observed
    trials (missing trials excluded); cache hits count; judge calls do not."""
    log = LogBuilder()
    log.eval_started(trialCount=3)
    log.trial(
        "task-a",
        calls=["t:a", "t:b"],
        usage=[{"inputTokens": 100, "outputTokens": 10}, {"inputTokens": 50, "outputTokens": 5}],
        judge=[{"inputTokens": 5000, "outputTokens": 500}],
        trial_index=0,
    )
    log.trial(
        "task-a",
        calls=["t:a"],
        usage=[
            {"inputTokens": 30, "outputTokens": 3},
            {"inputTokens": 20, "outputTokens": 2, "cacheHit": True, "costEstimateUsd": 1},
            {"inputTokens": 10, "outputTokens": 1},
        ],
        trial_index=1,
    )
    log.eval_completed()
    s = suite(golden("task-a"), trials={"count": 3})
    task = task_of(summary_of(grade(log, [s])), "task-a")
    assert task["efficiency"] == {
        "toolCallCount": 1.5,
        "modelCallCount": 2.5,
        "inputTokens": 105,  # (150 + 60) / 2
        "outputTokens": 10.5,  # (15 + 6) / 2
    }


def test_s3_5_efficiency_never_decides_passed() -> None:
    """§3.5: efficiency is informational only: a task with many calls and tokens still passes."""
    log = LogBuilder()
    log.eval_started()
    many = [("t:a", {"i": i}) for i in range(50)]
    log.trial("task-a", calls=many, usage=[{"inputTokens": 10**9, "outputTokens": 10**9}] * 20)
    log.eval_completed()
    summary = summary_of(grade(log, [suite(golden("task-a"))]))
    task = task_of(summary, "task-a")
    assert task["efficiency"]["toolCallCount"] == 50
    assert task["efficiency"]["modelCallCount"] == 20
    assert task["passed"] is True
    assert summary["passed"] is True


# --------------------------------------------------------------------------------------------------
# D-14 cost
# --------------------------------------------------------------------------------------------------


def _cost_run(usages: list[dict[str, Any]], **scored: Any):
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", usage=usages, **scored)
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"))])
    summary = summary_of(result)
    return summary, task_of(summary, "task-a"), result


def test_d14_cache_hit_costs_zero_but_its_tokens_count() -> None:
    """D-14: a usage with cacheHit true costs 0; its tokens still count in efficiency."""
    summary, task, _ = _cost_run(
        [
            {"costEstimateUsd": 0.5, "cacheHit": True, "inputTokens": 100},
            {"costEstimateUsd": 0.25, "cacheHit": False},
        ]
    )
    assert task["costUsd"] == 0.25
    assert summary["totalCostUsd"] == 0.25
    assert task["efficiency"]["modelCallCount"] == 2
    assert task["efficiency"]["inputTokens"] == 110


@pytest.mark.parametrize(
    "flag",
    [
        pytest.param("yes", id="string"),
        slow_param("maybe", id="non-boolean-string"),
        slow_param({"hit": True}, id="object"),
        slow_param(1, id="number"),
        pytest.param(None, id="null"),
        pytest.param(False, id="false"),
    ],
)
def test_d14_only_cache_hit_true_costs_zero(flag: Any) -> None:
    """D-14: only `cacheHit: true` makes a usage cost 0; any other value leaves its cost."""
    summary, task, _ = _cost_run(
        [{"costEstimateUsd": 0.5, "cacheHit": flag}, {"costEstimateUsd": 0.25}]
    )
    assert task["costUsd"] == 0.75
    assert summary["totalCostUsd"] == 0.75


@pytest.mark.parametrize(
    ("currency", "counted"),
    [
        pytest.param("EUR", False, id="EUR"),
        slow_param("eur", False, id="eur"),
        slow_param("GBP", False, id="GBP"),
        pytest.param("usd", True, id="usd"),
        slow_param("USD", True, id="USD"),
        slow_param("Usd", True, id="Usd"),
        slow_param(None, True, id="null"),
        pytest.param(ABSENT, True, id="absent"),
    ],
)
def test_d14_non_usd_costs_are_left_out(currency: Any, counted: bool) -> None:
    """D-14: a currency other than USD (case-insensitive; absent or null = USD) is left out of
    every USD sum (`non-usd-cost`)."""
    summary, task, result = _cost_run(
        [{"costEstimateUsd": 0.5, "currency": currency}, {"costEstimateUsd": 0.25}]
    )
    expected = 0.75 if counted else 0.25
    assert task["costUsd"] == expected
    assert summary["totalCostUsd"] == expected
    assert ("non-usd-cost" in codes_of(result)) is not counted


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(None, id="null"),
        pytest.param("0.5", id="string"),
        slow_param("n/a", id="non-numeric-string"),
        slow_param(-1, id="negative"),
        slow_param(True, id="boolean"),
        pytest.param({"usd": 1}, id="object"),
    ],
)
def test_d14_invalid_cost_carries_no_cost(bad: Any) -> None:
    """D-14: a costEstimateUsd that is null or not a non-negative number carries no cost
    (problem)."""
    summary, task, result = _cost_run([{"costEstimateUsd": bad}, {"costEstimateUsd": 0.25}])
    assert task["costUsd"] == 0.25
    assert summary["totalCostUsd"] == 0.25
    assert "cost-invalid" in codes_of(result)


def test_d14_costs_sum_over_trials_and_judge_calls() -> None:
    """§3.5: costUsd sums the usage cost of every trial segment of the task, judge calls too."""
    log = LogBuilder()
    log.eval_started(trialCount=2, task_count=2)
    log.trial(
        "task-a",
        usage=[{"costEstimateUsd": 0.125}],
        judge=[{"costEstimateUsd": 0.25}],
        trial_index=0,
    )
    log.trial("task-a", usage=[{"costEstimateUsd": 0.5}], trial_index=1)
    log.trial("task-b", trial_index=0)
    log.trial("task-b", trial_index=1)
    log.eval_completed()
    s = suite(golden("task-a"), golden("task-b"), trials={"count": 2})
    summary = summary_of(grade(log, [s]))
    assert task_of(summary, "task-a")["costUsd"] == 0.875
    assert task_of(summary, "task-b")["costUsd"] == 0  # the run has a cost source
    assert summary["totalCostUsd"] == 0.875


def test_d14_falls_back_to_host_cost_when_no_usage_carries_one() -> None:
    """D-14: with no usage costEstimateUsd in the log, sum eval.scored.costUsd of the counted
    trials (a left-out trial's cost is not counted)."""
    log = LogBuilder()
    log.eval_started(trialCount=2, task_count=2)
    log.trial("task-a", usage=[{}], trial_index=0, costUsd=0.125)
    log.trial("task-a", usage=[{}], trial_index=1, costUsd=0.25)
    log.trial("task-a", usage=[{}], trial_index=2, costUsd=4)  # trial-extra
    log.trial("task-b", trial_index=0)
    log.trial("task-b", trial_index=1)
    log.eval_completed()
    s = suite(golden("task-a"), golden("task-b"), trials={"count": 2})
    summary = summary_of(grade(log, [s]))
    assert task_of(summary, "task-a")["costUsd"] == 0.375
    assert task_of(summary, "task-b")["costUsd"] == 0
    assert summary["totalCostUsd"] == 0.375


def test_d14_invalid_usage_costs_do_not_block_the_fallback() -> None:
    """D-14: only a non-negative costEstimateUsd is a usage cost source."""
    summary, task, _ = _cost_run(
        [{"costEstimateUsd": -1}, {"costEstimateUsd": None}], costUsd=0.125
    )
    assert task["costUsd"] == 0.125
    assert summary["totalCostUsd"] == 0.125


@pytest.mark.slow
@pytest.mark.parametrize("where", ["eur", "cache-hit", "zero", "before-eval", "after-eval"])
def test_d14_any_usage_cost_anywhere_in_the_log_disables_the_fallback(where: str) -> None:
    """D-14: when some usage anywhere in the run's log carries a non-negative costEstimateUsd
    (whatever its currency or cacheHit) the host's costUsd is not used."""
    log = LogBuilder()
    if where == "before-eval":
        log.usage(costEstimateUsd=0.5)
    log.eval_started()
    usage = {
        "eur": [{"costEstimateUsd": 0.5, "currency": "EUR"}],
        "cache-hit": [{"costEstimateUsd": 0.5, "cacheHit": True}],
        "zero": [{"costEstimateUsd": 0}],
    }.get(where, [{}])
    log.trial("task-a", usage=usage, costUsd=0.125)
    log.eval_completed()
    if where == "after-eval":
        log.usage(costEstimateUsd=0.5)
    summary = summary_of(grade(log, [suite(golden("task-a"))]))
    assert task_of(summary, "task-a")["costUsd"] == 0
    assert summary["totalCostUsd"] == 0


def test_d14_no_cost_source_omits_cost() -> None:
    """D-14: neither usage costs nor host costs: no costUsd, no totalCostUsd."""
    summary, task, _ = _cost_run([{"inputTokens": 5}])
    assert "costUsd" not in task
    assert "totalCostUsd" not in summary


# --------------------------------------------------------------------------------------------------
# latency
# --------------------------------------------------------------------------------------------------


def test_s3_5_latency_prefers_the_host_latency_over_the_bracket_span() -> None:
    """§3.5: eval.scored.latencyMs (a number >= 0) is used; else the bracket span."""
    log = LogBuilder()
    log.eval_started(task_count=2)
    log.trial("task-a", duration_ms=250, latencyMs=1234)
    log.trial("task-b", duration_ms=250)
    log.eval_completed()
    summary = summary_of(grade(log, [suite(golden("task-a"), golden("task-b"))]))
    assert task_of(summary, "task-a")["latencyMs"] == 1234
    assert task_of(summary, "task-b")["latencyMs"] == 250


@pytest.mark.slow
@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(-5, id="negative"),
        pytest.param("100", id="string"),
        pytest.param(None, id="null"),
        pytest.param(True, id="boolean"),
    ],
)
def test_s3_5_invalid_host_latency_falls_back_to_the_bracket_span(bad: Any) -> None:
    """§3.5: a latencyMs that is not a number >= 0 is not used; the bracket span is."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", duration_ms=250, latencyMs=bad)
    log.eval_completed()
    summary = summary_of(grade(log, [suite(golden("task-a"))]))
    assert task_of(summary, "task-a")["latencyMs"] == 250


@pytest.mark.slow
def test_s3_5_latency_mean_is_rounded_half_up_only_at_the_end() -> None:
    """§3.5: non-integral latencies are averaged first: (10.25 + 10.25 + 11) / 3 = 10.5 -> 11
    (rounding each trial first would give 10)."""
    log = LogBuilder()
    log.eval_started(trialCount=3)
    for index, latency in enumerate([10.25, 10.25, 11]):
        log.trial("task-a", trial_index=index, latencyMs=latency)
    log.eval_completed()
    summary = summary_of(grade(log, [suite(golden("task-a"), trials={"count": 3})]))
    assert task_of(summary, "task-a")["latencyMs"] == 11


@pytest.mark.slow
@pytest.mark.parametrize(
    ("latencies", "expected"),
    [([2.5], 3), ([0.5], 1), ([100, 101], 101), ([1.5, 2.5], 2), ([3.4999], 3)],
)
def test_s3_5_latency_rounds_half_up(latencies: list[float], expected: int) -> None:
    """§3.5: half up, not half to even."""
    log = LogBuilder()
    log.eval_started(trialCount=len(latencies))
    for index, latency in enumerate(latencies):
        log.trial("task-a", trial_index=index, latencyMs=latency)
    log.eval_completed()
    s = suite(golden("task-a"), trials={"count": len(latencies)})
    assert task_of(summary_of(grade(log, [s])), "task-a")["latencyMs"] == expected


def test_s3_5_bracket_span_latencies_average_then_round_half_up() -> None:
    """§3.5: bracket spans of 100 ms and 101 ms average to 100.5 -> 101."""
    log = LogBuilder()
    log.eval_started(trialCount=2)
    log.trial("task-a", trial_index=0, duration_ms=100)
    log.trial("task-a", trial_index=1, duration_ms=101)
    log.eval_completed()
    s = suite(golden("task-a"), trials={"count": 2})
    assert task_of(summary_of(grade(log, [s])), "task-a")["latencyMs"] == 101


def test_s3_5_latency_is_the_mean_over_trials_that_have_one() -> None:
    """§3.5: a trial without a bracket and without a host latency has none; missing trials have
    none; the mean is over the trials that have one."""
    log = LogBuilder()
    log.eval_started(trialCount=3, task_count=2)
    log.trial("task-a", bracket=False, trial_index=0)
    log.trial("task-a", duration_ms=200, trial_index=1)
    log.trial("task-b", bracket=False, trial_index=0)
    log.eval_completed()
    s = suite(golden("task-a"), golden("task-b"), trials={"count": 3})
    summary = summary_of(grade(log, [s]))
    assert task_of(summary, "task-a")["latencyMs"] == 200
    assert "latencyMs" not in task_of(summary, "task-b")


def _span_rows(started_ts: str, completed_ts: str) -> list[dict[str, Any]]:
    log = LogBuilder()
    log.eval_started()
    log.started(invocation_id="inv-1")
    log.completed("inv-1")
    log.scored("task-a")
    log.eval_completed()
    log.rows[1]["timestamp"] = started_ts
    log.rows[2]["timestamp"] = completed_ts
    return log.rows


@pytest.mark.slow
@pytest.mark.parametrize(
    ("started_ts", "completed_ts", "latency"),
    [
        pytest.param(
            "2026-10-14T12:00:00.000Z", "2026-10-14T13:00:00.250+01:00", 250, id="offsets"
        ),
        pytest.param(
            "2026-10-14T12:00:00.000000Z",
            "2026-10-14T12:00:00.100500Z",
            101,
            id="sub-millisecond-half-up",
        ),
        pytest.param(
            "2026-10-14T12:00:00.000000Z",
            "2026-10-14T12:00:00.100499Z",
            100,
            id="sub-millisecond-below-half",
        ),
        pytest.param(
            "2026-10-14T23:59:59.900Z", "2026-10-15T00:00:00.100Z", 200, id="across-midnight"
        ),
    ],
)
def test_s3_5_bracket_span_is_measured_in_time(
    started_ts: str, completed_ts: str, latency: int
) -> None:
    """§3.5: the bracket's timestamp span in milliseconds (ISO-8601 instants, offsets honoured,
    not truncated to whole milliseconds before the final half-up rounding)."""
    summary = summary_of(grade(_span_rows(started_ts, completed_ts), [suite(golden("task-a"))]))
    assert task_of(summary, "task-a")["latencyMs"] == latency


def test_s3_5_host_latency_zero_is_valid() -> None:
    """§3.5: latencyMs 0 is a number >= 0."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", duration_ms=300, latencyMs=0)
    log.eval_completed()
    assert task_of(summary_of(grade(log, [suite(golden("task-a"))])), "task-a")["latencyMs"] == 0
