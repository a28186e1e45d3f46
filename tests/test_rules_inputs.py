"""CONTRACT §1.1: type names (D-1), payload aliases (D-2), duplicates, bad payloads, gaps (D-3).

Every test builds a small log, grades it with `grade_events` and checks what the contract says.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalbatch import api
from evalbatch.reference import grade_reference
from tests.helpers import (
    assert_content_free,
    make_suite,
    run_main,
    slow_except,
    slow_param,
    standard_run,
    write_events,
    write_json,
)
from tests.logbuilder import (
    AGENT,
    RUN,
    RUN2,
    SUITE_ID,
    VERSION,
    LogBuilder,
    codes_of,
    expect,
    golden,
    grade,
    iso,
    problems_of,
    severity_of,
    suite,
    summary_of,
    task_of,
    traj,
)

# --------------------------------------------------------------------------------------------------
# D-1 type names
# --------------------------------------------------------------------------------------------------


def test_d1_v1_type_names_are_read_as_their_v2_names() -> None:
    """D-1: agent.invocation.started/.completed, agent.toolCalled, agent.toolReturned map to v2."""
    log = LogBuilder()
    log.eval_started()  # t=0
    inv = log.started(type_="agent.invocation.started", model_class="coding")  # t=100
    log.call("crm:lookup", {"id": 1}, type_="agent.toolCalled")  # t=200
    log.add(
        "agent.toolReturned",
        {"agentId": AGENT, "toolName": "crm:lookup", "callId": "call-2", "status": "ok"},
    )  # t=300
    log.usage(inputTokens=7, outputTokens=3, costEstimateUsd=0.25)  # t=400
    log.completed(inv, type_="agent.invocation.completed")  # t=500
    log.scored("task-a")
    log.eval_completed()
    s = suite(golden("task-a", traj("exact", [expect("crm:lookup", {"id": 1}, "exact")])))

    result = grade(log, [s])
    summary = summary_of(result)
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
        "inputTokens": 7,
        "outputTokens": 3,
    }
    assert task["latencyMs"] == 400  # the v1 bracket closes: 100 ms -> 500 ms
    assert task["passed"] is True
    assert summary["evaluatedModelClass"] == "coding"
    assert "bracket-missing" not in codes_of(result)
    assert "bracket-unclosed" not in codes_of(result)


def test_d1_unknown_types_are_ignored_never_an_error() -> None:
    """D-1: unknown types (vendor types, misspellings of graded types) are ignored."""
    log = LogBuilder()
    log.eval_started()
    inv = log.started()
    log.call("crm:lookup", {"id": 1})
    log.add("acme.custom.event", {"anything": [1, 2, 3]})
    log.add("agent.reasoned", {"agentId": AGENT, "reasoning": "thinking"})
    # not a graded type: a misspelled tool call to a forbidden tool must not count
    log.add(
        "agent.tool_called",
        {"agentId": AGENT, "toolName": "billing:refund-all", "callId": "c9", "inputs": {}},
    )
    log.add("provider.usage.extra", {"inputTokens": 99, "outputTokens": 99, "costEstimateUsd": 9})
    log.add("acme.other", ["not", "an", "object"])
    log.completed(inv)
    log.scored("task-a")
    log.eval_completed()
    s = suite(golden("task-a", traj("exact", ["crm:lookup"], forbidden=["billing:refund-all"])))

    result = grade(log, [s])
    task = task_of(summary_of(result), "task-a")
    assert task["trajectory"]["matched"] is True
    assert task["trajectory"]["forbiddenCount"] == 0
    assert task["efficiency"]["toolCallCount"] == 1
    assert task["efficiency"]["modelCallCount"] == 0
    assert "costUsd" not in task
    assert result.skipped == []
    assert severity_of(result, "payload-invalid") == set()
    assert all(sev != "error" for sev in result.problems["severity"].to_list())


# --------------------------------------------------------------------------------------------------
# D-2 payload aliases
# --------------------------------------------------------------------------------------------------


def _single_call_log(call_payload: dict[str, Any], started_payload: dict[str, Any] | None = None):
    log = LogBuilder()
    log.eval_started()
    started = started_payload or {"invocationId": "inv-1", "agentId": AGENT, "source": "run-api"}
    log.add("agent.invocation-started", started)
    log.add("agent.tool-called", call_payload)
    log.add(
        "agent.invocation-completed",
        {"invocationId": "inv-1", "agentId": AGENT, "outcome": "completed"},
    )
    log.scored("task-a")
    log.eval_completed()
    return log


@pytest.mark.parametrize(
    "call_payload",
    [
        pytest.param(
            {"agentId": AGENT, "toolId": "crm:lookup", "callId": "c1", "inputs": {"id": 7}},
            id="toolId",
        ),
        pytest.param(
            {"agentId": AGENT, "toolName": "crm:lookup", "callId": "c1", "arguments": {"id": 7}},
            id="arguments",
        ),
        pytest.param(
            {
                "agent": {"agentId": AGENT},
                "toolName": "crm:lookup",
                "callId": "c1",
                "inputs": {"id": 7},
            },
            id="agent.agentId",
        ),
        pytest.param(
            {"agentId": AGENT, "toolName": "crm:lookup", "toolCallId": "c1", "inputs": {"id": 7}},
            id="toolCallId",
        ),
        pytest.param(
            {
                "agent": {"agentId": AGENT},
                "toolId": "crm:lookup",
                "toolCallId": "c1",
                "arguments": {"id": 7},
            },
            id="all-aliases",
        ),
    ],
)
def test_d2_tool_call_aliases_are_read(call_payload: dict[str, Any]) -> None:
    """D-2: toolName|toolId, inputs|arguments, agentId|agent.agentId, callId|toolCallId."""
    log = _single_call_log(call_payload)
    s = suite(golden("task-a", traj("exact", [expect("crm:lookup", {"id": 7}, "exact")])))
    task = task_of(summary_of(grade(log, [s])), "task-a")
    assert task["trajectory"]["matched"] is True
    assert task["trajectory"]["observedCount"] == 1
    assert task["trajectory"]["matchedCount"] == 1
    assert task["efficiency"]["toolCallCount"] == 1


def test_d2_agent_alias_on_invocation_started_names_the_target_agent() -> None:
    """D-2: `agent.agentId` on agent.invocation-started names the bracket's (target) agent."""
    started = {"invocationId": "inv-1", "agent": {"agentId": AGENT}, "source": "run-api"}
    call = {"agent": {"agentId": AGENT}, "toolName": "crm:lookup", "callId": "c1", "inputs": {}}
    log = _single_call_log(call, started)
    s = suite(golden("task-a", traj("exact", ["crm:lookup"])), targetAgentId=AGENT)
    result = grade(log, [s])
    task = task_of(summary_of(result), "task-a")
    assert task["trajectory"]["observedCount"] == 1
    assert task["trajectory"]["matched"] is True
    assert "target-agent-mismatch" not in codes_of(result)


