"""One golden case per relation of the SQL stage: a few event rows in, that relation's rows out.

Each case names the relation, the rules its header in `sql/` says it implements (the test id
shows them), the columns it asserts and the exact rows expected, ordered by those columns. The
events go through the whole stage as `evalbatch run` reads them (a Parquet file, `extract`), so a
case sees the relation as grading does. Sequences are numbered from 0 and timestamps are 100 ms
apart (tests/logbuilder.py), so sequence n is at n * 100 ms; comments give the sequences.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from evalbatch import problems
from evalbatch.extract import events_pass, extractor, sql_files, trial_tables
from evalbatch.options import Extractor, Resources
from tests.helpers import slow_except
from tests.logbuilder import LogBuilder, write_raw_events

Rows = list[dict[str, Any]]
Expected = list[tuple[Any, ...]]


@dataclass(frozen=True)
class Golden:
    """A relation's golden case: `build` returns the event rows and the expected rows."""

    relation: str
    rule: str  # the rule ids of the relation's header this case checks
    columns: str  # the columns compared, also the order rows are compared in
    build: Callable[[], tuple[Rows, Expected]]

    @property
    def id(self) -> str:
        """The test id: the relation and its rules ("§2.1" as "s2.1", as test names spell it)."""
        return f"{self.relation} [{self.rule.replace('§', 's')}]"


CASES: dict[str, Golden] = {}


def golden(
    relation: str, rule: str, columns: str
) -> Callable[[Callable[[], tuple[Rows, Expected]]], Callable[[], tuple[Rows, Expected]]]:
    """Register the decorated function as the golden case of `relation`."""

    def register(
        build: Callable[[], tuple[Rows, Expected]],
    ) -> Callable[[], tuple[Rows, Expected]]:
        assert relation not in CASES, f"two golden cases for {relation}"
        CASES[relation] = Golden(relation, rule, columns, build)
        return build

    return register


def again(log: LogBuilder, **changes: Any) -> None:
    """Write the last event's row once more (same runId and sequence), with `changes`."""
    log.rows.append({**log.rows[-1], **changes})


def null_payload(log: LogBuilder) -> None:
    """Make the last event's payload cell null (not the JSON text `null`)."""
    log.rows[-1]["payload"] = None


def started(suite: str = "s", **fields: Any) -> dict[str, Any]:
    """A small eval.started payload."""
    return {"suiteId": suite, "suiteVersion": "1", **fields}


def scored(task: str = "t", **fields: Any) -> dict[str, Any]:
    """A small eval.scored payload."""
    return {"taskId": task, "score": 1, "passed": True, **fields}


def usage(**fields: Any) -> dict[str, Any]:
    """A small provider.usage payload (1 input and 1 output token unless given)."""
    return {"inputTokens": 1, "outputTokens": 1, **fields}


def call(tool: str, agent: str | None = "a1", **fields: Any) -> dict[str, Any]:
    """A small agent.tool-called payload; `agent=None` names no agent."""
    named = {} if agent is None else {"agentId": agent}
    return {**named, "toolName": tool, **fields}


def invocation(invocation_id: str, agent: str | None = "a1", **fields: Any) -> dict[str, Any]:
    """A small invocation bracket payload."""
    named = {} if agent is None else {"agentId": agent}
    return {**named, "invocationId": invocation_id, **fields}


# -- sql/events: the rows of eval runs, each payload parsed once ----------------------------------


@golden("eval_run_ids", "§2.1, E-1", "run_id")
def _eval_run_ids() -> tuple[Rows, Expected]:
    """A run is an eval run when it has an eval.started; other runs are never read further."""
    eval_run, other = LogBuilder("run-a"), LogBuilder("run-b")
    eval_run.add("eval.started", started())
    other.add("agent.tool-called", call("crm:lookup"))
    other.add("eval.scored", scored())
    return eval_run.rows + other.rows, [("run-a",)]


@golden("scan_rows", "§2.1, E-1, D-3", "run_id, sequence, type, payload")
def _scan_rows() -> tuple[Rows, Expected]:
    """The rows of eval runs as read: every row, a duplicated key's rows all kept, types and
    payload cells as written; other runs are not read."""
    log, other = LogBuilder("run-a"), LogBuilder("run-b")
    log.add("eval.started", {})  # 0
    log.add("agent.toolCalled", {"toolName": "crm:a"})  # 1: v1 name, twice
    again(log)
    log.add("custom.note", None)  # 2: a null cell
    null_payload(log)
    other.add("custom.note", {})  # not an eval run
    return log.rows + other.rows, [
        ("run-a", 0, "eval.started", "{}"),
        ("run-a", 1, "agent.toolCalled", '{"toolName": "crm:a"}'),
        ("run-a", 1, "agent.toolCalled", '{"toolName": "crm:a"}'),
        ("run-a", 2, "custom.note", None),
    ]


