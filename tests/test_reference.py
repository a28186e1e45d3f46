"""Tests of the reference grader alone, each naming the contract rule (D-n / E-n) it checks.

They build small event logs with THE log builder (tests/logbuilder.py, here `Log`, its chained
form) so every expected number can be read off the test.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from evalbatch.options import GradeOptions
from evalbatch.reference import (
    args_subset,
    grade_reference,
    grade_trajectory,
    json_equal,
    max_matching,
    parse_json_text,
    timestamp_ms,
)
from tests.logbuilder import (
    ABSENT,
    AGENT,
    HELPER,
    RUN,
    SUITE_ID,
    LogBuilder,
    golden,
    suite,
    trajectory_task,
)
from tests.strategies import logs_and_suites

# --------------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------------


class Log(LogBuilder):
    """THE log builder (tests/logbuilder.py) in this module's vocabulary: `begin`, `trial` and
    `complete` return the log, so a test writes its run as one chain. Events are `STEP_MS` (100 ms)
    apart from EPOCH, sequences from 0, as LogBuilder numbers them."""

    def begin(self, **started: Any) -> Log:
        """`eval.started` (one task, mode golden unless told; `trialCount=` and the like added)."""
        self.eval_started(**started)
        return self

    def trial(  # type: ignore[override]  # returns the log, not the sequence of its eval.scored
        self, task_id: str, calls: Iterable[tuple[str, Any]] = (), **given: Any
    ) -> Log:
        """LogBuilder's trial: a bracket with the `(tool, inputs)` calls and `usage`, `judge`
        usages, then `eval.scored` (score 1, passed true; `ABSENT` leaves a field out)."""
        super().trial(task_id, calls, **given)
        return self

    def complete(self) -> Log:
        """`eval.completed`."""
        self.eval_completed()
        return self


def grade(
    log: LogBuilder | list[dict[str, Any]],
    *suites: dict[str, Any],
    options: GradeOptions | None = None,
):
    rows = log.rows if isinstance(log, LogBuilder) else log
    return grade_reference(rows, list(suites), options or GradeOptions())


def only_summary(result) -> dict[str, Any]:
    assert list(result.summaries) == [RUN], result.problems
    return result.summaries[RUN]


def codes(result) -> list[str]:
    return [p["code"] for p in result.problems]


def task_entry(summary: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(t for t in summary["tasks"] if t["taskId"] == task_id)


# --------------------------------------------------------------------------------------------------
# RFC 0244 §B worked example, D-12 formulas
# --------------------------------------------------------------------------------------------------


def test_rfc_worked_example_trials_n5_c4_k3_all():
    """RFC §B example: n 5, c 4, k 3 → passAtK 1, passHatK 0.4, meanScore 0.8, passed false."""
    expectation = {"match": "in-order", "calls": [{"tool": "crm:lookup-order"}]}
    log = Log().begin(trialCount=5)
    for index in range(5):
        calls = (("crm:lookup-order", {}),) if index != 2 else ()
        log.trial("refund", calls, trialIndex=index)
    log.complete()
    s = suite(
        trajectory_task("refund", expectation), trials={"count": 5, "k": 3, "passRule": "all"}
    )
    summary = only_summary(grade(log, s))
    entry = task_entry(summary, "refund")
    assert entry["trials"] == {
        "n": 5,
        "passedCount": 4,
        "meanScore": 0.8,
        "passAtK": 1.0,
        "passHatK": 0.4,
    }
    assert entry["score"] == 0.8
    assert entry["passed"] is False
    assert summary["trialStats"] == {"k": 3, "passAtK": 1.0, "passHatK": 0.4}
    assert summary["passedCount"] == 0


@pytest.mark.parametrize(
    ("n", "c", "k", "at_k", "hat_k"),
    [
        (3, 0, 2, 0.0, 0.0),
        (3, 1, 2, 2 / 3, 0.0),
        (3, 2, 2, 1.0, 1 / 3),
        (3, 3, 2, 1.0, 1.0),
        (4, 1, 1, 0.25, 0.25),
        (1, 1, 1, 1.0, 1.0),
    ],
)
def test_b_pass_at_k_and_pass_hat_k_formulas(n, c, k, at_k, hat_k):
    """RFC §B / §3.5: passAtK = 1 − C(n−c,k)/C(n,k), passHatK = C(c,k)/C(n,k) (trajectory task)."""
    expectation = {"match": "any-order", "calls": [{"tool": "crm:lookup"}]}
    log = Log().begin()
    for index in range(n):
        log.trial("t", (("crm:lookup", {}),) if index < c else (), trialIndex=index)
    log.complete()
    s = suite(trajectory_task("t", expectation), trials={"count": n, "k": k})
    trials = task_entry(only_summary(grade(log, s)), "t")["trials"]
    assert trials["passAtK"] == pytest.approx(at_k, rel=1e-9, abs=1e-12)
    assert trials["passHatK"] == pytest.approx(hat_k, rel=1e-9, abs=1e-12)


def test_b_score_stderr_is_sample_sd_over_root_task_count():
    """§3.6: scoreStderr = sample sd of per-task meanScore / √taskCount; omitted below 2 tasks."""
    log = Log().begin()
    log.trial("a", score=1).trial("b", score=0.5).trial("c", score=0).complete()
    s = suite(golden("a"), golden("b"), golden("c"), trials={"count": 1})
    stats = only_summary(grade(log, s))["trialStats"]
    assert stats["scoreStderr"] == pytest.approx(0.5 / 3**0.5, rel=1e-12)

    log1 = Log().begin().trial("a").complete()
    stats1 = only_summary(grade(log1, suite(golden("a"), trials={"count": 1})))["trialStats"]
    assert "scoreStderr" not in stats1


# --------------------------------------------------------------------------------------------------
# RFC 0244 Conformance: the five trajectory tasks (§3.1, §3.2)
# --------------------------------------------------------------------------------------------------

LOOKUP = {"tool": "crm:lookup-order", "argsMatch": "ignore"}
REFUND = {"tool": "billing:refund", "args": {"amountMinor": 4200}, "argsMatch": "subset"}


def test_conformance_in_order_match_with_args_subset():
    """§3.2 in-order + D-8 subset: extra calls allowed, extra argument keys allowed."""
    expectation = {"match": "in-order", "calls": [LOOKUP, REFUND]}
    calls = (
        ("crm:lookup-order", {"orderId": "A-1"}),
        ("mail:send", {}),
        ("billing:refund", {"amountMinor": 4200, "reason": "late"}),
    )
    log = Log().begin().trial("in-order-match", calls).complete()
    entry = task_entry(
        only_summary(grade(log, suite(golden("in-order-match", expectation)))), "in-order-match"
    )
    assert entry["trajectory"] == {
        "mode": "in-order",
        "matched": True,
        "expectedCount": 2,
        "observedCount": 3,
        "matchedCount": 2,
        "forbiddenCount": 0,
    }
    assert entry["passed"] is True and entry["score"] == 1.0


def test_conformance_wrong_order_is_unmatched_and_fails():
    """§3.2 in-order: the right calls in the wrong order do not match; the task must not pass."""
    expectation = {"match": "in-order", "calls": [LOOKUP, REFUND]}
    calls = (("billing:refund", {"amountMinor": 4200}), ("crm:lookup-order", {}))
    log = Log().begin().trial("wrong-order", calls, score=1, passed=True).complete()
    entry = task_entry(
        only_summary(grade(log, suite(golden("wrong-order", expectation)))), "wrong-order"
    )
    assert entry["trajectory"]["matched"] is False
    assert entry["trajectory"]["matchedCount"] == 2  # mode-independent
    assert entry["passed"] is False
    assert entry["score"] == 1.0  # the output score stays (RFC §A, D-10)


def test_conformance_forbidden_hit():
    """§3.2: a call to a forbidden tool unmatches whatever the mode; forbiddenCount 1."""
    expectation = {"match": "any-order", "calls": [LOOKUP], "forbidden": ["billing:refund-all"]}
    calls = (("crm:lookup-order", {}), ("billing:refund-all", {}))
    log = Log().begin().trial("forbidden-hit", calls).complete()
    entry = task_entry(
        only_summary(grade(log, suite(golden("forbidden-hit", expectation)))), "forbidden-hit"
    )
    assert entry["trajectory"] == {
        "mode": "any-order",
        "matched": False,
        "expectedCount": 1,
        "observedCount": 2,
        "matchedCount": 1,
        "forbiddenCount": 1,
    }
    assert entry["passed"] is False


def test_conformance_trajectory_only_subset_with_repeats():
    """§3.2 subset: every observed call matches some expected call, repeats allowed; kind
    trajectory scores 1 when matched (§3.4)."""
    expectation = {"match": "subset", "calls": [LOOKUP, {"tool": "billing:refund"}]}
    calls = (("crm:lookup-order", {}), ("crm:lookup-order", {"x": 1}), ("billing:refund", {}))
    log = Log().begin().trial("subset-repeats", calls, score=ABSENT, passed=ABSENT).complete()
    result = grade(log, suite(trajectory_task("subset-repeats", expectation)))
    entry = task_entry(only_summary(result), "subset-repeats")
    assert entry["trajectory"] == {
        "mode": "subset",
        "matched": True,
        "expectedCount": 2,
        "observedCount": 3,
        "matchedCount": 2,
        "forbiddenCount": 0,
    }
    assert entry["score"] == 1.0 and entry["passed"] is True
    # D-11 concerns golden/rubric only: a trajectory task's missing host score is no problem.
    assert "score-invalid" not in codes(result) and "passed-invalid" not in codes(result)


def test_conformance_exact_args_mismatch():
    """§3.2 exact with argsMatch exact: one extra argument key is a mismatch; score 0."""
    expectation = {
        "match": "exact",
        "calls": [{"tool": "crm:lookup-order", "args": {"orderId": "A-1"}, "argsMatch": "exact"}],
    }
    calls = (("crm:lookup-order", {"orderId": "A-1", "verbose": True}),)
    log = Log().begin().trial("exact-args-mismatch", calls).complete()
    entry = task_entry(
        only_summary(grade(log, suite(trajectory_task("exact-args-mismatch", expectation)))),
        "exact-args-mismatch",
    )
    assert entry["trajectory"]["matched"] is False
    assert entry["trajectory"]["matchedCount"] == 0
    assert entry["score"] == 0.0 and entry["passed"] is False


def test_subset_mode_rejects_a_tool_outside_calls_and_empty_observed_matches():
    """§3.2 subset: no tool outside `calls`; `O` empty matches."""
    expectation = {"match": "subset", "calls": [LOOKUP]}
    assert grade_trajectory(expectation, [("mail:send", {})])["matched"] is False
    assert grade_trajectory(expectation, [])["matched"] is True


def test_exact_mode_needs_equal_length():
    """§3.2 exact: |O| = |E| and O[i] matches E[i]."""
    expectation = {"match": "exact", "calls": [LOOKUP]}
    assert grade_trajectory(expectation, [("crm:lookup-order", {})])["matched"] is True
    two = [("crm:lookup-order", {}), ("crm:lookup-order", {})]
    assert grade_trajectory(expectation, two)["matched"] is False


# --------------------------------------------------------------------------------------------------
# any-order is bipartite matching, not greedy (§3.2)
# --------------------------------------------------------------------------------------------------


def _greedy_any_order(expectation: dict[str, Any], observed: list[tuple[str, Any]]) -> bool:
    """The peer's greedy pairing: each expected call takes the first free observed match."""
    from evalbatch.reference import call_matches

    used: set[int] = set()
    for spec in expectation["calls"]:
        for j, (tool, inputs) in enumerate(observed):
            if j not in used and call_matches(spec, tool, inputs):
                used.add(j)
                break
        else:
            return False
    return True