ABSENT_INPUTS = object()


@pytest.mark.parametrize(
    ("inputs", "expected_call", "matched"),
    [
        # an absent tool input is the empty object {}
        pytest.param(ABSENT_INPUTS, expect("t:x", {}, "exact"), True, id="absent=={}-exact"),
        slow_param(ABSENT_INPUTS, expect("t:x", {}, "subset"), True, id="absent=={}-subset"),
        pytest.param(ABSENT_INPUTS, expect("t:x", None, "exact"), False, id="absent!=null"),
        slow_param(ABSENT_INPUTS, expect("t:x", {"a": 1}, "subset"), False, id="absent-lacks-a"),
        # an explicit null stays null
        pytest.param(None, expect("t:x", None, "exact"), True, id="null==null-exact"),
        slow_param(None, expect("t:x", {}, "exact"), False, id="null!={}-exact"),
        pytest.param(None, expect("t:x", {}, "subset"), False, id="null-not-object-subset"),
        slow_param(None, expect("t:x", None, "subset"), True, id="null==null-subset"),
        pytest.param({}, expect("t:x", None, "exact"), False, id="{}!=null-exact"),
    ],
)
def test_d2_absent_inputs_are_empty_object_and_null_stays_null(
    inputs: Any, expected_call: dict[str, Any], matched: bool
) -> None:
    """D-2 with §3.2: absent inputs = `{}`; explicit `null` inputs match only `"args": null`."""
    call: dict[str, Any] = {"agentId": AGENT, "toolName": "t:x", "callId": "c1"}
    if inputs is not ABSENT_INPUTS:
        call["inputs"] = inputs
    log = _single_call_log(call)
    s = suite(golden("task-a", traj("exact", [expected_call])))
    task = task_of(summary_of(grade(log, [s])), "task-a")
    assert task["trajectory"]["matched"] is matched
    assert task["trajectory"]["matchedCount"] == (1 if matched else 0)


# --------------------------------------------------------------------------------------------------
# D-3 duplicates
# --------------------------------------------------------------------------------------------------


def with_agent(text: str) -> str:
    """Payload text with `@A` replaced by the target agent's id as a JSON string."""
    return text.replace("@A", json.dumps(AGENT))


def _row(seq: int, type_: str, payload: str, ts: str | None, run: str = RUN) -> dict[str, Any]:
    return {"runId": run, "sequence": seq, "type": type_, "payload": payload, "timestamp": ts}