@golden(
    "event_scan",
    "§2.2, D-1, D-2, D-3, E-6, D-7, E-26, E-61",
    "sequence, type, payload_json, payload_suspect, f, suspect_payload",
)
def _event_scan() -> tuple[Rows, Expected]:
    """Each row read once: v2 types, a null cell read as JSON null, the fields of a graded type
    and its validity from one extraction, ungraded types only checked; NaN, a trailing comma and
    a repeated key flagged with their text, a payload's own key or a tool call's agent key, but
    not a key repeated inside a tool's inputs (compared the JSON way later: D-7, E-26)."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("agent.toolCalled", {"toolName": "crm:a"})  # 1: v1 name, twice
    again(log)
    log.add("custom.note", None)  # 2: a null cell
    null_payload(log)
    log.add("custom.note", raw="{")  # 3: not JSON, not graded
    log.add("provider.usage", raw='{"inputTokens": NaN}')  # 4
    log.add("eval.completed", raw='{"passed": true,}')  # 5
    log.add("eval.scored", raw='{"taskId": "t1", "taskId": "t2"}')  # 6
    log.add("provider.usage", raw='{"inputTokens": 1, "inputTokens": 2}')  # 7: E-26
    log.add("agent.tool-called", raw='{"toolName": "crm:a", "inputs": {"q": 1, "q": 2}}')  # 8
    log.add("agent.tool-called", raw='{"toolName": "crm:a", "note": 1, "note": 2}')  # 9
    log.add("agent.tool-called", raw='{"agent": {"agentId": "x", "agentId": "y"}}')  # 10
    started_f = ['"s"', '"1"', None, None, None]
    call_f = [None, None, '"crm:a"', None, None, None]
    return log.rows, [
        (0, "eval.started", True, False, started_f, None),
        (1, "agent.tool-called", True, False, call_f, None),
        (1, "agent.tool-called", True, False, call_f, None),
        (2, "custom.note", True, False, None, None),
        (3, "custom.note", False, False, None, None),
        (4, "provider.usage", True, True, ["NaN", None, None, None, None], '{"inputTokens": NaN}'),
        (5, "eval.completed", True, True, None, '{"passed": true,}'),
        (
            6,
            "eval.scored",
            True,
            True,
            ['"t1"', None, None, None, None, None],
            '{"taskId": "t1", "taskId": "t2"}',
        ),
        (
            7,
            "provider.usage",
            True,
            True,
            ["1", None, None, None, None],
            '{"inputTokens": 1, "inputTokens": 2}',
        ),
        (8, "agent.tool-called", True, False, [*call_f[:4], '{"q":1,"q":2}', None], None),
        (
            9,
            "agent.tool-called",
            True,
            True,
            call_f,
            '{"toolName": "crm:a", "note": 1, "note": 2}',
        ),
        (
            10,
            "agent.tool-called",
            True,
            True,
            [None, '"x"', None, None, None, None],
            '{"agent": {"agentId": "x", "agentId": "y"}}',
        ),
    ]


@golden("duplicate_row_hashes", "D-3, E-50", "run_id, sequence")
def _duplicate_row_hashes() -> tuple[Rows, Expected]:
    """Every row behind a duplicated key of an eval run, alike or not; other keys and runs not."""
    log, other = LogBuilder("run-a"), LogBuilder("run-b")
    log.add("eval.started", started())  # 0
    log.add("provider.usage", usage())  # 1, twice alike
    again(log)
    log.add("provider.usage", usage())  # 2, three times, one different
    again(log)
    again(log, payload='{"inputTokens": 2}')
    log.add("custom.note", {})  # 3
    other.add("provider.usage", usage())  # not an eval run
    again(other)
    return log.rows + other.rows, [("run-a", 1)] * 2 + [("run-a", 2)] * 3


@golden("duplicate_keys", "D-3", "run_id, sequence")
def _duplicate_keys() -> tuple[Rows, Expected]:
    """Keys of an eval run held by more than one row, equal or not; other runs are not read."""
    log, other = LogBuilder("run-a"), LogBuilder("run-b")
    log.add("eval.started", started())  # 0
    log.add("agent.tool-called", call("crm:lookup"))  # 1, twice alike
    again(log)
    log.add("provider.usage", usage())  # 2, twice with different payloads
    again(log, payload='{"inputTokens": 2}')
    log.add("provider.usage", usage())  # 3, once
    other.add("provider.usage", usage())  # not an eval run
    again(other)
    return log.rows + other.rows, [("run-a", 1), ("run-a", 2)]


@golden("duplicate_events", "D-1, D-3", "run_id, sequence, type, payload")
def _duplicate_events() -> tuple[Rows, Expected]:
    """The rows behind a duplicated key, v1 type names mapped, a null payload cell read as
    `null`, for Python to decide whether they are one event."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("agent.toolCalled", call("crm:b"))  # 1: v1 name, then its v2 name
    again(log, type="agent.tool-called", payload='{"toolName": "crm:a"}')
    log.add("custom.note", None)  # 2: JSON null, then a null cell
    again(log, payload=None)
    log.add("custom.note", {"n": 1})  # 3: not duplicated
    return log.rows, [
        ("run-a", 1, "agent.tool-called", '{"agentId": "a1", "toolName": "crm:b"}'),
        ("run-a", 1, "agent.tool-called", '{"toolName": "crm:a"}'),
        ("run-a", 2, "custom.note", "null"),
        ("run-a", 2, "custom.note", "null"),
    ]


@golden("event_rows", "D-1, E-6, D-3", "run_id, sequence, type, payload")
def _event_rows() -> tuple[Rows, Expected]:
    """One row per event of an eval run: v1 names mapped, a null payload cell read as JSON
    null, a duplicated key kept once with its earliest timestamp."""
    log, other = LogBuilder("run-a"), LogBuilder("run-b")
    log.add("eval.started", {})  # 0
    log.add("agent.invocation.started", {})  # 1: v1 name
    log.add("custom.note", None)  # 2: null cell
    null_payload(log)
    log.add("provider.usage", {"inputTokens": 1})  # 3 at 300 ms, and again at 50 ms
    again(log, timestamp="2026-10-14T12:00:00.050Z", payload='{"inputTokens": 2}')
    other.add("custom.note", {})  # not an eval run
    return log.rows + other.rows, [
        ("run-a", 0, "eval.started", "{}"),
        ("run-a", 1, "agent.invocation-started", "{}"),
        ("run-a", 2, "custom.note", "null"),
        ("run-a", 3, "provider.usage", '{"inputTokens": 2}'),
    ]