def test_any_order_uses_maximum_bipartite_matching_not_greedy():
    """§3.2 any-order: E=[A{x:1} subset, A{x:1,y:2} subset], O=[A(x=1,y=2), A(x=1)].

    Greedy gives O[0] to E[0] and then finds nothing for E[1]; the assignment E[0]→O[1],
    E[1]→O[0] exists, so the trajectory matches.
    """
    expectation = {
        "match": "any-order",
        "calls": [
            {"tool": "crm:lookup", "args": {"x": 1}, "argsMatch": "subset"},
            {"tool": "crm:lookup", "args": {"x": 1, "y": 2}, "argsMatch": "subset"},
        ],
    }
    observed = [("crm:lookup", {"x": 1, "y": 2}), ("crm:lookup", {"x": 1})]
    assert _greedy_any_order(expectation, observed) is False  # the case is a real trap
    block = grade_trajectory(expectation, observed)
    assert block["matched"] is True and block["matchedCount"] == 2

    log = Log().begin().trial("t", tuple(observed)).complete()
    entry = task_entry(only_summary(grade(log, suite(trajectory_task("t", expectation)))), "t")
    assert entry["trajectory"]["matched"] is True and entry["passed"] is True


def test_max_matching_counts_one_to_one_pairs():
    """§3.2 matchedCount: a maximum one-to-one matching, ignoring order."""
    assert max_matching([[True, True], [True, False]]) == 2
    assert max_matching([[True, False], [True, False]]) == 1
    assert max_matching([]) == 0