def test_d3_exact_duplicates_are_one_event_and_keep_the_earliest_timestamp() -> None:
    """D-3: same (runId, sequence, type, payload under D-7) is one event; earliest timestamp kept.

    The kept timestamps show through the bracket-span latency; the kept count through efficiency.
    """
    started_a = with_agent('{"invocationId": "inv-1", "agentId": @A, "source": "run-api"}')
    started_b = with_agent('{"source":"run-api","agentId":@A,"invocationId":"inv-1"}')
    call_a = with_agent(
        '{"agentId": @A, "toolName": "t:x", "callId": "c1", "inputs": {"n": 1, "m": [1, 2]}}'
    )
    call_b = with_agent(
        '{"inputs": {"m": [1.0, 2], "n": 1.0}, "callId": "c1", "toolName": "t:x", "agentId": @A}'
    )
    completed = with_agent('{"invocationId": "inv-1", "agentId": @A, "outcome": "completed"}')
    scored_a = '{"taskId": "task-a", "score": 1, "passed": true}'
    scored_b = '{"passed": true, "score": 1.0, "taskId": "task-a"}'
    usage = '{"provider": "acme", "model": "m", "inputTokens": 10, "outputTokens": 5}'
    rows = [
        _row(0, "eval.started", json.dumps(_started_payload()), iso(0)),
        _row(1, "agent.invocation-started", started_a, iso(100)),  # the earlier copy
        _row(1, "agent.invocation-started", started_b, iso(150)),
        _row(2, "agent.tool-called", call_b, iso(250)),
        _row(2, "agent.tool-called", call_a, iso(200)),
        _row(3, "provider.usage", usage, iso(300)),
        _row(3, "provider.usage", usage, iso(310)),
        _row(4, "agent.invocation-completed", completed, iso(440)),
        _row(4, "agent.invocation-completed", completed, iso(400)),  # the earlier copy
        _row(5, "eval.scored", scored_a, iso(500)),
        _row(5, "eval.scored", scored_b, iso(520)),
        _row(6, "eval.completed", json.dumps(_completed_payload()), iso(600)),
    ]
    s = suite(golden("task-a", traj("exact", [expect("t:x", {"n": 1, "m": [1, 2]}, "exact")])))
    result = grade(rows, [s])
    summary = summary_of(result)
    task = task_of(summary, "task-a")
    # earliest start 100 ms, earliest completion 400 ms
    assert task["latencyMs"] == 300
    assert task["efficiency"] == {
        "toolCallCount": 1,
        "modelCallCount": 1,
        "inputTokens": 10,
        "outputTokens": 5,
    }
    assert task["trajectory"]["observedCount"] == 1
    assert task["trajectory"]["matched"] is True
    codes = codes_of(result)
    assert "event-conflict" not in codes
    assert "trial-duplicate" not in codes
    assert result.skipped == []


def test_d3_earliest_timestamp_is_compared_as_time_not_text() -> None:
    """D-3: "earliest" is the earliest instant, whatever offset each ISO-8601 copy is written in."""
    started = json.dumps({"invocationId": "inv-1", "agentId": AGENT, "source": "run-api"})
    completed = json.dumps({"invocationId": "inv-1", "agentId": AGENT, "outcome": "completed"})
    rows = [
        _row(0, "eval.started", json.dumps(_started_payload()), iso(0)),
        # 13:00:00.100+01:00 is 12:00:00.100Z: earlier than 12:00:00.150Z, though larger as text
        _row(1, "agent.invocation-started", started, "2026-10-14T12:00:00.150Z"),
        _row(1, "agent.invocation-started", started, "2026-10-14T13:00:00.100+01:00"),
        _row(2, "agent.invocation-completed", completed, iso(400)),
        _row(3, "eval.scored", json.dumps({"taskId": "task-a", "score": 1, "passed": True}), None),
        _row(4, "eval.completed", json.dumps(_completed_payload()), None),
    ]
    result = grade(rows, [suite(golden("task-a"))])
    assert task_of(summary_of(result), "task-a")["latencyMs"] == 300


def _started_payload() -> dict[str, Any]:
    return {
        "suiteId": "acme.team.evals.support",
        "suiteVersion": "1.0.0",
        "taskCount": 1,
        "modes": ["golden"],
    }


def _completed_payload() -> dict[str, Any]:
    return {"aggregateScore": 1, "passed": True, "taskCount": 1, "passedCount": 1}