@golden(
    "events",
    "§2.2, D-2, D-3",
    "sequence, type, graded_type, payload_json, payload_suspect, f, trial_index_text",
)
def _events() -> tuple[Rows, Expected]:
    """Each payload parsed once: the fields its type's grading reads (aliases side by side),
    whether it is JSON at all (a graded type's payload that is not is a D-3 problem), nothing
    parsed for other types; the trialIndex text kept where a fraction may hide."""
    log = LogBuilder("run-a")
    log.add("eval.started", started(trialCount=2))  # 0
    tool = {"agent": {"agentId": "a2"}, "toolId": "crm:find", "arguments": {"id": 1}}
    log.add("agent.tool-called", tool)  # 1
    log.add("provider.usage", raw="not json")  # 2
    log.add("custom.note", {"taskId": "t"})  # 3: a type grading does not read
    log.add("eval.scored", raw='{"taskId": "t", "trialIndex": 1.5}')  # 4
    return log.rows, [
        (0, "eval.started", True, True, False, ['"s"', '"1"', None, "2", None], None),
        (
            1,
            "agent.tool-called",
            True,
            True,
            False,
            [None, '"a2"', None, '"crm:find"', None, '{"id":1}'],
            None,
        ),
        (2, "provider.usage", True, False, False, None, None),
        (3, "custom.note", False, True, False, None, None),
        (4, "eval.scored", True, True, False, ['"t"', "1.5", None, None, None, None], "1.5"),
    ]


@golden("fixed_event_rows", "D-7", "sequence, type, payload")
def _fixed_event_rows() -> tuple[Rows, Expected]:
    """Payloads DuckDB reads leniently, as a JSON parser reads them: a repeated key of an eval or
    bracket payload keeps its last value; NaN, Infinity and a trailing comma are not JSON (the
    empty text)."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("eval.scored", raw='{"taskId": "t1", "taskId": "t2"}')  # 1
    log.add("provider.usage", raw='{"inputTokens": NaN}')  # 2
    log.add("provider.usage", raw='{"inputTokens": 1,}')  # 3
    log.add("provider.usage", usage())  # 4: plain JSON, not re-read
    return log.rows, [
        (1, "eval.scored", '{"taskId":"t2"}'),
        (2, "provider.usage", ""),
        (3, "provider.usage", ""),
    ]


# -- sql/typed: one relation per event type -------------------------------------------------------


@golden(
    "tool_called_events",
    "§2.2, D-2, D-7",
    "sequence, agent_id, tool_name, inputs, exact_payload IS NOT NULL",
)
def _tool_called_events() -> tuple[Rows, Expected]:
    """agentId | agent.agentId, toolName | toolId, inputs | arguments (absent reads as {}, an
    explicit null stays null); the payload text kept where a number could lose digits."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("agent.tool-called", call("crm:lookup", inputs={"id": 1}))  # 1
    aliases = {"agent": {"agentId": "a2"}, "toolId": "crm:find", "arguments": [1]}
    log.add("agent.toolCalled", aliases)  # 2: v1 name, the second spellings
    log.add("agent.tool-called", call("crm:list", agent=None))  # 3
    log.add("agent.tool-called", call("crm:get", inputs=None))  # 4
    log.add("agent.tool-called", raw='{"toolName": "crm:big", "inputs": 12345678901234567890}')
    return log.rows, [
        (1, "a1", "crm:lookup", '{"id":1}', False),
        (2, "a2", "crm:find", "[1]", False),
        (3, None, "crm:list", "{}", False),
        (4, "a1", "crm:get", "null", False),
        (5, None, "crm:big", "12345678901234567890", True),
    ]


@golden(
    "usage_events",
    "§2.2, D-11, D-14, E-77",
    "sequence, input_tokens, output_tokens, cost_state, cost_usd_estimate, currency_usd, cache_hit",
)
def _usage_events() -> tuple[Rows, Expected]:
    """Tokens only when an integral JSON number in 0..max_tokens(); the cost absent, ok (a number
    in 0..max_cost_usd(), kept as an exact decimal) or invalid; USD unless another currency is
    named; cacheHit only when JSON true."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("provider.usage", usage(inputTokens=10, outputTokens=5, costEstimateUsd=0.25))  # 1
    log.add("provider.usage", usage(inputTokens=1.5, outputTokens="5"))  # 2
    log.add("provider.usage", usage(costEstimateUsd="0.1", currency="eur", cacheHit=True))  # 3
    log.add("provider.usage", usage(costEstimateUsd=-1, currency=None, cacheHit="true"))  # 4
    big = problems.MAX_TOKENS + 1
    log.add("provider.usage", usage(inputTokens=big, costEstimateUsd=2, currency="usd"))  # 5
    return log.rows, [
        (1, 10, 5, "ok", Decimal("0.25"), True, False),
        (2, None, None, "absent", None, True, False),
        (3, 1, 1, "invalid", None, False, True),
        (4, 1, 1, "invalid", None, True, False),
        (5, None, 1, "ok", Decimal(2), True, False),
    ]


@golden("bracket_events", "§2.1, D-2", "sequence, type, agent_id, invocation_id, model_class")
def _bracket_events() -> tuple[Rows, Expected]:
    """Invocation starts with their agent (agentId | agent.agentId), invocationId and
    modelClass; completions with their invocationId only."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("agent.invocation-started", invocation("inv-1", modelClass="large"))  # 1
    log.add("agent.invocation.started", {"agent": {"agentId": "a2"}, "invocationId": "inv-2"})
    log.add("agent.invocation-completed", invocation("inv-2", agent="a2"))  # 3
    log.add("agent.tool-called", call("crm:lookup"))  # 4: not a bracket event
    return log.rows, [
        (1, "agent.invocation-started", "a1", "inv-1", "large"),
        (2, "agent.invocation-started", "a2", "inv-2", None),
        (3, "agent.invocation-completed", None, "inv-2", None),
    ]


