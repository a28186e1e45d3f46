"""CONTRACT §3.3: fixtured trials, offline replay of fixture selection, misses and onMiss (D-9)."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from evalbatch.grade.trial_grading import (
    absent_on_miss_decides,
    fails_on_miss,
    on_miss_applied,
    other_on_miss_reading,
)
from evalbatch.options import GradeOptions, OnMissDefault
from tests.logbuilder import (
    HELPER,
    Call,
    LogBuilder,
    codes_of,
    golden,
    grade,
    suite,
    summary_of,
    task_of,
    traj,
    trajectory_task,
)


def response(tool: str, args: Any = None, args_match: str | None = None, **extra: Any):
    """One fixtures.toolResponses entry (args None: no args member)."""
    entry: dict[str, Any] = {"tool": tool, "response": {"ok": True}}
    if args is not None:
        entry["args"] = args
    if args_match is not None:
        entry["argsMatch"] = args_match
    return {**entry, **extra}


def fixtures(entries: list[dict[str, Any]] | None, on_miss: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {}
    if entries is not None:
        block["toolResponses"] = entries
    if on_miss is not None:
        block["onMiss"] = on_miss
    return block


def run_one(
    fixture_block: dict[str, Any],
    calls: list[Any],
    *,
    modes: tuple[str, ...] = ("golden",),
    score: Any = 1,
    passed: Any = True,
    trajectory: dict[str, Any] | None = None,
    **options: Any,
):
    log = LogBuilder()
    log.eval_started(modes=modes)
    log.trial("task-a", calls=calls, score=score, passed=passed)
    log.eval_completed()
    s = suite(golden("task-a", trajectory, fixtures=fixture_block), thresholds={"passScore": 0.5})
    result = grade(log, [s], **options)
    summary = summary_of(result)
    return summary, task_of(summary, "task-a"), result


@pytest.mark.slow
def test_s3_3_empty_tool_responses_list_makes_the_trial_fixtured() -> None:
    """§3.3: a task with `fixtures.toolResponses` (an empty list counts) is fixtured: every call
    is a miss; onMiss fail fails the trial closed."""
    summary, task, _ = run_one(fixtures([], "fail"), [("t:x", {})])
    assert task["fixtureMissCount"] == 1
    assert task["score"] == 0
    assert task["passed"] is False
    assert summary["passed"] is False


@pytest.mark.slow
@pytest.mark.parametrize(
    "block",
    [
        pytest.param({"onMiss": "fail"}, id="onMiss-only"),
        pytest.param({"memorySeed": [{"k": "v"}], "onMiss": "fail"}, id="memorySeed"),
    ],
)
def test_s3_3_fixtures_without_tool_responses_are_not_fixtured(block: dict[str, Any]) -> None:
    """§3.3: without `toolResponses` the trial is not fixtured: no miss, no fixtureMissCount."""
    summary, task, _ = run_one(block, [("t:x", {})])
    assert "fixtureMissCount" not in task
    assert task["score"] == 1
    assert task["passed"] is True
    assert summary["passed"] is True


@pytest.mark.slow
def test_s3_3_live_shadow_ignores_fixtures_and_reports_zero_misses() -> None:
    """§3.3: a run whose eval.started.modes contains live-shadow is not fixtured;
    fixtureMissCount is present and 0."""
    summary, task, _ = run_one(
        fixtures([], "fail"), [("t:x", {}), ("t:y", {})], modes=("golden", "live-shadow")
    )
    assert task["fixtureMissCount"] == 0
    assert task["score"] == 1
    assert task["passed"] is True
    assert summary["passed"] is True


@pytest.mark.slow
@pytest.mark.parametrize(
    ("count", "misses"),
    [(1, 0), (2, 0), (3, 1), (5, 3)],
)
def test_s3_3_repeated_calls_walk_a_scripted_sequence(count: int, misses: int) -> None:
    """§3.3: each entry is consumed once: two entries serve two calls, the third call misses."""
    entries = [
        response("crm:lookup", {"id": "A"}, "subset"),
        response("crm:lookup", {"id": "A"}, "subset"),
    ]
    calls = [("crm:lookup", {"id": "A", "verbose": True})] * count
    _, task, _ = run_one(fixtures(entries, "live"), calls)
    assert task["fixtureMissCount"] == misses


@pytest.mark.slow
@pytest.mark.parametrize(
    ("ids", "misses"),
    [
        (["A", "A"], 1),  # A takes the argless entry; the second A matches nothing left
        (["A", "B"], 0),  # A takes the argless entry, B the B entry
        (["B", "A"], 0),  # B takes the first matching entry (B), A the argless one
        (["B", "B"], 0),  # B, then the argless entry
        (["B", "B", "A"], 1),
        (["C"], 0),
        (["C", "C"], 1),
    ],
)
def test_s3_3_selection_takes_the_first_unconsumed_matching_entry(
    ids: list[str], misses: int
) -> None:
    """§3.3: the first unconsumed entry with the same tool whose args match under its argsMatch
    (absent args matches anything) is consumed; none is a miss."""
    entries = [
        response("crm:lookup", {"id": "B"}, "exact"),
        response("crm:lookup"),  # no args: matches any call of the tool
    ]
    calls = [("crm:lookup", {"id": i}) for i in ids]
    _, task, _ = run_one(fixtures(entries, "live"), calls)
    assert task["fixtureMissCount"] == misses


def test_s3_3_entry_args_without_args_match_are_ignored() -> None:
    """§3.3 with RFC §D: an entry's argsMatch defaults to ignore."""
    entries = [response("crm:lookup", {"id": "B"})]
    _, task, _ = run_one(fixtures(entries, "fail"), [("crm:lookup", {"id": "A"})])
    assert task["fixtureMissCount"] == 0
    assert task["passed"] is True