def _two_run_log(conflict_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """RUN carries the given extra rows; RUN2 is a clean one-task run."""
    first = LogBuilder(RUN)
    first.eval_started()
    first.trial("task-a", usage=[{"costEstimateUsd": 0.5}])
    first.eval_completed()
    second = LogBuilder(RUN2)
    second.eval_started()
    second.trial("task-a", usage=[{"costEstimateUsd": 0.25}])
    second.eval_completed()
    return [*first.rows, *conflict_rows, *second.rows]


@pytest.mark.slow
@pytest.mark.parametrize(
    "other",
    [
        pytest.param(
            {"type": "eval.scored", "payload": '{"taskId": "task-a", "score": 0, "passed": false}'},
            id="different-payload",
        ),
        pytest.param(
            {"type": "agent.decided", "payload": '{"agentId": "x", "decision": "respond"}'},
            id="different-type",
        ),
    ],
)
def test_d3_conflicting_duplicate_skips_the_run_and_grades_the_others(
    other: dict[str, Any],
) -> None:
    """D-3/§6: same (runId, sequence), different content: the run is not graded (event-conflict);
    another run in the same log is still graded."""
    base = LogBuilder(RUN)
    base.eval_started()
    base.trial("task-a", usage=[{"costEstimateUsd": 0.5}])
    base.eval_completed()
    scored_row = next(r for r in base.rows if r["type"] == "eval.scored")
    clash = {**scored_row, **other}
    rows = _two_run_log([clash])
    result = grade(rows, [suite(golden("task-a"))])
    assert RUN not in result.summaries
    assert RUN in result.skipped
    assert severity_of(result, "event-conflict") == {"error"}
    graded = summary_of(result, RUN2)
    assert graded["passed"] is True
    assert graded["totalCostUsd"] == pytest.approx(0.25)
    assert RUN2 not in result.skipped
    assert result.exit_code == 3


GRADED_TYPES = [
    "agent.invocation-started",
    "agent.invocation-completed",
    "agent.tool-called",
    "agent.toolCalled",  # the v1 spelling of a graded type (D-1) is a graded type too
    "provider.usage",
    "eval.started",
    "eval.scored",
    "eval.completed",
]


@pytest.mark.parametrize(
    "type_",
    slow_except(GRADED_TYPES, fast=["agent.tool-called", "agent.toolCalled", "eval.scored"]),
)
def test_d3_non_json_payload_on_a_graded_type_makes_the_run_ungradable(type_: str) -> None:
    """D-3: a payload that is not JSON on a type grading reads -> `payload-invalid`, run skipped;
    another run of the same log is still graded."""
    log = LogBuilder(RUN)
    log.eval_started()
    inv = log.started()
    log.call("t:x", {})
    log.completed(inv)
    log.scored("task-a")
    log.eval_completed()
    target = next((r for r in log.rows if r["type"] == type_), None)
    if target is None:  # a type the base log does not carry: add it inside the bracket
        log.rows.insert(2, {**log.rows[2], "type": type_})
        for number, row in enumerate(log.rows):  # keep sequences unique
            row["sequence"] = number
        target = log.rows[2]
    target["payload"] = '{"taskId": "task-a", "score": 1,'  # truncated JSON
    second = LogBuilder(RUN2)
    second.eval_started()
    second.trial("task-a")
    second.eval_completed()

    result = grade([log, second], [suite(golden("task-a"))])
    assert RUN not in result.summaries
    assert RUN in result.skipped
    assert severity_of(result, "payload-invalid") == {"error"}
    assert summary_of(result, RUN2)["passed"] is True


@pytest.mark.slow
@pytest.mark.parametrize("type_", ["agent.tool-returned", "agent.reasoned", "acme.custom.event"])
def test_d3_non_json_payload_on_another_type_is_a_warning_and_ignored(type_: str) -> None:
    """D-3: a non-JSON payload on a type grading does not read is a warning; the run is graded."""
    log = LogBuilder()
    log.eval_started()
    inv = log.started()
    log.call("t:x", {})
    log.add(type_, raw="not json {")
    log.completed(inv)
    log.scored("task-a", score=0.5, passed=True)
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"), thresholds={"passScore": 0.5})])
    summary = summary_of(result)
    assert summary["passed"] is True
    assert task_of(summary, "task-a")["score"] == 0.5
    assert "payload-invalid" not in codes_of(result)
    assert severity_of(result, "payload-ignored") == {"warning"}
    assert result.skipped == []


def test_d3_sequence_gap_is_a_warning_and_the_run_is_graded() -> None:
    """D-3: a gap in `sequence` is a warning."""
    log = LogBuilder()
    log.eval_started()
    log.skip(3)
    log.trial("task-a", calls=["t:x"])
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"))])
    summary = summary_of(result)
    assert summary["passed"] is True
    assert severity_of(result, "sequence-gap") == {"warning"}
    assert result.skipped == []


@pytest.mark.slow
def test_d3_row_order_means_nothing() -> None:
    """§1.1: order is (runId, sequence), not the order of rows in the input."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", calls=[("t:a", {}), ("t:b", {})], usage=[{"costEstimateUsd": 0.5}])
    log.trial("task-b", calls=[("t:c", {})])
    log.eval_completed()
    s = suite(
        golden("task-a", traj("exact", ["t:a", "t:b"])),
        golden("task-b", traj("exact", ["t:c"])),
    )
    forward = grade(log, [s])
    backward = grade(list(reversed(log.rows)), [s])
    assert summary_of(forward) == summary_of(backward)
    assert task_of(summary_of(backward), "task-a")["trajectory"]["matched"] is True


def test_d3_duplicate_eval_started_rows_are_one_event_not_a_restart() -> None:
    """D-3 with §2.1: an exported-twice eval.started is one event, not a second eval.started."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a")
    log.eval_completed()
    rows = [*log.rows, dict(log.rows[0])]
    result = grade(rows, [suite(golden("task-a"))])
    assert summary_of(result)["passed"] is True
    assert "eval-restarted" not in codes_of(result)
    assert result.skipped == []