@golden(
    "scored_events",
    "§2.2, D-5, D-11, E-77",
    "sequence, task_id, trial_index_present, trial_index, host_score, host_passed, "
    "host_latency_ms, host_cost_present, host_cost_usd",
)
def _scored_events() -> tuple[Rows, Expected]:
    """trialIndex a non-negative integral JSON number as written (1.0 counts,
    1.0000000000000001 does not); score in [0, 1], passed a boolean, latency and cost numbers in
    range, the cost an exact decimal; a string is never a number."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("eval.scored", scored(trialIndex=1.0, score=0.5, latencyMs=120, costUsd=0.25))  # 1
    text = '{"taskId": "t", "trialIndex": 1.0000000000000001, "score": 1.5, "passed": "yes"}'
    log.add("eval.scored", raw=text)  # 2
    log.add("eval.scored", scored(trialIndex=-1, score="1", latencyMs=-5, costUsd="0.1"))  # 3
    log.add("eval.scored", {"taskId": 7, "trialIndex": "2", "passed": False})  # 4
    return log.rows, [
        (1, "t", True, 1, 0.5, True, 120.0, True, Decimal("0.25")),
        (2, "t", True, None, None, None, None, False, None),
        (3, "t", True, None, None, True, None, True, None),
        (4, None, True, None, None, False, None, False, None),
    ]


@golden(
    "started_events",
    "§2.1, E-2, E-78",
    "run_id, suite_id, suite_version, live_shadow, trial_count_present, trial_count, "
    "baseline_run_id",
)
def _started_events() -> tuple[Rows, Expected]:
    """suiteId, suiteVersion, live-shadow among the modes, trialCount (an integral number of at
    least 1; above E-78's limit it reads as max_trials() + 1) and baselineRunId."""
    runs = {name: LogBuilder(name) for name in ("run-a", "run-b", "run-c", "run-d")}
    modes = ["golden", "live-shadow"]
    runs["run-a"].add("eval.started", started(modes=modes, trialCount=3, baselineRunId="run-0"))
    runs["run-b"].add("eval.started", started(modes="live-shadow", trialCount=0))
    runs["run-c"].add("eval.started", started(trialCount=problems.MAX_TRIALS * 10))
    runs["run-d"].add("eval.started", {"suiteId": "s", "trialCount": 2.5})
    rows = [row for log in runs.values() for row in log.rows]
    return rows, [
        ("run-a", "s", "1", True, True, 3, "run-0"),
        ("run-b", "s", "1", False, True, None, None),
        ("run-c", "s", "1", False, True, problems.MAX_TRIALS + 1, None),
        ("run-d", "s", None, False, True, None, None),
    ]


@golden(
    "inspect_events",
    "E-146, E-147",
    "sequence, type, task_name, model, log_file, errored_left_out, task_id, trial_index, "
    "sample_id, epoch, errored",
)
def _inspect_events() -> tuple[Rows, Expected]:
    """The names an ingested Inspect log ends with: its task, model and log file (and how many
    errored samples were left out), and per trial the taskId and trialIndex it names with its
    sample id (a string, or an integer read as its text), epoch and whether it errored (only
    JSON `true` says so); a field of another type is null (false for `errored`), as is anything
    of any other event."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("eval.scored", scored())  # 1
    names = {"task": "arith", "model": "mockllm/model", "logFile": "a.eval", "erroredLeftOut": 2}
    log.add("evalbatch.inspect.eval", names)  # 2
    sample = {"taskId": "row-1", "trialIndex": 0, "sampleId": "Row 1/B", "epoch": 1}
    log.add("evalbatch.inspect.sample", sample)  # 3
    log.add("evalbatch.inspect.sample", {**sample, "sampleId": 7, "epoch": 2.0, "errored": True})
    odd = {"taskId": 3, "trialIndex": -1, "sampleId": 1.5, "epoch": 0, "errored": "true"}
    log.add("evalbatch.inspect.sample", odd)  # 5: nothing of its type
    log.add("evalbatch.inspect.eval", {"task": ["x"], "model": None, "erroredLeftOut": 1.5})  # 6
    return log.rows, [
        (2, "evalbatch.inspect.eval", "arith", "mockllm/model", "a.eval", 2, *[None] * 4, False),
        (3, "evalbatch.inspect.sample", *[None] * 4, "row-1", 0, "Row 1/B", 1, False),
        (4, "evalbatch.inspect.sample", *[None] * 4, "row-1", 0, "7", 2, True),
        (5, "evalbatch.inspect.sample", *[None] * 8, False),
        (6, "evalbatch.inspect.eval", *[None] * 8, False),
    ]


# -- extract/segments.py: eval runs, and events placed in eval spans and trial segments ----------


@golden("eval_runs", "§2.1", "run_id, start_seq, started_count, suite_id, trial_count, end_seq")
def _eval_runs() -> tuple[Rows, Expected]:
    """Where each eval starts (its first eval.started, whose fields count) and ends (the first
    eval.completed after it), and how often it started."""
    done, restarted = LogBuilder("run-a"), LogBuilder("run-b")
    done.add("eval.started", started(trialCount=2))  # 0
    done.add("eval.scored", scored())  # 1
    done.add("eval.completed", {})  # 2
    done.add("eval.completed", {})  # 3
    restarted.add("eval.completed", {})  # 0: before the start, ends nothing
    restarted.add("eval.started", started())  # 1
    restarted.add("eval.started", started("other"))  # 2
    return done.rows + restarted.rows, [
        ("run-a", 0, 1, "s", 2, 2),
        ("run-b", 1, 2, "s", None, None),
    ]


@golden("span_scored", "§2.1, E-2", "run_id, sequence, task_id, segment_no, segment_start_seq")
def _span_scored() -> tuple[Rows, Expected]:
    """The eval.scored events after a run's only eval.started and before its eval.completed,
    numbered; each segment starts after the previous eval.scored (or the eval.started)."""
    log, restarted = LogBuilder("run-a"), LogBuilder("run-b")
    log.add("eval.scored", scored("t0"))  # 0: before the span
    log.add("eval.started", started())  # 1
    log.add("custom.note", {})  # 2
    log.add("eval.scored", scored("t1"))  # 3
    log.add("eval.scored", scored("t2"))  # 4
    log.add("eval.completed", {})  # 5
    log.add("eval.scored", scored("t3"))  # 6: after the span
    restarted.add("eval.started", started())
    restarted.add("eval.scored", scored())
    restarted.add("eval.started", started())
    return log.rows + restarted.rows, [
        ("run-a", 3, "t1", 0, 1),
        ("run-a", 4, "t2", 1, 3),
    ]


def _span_log(add: Callable[[LogBuilder], object]) -> tuple[Rows, Expected]:
    """Events (written by `add`) before an eval, in its first two segments, after its last
    eval.scored and after its eval.completed, and in a restarted eval: the rows `segments.place`
    keeps are those of the span, each with its segment."""
    log, restarted = LogBuilder("run-a"), LogBuilder("run-b")
    add(log)  # 0: before eval.started
    log.add("eval.started", started())  # 1
    add(log)  # 2: segment 0
    log.add("eval.scored", scored())  # 3
    add(log)  # 4: segment 1
    log.add("eval.scored", scored())  # 5
    add(log)  # 6: after the last eval.scored, a segment no trial owns
    log.add("eval.completed", {})  # 7
    add(log)  # 8: after eval.completed
    restarted.add("eval.started", started())
    add(restarted)
    restarted.add("eval.started", started())
    return log.rows + restarted.rows, [("run-a", 2, 0), ("run-a", 4, 1), ("run-a", 6, 2)]


@golden("span_calls", "§2.1, E-2", "run_id, sequence, segment_no")
def _span_calls() -> tuple[Rows, Expected]:
    """The tool calls of each eval's span, each with its trial segment."""
    return _span_log(lambda log: log.add("agent.tool-called", call("crm:lookup")))


@golden("span_usage", "§2.1, E-2", "run_id, sequence, segment_no")
def _span_usage() -> tuple[Rows, Expected]:
    """The provider.usage events of each eval's span, each with its trial segment."""
    return _span_log(lambda log: log.add("provider.usage", usage()))


@golden("span_brackets", "§2.1, E-2", "run_id, sequence, segment_no")
def _span_brackets() -> tuple[Rows, Expected]:
    """The invocation bracket events of each eval's span, each with its trial segment."""
    return _span_log(lambda log: log.add("agent.invocation-completed", invocation("inv-1")))


# -- segments.py and sql/trials: one row per trial, its calls and usage, and the problems found ---


@golden(
    "trial_segments",
    "§2.1, §2.2",
    "segment_no, scored_seq, segment_start_seq, task_id, has_bracket, bracket_closed, "
    "bracket_start_seq, bracket_end_seq, target_agent_id, model_class, bracket_span_ms",
)
def _trial_segments() -> tuple[Rows, Expected]:
    """Each eval.scored's segment and bracket: the first invocation start through the completion
    with its invocationId (a nested invocation does not end it, another id does not close it),
    else through the eval.scored; no start, no bracket. The target agent and model class are the
    first start's; the span is read off the timestamps."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("agent.invocation-started", invocation("inv-1", modelClass="large"))  # 1, 100 ms
    log.add("agent.invocation-started", invocation("inv-2", agent="a2"))  # 2
    log.add("agent.invocation-completed", invocation("inv-2", agent="a2"))  # 3
    log.add("agent.invocation-completed", invocation("inv-1"))  # 4, 400 ms
    log.add("eval.scored", scored("t1"))  # 5
    log.add("agent.invocation-started", invocation("inv-3"))  # 6, 600 ms: never closed
    log.add("agent.invocation-completed", invocation("inv-9"))  # 7
    log.add("eval.scored", scored("t2"))  # 8, 800 ms
    log.add("provider.usage", usage())  # 9: no bracket
    log.add("eval.scored", scored("t3"))  # 10
    log.add("eval.completed", {})  # 11
    return log.rows, [
        (0, 5, 0, "t1", True, True, 1, 4, "a1", "large", 300.0),
        (1, 8, 5, "t2", True, False, 6, 8, "a1", None, 200.0),
        (2, 10, 8, "t3", False, False, None, 10, None, None, None),
    ]


@golden(
    "trial_calls",
    "§2.2, §3.3",
    "segment_no, call_pos, sequence, tool_name, by_target, inputs",
)
def _trial_calls() -> tuple[Rows, Expected]:
    """The calls strictly inside a trial's bracket, every agent's, numbered in sequence order;
    `by_target` marks the bracket agent's (a call naming no agent is nobody's)."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("agent.tool-called", call("crm:before"))  # 1: in the segment, before the bracket
    log.add("agent.invocation-started", invocation("inv-1"))  # 2
    log.add("agent.tool-called", call("crm:lookup", inputs={"id": 1}))  # 3
    log.add("agent.tool-called", call("crm:helper", agent="a2"))  # 4
    log.add("agent.tool-called", call("crm:anon", agent=None))  # 5
    log.add("agent.invocation-completed", invocation("inv-1"))  # 6
    log.add("agent.tool-called", call("crm:after"))  # 7: after the bracket
    log.add("eval.scored", scored())  # 8
    log.add("eval.completed", {})  # 9
    return log.rows, [
        (0, 0, 3, "crm:lookup", True, '{"id":1}'),
        (0, 1, 4, "crm:helper", False, "{}"),
        (0, 2, 5, "crm:anon", False, "{}"),
    ]


