"""CONTRACT §3.1–§3.2: JSON equality (D-7), subset args (D-8), match modes, forbidden, counts,
and D-18 (no bracket, no path).

The D-7 and D-8 cases each grade one task of one shared run (one segment per case), so each case
is a test of its own while the log is graded once.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalbatch.grade.trial_grading import TRAJECTORY_CHECKS, trajectory_rule
from tests.helpers import slow_except
from tests.logbuilder import (
    AGENT,
    Call,
    LogBuilder,
    expect,
    golden,
    grade,
    suite,
    summary_of,
    task_of,
    traj,
    trajectory_task,
)


def raw_call(tool: str, inputs_text: str | None) -> Call:
    """A tool call whose `inputs` is written verbatim (None: no inputs member)."""
    head = f'{{"agentId": {json.dumps(AGENT)}, "toolName": {json.dumps(tool)}, "callId": "c"'
    text = head + "}" if inputs_text is None else head + f', "inputs": {inputs_text}}}'
    return Call(tool, raw=text)


# (case id, expected args, observed inputs as JSON text, matches under argsMatch exact)
D7_CASES: list[tuple[str, Any, str, bool]] = [
    ("int-vs-float", {"n": 1}, '{"n": 1.0}', True),
    ("float-vs-int", {"n": 1.0}, '{"n": 1}', True),
    ("exponent", {"n": 100}, '{"n": 1E2}', True),
    ("minus-zero", {"n": 0}, '{"n": -0}', True),
    ("minus-zero-float", {"n": 0.0}, '{"n": -0.0}', True),
    ("true-vs-1", {"n": 1}, '{"n": true}', False),
    ("1-vs-true", {"n": True}, '{"n": 1}', False),
    ("false-vs-0", {"n": 0}, '{"n": false}', False),
    ("key-order", {"a": 1, "b": 2}, '{"b": 2, "a": 1}', True),
    (
        "nested-key-order",
        {"o": {"x": 1, "y": [{"p": 1, "q": 2}]}},
        '{"o": {"y": [{"q": 2, "p": 1.0}], "x": 1}}',
        True,
    ),
    ("big-int-differs", {"n": 9007199254740993}, '{"n": 9007199254740992}', False),
    ("big-int-equal", {"n": 9007199254740993}, '{"n": 9007199254740993}', True),
    ("big-int-as-decimal", {"n": 9007199254740993}, '{"n": 9007199254740993.0}', True),
    ("big-int-reversed", {"n": 9007199254740992}, '{"n": 9007199254740993}', False),
    ("big-int-in-array", {"l": [9007199254740993]}, '{"l": [9007199254740992]}', False),
    ("beyond-uint64-differs", {"n": 18446744073709551617}, '{"n": 18446744073709551616}', False),
    ("beyond-uint64-equal", {"n": 18446744073709551617}, '{"n": 18446744073709551617}', True),
    ("negative-big-int", {"n": -9007199254740993}, '{"n": -9007199254740992}', False),
    ("decimal-0.1", {"x": 0.1}, '{"x": 0.1}', True),
    ("decimal-19.99", {"amount": 19.99}, '{"amount": 19.99}', True),
    ("decimal-trailing-zero", {"x": 0.5}, '{"x": 0.50}', True),
    ("decimal-not-float", {"x": 0.1}, '{"x": 0.1000000000000000000001}', False),
    ("float-sum-differs", {"x": 0.3}, '{"x": 0.30000000000000004}', False),
    ("null-equals-null", {"a": None}, '{"a": null}', True),
    ("null-vs-absent", {"a": None}, "{}", False),
    ("null-vs-zero", {"a": None}, '{"a": 0}', False),
    ("null-vs-string", {"a": None}, '{"a": "null"}', False),
    ("string-case", {"s": "A"}, '{"s": "a"}', False),
    ("string-vs-number", {"s": "1"}, '{"s": 1}', False),
    ("string-escape", {"s": "é"}, '{"s": "\\u00e9"}', True),
    ("array-order", {"l": [1, 2]}, '{"l": [2, 1]}', False),
    ("array-elementwise", {"l": [1, 2]}, '{"l": [1, 2.0]}', True),
    ("array-length", {"l": [1, 2]}, '{"l": [1, 2, 3]}', False),
    ("repeated-key-last-wins", {"a": 2}, '{"a": 1, "a": 2}', True),
    ("repeated-key-first-loses", {"a": 1}, '{"a": 1, "a": 2}', False),
    ("extra-key", {"a": 1}, '{"a": 1, "b": 2}', False),
    ("missing-key", {"a": 1, "b": 2}, '{"a": 1}', False),
]

# (case id, expected args, observed inputs as JSON text or None for absent, matches under subset)
D8_CASES: list[tuple[str, Any, str | None, bool]] = [
    ("nested-subset", {"a": {"b": 1}}, '{"a": {"b": 1.0, "c": 2}, "d": 3}', True),
    ("nested-missing", {"a": {"b": 1}}, '{"a": {"c": 2}}', False),
    ("nested-not-object", {"a": {"b": 1}}, '{"a": "{\\"b\\": 1}"}', False),
    ("array-must-be-equal", {"l": [1]}, '{"l": [1, 2]}', False),
    ("array-no-element-subset", {"l": [{"x": 1}]}, '{"l": [{"x": 1, "y": 2}]}', False),
    ("array-equal", {"l": [1, 2]}, '{"l": [1, 2], "m": 0}', True),
    ("empty-matches-any-object", {}, '{"anything": [1, {"z": null}]}', True),
    ("empty-matches-empty", {}, "{}", True),
    ("empty-matches-absent", {}, None, True),
    ("empty-vs-array", {}, "[]", False),
    ("empty-vs-string", {}, '"x"', False),
    ("empty-vs-null", {}, "null", False),
    ("nested-empty-any-object", {"a": {}}, '{"a": {"z": 1}}', True),
    ("nested-empty-vs-scalar", {"a": {}}, '{"a": 1}', False),
    ("null-value-present", {"a": None}, '{"a": null, "b": 1}', True),
    ("null-value-absent", {"a": None}, '{"b": 1}', False),
    ("scalar-bool-vs-number", {"a": 1}, '{"a": true}', False),
    ("scalar-number-exact", {"a": 1}, '{"a": 1.0, "b": 2}', True),
    ("scalar-decimal", {"amount": 19.99}, '{"amount": 19.99, "currency": "EUR"}', True),
    ("big-int-in-subset", {"a": 9007199254740993}, '{"a": 9007199254740992, "b": 1}', False),
    ("non-object-array-equal", [1, 2], "[1, 2]", True),
    ("non-object-array-prefix", [1], "[1, 2]", False),
    ("non-object-string", "x", '"x"', True),
    ("non-object-number", 5, "5.0", True),
    ("non-object-null", None, "null", True),
    ("non-object-null-vs-object", None, "{}", False),
    ("non-object-array-vs-object", [1], '{"0": 1}', False),
    ("repeated-key-last-wins", {"a": 2}, '{"a": 1, "a": 2, "b": 0}', True),
]


def _case_task(case_id: str) -> str:
    return "case-" + "".join(ch if ch.isalnum() else "-" for ch in case_id.lower())


def _grade_cases(cases: list[tuple[str, Any, str | None, bool]], args_match: str):
    log = LogBuilder()
    log.eval_started(task_count=len(cases))
    tasks = []
    for case_id, args, inputs_text, _ in cases:
        task_id = _case_task(case_id)
        log.trial(task_id, calls=[raw_call("t:x", inputs_text)])
        tasks.append(golden(task_id, traj("exact", [expect("t:x", args, args_match)])))
    log.eval_completed()
    return summary_of(grade(log, [suite(*tasks)]))


@pytest.fixture(scope="module")
def d7_summary() -> dict[str, Any]:
    return _grade_cases(D7_CASES, "exact")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def d8_summary() -> dict[str, Any]:
    return _grade_cases(D8_CASES, "subset")


@pytest.mark.parametrize(
    ("case_id", "args", "inputs_text", "matched"), D7_CASES, ids=[c[0] for c in D7_CASES]
)
def test_d7_json_equality_under_args_match_exact(
    d7_summary: dict[str, Any], case_id: str, args: Any, inputs_text: str, matched: bool
) -> None:
    """D-7: exact decimal numbers (1 = 1.0, -0 = 0, no 2^53 rounding), true != 1, null only
    null, exact strings, key order ignored, arrays in order, repeated key: last wins."""
    task = task_of(d7_summary, _case_task(case_id))
    assert task["trajectory"]["matched"] is matched, (args, inputs_text)
    assert task["trajectory"]["matchedCount"] == (1 if matched else 0)
    assert task["passed"] is matched


@pytest.mark.parametrize(
    ("case_id", "args", "inputs_text", "matched"), D8_CASES, ids=[c[0] for c in D8_CASES]
)
def test_d8_subset_args(
    d8_summary: dict[str, Any], case_id: str, args: Any, inputs_text: str | None, matched: bool
) -> None:
    """D-8: object args need an object holding every key, values matched recursively (objects as
    subsets, arrays/scalars/null JSON-equal); non-object args must JSON-equal the inputs; `{}`
    matches any object."""
    task = task_of(d8_summary, _case_task(case_id))
    assert task["trajectory"]["matched"] is matched, (args, inputs_text)
    assert task["trajectory"]["matchedCount"] == (1 if matched else 0)


# --------------------------------------------------------------------------------------------------
# §3.2 match modes
# --------------------------------------------------------------------------------------------------


def _grade_one(trajectory: dict[str, Any], calls: list[Any], *, kind: str = "golden"):
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", calls=calls, score=1, passed=True)
    log.eval_completed()
    task_doc = (
        trajectory_task("task-a", trajectory)
        if kind == "trajectory"
        else golden("task-a", trajectory)
    )
    return task_of(summary_of(grade(log, [suite(task_doc)])), "task-a")


# (mode, expected tools, observed tools, matched, matchedCount)
MODE_CASES = [
    ("exact", ["a", "b"], ["a", "b"], True, 2),
    ("exact", ["a", "b"], ["a", "b", "c"], False, 2),
    ("exact", ["a", "b"], ["a"], False, 1),
    ("exact", ["a", "b"], ["b", "a"], False, 2),
    ("exact", [], [], True, 0),
    ("exact", [], ["a"], False, 0),
    ("in-order", ["a", "b"], ["a", "c", "b"], True, 2),
    ("in-order", ["a", "b"], ["c", "a", "a", "b", "c"], True, 2),
    ("in-order", ["a", "b"], ["b", "a"], False, 2),
    ("in-order", ["a", "b"], ["b", "c"], False, 1),
    ("in-order", ["a", "a"], ["a"], False, 1),
    ("in-order", ["a", "a"], ["a", "b", "a"], True, 2),
    ("in-order", [], ["x", "y"], True, 0),
    ("any-order", ["a", "b"], ["b", "c", "a"], True, 2),
    ("any-order", ["a", "a"], ["a"], False, 1),
    ("any-order", ["a", "a"], ["a", "b", "a"], True, 2),
    ("any-order", ["a", "b", "c"], ["c", "b"], False, 2),
    ("subset", ["a", "b"], ["a", "a", "a"], True, 1),
    ("subset", ["a", "b"], ["b", "a", "b"], True, 2),
    ("subset", ["a", "b"], ["a", "c"], False, 1),
    ("subset", ["a", "b"], [], True, 0),
    ("subset", [], [], True, 0),
    ("subset", [], ["a"], False, 0),
]


#: the fast set: a match and a miss of each mode, and the empty expectations
FAST_MODE_CASES = [MODE_CASES[i] for i in (0, 3, 4, 6, 8, 12, 13, 14, 17, 19, 21, 22)]


@pytest.mark.parametrize(
    ("mode", "expected_tools", "observed_tools", "matched", "matched_count"),
    slow_except(MODE_CASES, fast=FAST_MODE_CASES),
    ids=[f"{m}-{'.'.join(e) or '0'}-vs-{'.'.join(o) or '0'}" for m, e, o, _, _ in MODE_CASES],
)
def test_s3_2_match_modes(
    mode: str,
    expected_tools: list[str],
    observed_tools: list[str],
    matched: bool,
    matched_count: int,
) -> None:
    """§3.2: exact (same length, position by position), in-order (subsequence), any-order
    (distinct observed call per expected call), subset (every observed call expected; repeats
    allowed; O empty matches); the block's counts; matchedCount ignores order."""
    task = _grade_one(traj(mode, expected_tools), [(t, {}) for t in observed_tools])
    assert task["trajectory"] == {
        "mode": mode,
        "matched": matched,
        "expectedCount": len(expected_tools),
        "observedCount": len(observed_tools),
        "matchedCount": matched_count,
        "forbiddenCount": 0,
    }
    assert task["passed"] is matched
    assert task["score"] == 1  # golden: the output score stays


