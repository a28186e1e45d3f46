"""Extreme inputs, the cheap ones: checked for correctness, never timed.

The cases come from the benchmark script `bench/extremes.py`, which also grades them (and the
heavy ones: a run of 1,000,002 events, a suite of 50,000 tasks) in a child process and prints
seconds and peak RSS:

    .venv/bin/python bench/extremes.py

Here: a task with 1,000 trials (pass@k and pass^k against exact rationals), trajectories of
10,000 calls against 200 expected calls in every match mode (with a known maximum matching that
greedy pairing misses), invocations nested 50 levels deep, and scaled-down versions of the
50,000-task suite and the million-event run (same generators, same checks).
"""

from __future__ import annotations

import importlib.util
import json
import math
import statistics
import sys
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from evalbatch.api import GradeResult, grade_paths
from evalbatch.jsonvalue import args_match

#: a slow family (extreme inputs):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_extremes", ROOT / "bench" / "extremes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


extremes = _load_bench()


def grade_case(case: Any, tmp_path: Path) -> GradeResult:
    events, suites = case.write(tmp_path / case.name)
    return grade_paths([events], [suites])


def problem_keys(result: GradeResult, run_id: str) -> list[tuple[str, int | None]]:
    rows = result.problems.filter(result.problems["run_id"] == run_id).iter_rows(named=True)
    return sorted(((r["code"], r["sequence"]) for r in rows), key=str)


def close(value: float, exact: Fraction) -> bool:
    """RFC 0244 §B: |x - f| <= 1e-9 * max(1, |f|)."""
    return abs(Fraction(value) - exact) <= Fraction(1, 10**9) * max(1, abs(exact))


# --------------------------------------------------------------------------------------------
# 1,000 trials: pass@k exact


def test_pass_at_k_with_1000_trials_matches_exact_rationals(tmp_path: Path) -> None:
    """§3.5: tasks with n = 1,000 trials, c in {0, 1, 3, 500, 999, 1000} passed, k in {1, 2, 500,
    1000}: every task's passAtK = 1 - C(n-c, k)/C(n, k) and passHatK = C(c, k)/C(n, k) agree
    with exact rationals (fractions, math.comb) to 1e-9·max(1, |f|), including values whose
    binomials overflow a float (C(1000, 500) ~ 2.7e299) and values below 1e-290; meanScore is
    c/n, passedCount c; trialStats are the exact means and the clustered standard error."""
    case = extremes.trials_case()
    result = grade_case(case, tmp_path)
    assert result.skipped == []
    assert case.check(result.summaries, case) == []
    n = extremes.TRIALS_N
    for run_id, facts in case.expected.items():
        summary = result.summaries[run_id]
        k = facts["k"]
        assert summary["trialStats"]["k"] == k
        means = []
        for task in summary["tasks"]:
            c = int(task["taskId"].split("-")[1])
            trials = task["trials"]
            assert (trials["n"], trials["passedCount"]) == (n, c)
            assert close(trials["meanScore"], Fraction(c, n))
            assert close(task["score"], Fraction(c, n))
            assert task["passed"] is (c >= 1)  # passRule any
            at = 1 - Fraction(math.comb(n - c, k), math.comb(n, k)) if c else Fraction(0)
            hat = Fraction(math.comb(c, k), math.comb(n, k))
            assert close(trials["passAtK"], at), (run_id, c, k, trials["passAtK"], float(at))
            assert close(trials["passHatK"], hat), (run_id, c, k, trials["passHatK"], float(hat))
            assert 0 <= trials["passHatK"] <= trials["passAtK"] <= 1
            means.append(Fraction(c, n))
        stderr = math.sqrt(statistics.variance(means)) / math.sqrt(len(means))
        assert math.isclose(summary["trialStats"]["scoreStderr"], stderr, rel_tol=1e-9)
        assert problem_keys(result, run_id) == []


# --------------------------------------------------------------------------------------------
# 10,000 observed calls against 200 expected calls