@golden(
    "trial_usage",
    "§2.2, D-6, D-14",
    "segment_no, tool_call_count, model_call_count, input_tokens, output_tokens, usage_cost_usd",
)
def _trial_usage() -> tuple[Rows, Expected]:
    """Efficiency counts inside the bracket only (every agent's calls); the USD cost of every
    usage in the segment, judge calls included (D-6), a cache hit costing 0 and another
    currency left out (D-14)."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("agent.invocation-started", invocation("inv-1"))  # 1
    log.add("agent.tool-called", call("crm:lookup"))  # 2
    log.add("agent.tool-called", call("crm:helper", agent="a2"))  # 3
    log.add("provider.usage", usage(inputTokens=10, outputTokens=5, costEstimateUsd=0.1))  # 4
    cached = usage(inputTokens=20, outputTokens=5, costEstimateUsd=0.2, cacheHit=True)
    log.add("provider.usage", cached)  # 5: a cache hit costs 0
    log.add("agent.invocation-completed", invocation("inv-1"))  # 6
    judge = usage(inputTokens=100, outputTokens=50, costEstimateUsd=0.3)
    log.add("provider.usage", judge)  # 7: a judge call, outside the bracket
    log.add("provider.usage", usage(costEstimateUsd=1, currency="EUR"))  # 8: judge, not USD
    log.add("eval.scored", scored("t1"))  # 9
    log.add("eval.scored", scored("t2"))  # 10: an empty segment
    log.add("eval.completed", {})  # 11
    return log.rows, [
        (0, 2, 2, 30, 10, Decimal("0.4")),
        (1, 0, 0, 0, 0, Decimal(0)),
    ]


@golden("run_cost_source", "D-14", "run_id")
def _run_cost_source() -> tuple[Rows, Expected]:
    """Runs with a provider.usage whose cost is a number in range, whatever its currency or
    cacheHit, take task costs from usage."""
    runs = {name: LogBuilder(name) for name in ("run-a", "run-b", "run-c", "run-d")}
    for log in runs.values():
        log.add("eval.started", started())
    runs["run-a"].add("provider.usage", usage(costEstimateUsd=0.1))
    runs["run-b"].add("provider.usage", usage())
    runs["run-c"].add("provider.usage", usage(costEstimateUsd=2, currency="EUR", cacheHit=True))
    runs["run-d"].add("provider.usage", usage(costEstimateUsd=-1))
    return [row for log in runs.values() for row in log.rows], [("run-a",), ("run-c",)]


@golden("event_problems", "§6, D-3, §2.1, E-3, E-5, E-10, E-80, E-113", "run_id, sequence, code")
def _event_problems() -> tuple[Rows, Expected]:
    """Problems of single events, one row per occurrence."""
    log, unfinished = LogBuilder("run-a"), LogBuilder("run-b")
    log.add("eval.started", started(trialCount=0))  # 0: trial-count-invalid
    log.add("provider.usage", raw="not json")  # 1: payload-invalid
    log.add("custom.note", raw="not json")  # 2: payload-ignored
    log.add("custom.note", {})  # 3: type-missing
    log.rows[-1]["type"] = None
    log.skip()  # 4 is missing
    log.add("eval.scored", scored())  # 5: sequence-gap
    log.add("eval.completed", {})  # 6
    log.add("eval.scored", scored())  # 7: scored-after-completed
    log.add("eval.started", started())  # 8: eval-restarted
    log.add("eval.completed", {})  # 9: completed-repeated
    log.add("custom.note", {}, sequence=-1)  # sequence-invalid
    unfinished.add("eval.started", started())  # 0: eval-incomplete
    return log.rows + unfinished.rows, [
        ("run-a", 0, "trial-count-invalid"),
        ("run-a", 1, "payload-invalid"),
        ("run-a", 2, "payload-ignored"),
        ("run-a", 3, "type-missing"),
        ("run-a", 5, "sequence-gap"),
        ("run-a", 7, "scored-after-completed"),
        ("run-a", 8, "eval-restarted"),
        ("run-a", 9, "completed-repeated"),
        ("run-a", None, "sequence-invalid"),
        ("run-b", 0, "eval-incomplete"),
    ]


@golden("usage_problems", "§2.2, D-14", "segment_no, sequence, code")
def _usage_problems() -> tuple[Rows, Expected]:
    """provider.usage events of the span whose tokens or cost cannot be used as they stand."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("provider.usage", usage(inputTokens=-1))  # 1
    log.add("provider.usage", usage(costEstimateUsd="0.1"))  # 2
    log.add("provider.usage", usage(costEstimateUsd=0.1, currency="EUR"))  # 3
    log.add("provider.usage", usage(costEstimateUsd=0.1))  # 4: fine
    log.add("eval.scored", scored())  # 5
    log.add("provider.usage", usage(outputTokens=1.5, costEstimateUsd=1, currency="GBP"))  # 6
    log.add("eval.completed", {})  # 7
    return log.rows, [
        (0, 1, "usage-tokens-invalid"),
        (0, 2, "cost-invalid"),
        (0, 3, "non-usd-cost"),
        (1, 6, "non-usd-cost"),
        (1, 6, "usage-tokens-invalid"),
    ]