def test_s3_2_any_order_is_a_maximum_matching_not_greedy() -> None:
    """§3.2: with subset args, greedy pairing fails where an assignment exists.

    E0 = refund {} (any object) would greedily take O0 = {amount: 5}, leaving E1 = {amount: 5}
    unmatched; the assignment E0->O1, E1->O0 matches."""
    calls = [
        expect("billing:refund", {}, "subset"),
        expect("billing:refund", {"amount": 5}, "subset"),
    ]
    observed = [("billing:refund", {"amount": 5}), ("billing:refund", {"amount": 7})]
    task = _grade_one(traj("any-order", calls), observed)
    assert task["trajectory"] == {
        "mode": "any-order",
        "matched": True,
        "expectedCount": 2,
        "observedCount": 2,
        "matchedCount": 2,
        "forbiddenCount": 0,
    }
    assert task["passed"] is True


@pytest.mark.slow
def test_s3_2_any_order_maximum_matching_three_way() -> None:
    """§3.2: a 3x3 case where first-fit pairing in either direction fails."""
    calls = [
        expect("t:x", {}, "subset"),
        expect("t:x", {"a": 1}, "subset"),
        expect("t:x", {"b": 1}, "subset"),
    ]
    observed = [("t:x", {"a": 1, "b": 1}), ("t:x", {"b": 1}), ("t:x", {"a": 1})]
    task = _grade_one(traj("any-order", calls), observed)
    assert task["trajectory"]["matched"] is True
    assert task["trajectory"]["matchedCount"] == 3


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["exact", "in-order"])
def test_s3_2_matched_count_is_a_maximum_matching_in_every_mode(mode: str) -> None:
    """§3.2: matchedCount is the size of a maximum one-to-one matching ignoring order, whatever
    the mode and whether the trajectory matched."""
    calls = [expect("t:x", {}, "subset"), expect("t:x", {"k": 1}, "subset")]
    observed = [("t:x", {"k": 1}), ("t:x", {"k": 2})]
    task = _grade_one(traj(mode, calls), observed)
    assert task["trajectory"]["matched"] is False
    assert task["trajectory"]["matchedCount"] == 2