def test_d3_warnings_only_keep_exit_code_0() -> None:
    """§6 with D-3: a run with warnings only is graded and nothing is skipped."""
    log = LogBuilder()
    log.eval_started()
    log.skip(2)
    log.trial("task-a")
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"))])
    assert severity_of(result, "sequence-gap") == {"warning"}
    assert result.exit_code == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("type_", "payload", "code"),
    [
        ("eval.scored", '{"taskId": "task-a", "score": NaN, "passed": true}', "payload-invalid"),
        (
            "agent.tool-called",
            with_agent(
                '{"agentId": @A, "toolName": "t:x", "callId": "c", "inputs": {"v": Infinity}}'
            ),
            "payload-invalid",
        ),
        (
            "agent.reasoned",
            '{"agentId": "a", "reasoning": "r", "confidence": NaN}',
            "payload-ignored",
        ),
    ],
    ids=["NaN-on-eval.scored", "Infinity-on-tool-called", "NaN-on-ignored-type"],
)
def test_d3_nan_and_infinity_are_not_json(type_: str, payload: str, code: str) -> None:
    """D-3/D-7: NaN and Infinity are not JSON: on a graded type the run is ungradable, on any
    other type it is a warning."""
    log = LogBuilder()
    log.eval_started()
    inv = log.started()
    log.add(type_, raw=payload)
    log.completed(inv)
    if type_ != "eval.scored":
        log.scored("task-a")
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"))])
    if code == "payload-invalid":
        assert RUN not in result.summaries
        assert severity_of(result, "payload-invalid") == {"error"}
    else:
        assert summary_of(result)["passed"] is True
        assert severity_of(result, "payload-ignored") == {"warning"}


def test_d7_repeated_key_in_a_payload_last_one_wins() -> None:
    """D-7: a repeated key keeps the last value, as JSON parsers do (here eval.scored.score)."""
    log = LogBuilder()
    log.eval_started()
    log.bracket()
    log.add(
        "eval.scored",
        raw='{"taskId": "task-a", "score": 0, "passed": false, "score": 1, "passed": true}',
    )
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"))])
    task = task_of(summary_of(result), "task-a")
    assert task["score"] == 1
    assert task["passed"] is True


@pytest.mark.slow
@pytest.mark.parametrize(
    "call",
    [
        '{"agentId": @A, "toolName": "t:decoy", "callId": "c", "toolName": "t:x", "inputs": {}}',
        '{"agentId": @A, "tool\\u004eame": "t:decoy", "callId": "c", "toolName": "t:x"}',
        '{"agentId": "decoy", "toolName": "t:x", "callId": "c", "agentId": @A}',
        '{"agentId": @A, "toolName": "t:decoy", "callId": "c", "tool\\u004eame": "t:x"}',
        '{"agentId": @A, "tool\\u004eame": "t:x", "callId": "c"}',
        '{"agent": {"agentId": "decoy", "agentId": @A}, "toolName": "t:x", "callId": "c"}',
    ],
    ids=["tool-name", "escaped-key", "agent-id", "escaped-key-last", "escaped-key-alone", "agent"],
)
def test_d7_repeated_key_in_a_tool_call_last_one_wins(call: str) -> None:
    """D-7, E-26: a tool call naming a field twice is read the JSON way, the last value standing
    (DuckDB's parser would keep the first, and the trajectory would miss its call)."""
    log = LogBuilder()
    log.eval_started()
    inv = log.started()
    log.add("agent.tool-called", raw=with_agent(call))
    log.completed(inv)
    log.scored("task-a")
    log.eval_completed()
    result = grade(log, [suite(golden("task-a", traj("exact", ["t:x"])))])
    assert task_of(summary_of(result), "task-a")["trajectory"]["matched"] is True


def test_d7_repeated_key_in_a_usage_event_last_one_wins() -> None:
    """D-7, E-26: a provider.usage naming a token count twice counts the last value."""
    log = LogBuilder()
    log.eval_started()
    inv = log.started()
    log.add(
        "provider.usage",
        raw='{"provider": "p", "model": "m", "inputTokens": 99, "outputTokens": 5, '
        '"inputTokens": 7}',
    )
    log.completed(inv)
    log.scored("task-a")
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"))])
    assert task_of(summary_of(result), "task-a")["efficiency"]["inputTokens"] == 7


@pytest.mark.slow
@pytest.mark.parametrize(
    ("first", "second"),
    [("9007199254740993", "9007199254740992"), ("0.1000000000000000000001", "0.1")],
    ids=["beyond-2^53", "beyond-double-digits"],
)
def test_d3_duplicates_differing_beyond_double_precision_conflict(first: str, second: str) -> None:
    """D-3 with D-7: payloads equal only after rounding to a double are different content."""
    log = LogBuilder()
    log.eval_started()
    inv = log.started()
    template = '{"agentId": @A, "toolName": "t:x", "callId": "c", "inputs": {"n": NUMBER}}'
    log.add("agent.tool-called", raw=with_agent(template.replace("NUMBER", first)))
    clash = {**log.rows[-1], "payload": with_agent(template.replace("NUMBER", second))}
    log.completed(inv)
    log.scored("task-a")
    log.eval_completed()
    result = grade([*log.rows, clash], [suite(golden("task-a"))])
    assert RUN in result.skipped
    assert severity_of(result, "event-conflict") == {"error"}