# -- delegates that ran as child runs (E-102) -----------------------------------------------------


def dispatched(child: str) -> dict[str, Any]:
    """A node.dispatched payload naming one child run."""
    return {"childRunId": child, "childWorkflowId": "w"}


def joined(*children: Any) -> dict[str, Any]:
    """A dispatch.joined payload merging `children` in this order."""
    return {
        "joinOutcome": "satisfied",
        "completedCount": 2,
        "failedCount": 0,
        "mergeOrder": list(children),
    }


@golden("dispatch_events", "E-102", "sequence, joined, readable, children")
def _dispatch_events() -> tuple[Rows, Expected]:
    """node.dispatched and workflow-chain.event name a child by childRunId, dispatch.joined its
    children in mergeOrder (v1 names read too); an event that hides which children ran (not
    JSON, no string childRunId on node.dispatched, a mergeOrder that is not strings) is not
    readable; a workflow-chain.event without childRunId names no child."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("node.dispatched", dispatched("c1"))  # 1
    log.add("workflow-chain.event", {"phase": "dispatch.began", "childRunId": "c2"})  # 2
    log.add("core.workflowChain.event", {"phase": "output.harvested"})  # 3: v1, no child
    log.add("dispatch.joined", joined("c2", "c1"))  # 4
    log.add("core.dispatch.join", joined("c3"))  # 5: v1 name
    log.add("node.dispatched", {"childWorkflowId": "w"})  # 6: no child named
    log.add("dispatch.joined", joined("c1", 7))  # 7: not a list of run ids
    log.add("node.dispatched", raw='{"childRunId": ')  # 8: not JSON
    log.add("dispatch.fanned-out", {"fanOutPolicy": "parallel", "childCount": 2})  # 9: not read
    return log.rows, [
        (1, False, True, ["c1"]),
        (2, False, True, ["c2"]),
        (3, False, True, []),
        (4, True, True, ["c2", "c1"]),
        (5, True, True, ["c3"]),
        (6, False, False, []),
        (7, True, False, ["c1", None]),
        (8, False, False, []),
    ]


@golden("delegate_log_faults", "E-102, D-3, E-3, E-80", "run_id")
def _delegate_log_faults() -> tuple[Rows, Expected]:
    """A run whose log cannot be read whole as a delegated trajectory reads it: an unusable
    sequence, a row without type, a payload that is not JSON on a tool call, a dispatch event or
    eval.started; one on another type is not a fault."""
    runs = {name: LogBuilder(name) for name in ("run-a", "run-b", "run-c", "run-d", "run-e")}
    for log in runs.values():
        log.add("eval.started", started())  # 0
    runs["run-a"].add("agent.tool-called", raw="{")  # a tool call that is not JSON
    runs["run-b"].add("dispatch.joined", raw="[")  # a dispatch event that is not JSON
    runs["run-c"].add("custom.note", raw="{")  # another type: fine
    runs["run-d"].add("custom.note", {}, sequence=-1)  # an unusable sequence
    runs["run-e"].add(None, {})  # no type
    rows = [row for log in runs.values() for row in log.rows]
    return rows, [("run-a",), ("run-b",), ("run-d",), ("run-e",)]


def _delegating_run() -> tuple[LogBuilder, dict[str, LogBuilder]]:
    """run-a (suite s@1), one trial whose bracket fans out to c2 and c1 (merged c1, c2) then
    dispatches c3; c1 delegates to c4; calls before, between and after."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("agent.invocation-started", invocation("inv-1"))  # 1
    log.add("agent.tool-called", call("t:own-1"))  # 2
    log.add("node.dispatched", dispatched("c2"))  # 3
    log.add("node.dispatched", dispatched("c1"))  # 4
    log.add("dispatch.joined", joined("c1", "c2"))  # 5
    log.add("node.dispatched", dispatched("c3"))  # 6
    log.add("agent.tool-called", call("t:own-2"))  # 7
    log.add("agent.invocation-completed", invocation("inv-1"))  # 8
    log.add("node.dispatched", dispatched("c9"))  # 9: outside the bracket, not read
    log.add("eval.scored", scored())  # 10
    children = {name: LogBuilder(name) for name in ("c1", "c2", "c3", "c4")}
    children["c1"].add("agent.tool-called", call("t:c1-a", agent="h"))  # 0
    children["c1"].add("node.dispatched", dispatched("c4"))  # 1
    children["c1"].add("agent.tool-called", call("t:c1-b", agent="h"))  # 2
    children["c2"].add("agent.tool-called", call("t:c2", agent="h"))  # 0
    children["c4"].add("agent.tool-called", call("t:c4", agent="h"))  # 0
    children["c3"].add("run.started", {"workflowId": "w"})  # 0: a child with no call
    return log, children