def _greedy_matched(expected: list[dict[str, Any]], observed: list[tuple[str, Any]]) -> int:
    """What greedy pairing finds: each expected call in turn takes the first free observed call
    that matches it (the peer bug CONTRACT §3.2 warns about)."""
    taken: set[int] = set()
    found = 0
    for spec in expected:
        for index, (tool, inputs) in enumerate(observed):
            if index in taken or tool != spec["tool"]:
                continue
            if args_match(spec["argsMatch"], spec["args"], inputs):
                taken.add(index)
                found += 1
                break
    return found


def test_the_trajectory_trap_needs_a_maximum_matching() -> None:
    """§3.2 (the test's own premise): on the `greedy-trap` path greedy pairing matches only 100
    of the 200 expected calls, while a one-to-one assignment of all 200 exists (A_j to the second
    call of gadget j, B_j to the first), so the graded answer 200 requires a maximum matching."""
    expected = extremes.trajectory_expected()
    signal = [
        call
        for call in extremes.trajectory_observed("greedy-trap")
        if call[0] == "kv:get" and call[1]["g"] < extremes.TRAJ_GADGETS
    ]
    assert len(signal) == 200
    assert _greedy_matched(expected, signal) == 100
    assignment = {}
    for j in range(extremes.TRAJ_GADGETS):
        assignment[2 * j] = signal.index(("kv:get", {"g": j, "h": 2}))  # A_j
        assignment[2 * j + 1] = signal.index(("kv:get", {"g": j, "h": 1}))  # B_j
    assert len(set(assignment.values())) == 200
    for e, o in assignment.items():
        assert args_match("subset", expected[e]["args"], signal[o][1])


def test_trajectory_of_10000_calls_against_200_expected(tmp_path: Path) -> None:
    """§3.2, D-8: eight trials of 10,000 observed calls each against the same 200 expected calls
    (subset args), one per mode and variant, each with a known answer: any-order matches the
    greedy trap (matchedCount 200) and reports 193 when 7 calls are missing; in-order holds for
    the expected order and fails when the gadgets come reversed; exact fails on length; subset
    fails on noise and holds when every call matches some expected call; one forbidden call
    fails any-order (forbiddenCount 1). observedCount is 10,000 throughout."""
    case = extremes.trajectory_case()
    result = grade_case(case, tmp_path)
    (run_id,) = case.expected
    assert result.skipped == []
    assert case.check(result.summaries, case) == []
    summary = result.summaries[run_id]
    for task in summary["tasks"]:
        matched = task["trajectory"]["matched"]
        assert task["score"] == (1.0 if matched else 0.0)  # a trajectory task's score (§3.4)
        assert task["efficiency"]["toolCallCount"] == extremes.TRAJ_OBSERVED
    assert summary["passedCount"] == sum(m for _, _, m, _, _ in extremes.TRAJ_TASKS.values())
    assert problem_keys(result, run_id) == []


# --------------------------------------------------------------------------------------------
# Invocations nested 50 levels deep


def test_delegates_nested_50_deep(tmp_path: Path) -> None:
    """§2.1, §2.2, §3.2, §3.3, D-6: 50 invocations nested inside the target's bracket. Without
    includeDelegates only the target's 2 calls are observed and a delegate's forbidden call is
    not seen; with it all 52 calls are, in sequence order; when the nested invocations are the
    target agent itself their completions do not close the bracket and all 52 calls are the
    target's; efficiency counts 52 tool calls and 51 model calls (not the judge call after the
    bracket); fixture replay takes every agent's calls (50 misses)."""
    case = extremes.delegates_case()
    result = grade_case(case, tmp_path)
    (run_id,) = case.expected
    assert result.skipped == []
    assert case.check(result.summaries, case) == []
    assert problem_keys(result, run_id) == []