# --------------------------------------------------------------------------------------------------
# E-3 rows that cannot be placed
# --------------------------------------------------------------------------------------------------

#: runIds that name no run (E-3): empty, or white space only (Unicode's White_Space)
BLANK_RUN_IDS = ["", " ", "\t\n\r", "\u00a0", "\u3000 \u2028"]


@pytest.mark.parametrize("blank", slow_except(BLANK_RUN_IDS, fast=["", "\u3000 \u2028"]), ids=repr)
def test_e3_empty_or_blank_run_id_names_no_run(blank: str) -> None:
    """E-3: a whole eval run under runId `""` or `" "` was graded, its summary written with
    `"runId": ""`. Such a runId names no run: each row is dropped as a null runId's is (one
    `row-invalid` warning, no run), and the other runs are graded."""
    good = LogBuilder(RUN2)
    good.eval_started()
    good.trial("task-a", calls=["t:x"])
    good.eval_completed()
    nameless = LogBuilder(blank)
    nameless.eval_started()
    nameless.trial("task-a", calls=["t:x"])
    nameless.eval_completed()
    s = suite(golden("task-a"))
    result = grade([good, nameless], [s])
    assert list(result.summaries) == [RUN2]
    assert result.skipped == [] and result.exit_code == 0
    nulls = grade([good, *({**row, "runId": None} for row in nameless.rows)], [s])
    assert problems_of(result, None) == problems_of(nulls, None)
    assert [(r["run_id"], r["code"]) for r in problems_of(result, None)] == [(None, "row-invalid")]
    reference = grade_reference([*good.rows, *nameless.rows], [s])
    assert sorted(reference.summaries) == [RUN2]
    assert {p["code"] for p in reference.problems if p["runId"] is None} == {"row-invalid"}


@pytest.mark.parametrize("blank", slow_except(BLANK_RUN_IDS, fast=["", "\u3000 \u2028"]), ids=repr)
def test_e3_blank_run_id_row_is_left_out_of_its_run(blank: str) -> None:
    """E-3: one row of a run written with a blank runId is no row of that run (nor of a run
    `""`): it is dropped as a row with a null runId is, and the run is graded without it."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", calls=["t:x", "t:y"])
    log.eval_completed()
    calls = [i for i, row in enumerate(log.rows) if row["type"] == "agent.tool-called"]
    s = suite(golden("task-a", traj("exact", ["t:x"])))
    rows = [dict(row) for row in log.rows]
    rows[calls[1]]["runId"] = blank
    result = grade(rows, [s])
    rows[calls[1]]["runId"] = None
    nulls = grade(rows, [s])
    assert summary_of(result) == summary_of(nulls)
    assert task_of(summary_of(result), "task-a")["trajectory"]["observedCount"] == 1
    assert problems_of(result, None) == problems_of(nulls, None)
    assert "row-invalid" in codes_of(result, None)


#: sequences that place no row (E-3, E-76): null, negative, past 2^53-1
UNUSABLE_SEQUENCES = [None, -1, 2**53]
#: the run of a log's file that breaks a rule, beside a clean one
BAD_RUN = "acme/run-bad"


def _unplaced_start(sequence: int | None, **started: Any) -> list[dict[str, Any]]:
    """A whole eval run (RUN) whose only eval.started has `sequence`, beside a clean run RUN2."""
    log = LogBuilder()
    log.eval_started(**started)
    log.trial("task-a", calls=["t:x"])
    log.eval_completed()
    good = LogBuilder(RUN2)
    good.eval_started()
    good.trial("task-a", calls=["t:x"])
    good.eval_completed()
    rows = [dict(row) for row in log.rows]
    for row in rows:
        if row["type"] == "eval.started":
            row["sequence"] = sequence
    return rows + good.rows


@pytest.mark.slow
@pytest.mark.parametrize("sequence", UNUSABLE_SEQUENCES, ids=repr)
@pytest.mark.parametrize("started", [{}, {"trialCount": "two"}], ids=["plain", "bad-trialCount"])
def test_e3_eval_run_whose_eval_started_has_no_usable_sequence_is_named_with_its_suite(
    sequence: int | None, started: dict[str, Any]
) -> None:
    """E-1, E-3: a run whose every eval.started has an unusable sequence is an eval run all the
    same, not graded (`sequence-invalid`) and named with the suite its eval.started names; the
    runs table listed it under no suite. Its eval.started places nothing, so it is not also
    `eval-incomplete` or `trial-count-invalid`; the reference grades it alike."""
    rows = _unplaced_start(sequence, **started)
    s = suite(golden("task-a"))
    result = grade(rows, [s])
    assert list(result.summaries) == [RUN2] and result.skipped == [RUN]
    assert result.exit_code == 3
    (run,) = result.runs.filter(result.runs["run_id"] == RUN).to_dicts()
    assert (run["suite_id"], run["suite_version"], run["graded"]) == (SUITE_ID, VERSION, False)
    assert codes_of(result) == ["sequence-invalid"]
    reference = grade_reference(rows, [s])
    assert reference.skipped == {RUN} and sorted(reference.summaries) == [RUN2]
    assert {p["code"] for p in reference.problems if p["runId"] == RUN} == {"sequence-invalid"}


def test_e3_verify_and_explain_name_an_eval_run_whose_eval_started_is_unplaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-1, E-3: `verify` left such a run out (exit 0, `agrees` over the other run alone) and
    `explain` called it no eval run (exit 2). Both now name it as a run not graded, as for any
    other unusable sequence: `verify` does not verify it, `explain` shows its suite (exit 3)."""
    bad = standard_run(BAD_RUN).rows
    for row in bad:
        if row["type"] == "eval.started":
            row["sequence"] = None
    events = write_events(tmp_path / "e.parquet", standard_run("acme/run-good").rows + bad)
    s = write_json(tmp_path / "suites" / "s.json", make_suite()).parent
    code, out, err = run_main(monkeypatch, capsys, "verify", events, "--suites", s)
    assert code == 3 and "not-verified" in out, (out, err)
    assert "2 eval runs" in out
    code, out, err = run_main(
        monkeypatch, capsys, "explain", events, "--suites", s, "--run-id", BAD_RUN
    )
    assert code == 3, (out, err)
    assert f"run {BAD_RUN}" in out and "acme.test.evals.basic@1.0.0" in out
    assert "NOT GRADED" in out and "sequence-invalid" in out
    for text in (out, err):
        assert "Traceback" not in text and "internal error" not in text