# --------------------------------------------------------------------------------------------------
# D-7 JSON equality, D-8 subset
# --------------------------------------------------------------------------------------------------


def test_d7_numbers_compare_by_exact_decimal_value():
    """D-7: 1 equals 1.0, -0 equals 0, and integers beyond 2^53 stay exact."""
    assert json_equal(parse_json_text("1"), parse_json_text("1.0"))
    assert json_equal(parse_json_text("-0"), parse_json_text("0"))
    assert json_equal(parse_json_text("1e2"), 100)
    assert not json_equal(parse_json_text("9007199254740993"), parse_json_text("9007199254740992"))
    assert not json_equal(parse_json_text("0.1"), parse_json_text("0.10000000000000001"))


def test_d7_booleans_are_not_numbers_and_null_equals_only_null():
    """D-7: true ≠ 1, false ≠ 0, null = null only."""
    assert not json_equal(True, 1)
    assert not json_equal(parse_json_text("false"), parse_json_text("0"))
    assert json_equal(None, None)
    assert not json_equal(None, {})
    assert not json_equal("1", 1)


def test_d7_objects_ignore_key_order_and_last_repeated_key_wins():
    """D-7: key order ignored; a repeated key keeps its last value; arrays are ordered."""
    assert json_equal(parse_json_text('{"a":1,"b":[1,2]}'), parse_json_text('{"b":[1,2.0],"a":1}'))
    assert json_equal(parse_json_text('{"a":1,"a":2}'), {"a": 2})
    assert not json_equal([1, 2], [2, 1])
    assert not json_equal({"a": 1}, {"a": 1, "b": None})


def test_d7_nan_and_infinity_are_not_json():
    """D-7: NaN and Infinity are not JSON, so a payload holding one is not JSON (D-3)."""
    for text in ("NaN", '{"score": Infinity}', "-Infinity"):
        with pytest.raises(ValueError):
            parse_json_text(text)
    log = Log().begin()
    log.add("eval.scored", raw='{"taskId": "t", "score": NaN, "passed": true}')
    result = grade(log.complete(), suite(golden("t")))
    assert "payload-invalid" in codes(result) and RUN in result.skipped


def test_d7_exact_args_match_in_the_log():
    """D-7 in grading: exact args {"a":1} match inputs {"a":1.0} but not {"a":true}."""
    expectation = {
        "match": "exact",
        "calls": [{"tool": "crm:lookup", "args": {"a": 1}, "argsMatch": "exact"}],
    }
    log = Log().begin()
    log.add(
        "agent.invocation-started", {"invocationId": "i", "agentId": AGENT, "source": "run-api"}
    )
    log.add(
        "agent.tool-called",
        raw=(
            '{"agentId":"acme.agents.support","toolName":"crm:lookup","callId":"c",'
            '"inputs":{"a":1.0}}'
        ),
    )
    log.add(
        "agent.invocation-completed",
        {"invocationId": "i", "agentId": AGENT, "outcome": "completed"},
    )
    log.add("eval.scored", {"taskId": "t"})
    log.trial("u", (("crm:lookup", {"a": True}),))
    log.complete()
    summary = only_summary(
        grade(log, suite(trajectory_task("t", expectation), trajectory_task("u", expectation)))
    )
    assert task_entry(summary, "t")["trajectory"]["matched"] is True
    assert task_entry(summary, "u")["trajectory"]["matched"] is False


def test_d8_subset_semantics():
    """D-8: object args recurse as subsets; arrays/scalars/null must be equal; {} matches any
    object only; non-object args must equal the inputs."""
    assert args_subset({}, {"a": 1})
    assert not args_subset({}, [1])
    assert not args_subset({}, None)
    assert args_subset({"a": {"b": 1}}, {"a": {"b": 1.0, "c": 2}, "d": 3})
    assert not args_subset({"a": [1]}, {"a": [1, 2]})
    assert not args_subset({"a": None}, {})
    assert args_subset({"a": None}, {"a": None})
    assert args_subset([1, 2], [1, 2.0])
    assert not args_subset({"a": 1}, {"a": True})


def test_args_without_args_match_or_without_args():
    """§3.2: no `args` → tool alone decides; `args` without `argsMatch` → ignore;
    `"args": null` under exact matches only a null input."""
    assert grade_trajectory(
        {"match": "exact", "calls": [{"tool": "a:b", "argsMatch": "exact"}]}, [("a:b", {"z": 1})]
    )["matched"]
    assert grade_trajectory(
        {"match": "exact", "calls": [{"tool": "a:b", "args": {"q": 1}}]}, [("a:b", {"z": 1})]
    )["matched"]
    null_exact = {"match": "exact", "calls": [{"tool": "a:b", "args": None, "argsMatch": "exact"}]}
    assert grade_trajectory(null_exact, [("a:b", None)])["matched"]
    assert not grade_trajectory(null_exact, [("a:b", {})])["matched"]


# --------------------------------------------------------------------------------------------------
# D-1 types, D-2 aliases, §2.2 target agent and delegates
# --------------------------------------------------------------------------------------------------


def test_d1_v1_type_names_and_d2_payload_aliases():
    """D-1 v1 spellings map to v2; D-2 toolId/arguments/agent.agentId/toolCallId are read."""
    expectation = {
        "match": "exact",
        "calls": [
            {"tool": "crm:lookup", "args": {"a": 1}, "argsMatch": "exact"},
            {"tool": "crm:lookup", "args": {}, "argsMatch": "exact"},
            {"tool": "crm:lookup", "args": None, "argsMatch": "exact"},
        ],
    }
    log = Log().begin()
    log.add(
        "agent.invocation.started",
        {"invocationId": "i", "agent": {"agentId": AGENT}, "source": "run-api"},
    )
    log.add(
        "agent.toolCalled",
        {
            "agent": {"agentId": AGENT},
            "toolId": "crm:lookup",
            "toolCallId": "c1",
            "arguments": {"a": 1},
        },
    )
    log.add("agent.toolCalled", {"agentId": AGENT, "toolName": "crm:lookup", "callId": "c2"})
    log.add(
        "agent.toolCalled",
        {"agentId": AGENT, "toolName": "crm:lookup", "callId": "c3", "inputs": None},
    )
    log.add(
        "agent.invocation.completed",
        {"invocationId": "i", "agent": {"agentId": AGENT}, "outcome": "completed"},
    )
    log.add("eval.scored", {"taskId": "t"})
    result = grade(log.complete(), suite(trajectory_task("t", expectation)))
    entry = task_entry(only_summary(result), "t")
    assert entry["trajectory"]["matched"] is True
    assert entry["efficiency"]["toolCallCount"] == 3.0
    assert "bracket-unclosed" not in codes(result)