@pytest.mark.slow
@pytest.mark.parametrize(
    ("entry", "inputs", "misses"),
    [
        (response("billing:refund", {"amountMinor": 4200}, "exact"), {"amountMinor": 4200.0}, 0),
        (
            response("billing:refund", {"amountMinor": 4200}, "exact"),
            {"amountMinor": 4200, "x": 1},
            1,
        ),
        (
            response("billing:refund", {"amountMinor": 4200}, "subset"),
            {"amountMinor": 4200, "x": 1},
            0,
        ),
        (response("billing:refund", {"amount": 19.99}, "exact"), {"amount": 19.99}, 0),
        (response("billing:refund", {"amount": 19.99}, "subset"), {"amount": 19.99, "c": "EUR"}, 0),
        (response("billing:refund", {"flag": 1}, "exact"), {"flag": True}, 1),
        (response("billing:other"), {}, 1),
    ],
    ids=[
        "exact-1-vs-1.0",
        "exact-extra-key",
        "subset-extra-key",
        "exact-decimal-19.99",
        "subset-decimal-19.99",
        "exact-true-vs-1",
        "other-tool",
    ],
)
def test_s3_3_entry_args_match_under_the_call_matching_rules(
    entry: dict[str, Any], inputs: Any, misses: int
) -> None:
    """§3.3: entries match on the same tool and on args under D-7/D-8."""
    _, task, _ = run_one(fixtures([entry], "live"), [("billing:refund", inputs)])
    assert task["fixtureMissCount"] == misses


def test_s3_3_calls_of_every_agent_in_the_bracket_consume_entries() -> None:
    """§3.3: every agent.tool-called in the bracket (all agents), in order, is replayed."""
    entries = [response("crm:lookup")]
    calls = [Call("crm:lookup", {}, agent=HELPER), Call("crm:lookup", {})]
    _, task, _ = run_one(fixtures(entries, "live"), calls)
    assert task["fixtureMissCount"] == 1