def test_s3_2_subset_repeats_count_once_in_matched_count() -> None:
    """§3.2: subset allows repeats; matchedCount stays a one-to-one matching."""
    calls = [expect("t:x", {"id": 1}, "exact")]
    task = _grade_one(traj("subset", calls), [("t:x", {"id": 1}), ("t:x", {"id": 1.0})])
    assert task["trajectory"]["matched"] is True
    assert task["trajectory"]["matchedCount"] == 1
    assert task["trajectory"]["observedCount"] == 2


def test_s3_2_subset_with_args_rejects_a_call_with_other_args() -> None:
    """§3.2: under subset each observed call must match some expected call, args included."""
    calls = [expect("t:x", {"id": 1}, "exact")]
    task = _grade_one(traj("subset", calls), [("t:x", {"id": 1}), ("t:x", {"id": 2})])
    assert task["trajectory"]["matched"] is False
    assert task["trajectory"]["matchedCount"] == 1


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["exact", "in-order", "any-order", "subset"])
def test_s3_2_forbidden_fails_every_mode(mode: str) -> None:
    """§3.2: any observed call to a forbidden tool makes the trajectory unmatched, whatever the
    mode (here the path would otherwise match: the forbidden tool is also expected)."""
    task = _grade_one(traj(mode, ["t:a", "t:x"], forbidden=["t:x"]), [("t:a", {}), ("t:x", {})])
    assert task["trajectory"]["matched"] is False
    assert task["trajectory"]["forbiddenCount"] == 1
    assert task["trajectory"]["matchedCount"] == 2
    assert task["passed"] is False
    assert task["score"] == 1


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["in-order", "any-order"])
def test_s3_2_forbidden_count_counts_every_forbidden_call(mode: str) -> None:
    """§3.2: forbiddenCount = number of observed calls to forbidden tools."""
    observed = [("t:a", {}), ("t:x", {}), ("t:y", {}), ("t:x", {"again": True})]
    task = _grade_one(traj(mode, ["t:a"], forbidden=["t:x", "t:y"]), observed)
    assert task["trajectory"]["forbiddenCount"] == 3
    assert task["trajectory"]["matched"] is False