def test_s22_delegate_calls_count_only_with_include_delegates():
    """§2.2: only the target agent's calls unless includeDelegates; forbidden follows suit;
    efficiency counts every agent's calls."""

    def run(include: bool) -> dict[str, Any]:
        expectation = {
            "match": "exact",
            "calls": [{"tool": "crm:lookup"}],
            "forbidden": ["billing:refund"],
            "includeDelegates": include,
        }
        log = Log().begin()
        log.add(
            "agent.invocation-started", {"invocationId": "i", "agentId": AGENT, "source": "run-api"}
        )
        log.add("agent.tool-called", {"agentId": AGENT, "toolName": "crm:lookup", "callId": "1"})
        log.add(
            "agent.invocation-started",
            {"invocationId": "j", "agentId": HELPER, "source": "run-api"},
        )
        log.add(
            "agent.tool-called", {"agentId": HELPER, "toolName": "billing:refund", "callId": "2"}
        )
        log.add(
            "agent.invocation-completed",
            {"invocationId": "j", "agentId": HELPER, "outcome": "completed"},
        )
        log.add("agent.tool-called", {"toolName": "mail:send", "callId": "3"})  # names no agent
        log.add(
            "agent.invocation-completed",
            {"invocationId": "i", "agentId": AGENT, "outcome": "completed"},
        )
        log.add("eval.scored", {"taskId": "t"})
        return task_entry(
            only_summary(grade(log.complete(), suite(trajectory_task("t", expectation)))), "t"
        )

    own = run(False)
    assert own["trajectory"] == {
        "mode": "exact",
        "matched": True,
        "expectedCount": 1,
        "observedCount": 1,
        "matchedCount": 1,
        "forbiddenCount": 0,
    }
    assert own["efficiency"]["toolCallCount"] == 3.0
    everyone = run(True)
    assert everyone["trajectory"]["observedCount"] == 3
    assert everyone["trajectory"]["forbiddenCount"] == 1
    assert everyone["trajectory"]["matched"] is False


def test_s21_target_agent_mismatch_is_a_warning():
    """§2.1: the bracket's agent is the target; a different suite targetAgentId is recorded."""
    log = Log().begin().trial("t", agent="agent.other").complete()
    result = grade(log, suite(golden("t"), targetAgentId=AGENT))
    assert "target-agent-mismatch" in codes(result)
    assert RUN in result.summaries


# --------------------------------------------------------------------------------------------------
# D-3 / E-4 duplicates and payloads, E-5 gaps, E-1, eval span
# --------------------------------------------------------------------------------------------------


def test_d3_exact_duplicates_are_one_event_keeping_the_earliest_timestamp():
    """D-3/E-4: same (runId, sequence, type, D-7-equal payload) is one event; earliest kept."""
    log = Log().begin()
    log.add(
        "agent.invocation-started", {"invocationId": "i", "agentId": AGENT, "source": "run-api"}
    )
    log.add(
        "agent.invocation-completed",
        {"invocationId": "i", "agentId": AGENT, "outcome": "completed"},
    )
    log.add("eval.scored", {"taskId": "t", "score": 1, "passed": True})
    log.complete()
    rows = list(log.rows)
    started = rows[1]
    retry = dict(
        started,
        payload='{"source":"run-api","agentId":"acme.agents.support","invocationId":"i"}',
        timestamp="2026-10-14T11:59:59.000Z",
    )
    rows.append(retry)  # the same event, exported again, earlier stamp
    result = grade(rows, suite(golden("t")))
    summary = only_summary(result)
    assert "event-conflict" not in codes(result)
    # 12:00:00.200 (completed) - 11:59:59.000 (kept started) = 1200 ms
    assert task_entry(summary, "t")["latencyMs"] == 1200


def test_d3_conflicting_duplicates_make_the_run_ungradable():
    """D-3/E-4: one (runId, sequence), different content → event-conflict, run skipped."""
    log = Log().begin().trial("t").complete()
    rows = [*log.rows, dict(log.rows[-2], payload='{"taskId":"t","score":0,"passed":false}')]
    result = grade(rows, suite(golden("t")))
    assert "event-conflict" in codes(result)
    assert RUN in result.skipped and RUN not in result.summaries


def test_d3_payload_invalid_vs_ignored():
    """D-3: bad JSON on a graded type → payload-invalid (error); elsewhere → payload-ignored."""
    log = Log().begin()
    log.add("agent.reasoned", raw="{not json")
    log.trial("t").complete()
    result = grade(log, suite(golden("t")))
    assert ("payload-ignored", "warning") in [(p["code"], p["severity"]) for p in result.problems]
    assert RUN in result.summaries

    bad = Log().begin()
    bad.add("provider.usage", raw='{"provider": "acme",')
    bad.trial("t").complete()
    result = grade(bad, suite(golden("t")))
    assert "payload-invalid" in codes(result) and RUN in result.skipped


def test_e5_sequence_gap_is_a_warning_and_e3_bad_rows():
    """E-5: each gap is one warning; E-3: null runId → row-invalid, null sequence → error."""
    log = Log().begin()
    log.skip(3)
    log.trial("t").complete()
    result = grade(log, suite(golden("t")))
    assert codes(result).count("sequence-gap") == 1
    assert RUN in result.summaries

    stray = LogBuilder()
    stray.add("eval.scored", {"taskId": "t"}, sequence=99, timestamp=None)
    stray.add("agent.reasoned", {}, timestamp=None)
    no_run_id, no_sequence = {**stray.rows[0], "runId": None}, {**stray.rows[1], "sequence": None}
    rows = [*log.rows, no_run_id]
    result = grade(rows, suite(golden("t")))
    assert {
        "runId": None,
        "sequence": 99,
        "code": "row-invalid",
        "severity": "warning",
    } in result.problems

    rows = [*log.rows, no_sequence]
    result = grade(rows, suite(golden("t")))
    assert "sequence-invalid" in codes(result) and RUN in result.skipped


def test_e1_a_run_without_eval_started_is_not_an_eval_run():
    """E-1: no eval.started → no summary, no problem."""
    log = Log()
    log.add("agent.reasoned", raw="{broken")
    log.trial("t")
    result = grade(log, suite(golden("t")))
    assert result.summaries == {} and result.problems == [] and result.skipped == set()


def test_s21_incomplete_eval_is_graded_and_restarted_eval_is_not():
    """§2.1: no eval.completed → eval-incomplete (graded); a second eval.started → skipped;
    an eval.scored after eval.completed belongs to no trial."""
    log = Log().begin().trial("t")
    result = grade(log, suite(golden("t")))
    assert "eval-incomplete" in codes(result) and RUN in result.summaries

    log = Log().begin().trial("t").complete().trial("t", score=0)
    result = grade(log, suite(golden("t")))
    assert "scored-after-completed" in codes(result)
    assert only_summary(result)["aggregateScore"] == 1.0

    log = Log().begin().trial("t").begin().complete()
    result = grade(log, suite(golden("t")))
    assert "eval-restarted" in codes(result) and RUN in result.skipped