# --------------------------------------------------------------------------------------------------
# E-125 a required column's type can hold its values
# --------------------------------------------------------------------------------------------------

#: a required column stored in a type that cannot hold its values: (column, the column written
#: from its values, the kind the message names)
BAD_COLUMN_KINDS: dict[str, tuple[str, Callable[[list[Any]], pa.Array], str]] = {
    "type-as-integers": ("type", lambda v: pa.array(range(len(v)), pa.int64()), "BIGINT"),
    "type-of-nulls": ("type", lambda v: pa.nulls(len(v)), "NULL"),
    "sequence-as-booleans": ("sequence", lambda v: pa.array([x > 0 for x in v]), "BOOLEAN"),
    "payload-as-numbers": ("payload", lambda v: pa.array([7] * len(v), pa.int64()), "BIGINT"),
    "payload-as-lists": (
        "payload",
        lambda v: pa.array([[1, 2]] * len(v), pa.list_(pa.int64())),
        "LIST",
    ),
    "runId-as-booleans": ("runId", lambda v: pa.array([True] * len(v)), "BOOLEAN"),
    "runId-as-bytes": ("runId", lambda v: pa.array([x.encode() for x in v], pa.binary()), "BLOB"),
}


def _bad_kind_file(path: Path, case: str) -> tuple[Path, str, str]:
    """A clean run's log with one column rewritten as BAD_COLUMN_KINDS[case] says."""
    column, rewrite, kind = BAD_COLUMN_KINDS[case]
    table = pq.read_table(write_events(path, standard_run(BAD_RUN).rows))
    index = table.schema.get_field_index(column)
    pq.write_table(table.set_column(index, column, rewrite(table[column].to_pylist())), path)
    return path, column, kind


@pytest.mark.parametrize(
    "case", slow_except(BAD_COLUMN_KINDS, fast=["type-as-integers", "runId-as-bytes"])
)
def test_e125_column_of_a_type_that_cannot_hold_its_values_leaves_its_file_out(
    tmp_path: Path, case: str
) -> None:
    """E-125: a `type` stored as integers was read as type names no event has (every row
    ignored, the run's events gone without a word), a boolean sequence numbered rows 0 and 1
    (`event-conflict`), a payload of numbers or lists held no object (`summary-invalid`), a
    boolean runId graded a run `true`. The file is left out (`columns-missing`), its message
    naming the file, the column and its kind and nothing the file holds; every other file is
    graded, as it is alone (exit 3)."""
    good = write_events(tmp_path / "in" / "good.parquet", standard_run("acme/run-good").rows)
    bad, column, kind = _bad_kind_file(tmp_path / "in" / "bad.parquet", case)
    suites = [write_json(tmp_path / "s.json", make_suite())]
    result = api.grade_paths([tmp_path / "in"], suites)
    alone = api.grade_paths([good], suites)
    assert result.summaries == alone.summaries and list(result.summaries) == ["acme/run-good"]
    (problem,) = [p for p in result.problems.to_dicts() if p["run_id"] is None]
    assert problem["code"] == "columns-missing" and problem["severity"] == "error"
    message = problem["message"]
    assert str(bad) in message and f"column {column} ({column})" in message
    assert kind in message, message
    assert BAD_RUN not in message and "eval.started" not in message
    assert_content_free(message)
    assert result.exit_code == 3