@pytest.mark.parametrize(
    ("args_match", "inputs"),
    # each argsMatch and each kind of input once in the fast set, every pair under --run-slow
    slow_except(
        [(a, i) for a in ("exact", "subset", "ignore") for i in ({"x": 1}, None, [1, 2], "text")],
        fast=[("exact", {"x": 1}), ("subset", None), ("ignore", [1, 2]), ("exact", "text")],
    ),
)
def test_s3_2_expected_call_without_args_matches_on_name_alone(
    args_match: str, inputs: Any
) -> None:
    """§3.2: an expected call without `args` matches on the tool name, whatever its argsMatch."""
    task = _grade_one(traj("exact", [expect("t:x", args_match=args_match)]), [("t:x", inputs)])
    assert task["trajectory"]["matched"] is True
    assert task["trajectory"]["matchedCount"] == 1


def test_s3_2_args_without_args_match_are_ignored() -> None:
    """§3.2: `args` without `argsMatch` is compared under the default, ignore."""
    task = _grade_one(traj("exact", [expect("t:x", {"x": 2})]), [("t:x", {"x": 1})])
    assert task["trajectory"]["matched"] is True


def test_s3_2_args_match_ignore_ignores_args() -> None:
    """§3.1: `argsMatch: ignore` compares the tool name only."""
    task = _grade_one(traj("exact", [expect("t:x", {"x": 2}, "ignore")]), [("t:x", "anything")])
    assert task["trajectory"]["matched"] is True