def test_s13_suite_conflict_skips_and_identical_copies_are_one():
    """§1.3: two different suites with one id+version → suite-conflict; identical copies are one."""
    log = Log().begin().trial("t").complete()
    s = suite(golden("t"))
    assert RUN in grade(log, s, json.loads(json.dumps(s))).summaries
    other = suite(golden("t"), thresholds={"passScore": 0.5})
    result = grade(log, s, other)
    assert "suite-conflict" in codes(result) and RUN in result.skipped


# --------------------------------------------------------------------------------------------------
# D-4 no suite
# --------------------------------------------------------------------------------------------------


def test_d4_no_suite_grades_the_host_record():
    """D-4: tasks are first-appearance taskIds; no trajectory/fixture checks; suite-missing."""
    log = Log().begin()
    log.trial("b", score=0.5, passed=False).trial("a", (("billing:refund-all", {}),)).complete()
    result = grade(log)
    summary = only_summary(result)
    assert "suite-missing" in codes(result)
    assert [t["taskId"] for t in summary["tasks"]] == ["b", "a"]
    assert summary["taskCount"] == 2 and summary["passedCount"] == 1
    assert summary["aggregateScore"] == 0.75
    assert "trialStats" not in summary
    assert all("trials" not in t and "trajectory" not in t for t in summary["tasks"])
    assert summary["passed"] is False  # default pass score 1.0 (D-15)


def test_d4_no_suite_trial_count_plays_trials_count():
    """D-4: trialCount gives n and k, trial-missing and trial-extra apply."""
    log = Log().begin(trialCount=2)
    log.trial("a", trialIndex=0).trial("a", trialIndex=5).trial("b", trialIndex=1).complete()
    result = grade(log)
    summary = only_summary(result)
    assert task_entry(summary, "a")["trials"] == {
        "n": 2,
        "passedCount": 1,
        "meanScore": 0.5,
        "passAtK": 1.0,
        "passHatK": 0.0,
    }
    assert summary["trialStats"]["k"] == 2
    assert "trial-extra" in codes(result) and codes(result).count("trial-missing") == 2


def test_d4_no_suite_more_than_one_trial_shows_blocks_with_k_1():
    """D-4/E-11: without trialCount, n is the observed count and k = 1."""
    log = Log().begin().trial("a", score=1).trial("a", score=0, passed=False).trial("b").complete()
    summary = only_summary(grade(log))
    assert task_entry(summary, "a")["trials"] == {
        "n": 2,
        "passedCount": 1,
        "meanScore": 0.5,
        "passAtK": 0.5,
        "passHatK": 0.5,
    }
    assert task_entry(summary, "b")["trials"]["n"] == 1
    assert summary["trialStats"]["k"] == 1


def test_d4_no_suite_without_scored_events():
    """D-4: no eval.scored → taskCount 0, aggregateScore 0, no trialStats, not passed."""
    summary = only_summary(grade(Log().begin(trialCount=3).complete()))
    assert summary == {
        "suiteId": SUITE_ID,
        "suiteVersion": "1.0.0",
        "aggregateScore": 0.0,
        "passed": False,
        "taskCount": 0,
        "passedCount": 0,
        "tasks": [],
    }


# --------------------------------------------------------------------------------------------------
# D-5 trial indices, E-8
# --------------------------------------------------------------------------------------------------


def test_d5_trial_indices_explicit_positional_duplicate_extra_invalid():
    """D-5/E-8/E-9: 1.0 counts as 1; absent → position among the task's eval.scored (all
    counted); repeated index → later left out; index ≥ count → trial-extra; bad index → problem."""
    log = Log().begin()
    log.trial("t", trialIndex=1.0, score=0.2)  # index 1
    log.trial("t", score=0.4)  # position 1 → duplicate of 1, left out
    log.trial("t", trialIndex="0", score=0.6)  # invalid → position 2
    log.trial("t", trialIndex=7, score=0.8)  # extra
    log.trial("t", trialIndex=0, score=1.0)  # index 0
    log.complete()
    result = grade(log, suite(golden("t"), trials={"count": 3, "passRule": "all"}))
    entry = task_entry(only_summary(result), "t")
    # kept: index 1 (0.2), index 2 (0.6), index 0 (1.0)
    assert entry["score"] == pytest.approx((0.2 + 0.6 + 1.0) / 3)
    assert entry["trials"]["passedCount"] == 3
    problem_codes = codes(result)
    assert problem_codes.count("trial-duplicate") == 1
    assert problem_codes.count("trial-index-invalid") == 1
    assert problem_codes.count("trial-extra") == 1
    assert "trial-missing" not in problem_codes


def test_d5_left_out_trials_count_for_nothing():
    """D-5: a left-out trial adds no cost, latency or efficiency."""
    log = Log().begin()
    log.trial("t", usage=({"costEstimateUsd": 0.5},))
    log.trial("t", usage=({"costEstimateUsd": 0.25, "inputTokens": 1000},), trialIndex=0)
    log.complete()
    entry = task_entry(only_summary(grade(log, suite(golden("t")))), "t")
    assert entry["costUsd"] == 0.5
    assert entry["efficiency"]["inputTokens"] == 10.0


def test_d13_unknown_task_is_left_out_and_missing_task_counts_against():
    """D-13: unknown taskId → task-unknown; a suite task with no trial → score 0, failed."""
    log = Log().begin().trial("a", usage=({"costEstimateUsd": 0.1},)).trial("zzz").complete()
    s = suite(golden("a"), golden("b", fixtures={"toolResponses": []}), trials={"count": 2, "k": 1})
    result = grade(log, s)
    summary = only_summary(result)
    assert "task-unknown" in codes(result) and "task-missing" in codes(result)
    assert task_entry(summary, "b") == {
        "taskId": "b",
        "score": 0.0,
        "passed": False,
        "costUsd": 0.0,
        "trials": {"n": 2, "passedCount": 0, "meanScore": 0.0, "passAtK": 0.0, "passHatK": 0.0},
        "fixtureMissCount": 0,
    }
    assert summary["taskCount"] == 2
    assert summary["aggregateScore"] == 0.25  # a: (1 + 0)/2, b: 0