def test_delegates_nested_50_deep_under_a_start_that_names_no_agent(tmp_path: Path) -> None:
    """§2.1, E-13, E-14: the same 50-deep nesting, but the target's own invocation-started
    (the bracket's first event) names no agent and no modelClass, while every nested start names
    its agent and modelClass `coding`. The bracket's agentId is absent, so there is no target
    agent: no call is observed unless includeDelegates is true, the suite's targetAgentId
    differs (`target-agent-mismatch` at each bracket start), and the model class is not agreed
    (no `evaluatedModelClass`). A nested start must not stand in for the bracket's."""
    depth = extremes.DEPTH
    case = extremes.delegates_case(outer_named=False)
    result = grade_case(case, tmp_path)
    (run_id,) = case.expected
    summary = result.summaries[run_id]
    events = case.events
    outer_starts = [
        seq
        for seq, type_, payload in zip(events.sequences, events.types, events.payloads, strict=True)
        if type_ == "agent.invocation-started" and "agentId" not in json.loads(payload)
    ]
    # task -> (matched, observedCount, forbiddenCount, toolCallCount)
    want_tasks = {
        "other-target-only": (False, 0, 0, depth + 2),
        "other-with-delegates": (True, depth + 2, 0, depth + 2),
        "other-forbidden-hidden": (False, 0, 0, depth + 2),
        "other-forbidden-seen": (False, depth + 2, 1, depth + 2),
        "other-fixtures": (False, 0, 0, depth + 2),
        "self-all-calls": (False, 0, 0, depth + 2),
        "self-forbidden": (False, 0, 0, depth + 2),
    }
    assert len(outer_starts) == len(want_tasks)
    got = {
        "evaluatedModelClass": summary.get("evaluatedModelClass"),
        "tasks": {
            t["taskId"]: (
                t["trajectory"]["matched"],
                t["trajectory"]["observedCount"],
                t["trajectory"]["forbiddenCount"],
                t["efficiency"]["toolCallCount"],
            )
            for t in summary["tasks"]
        },
        "target-agent-mismatch at": sorted(
            seq for code, seq in problem_keys(result, run_id) if code == "target-agent-mismatch"
        ),
    }
    want = {
        "evaluatedModelClass": None,
        "tasks": want_tasks,
        "target-agent-mismatch at": outer_starts,
    }
    assert got == want


# --------------------------------------------------------------------------------------------
# The heavy cases, scaled down (full size: bench/extremes.py)


def test_suite_of_many_tasks_scaled_down(tmp_path: Path) -> None:
    """§3.6, D-13: the 50,000-task generator at 5,000 tasks, every 100th missing: taskCount
    5,000 and an entry per task in suite order, aggregateScore the exact mean (missing tasks
    count 0), passedCount exact, one `task-missing` per missing task and no other problem."""
    case = extremes.many_tasks_case(5_000)
    result = grade_case(case, tmp_path)
    (run_id,) = case.expected
    assert case.check(result.summaries, case) == []
    summary = result.summaries[run_id]
    assert [t["taskId"] for t in summary["tasks"]] == [f"t-{t:06d}" for t in range(5_000)]
    codes = [code for code, _ in problem_keys(result, run_id)]
    assert codes == ["task-missing"] * case.expected[run_id]["missing"]


def test_million_event_generator_scaled_down(tmp_path: Path) -> None:
    """§2.2, D-6, §3.5: the million-event generator at 20 tasks x 5 trials (10,002 events, 100
    per trial): 40 tool calls and 16 model calls per trial in efficiency (the judge call left
    out), every trajectory matched, passed trials counted exactly, cost summed over every model
    and judge call."""
    case = extremes.million_case(tasks=20, trials=5)
    assert len(case.events) == 20 * 5 * 100 + 2
    result = grade_case(case, tmp_path)
    (run_id,) = case.expected
    assert case.check(result.summaries, case) == []
    summary = result.summaries[run_id]
    cost = Fraction(0)
    for payload in case.events.payloads:
        doc = json.loads(payload)
        if "costEstimateUsd" in doc:
            cost += Fraction(str(doc["costEstimateUsd"]))
    assert close(summary["totalCostUsd"], cost)
    assert problem_keys(result, run_id) == []