def test_s3_2_tool_name_must_be_equal() -> None:
    """§3.1: tool == toolName, exactly (no case folding, no prefix match)."""
    task = _grade_one(traj("any-order", ["crm:lookup"]), [("CRM:lookup", {}), ("crm:lookup-x", {})])
    assert task["trajectory"]["matched"] is False
    assert task["trajectory"]["matchedCount"] == 0


@pytest.mark.slow
def test_s3_2_explicit_null_args_under_exact_match_only_null_inputs() -> None:
    """§3.2: `"args": null` is present: under exact it matches only a null input."""
    trajectory = traj("any-order", [expect("t:x", None, "exact")])
    assert _grade_one(trajectory, [("t:x", None)])["trajectory"]["matched"] is True
    assert _grade_one(trajectory, [("t:x", {})])["trajectory"]["matched"] is False
    assert _grade_one(trajectory, [("t:x", 0)])["trajectory"]["matched"] is False


# --------------------------------------------------------------------------------------------------
# D-18
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["exact", "in-order", "any-order", "subset"])
def test_d18_no_bracket_no_path_trajectory_is_unmatched(mode: str) -> None:
    """D-18: a trial with no bracket cannot show its path: its trajectory is unmatched whatever
    the mode (an empty expectation that an empty path would satisfy included); observedCount 0."""
    log = LogBuilder()
    log.eval_started()
    log.call("t:a", {})  # outside any bracket: not observed
    log.scored("task-a", score=0.9, passed=True)
    log.eval_completed()
    s = suite(golden("task-a", traj(mode, [])), thresholds={"passScore": 0.5})
    summary = summary_of(grade(log, [s]))
    task = task_of(summary, "task-a")
    assert task["trajectory"] == {
        "mode": mode,
        "matched": False,
        "expectedCount": 0,
        "observedCount": 0,
        "matchedCount": 0,
        "forbiddenCount": 0,
    }
    assert task["passed"] is False
    assert task["score"] == 0.9
    assert summary["passed"] is False  # D-10: the gating score of the trial is 0