def test_d12_missing_trial_counts_as_failed_with_score_0():
    """D-12: a trial the log lacks is a failed trial with score 0 (trial-missing)."""
    log = Log().begin().trial("t", trialIndex=0).trial("t", trialIndex=2).complete()
    result = grade(log, suite(golden("t"), trials={"count": 3, "k": 2, "passRule": "any"}))
    entry = task_entry(only_summary(result), "t")
    assert entry["trials"] == {
        "n": 3,
        "passedCount": 2,
        "meanScore": pytest.approx(2 / 3),
        "passAtK": 1.0,
        "passHatK": pytest.approx(1 / 3),
    }
    assert entry["passed"] is True  # any
    assert codes(result).count("trial-missing") == 1


# --------------------------------------------------------------------------------------------------
# D-9 fixtures and misses
# --------------------------------------------------------------------------------------------------


def _fixture_task(on_miss: str | None) -> dict[str, Any]:
    fixtures: dict[str, Any] = {
        "toolResponses": [
            {
                "tool": "billing:refund",
                "response": {"ok": True},
                "args": {"amountMinor": 4200},
                "argsMatch": "subset",
            },
        ]
    }
    if on_miss is not None:
        fixtures["onMiss"] = on_miss
    return golden("t", fixtures=fixtures)


def _refund_twice_log(modes: tuple[str, ...] = ("golden",)) -> Log:
    calls = (("billing:refund", {"amountMinor": 4200}), ("billing:refund", {"amountMinor": 4200}))
    return Log().begin(modes=modes).trial("t", calls, score=0.9, passed=True).complete()


def test_d9_on_miss_fail_fails_closed_with_score_0():
    """D-9: onMiss fail + a miss → passed false and score 0. Entries are consumed once, so the
    second identical call misses (first-unconsumed selection)."""
    entry = task_entry(only_summary(grade(_refund_twice_log(), suite(_fixture_task("fail")))), "t")
    assert entry["fixtureMissCount"] == 1
    assert entry["score"] == 0.0 and entry["passed"] is False


def test_d9_on_miss_live_and_absent_only_count():
    """D-9: onMiss live and absent onMiss (default `count`) only count misses."""
    for on_miss in ("live", None):
        entry = task_entry(
            only_summary(grade(_refund_twice_log(), suite(_fixture_task(on_miss)))), "t"
        )
        assert entry["fixtureMissCount"] == 1
        assert entry["score"] == 0.9 and entry["passed"] is True


def test_d9_on_miss_default_fail_option():
    """D-9: --on-miss-default fail makes an absent onMiss mean fail."""
    options = GradeOptions(on_miss_default="fail")
    result = grade(_refund_twice_log(), suite(_fixture_task(None)), options=options)
    entry = task_entry(only_summary(result), "t")
    assert entry["score"] == 0.0 and entry["passed"] is False
    # an explicit `live` still only counts
    result = grade(_refund_twice_log(), suite(_fixture_task("live")), options=options)
    assert task_entry(only_summary(result), "t")["passed"] is True


def test_d9_live_shadow_applies_no_fixtures():
    """§3.3: a live-shadow run is not fixtured: fixtureMissCount 0, nothing fails closed."""
    log = _refund_twice_log(modes=("golden", "live-shadow"))
    entry = task_entry(only_summary(grade(log, suite(_fixture_task("fail")))), "t")
    assert entry["fixtureMissCount"] == 0 and entry["passed"] is True


def test_d9_fixture_args_mismatch_is_a_miss_and_entry_without_args_matches_any():
    """§3.3: an entry's args must match under its argsMatch; absent args match anything."""
    task = golden(
        "t",
        fixtures={
            "onMiss": "fail",
            "toolResponses": [
                {"tool": "billing:refund", "args": {"amountMinor": 1}, "argsMatch": "exact"},
                {"tool": "crm:lookup"},
            ],
        },
    )
    calls = (("crm:lookup", [1, 2]), ("billing:refund", {"amountMinor": 4200}))
    log = Log().begin().trial("t", calls).complete()
    entry = task_entry(only_summary(grade(log, suite(task))), "t")
    assert entry["fixtureMissCount"] == 1 and entry["score"] == 0.0


# --------------------------------------------------------------------------------------------------
# D-10 gating, D-11 host data, D-15, D-17, D-18
# --------------------------------------------------------------------------------------------------


def test_d10_gating_score_reads_zero_for_an_unmatched_trajectory():
    """D-10: output score stays 1.0, but `mean` and the suite read gating score 0."""
    expectation = {"match": "exact", "calls": [{"tool": "crm:lookup"}]}
    log = Log().begin()
    log.trial("t", (("mail:send", {}),), score=1, passed=True, trialIndex=0)
    log.trial("t", (("mail:send", {}),), score=1, passed=True, trialIndex=1)
    log.complete()
    s = suite(
        golden("t", expectation),
        trials={"count": 2, "passRule": "mean"},
        thresholds={"passScore": 0.5},
    )
    summary = only_summary(grade(log, s))
    entry = task_entry(summary, "t")
    assert entry["score"] == 1.0 and entry["trials"]["meanScore"] == 1.0
    assert entry["passed"] is False
    assert summary["aggregateScore"] == 1.0 and summary["passed"] is False


def test_d10_fail_closed_trial_gates_at_zero_under_mean():
    """D-10 with D-9: a fail-closed trial has gating 0, so `mean` cannot pass on output scores."""
    task = golden("t", fixtures={"onMiss": "fail", "toolResponses": []})
    log = Log().begin().trial("t", (("crm:lookup", {}),), score=1, trialIndex=0)
    log.trial("t", score=1, trialIndex=1).complete()
    s = suite(task, trials={"count": 2, "passRule": "mean"}, thresholds={"passScore": 0.6})
    summary = only_summary(grade(log, s))
    assert task_entry(summary, "t")["score"] == 0.5
    assert task_entry(summary, "t")["passed"] is False and summary["passed"] is False


def test_d11_bad_host_scores_and_passed():
    """D-11: score missing / "0.5" / true / 1.5 → score 0, passed false; passed missing →
    passed false, score kept. Each records a problem."""
    log = Log().begin()
    log.trial("a", score="0.5").trial("b", score=1.5).trial("c", score=True)
    log.trial("d", score=ABSENT).trial("e", score=0.7, passed=ABSENT).complete()
    s = suite(*(golden(t) for t in "abcde"))
    result = grade(log, s)
    summary = only_summary(result)
    for t in "abcd":
        assert task_entry(summary, t)["score"] == 0.0 and task_entry(summary, t)["passed"] is False
    assert task_entry(summary, "e")["score"] == 0.7 and task_entry(summary, "e")["passed"] is False
    assert codes(result).count("score-invalid") == 4
    assert codes(result).count("passed-invalid") == 1