def test_s3_3_calls_outside_the_bracket_are_not_replayed() -> None:
    """§3.3: only calls in the bracket are replayed; a call after the bracket closes is none."""
    log = LogBuilder()
    log.eval_started()
    log.bracket(calls=[("crm:lookup", {})])
    log.call("crm:lookup", {})  # after the bracket, in the segment
    log.scored("task-a", score=1, passed=True)
    log.eval_completed()
    s = suite(golden("task-a", fixtures=fixtures([response("crm:lookup")], "fail")))
    task = task_of(summary_of(grade(log, [s])), "task-a")
    assert task["fixtureMissCount"] == 0
    assert task["passed"] is True
    assert task["score"] == 1


@pytest.mark.slow
def test_d9_on_miss_fail_fails_the_trial_closed() -> None:
    """D-9: onMiss fail: a trial with a miss has passed false and score 0 (the host's 1 and true
    notwithstanding); its gating score is 0."""
    summary, task, _ = run_one(
        fixtures([response("crm:lookup")], "fail"),
        [("crm:lookup", {}), ("billing:refund", {})],
        score=0.9,
        passed=True,
    )
    assert task["fixtureMissCount"] == 1
    assert task["score"] == 0
    assert task["passed"] is False
    assert summary["aggregateScore"] == 0
    assert summary["passed"] is False


def test_d9_on_miss_fail_without_a_miss_keeps_the_host_grade() -> None:
    """D-9: no miss, no fail-closed."""
    _, task, _ = run_one(
        fixtures([response("crm:lookup")], "fail"), [("crm:lookup", {})], score=0.9, passed=True
    )
    assert task["fixtureMissCount"] == 0
    assert task["score"] == 0.9
    assert task["passed"] is True


def test_d9_on_miss_live_counts_misses_only() -> None:
    """D-9: onMiss live: misses are counted, the trial keeps its grade."""
    summary, task, _ = run_one(
        fixtures([], "live"), [("t:x", {}), ("t:y", {})], score=0.9, passed=True
    )
    assert task["fixtureMissCount"] == 2
    assert task["score"] == 0.9
    assert task["passed"] is True
    assert summary["passed"] is True


@pytest.mark.slow
def test_d9_absent_on_miss_counts_misses_only_by_default() -> None:
    """D-9: absent onMiss: misses are counted only (the host's own score is kept)."""
    summary, task, _ = run_one(fixtures([]), [("t:x", {})], score=0.9, passed=True)
    assert task["fixtureMissCount"] == 1
    assert task["score"] == 0.9
    assert task["passed"] is True
    assert summary["passed"] is True


@pytest.mark.slow
def test_d9_on_miss_default_fail_option_makes_absent_mean_fail() -> None:
    """D-9: `--on-miss-default fail` makes an absent onMiss mean fail."""
    summary, task, _ = run_one(
        fixtures([]), [("t:x", {})], score=0.9, passed=True, on_miss_default="fail"
    )
    assert task["fixtureMissCount"] == 1
    assert task["score"] == 0
    assert task["passed"] is False
    assert summary["passed"] is False


def test_d9_on_miss_default_fail_option_does_not_override_an_explicit_live() -> None:
    """D-9: the option only decides what an absent onMiss means."""
    _, task, _ = run_one(
        fixtures([], "live"), [("t:x", {})], score=0.9, passed=True, on_miss_default="fail"
    )
    assert task["fixtureMissCount"] == 1
    assert task["score"] == 0.9
    assert task["passed"] is True