@pytest.mark.parametrize("case", ["type-as-integers", "sequence-as-booleans", "payload-as-lists"])
def test_e125_cli_names_the_file_and_column_exit_3_or_2_when_no_file_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    """E-125 through `run`: beside a good file, the file is skipped with a line naming it and
    its column, the good run is written (exit 3); alone, no file is usable: exit 2 naming the
    file and the column, nothing written. Never a traceback or an internal error."""
    suites = write_json(tmp_path / "suites" / "s.json", make_suite()).parent
    write_events(tmp_path / "in" / "good.parquet", standard_run("acme/run-good").rows)
    bad, column, kind = _bad_kind_file(tmp_path / "in" / "bad.parquet", case)
    out = tmp_path / "out"
    code, stdout, stderr = run_main(
        monkeypatch, capsys, "run", tmp_path / "in", "--suites", suites, "--out", out
    )
    assert code == 3, (stdout, stderr)
    (line,) = [line for line in stderr.splitlines() if "[columns-missing]" in line]
    assert line.strip().startswith("skipped:") and str(bad) in line and f"column {column}" in line
    assert kind in line
    assert [json.loads(x)["runId"] for x in (out / "summaries.jsonl").read_text().splitlines()] == [
        "acme/run-good"
    ]
    code, stdout, stderr = run_main(
        monkeypatch, capsys, "run", bad, "--suites", suites, "--out", tmp_path / "out-bad"
    )
    assert code == 2, (stdout, stderr)
    assert "no usable event file" in stderr and str(bad) in stderr
    assert f"column {column} ({column}) holds {kind}" in stderr
    assert not (tmp_path / "out-bad").exists()
    for text in (stdout, stderr):
        assert "Traceback" not in text and "internal error" not in text
        assert_content_free(text)


def test_e125_a_file_of_no_rows_is_read_whatever_its_column_types(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-125, E-70: a file of no rows loses nothing, so its column types are not held to the
    rule (an empty Arrow table's columns are of type null): beside a good file it changes no
    grade (exit 0), and alone it is an empty log, which --allow-empty writes (exit 0)."""
    suites = write_json(tmp_path / "suites" / "s.json", make_suite()).parent
    good = write_events(tmp_path / "in" / "good.parquet", standard_run("acme/run-good").rows)
    empty = tmp_path / "in" / "empty.parquet"
    columns = ("runId", "sequence", "type", "payload")
    pq.write_table(pa.table({c: pa.array([], pa.null()) for c in columns}), empty)
    result = api.grade_paths([tmp_path / "in"], [suites])
    assert result.summaries == api.grade_paths([good], [suites]).summaries
    assert result.problems.height == 0 and result.exit_code == 0
    out = tmp_path / "out"
    code, stdout, stderr = run_main(
        monkeypatch, capsys, "run", empty, "--suites", suites, "--out", out, "--allow-empty"
    )
    assert code == 0 and "wrote 0 summaries" in stdout, (stdout, stderr)


#: a UUID run id, as its text (DuckDB's: lower case, hyphens)
UUID_RUN = "0f8e6d2c-4b1a-4c3e-9d7f-2a5b8c1e0d93"


#: the columns of other kinds E-125 reads, as (column, kind)
READABLE_KINDS = [
    ("runId", pa.int64()),
    ("runId", pa.uuid()),
    ("sequence", pa.float64()),
    ("sequence", pa.string()),
    ("sequence", pa.decimal128(20, 0)),
    ("payload", pa.binary()),
]


@pytest.mark.parametrize(
    ("column", "kind"),
    slow_except(READABLE_KINDS, fast=[READABLE_KINDS[1], READABLE_KINDS[5]]),
    ids=str,
)
def test_e125_columns_of_the_kinds_the_rule_names_are_read(
    tmp_path: Path, column: str, kind: pa.DataType
) -> None:
    """E-125 refuses only what cannot hold a column's values: a runId of integers or UUIDs (its
    text), a sequence of doubles, decimals or text (E-76), a payload of bytes (E-79) are graded
    as the same log written with the usual types."""
    suites = [write_json(tmp_path / "s.json", make_suite())]
    run_id = UUID_RUN if kind == pa.uuid() else "7"
    usual = write_events(tmp_path / "usual.parquet", standard_run(run_id).rows)
    table = pq.read_table(usual)
    values = table[column].to_pylist()
    if kind == pa.uuid():
        array: pa.Array = pa.ExtensionArray.from_storage(
            kind, pa.array([uuid.UUID(v).bytes for v in values], pa.binary(16))
        )
    else:
        if column == "runId":
            values = [int(v) for v in values]
        elif column == "sequence" and kind == pa.string():
            values = [str(v) for v in values]
        elif column == "payload":
            values = [v.encode() for v in values]
        array = pa.array(values, kind)
    index = table.schema.get_field_index(column)
    other = tmp_path / "other.parquet"
    pq.write_table(table.set_column(index, column, array), other)
    expected = api.grade_paths([usual], suites)
    result = api.grade_paths([other], suites)
    assert result.summaries == expected.summaries and list(result.summaries) == [run_id]
    assert result.problems.to_dicts() == expected.problems.to_dicts()