@golden(
    "trial_delegate_calls",
    "E-102, D-2",
    "segment_no, call_order, from_run_id, sequence, tool_name",
)
def _trial_delegate_calls() -> tuple[Rows, Expected]:
    """The calls of the child runs a bracket names, at any depth, each with its order key: the
    children a join merged stand at the first dispatch of any of them, in mergeOrder (c1 before
    c2), a grandchild at its dispatch inside its parent's run; a child named outside the
    bracket is not read."""
    log, children = _delegating_run()
    rows = log.rows + [row for child in children.values() for row in child.rows]
    return rows, [
        (0, [3, 0, 0], "c1", 0, "t:c1-a"),
        (0, [3, 0, 1, 0, 0], "c4", 0, "t:c4"),
        (0, [3, 0, 2], "c1", 2, "t:c1-b"),
        (0, [3, 1, 0], "c2", 0, "t:c2"),
    ]


@golden("run_delegates", "E-102, E-50", "run_id, child_run_id, fingerprint IS NOT NULL")
def _run_delegates() -> tuple[Rows, Expected]:
    """Every child run an eval run's trials read, at any depth, with its fingerprint (none for
    a log that is not in the input)."""
    log, children = _delegating_run()
    del children["c3"]  # named, not there
    rows = log.rows + [row for child in children.values() for row in child.rows]
    return rows, [
        ("run-a", "c1", True),
        ("run-a", "c2", True),
        ("run-a", "c3", False),
        ("run-a", "c4", True),
    ]