def test_d9_fail_closed_overrides_a_matched_trajectory_task() -> None:
    """§3.4: in every kind a fail-closed trial has score 0 and passed false."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", calls=[("t:x", {})])
    log.eval_completed()
    s = suite(trajectory_task("task-a", traj("exact", ["t:x"]), fixtures=fixtures([], "fail")))
    task = task_of(summary_of(grade(log, [s])), "task-a")
    assert task["trajectory"]["matched"] is True
    assert task["score"] == 0
    assert task["passed"] is False


def test_s3_3_cursor_resets_in_every_trial_and_misses_sum_over_trials() -> None:
    """§3.3: the cursor starts fresh in every trial; fixtureMissCount sums the trials' misses."""
    log = LogBuilder()
    log.eval_started(trialCount=3)
    for index, calls in enumerate(
        ([("crm:lookup", {})] * 2, [("crm:lookup", {})], [("crm:lookup", {})] * 3)
    ):
        log.trial("task-a", calls=calls, trial_index=index, score=1, passed=True)
    log.eval_completed()
    s = suite(
        golden("task-a", fixtures=fixtures([response("crm:lookup")], "fail")),
        trials={"count": 3, "k": 1, "passRule": "any"},
    )
    task = task_of(summary_of(grade(log, [s])), "task-a")
    assert task["fixtureMissCount"] == 3  # 1 + 0 + 2
    assert task["trials"]["passedCount"] == 1  # only trial 1 had no miss
    assert task["trials"]["meanScore"] == pytest.approx(1 / 3)
    assert task["passed"] is True  # passRule any


def test_s3_3_cursor_resets_so_one_entry_serves_one_call_per_trial() -> None:
    """§3.3/RFC §B: an onMiss cursor resets per trial."""
    log = LogBuilder()
    log.eval_started(trialCount=2)
    log.trial("task-a", calls=[("crm:lookup", {})], trial_index=0)
    log.trial("task-a", calls=[("crm:lookup", {})], trial_index=1)
    log.eval_completed()
    s = suite(
        golden("task-a", fixtures=fixtures([response("crm:lookup")], "fail")),
        trials={"count": 2},
    )
    task = task_of(summary_of(grade(log, [s])), "task-a")
    assert task["fixtureMissCount"] == 0
    assert task["trials"]["passedCount"] == 2
    assert task["passed"] is True


def test_s3_3_fixture_miss_count_for_a_missing_task_is_zero() -> None:
    """§3.3/D-13: fixtureMissCount is present (0) for a fixtured task with no trial in the log."""
    log = LogBuilder()
    log.eval_started(task_count=2)
    log.trial("task-b")
    log.eval_completed()
    s = suite(golden("task-a", fixtures=fixtures([], "fail")), golden("task-b"))
    result = grade(log, [s])
    task = task_of(summary_of(result), "task-a")
    assert task["fixtureMissCount"] == 0
    assert task["passed"] is False
    assert "task-missing" in codes_of(result)


@pytest.mark.parametrize("default", ["count", "fail"])
@pytest.mark.parametrize("declared", [None, "fail", "live"])
def test_d9_on_miss_reading_is_one_rule_in_both_forms(
    declared: str | None, default: OnMissDefault
) -> None:
    """D-9: a declared onMiss is what it says (an explicit `live` stays `live`); an absent one is
    read as `--on-miss-default`. The grade's Polars form fails a trial with a miss exactly when
    the form `explain` shows (`on_miss_applied`) is `fail`, and `verify` tries the other reading
    only for a miss under an absent onMiss (CONTRACT §8)."""
    options = GradeOptions(on_miss_default=default)
    applied = on_miss_applied(declared, options)
    assert applied == (declared if declared is not None else default)
    trial = pl.DataFrame(
        {
            "on_miss": [declared],
            "has_miss": [True],
            "counted": [True],
            "has_fixtures": [True],
            "live_shadow": [False],
        },
        schema_overrides={"on_miss": pl.String},
    )
    failed_closed = trial.select(pl.col("has_miss") & fails_on_miss(options)).item()
    assert bool(failed_closed) == (applied == "fail")
    assert trial.select(absent_on_miss_decides()).item() == (declared is None)
    other = other_on_miss_reading(options)
    assert other.on_miss_default != default
    assert other.default_pass_score == options.default_pass_score