def test_d15_default_pass_score_option():
    """D-15: absent passScore → --default-pass-score, default 1.0."""
    log = Log().begin().trial("t", score=0.9).complete()
    assert only_summary(grade(log, suite(golden("t"))))["passed"] is False
    summary = only_summary(
        grade(log, suite(golden("t")), options=GradeOptions(default_pass_score=0.8))
    )
    assert summary["passed"] is True


def test_d17_exact_ties_pass():
    """D-17: tasks at 0.7, 0.8, 0.9 against passScore 0.8 are a tie, which passes."""
    log = Log().begin().trial("a", score=0.7).trial("b", score=0.8).trial("c", score=0.9)
    log.complete()
    s = suite(golden("a"), golden("b"), golden("c"), thresholds={"passScore": 0.8})
    assert (0.7 + 0.8 + 0.9) / 3 < 0.8  # float arithmetic alone would fail it
    assert only_summary(grade(log, s))["passed"] is True


def test_d18_no_bracket_no_path():
    """D-18: no bracket → trajectory unmatched whatever the mode, observedCount 0."""
    expectation = {"match": "subset", "calls": [{"tool": "crm:lookup"}]}
    log = Log().begin().trial("t", bracket=False, score=1, passed=True).complete()
    result = grade(log, suite(golden("t", expectation)))
    entry = task_entry(only_summary(result), "t")
    assert entry["trajectory"] == {
        "mode": "subset",
        "matched": False,
        "expectedCount": 1,
        "observedCount": 0,
        "matchedCount": 0,
        "forbiddenCount": 0,
    }
    assert entry["passed"] is False and entry["score"] == 1.0
    assert entry["efficiency"] == {
        "toolCallCount": 0.0,
        "modelCallCount": 0.0,
        "inputTokens": 0.0,
        "outputTokens": 0.0,
    }
    assert "bracket-missing" in codes(result)


# --------------------------------------------------------------------------------------------------
# D-6 judge calls, D-14 cost, efficiency, latency, suite bars, model class
# --------------------------------------------------------------------------------------------------


def test_d6_d14_cost_cache_hit_currency_and_judge_calls():
    """D-14: cacheHit costs 0; non-USD left out (non-usd-cost); null cost → cost-invalid;
    D-6: a judge call (outside the bracket) is in cost, not in efficiency."""
    log = Log().begin()
    log.trial(
        "t",
        usage=(
            {"costEstimateUsd": 0.25, "inputTokens": 100, "outputTokens": 20},
            {"costEstimateUsd": 0.5, "cacheHit": True, "inputTokens": 100, "outputTokens": 20},
            {"costEstimateUsd": 0.125, "currency": "EUR"},
            {"costEstimateUsd": 0.0625, "currency": "usd"},
            {"costEstimateUsd": None},
        ),
        judge=({"costEstimateUsd": 1, "inputTokens": 5000},),
    )
    log.complete()
    result = grade(log, suite(golden("t")))
    summary = only_summary(result)
    entry = task_entry(summary, "t")
    assert entry["costUsd"] == 1.3125
    assert summary["totalCostUsd"] == 1.3125
    assert entry["efficiency"] == {
        "toolCallCount": 0.0,
        "modelCallCount": 5.0,
        "inputTokens": 230.0,
        "outputTokens": 55.0,
    }
    assert codes(result).count("non-usd-cost") == 1
    assert codes(result).count("cost-invalid") == 1


def test_d14_cost_falls_back_to_host_cost_and_is_omitted_without_any():
    """D-14/E-16: no usage cost anywhere → sum eval.scored.costUsd; neither → no cost fields."""
    log = Log().begin().trial("a", costUsd=0.25).trial("b", costUsd=-1).complete()
    result = grade(log, suite(golden("a"), golden("b")))
    summary = only_summary(result)
    assert summary["totalCostUsd"] == 0.25
    assert task_entry(summary, "b")["costUsd"] == 0.0
    assert "cost-invalid" in codes(result)

    bare = only_summary(grade(Log().begin().trial("a").complete(), suite(golden("a"))))
    assert "totalCostUsd" not in bare and "costUsd" not in bare["tasks"][0]


def test_d14_a_non_usd_cost_still_makes_usage_the_cost_source():
    """D-14: any non-negative costEstimateUsd (whatever its currency) blocks the fallback."""
    log = (
        Log()
        .begin()
        .trial("a", usage=({"costEstimateUsd": 2, "currency": "EUR"},), costUsd=0.5)
        .complete()
    )
    summary = only_summary(grade(log, suite(golden("a"))))
    assert summary["totalCostUsd"] == 0.0


def test_d14_usage_tokens_invalid_is_zero_but_still_a_model_call():
    """§2.2: a non-integral or negative token count is a model call counting 0 tokens."""
    log = (
        Log()
        .begin()
        .trial(
            "t",
            usage=(
                {"inputTokens": -1, "outputTokens": 2.5},
                {"inputTokens": 3.0, "outputTokens": 4},
            ),
        )
        .complete()
    )
    result = grade(log, suite(golden("t")))
    efficiency = task_entry(only_summary(result), "t")["efficiency"]
    assert efficiency == {
        "toolCallCount": 0.0,
        "modelCallCount": 2.0,
        "inputTokens": 3.0,
        "outputTokens": 4.0,
    }
    assert codes(result).count("usage-tokens-invalid") == 1


def test_efficiency_is_the_mean_over_observed_trials():
    """§3.5: efficiency fields are means over the task's observed trials."""
    log = Log().begin()
    log.trial("t", (("a:b", {}),) * 3, usage=({"inputTokens": 10},), trialIndex=0)
    log.trial("t", (), trialIndex=1)
    log.complete()
    entry = task_entry(only_summary(grade(log, suite(golden("t"), trials={"count": 3}))), "t")
    assert entry["efficiency"] == {
        "toolCallCount": 1.5,
        "modelCallCount": 0.5,
        "inputTokens": 5.0,
        "outputTokens": 2.5,
    }


def test_latency_host_value_or_bracket_span_mean_rounded_half_up():
    """§3.5/E-17: eval.scored.latencyMs when a number ≥ 0, else the bracket span (an unclosed
    bracket ends at the eval.scored); mean rounded half up."""
    log = Log().begin()
    log.trial("t", latencyMs=100.5, trialIndex=0)
    log.trial("t", latencyMs=-3, trialIndex=1)  # invalid → span: started..completed = 100 ms
    log.trial("t", close=False, trialIndex=2)  # unclosed → started..eval.scored = 100 ms
    log.complete()
    result = grade(log, suite(golden("t"), trials={"count": 3}))
    entry = task_entry(only_summary(result), "t")
    assert entry["latencyMs"] == 100  # (100.5 + 100 + 100) / 3 = 100.1666…
    assert "bracket-unclosed" in codes(result)

    log = Log().begin().trial("a", latencyMs=0.5).trial("b", bracket=False).complete()
    summary = only_summary(grade(log, suite(golden("a"), golden("b"))))
    assert task_entry(summary, "a")["latencyMs"] == 1  # 0.5 rounds half up
    assert "latencyMs" not in task_entry(summary, "b")