@golden("trial_delegate_faults", "E-102", "segment_no, sequence, code, child_run_id")
def _trial_delegate_faults() -> tuple[Rows, Expected]:
    """A trial's child runs that cannot be read, at the bracket's event that led to each: not
    in the input, not readable whole, an eval run of another suite, on its own path (a child
    naming the parent, a grandchild naming its parent), and a dispatch that hides its child."""
    log = LogBuilder("run-a")
    log.add("eval.started", started())  # 0
    log.add("agent.invocation-started", invocation("inv-1"))  # 1
    for child in ("gone", "broken", "other-suite", "loop", "fine"):
        log.add("node.dispatched", dispatched(child))  # 2..6
    log.add("node.dispatched", {"childWorkflowId": "w"})  # 7: which child?
    log.add("agent.invocation-completed", invocation("inv-1"))  # 8
    log.add("eval.scored", scored())  # 9
    broken, other, loop, fine, deeper = (
        LogBuilder(name) for name in ("broken", "other-suite", "loop", "fine", "deeper")
    )
    broken.add("agent.tool-called", raw='{"toolName": ')
    other.add("eval.started", started("s2"))
    loop.add("node.dispatched", dispatched("run-a"))  # names the trial's own run
    fine.add("node.dispatched", dispatched("deeper"))
    deeper.add("node.dispatched", dispatched("fine"))  # names its parent
    rows = [row for b in (log, broken, other, loop, fine, deeper) for row in b.rows]
    return rows, [
        (0, 2, "delegate-log-missing", "gone"),
        (0, 3, "delegate-log-invalid", "broken"),
        (0, 4, "delegate-suite-mismatch", "other-suite"),
        (0, 5, "delegate-cycle", "run-a"),
        (0, 6, "delegate-cycle", "fine"),
        (0, 7, "delegate-log-invalid", None),
    ]


# -------------------------------------------------------------------------------------------------


def description(relation: str) -> str:
    """What the relation holds and which rules decide it: its SQL header, or the frame's text."""
    if relation in trial_tables.FRAMES:
        return trial_tables.FRAMES[relation]
    return sql_files.load_query(relation).description


def relation_rows(
    tmp_path: Path, case: Golden, extractor: Extractor = "auto"
) -> list[tuple[Any, ...]]:
    """Run the stage over the case's events, payloads parsed by `extractor`, and read its
    relation's rows."""
    rows, _ = case.build()
    path = write_raw_events(tmp_path / "events.parquet", rows)
    con = trial_tables.new_connection(Resources(extractor=extractor))
    try:
        # every case's eval runs claim the suite s@1; its trials read the child runs they name
        trial_tables.extract(con, [str(path)], delegate_suites=frozenset({("s", "1")}))
        # event_scan's stored rows are rewritten by the events pass: its case runs the query
        stored = (
            case.relation in trial_tables.FRAMES
            or case.relation in trial_tables.PIPELINE  # stored, or fetched and registered
            or case.relation in set(events_pass.EVENTS_PASS) - events_pass.VIEWS - {"event_scan"}
        )
        source = f'"{case.relation}"' if stored else f"({sql_files.load_query(case.relation).text})"
        return con.sql(f"SELECT {case.columns} FROM {source} ORDER BY ALL").fetchall()
    finally:
        con.close()


#: the extractors every case runs through (E-108): the query, and the library where it is built
EXTRACTORS: list[Extractor] = ["duckdb"] + (
    ["native"] if extractor.library() or os.environ.get("EVALBATCH_REQUIRE_NATIVE") == "1" else []
)


#: the relations that read payload fields themselves: their cases run on the native extractor
#: in the fast set too; every case runs on both under --run-slow (E-108)
PAYLOAD_READERS = {
    "event_scan",
    "duplicate_events",
    "fixed_event_rows",
    "tool_called_events",
    "usage_events",
    "scored_events",
    "started_events",
    "dispatch_events",
    "inspect_events",
}


@pytest.mark.parametrize(
    ("case", "extractor_name"),
    slow_except(
        [(case, name) for name in EXTRACTORS for case in CASES.values()],
        fast=[
            (case, name)
            for name in EXTRACTORS
            for case in CASES.values()
            if name == "duckdb" or case.relation in PAYLOAD_READERS
        ],
    ),
    ids=lambda value: value.id if isinstance(value, Golden) else str(value),
)
def test_relation_golden(tmp_path: Path, case: Golden, extractor_name: Extractor) -> None:
    """The relation's rows for the case's events are exactly the expected ones, whichever
    extractor parsed the payloads (E-108)."""
    _, expected = case.build()
    assert relation_rows(tmp_path, case, extractor_name) == expected, case.build.__doc__


@pytest.mark.parametrize("case", list(CASES.values()), ids=lambda case: case.id)
def test_golden_case_names_rules_of_its_relation(case: Golden) -> None:
    """Each rule a case names is one its SQL file's header (or its frame's text) cites."""
    text = description(case.relation)
    for rule in re.split(r",\s*", case.rule):
        assert re.search(rf"{re.escape(rule)}(?!\.?\d)", text), (case.relation, rule)