# (task id, trajectory, observed tools (None: no bracket), the trials table's reason code)
REASON_CASES: list[tuple[str, dict[str, Any], list[str] | None, str | None]] = [
    ("no-bracket-first", traj("exact", ["t:a"], forbidden=["t:x"]), None, "no-bracket"),
    ("forbidden-first", traj("exact", ["t:a", "t:b"], forbidden=["t:x"]), ["t:x"], "forbidden"),
    ("subset-extra", traj("subset", ["t:a"]), ["t:a", "t:z"], "extra"),
    ("missing-before-extra", traj("exact", ["t:a", "t:b"]), ["t:a", "t:z", "t:y"], "missing"),
    ("exact-extra", traj("exact", ["t:a"]), ["t:a", "t:a"], "extra"),
    ("exact-order", traj("exact", ["t:a", "t:b"]), ["t:b", "t:a"], "order"),
    ("in-order-order", traj("in-order", ["t:a", "t:b"]), ["t:b", "t:a"], "order"),
    ("any-order-missing", traj("any-order", ["t:a", "t:b"]), ["t:a", "t:a"], "missing"),
    ("matched", traj("in-order", ["t:a"]), ["t:z", "t:a"], None),
]


def test_s3_2_d18_trajectory_reason_names_the_first_failed_check() -> None:
    """§3.2, D-18: the trials table names why a trajectory is unmatched by the first check that
    fails, in `grade.TRAJECTORY_CHECKS` order: no bracket, a forbidden call, then the mode's
    own check (subset: a call no expected call allows; a missing expected call; exact: a call
    count that differs; last, order). `verify` cites D-18 for `no-bracket` and §3.2 for the
    others, from the same table."""
    log = LogBuilder()
    log.eval_started()
    for task_id, _, observed, _ in REASON_CASES:
        if observed is None:
            log.call("t:x", {})  # outside any bracket: not observed
            log.scored(task_id, score=1, passed=True)
        else:
            log.trial(task_id, calls=[(tool, {}) for tool in observed], score=1, passed=True)
    log.eval_completed()
    doc = suite(*(golden(task_id, trajectory) for task_id, trajectory, _, _ in REASON_CASES))
    trials = grade(log, [doc]).trials
    reasons = dict(trials.select("task_id", "trajectory_reason").iter_rows())
    assert reasons == {task_id: reason for task_id, _, _, reason in REASON_CASES}
    assert [check.reason for check in TRAJECTORY_CHECKS] == [
        "no-bracket",
        "delegates-unseen",  # E-102: a child run the path went through cannot be read
        "forbidden",
        "extra",
        "missing",
        "extra",
        "order",
    ]
    assert trajectory_rule("no-bracket") == "D-18"
    assert trajectory_rule("delegates-unseen") == "E-102"
    assert {trajectory_rule(r) for r in ("forbidden", "extra", "missing", "order", None)} == {
        "§3.2"
    }