def test_s36_declared_bars_cost_and_p95_latency():
    """§3.6: passed also needs totalCostUsd ≤ maxCostUsd and p95 ≤ maxP95LatencyMs; a bar
    that cannot be checked fails the suite."""
    log = Log().begin().trial("a", latencyMs=100, usage=({"costEstimateUsd": 0.5},))
    log.trial("b", latencyMs=900).complete()
    assert (
        only_summary(
            grade(
                log,
                suite(
                    golden("a"), golden("b"), thresholds={"maxCostUsd": 0.5, "maxP95LatencyMs": 900}
                ),
            )
        )["passed"]
        is True
    )
    assert (
        only_summary(grade(log, suite(golden("a"), golden("b"), thresholds={"maxCostUsd": 0.4})))[
            "passed"
        ]
        is False
    )
    assert (
        only_summary(
            grade(log, suite(golden("a"), golden("b"), thresholds={"maxP95LatencyMs": 899}))
        )["passed"]
        is False
    )
    no_cost = Log().begin().trial("a").complete()
    assert (
        only_summary(grade(no_cost, suite(golden("a"), thresholds={"maxCostUsd": 10})))["passed"]
        is False
    )


def test_s36_pass_rule_all_suite_can_pass_without_a_passed_task():
    """§3.6: passRule decides task passed; the suite reads the gating mean and passScore."""
    log = Log().begin().trial("t", trialIndex=0).trial("t", score=0.5, passed=False, trialIndex=1)
    summary = only_summary(
        grade(
            log.complete(), suite(golden("t"), trials={"count": 2}, thresholds={"passScore": 0.75})
        )
    )
    assert summary["passedCount"] == 0 and summary["passed"] is True


def test_e14_evaluated_model_class():
    """E-14: written only when every bracketed counted trial carries the same enum class."""
    log = Log().begin().trial("a", model_class="coding").trial("b", model_class="coding")
    log.trial("c", bracket=False).complete()
    s = suite(golden("a"), golden("b"), golden("c"))
    assert only_summary(grade(log, s))["evaluatedModelClass"] == "coding"
    log = Log().begin().trial("a", model_class="coding").trial("b").complete()
    assert "evaluatedModelClass" not in only_summary(grade(log, s))


def test_s4_summary_field_order():
    """§4: suite and task fields in the contract's order, optional ones only when defined."""
    expectation = {"match": "any-order", "calls": [{"tool": "a:b"}]}
    task = golden("t", expectation, fixtures={"toolResponses": [{"tool": "a:b"}]})
    log = (
        Log()
        .begin()
        .trial(
            "t",
            (("a:b", {}),),
            latencyMs=5,
            model_class="general",
            usage=({"costEstimateUsd": 0.5},),
        )
        .complete()
    )
    summary = only_summary(grade(log, suite(task, trials={"count": 1})))
    assert list(summary) == [
        "suiteId",
        "suiteVersion",
        "aggregateScore",
        "passed",
        "taskCount",
        "passedCount",
        "totalCostUsd",
        "evaluatedModelClass",
        "trialStats",
        "tasks",
    ]
    assert list(summary["tasks"][0]) == [
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


def test_timestamps_parse_exactly():
    """E-17: ISO-8601 with Z or offsets; unparseable → None."""
    assert timestamp_ms("1970-01-01T00:00:01.5Z") == 1500
    assert timestamp_ms("1970-01-01T01:00:00+01:00") == 0
    assert timestamp_ms("yesterday") is None
    assert timestamp_ms(None) is None
    assert parse_json_text("0.5") == Decimal("0.5")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0000-01-01T00:00:00Z", None),
        ("10000-01-01T00:00:00Z", None),
        ("-0001-01-01T00:00:00Z", None),
        ("0001-01-01T00:00:00+01:00", None),  # year 0 in UTC
        ("9999-12-31T23:59:59-01:00", None),  # year 10000 in UTC
        ("0001-01-01T00:00:00Z", -62_135_596_800_000),
        ("0000-12-31T23:00:00-02:00", -62_135_593_200_000),  # year 1 in UTC
        ("10000-01-01T00:30:00+01:00", 253_402_299_000_000),  # year 9999 in UTC
        ("2024-02-29T00:00:00Z", 1_709_164_800_000),
        ("2100-02-29T00:00:00Z", None),
    ],
)
def test_e124_timestamps_name_years_1_to_9999(text: str, expected: int | None) -> None:
    """E-124: a timestamp whose UTC instant is outside years 1 to 9999 does not parse; the
    calendar is the proleptic Gregorian one, year 0 included, as DuckDB reads it."""
    assert timestamp_ms(text) == expected


# --------------------------------------------------------------------------------------------------
# Invariants over generated logs (tests/strategies.py)
# --------------------------------------------------------------------------------------------------

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


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs_and_suites())
def test_reference_invariants_on_generated_logs(drawn):
    """§3.6 / RFC 0081 conformance: passedCount ≤ taskCount, scores in 0..1, passedCount equals
    the passed tasks, every eval run is either summarised or skipped with an error."""
    events, suites = drawn
    result = grade_reference(events, suites)
    eval_runs = {
        e["runId"] for e in events if e["runId"] is not None and e["type"] == "eval.started"
    }
    assert set(result.summaries) | result.skipped == eval_runs
    assert not set(result.summaries) & result.skipped
    errors = {p["runId"] for p in result.problems if p["severity"] == "error"}
    assert errors == result.skipped
    for summary in result.summaries.values():
        json.dumps(summary, allow_nan=False)  # plain JSON values only
        assert 0 <= summary["passedCount"] <= summary["taskCount"] == len(summary["tasks"])
        assert 0.0 <= summary["aggregateScore"] <= 1.0
        assert summary["passedCount"] == sum(1 for t in summary["tasks"] if t["passed"])
        for task in summary["tasks"]:
            assert 0.0 <= task["score"] <= 1.0
            assert [f for f in TASK_FIELDS if f in task] == list(task)
            if "trials" in task:
                trials = task["trials"]
                assert 0 <= trials["passedCount"] <= trials["n"]
                assert 0.0 <= trials["passHatK"] <= trials["passAtK"] <= 1.0
                assert trials["meanScore"] == task["score"]
            if "trajectory" in task:
                block = task["trajectory"]
                assert block["matchedCount"] <= min(block["expectedCount"], block["observedCount"])
                assert not (block["matched"] and block["forbiddenCount"])
