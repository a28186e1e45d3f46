"""THE log builder of the tests: `LogBuilder` writes the events of one OpenWOP eval run.

Every test that needs a log builds it here (tests/helpers.py's `RunLog` and `standard_run` are
this builder in that module's vocabulary). A `LogBuilder` numbers sequences from 0 and stamps each
event `STEP_MS` after the previous one (unless told otherwise), so bracket spans and therefore
latencies can be read off a test:

    log = LogBuilder()
    log.eval_started()
    log.bracket(calls=[("crm:lookup", {"id": 1})], usage=[{"inputTokens": 10}])
    log.scored("task-a", score=1, passed=True)
    log.eval_completed()
    result = grade(log, [suite(golden("task-a"))])

Payloads are written as JSON text and timestamps as ISO text; `raw=` writes a payload text
verbatim (invalid JSON, repeated keys, `1.0` versus `1`, numbers beyond 2^53). With
`encoded=False` a row keeps its payload as the object given and its timestamp as a datetime, so
tests/helpers.py's `write_events` can lay it out every way CONTRACT §1.1 allows (struct or map
payloads, Parquet timestamps).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from evalbatch.api import GradeResult, grade_events
from evalbatch.options import GradeOptions

RUN = "acme/run-0000000000000001"
RUN2 = "acme/run-0000000000000002"
SUITE_ID = "acme.team.evals.support"
VERSION = "1.0.0"
AGENT = "acme.agents.support"
HELPER = "acme.agents.helper"
EPOCH = dt.datetime(2026, 10, 14, 12, 0, 0, tzinfo=dt.UTC)
STEP_MS = 100


class _Absent:
    """Marks a field that must not be written at all (as opposed to an explicit null)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


def iso(ms: float) -> str:
    """The ISO-8601 UTC timestamp `ms` milliseconds after EPOCH, with millisecond precision."""
    return _iso(EPOCH + dt.timedelta(milliseconds=ms))


def _iso(stamp: dt.datetime) -> str:
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def _drop_absent(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if v is not ABSENT}


@dataclass
class Call:
    """One `agent.tool-called` event. `agent=None` writes no agent at all."""

    tool: str
    inputs: Any = ABSENT
    agent: str | None = AGENT
    extra: dict[str, Any] = field(default_factory=dict)
    raw: str | None = None  # a verbatim payload text, overriding everything else

    def payload(self, call_id: str) -> dict[str, Any]:
        payload: dict[str, Any] = {}
        if self.agent is not None:
            payload["agentId"] = self.agent
        payload |= {"toolName": self.tool, "callId": call_id, "inputs": self.inputs}
        return _drop_absent({**payload, **self.extra})


def _as_call(item: str | tuple[str, Any] | Call) -> Call:
    if isinstance(item, Call):
        return item
    if isinstance(item, str):
        return Call(item)
    tool, inputs = item
    return Call(tool, inputs)


def usage_payload(**fields: Any) -> dict[str, Any]:
    """A `provider.usage` payload: required fields defaulted, `ABSENT` values dropped."""
    base = {"provider": "acme", "model": "m-1", "inputTokens": 10, "outputTokens": 5}
    return _drop_absent({**base, **fields})


class LogBuilder:
    """Appends the events of one run with increasing sequences and timestamps."""

    def __init__(
        self,
        run_id: str = RUN,
        start: dt.datetime = EPOCH,
        *,
        step_ms: float = STEP_MS,
        encoded: bool = True,
    ) -> None:
        """`start` stamps the first event; `encoded=False` keeps payload objects and datetimes."""
        self.run_id = run_id
        self.start = start
        self.step_ms = step_ms
        self.encoded = encoded
        self.rows: list[dict[str, Any]] = []
        self.next_sequence = 0
        self.clock_ms: float = 0
        self.invocations = 0

    # -- raw events ----------------------------------------------------------------------------

    def add(
        self,
        type_: str,
        payload: Any = None,
        *,
        raw: str | None = None,
        at_ms: float | None = None,
        timestamp: Any = ABSENT,
        sequence: int | None = None,
    ) -> int:
        """Append one event and return its sequence.

        `at_ms` places the event at that offset from the start (EPOCH unless the builder was given
        another; the clock continues from there);
        `timestamp` writes that timestamp value verbatim (None for no timestamp); `sequence`
        overrides the numbering (later events continue after it).
        """
        seq = self.next_sequence if sequence is None else sequence
        if at_ms is not None:
            self.clock_ms = at_ms
        if timestamp is not ABSENT:
            stamp = timestamp
        else:
            moment = self.start + dt.timedelta(milliseconds=self.clock_ms)
            stamp = _iso(moment) if self.encoded else moment
        text: Any = raw
        if text is None:
            text = json.dumps(payload) if self.encoded else payload
        self.rows.append(
            {
                "runId": self.run_id,
                "sequence": seq,
                "type": type_,
                "payload": text,
                "timestamp": stamp,
            }
        )
        self.next_sequence = seq + 1
        self.clock_ms += self.step_ms
        return seq

    def skip(self, count: int = 1) -> LogBuilder:
        """Leave `count` sequence numbers unused (a gap)."""
        self.next_sequence += count
        return self

    # -- eval events ---------------------------------------------------------------------------

    def eval_started(
        self,
        suite_id: str = SUITE_ID,
        version: str = VERSION,
        *,
        modes: Sequence[str] = ("golden",),
        task_count: int = 1,
        **extra: Any,
    ) -> int:
        payload = {
            "suiteId": suite_id,
            "suiteVersion": version,
            "taskCount": task_count,
            "modes": list(modes),
            **extra,
        }
        return self.add("eval.started", _drop_absent(payload))

    def eval_completed(self, **payload: Any) -> int:
        base = {"aggregateScore": 0, "passed": False, "taskCount": 0, "passedCount": 0}
        return self.add("eval.completed", {**base, **payload})

    def scored(
        self,
        task_id: str,
        score: Any = 1,
        passed: Any = True,
        trial_index: Any = ABSENT,
        **extra: Any,
    ) -> int:
        """`eval.scored`; pass `ABSENT` for a field to leave it out."""
        payload = {
            "taskId": task_id,
            "score": score,
            "passed": passed,
            "trialIndex": trial_index,
            **extra,
        }
        return self.add("eval.scored", _drop_absent(payload))

    # -- agent events --------------------------------------------------------------------------

    def started(
        self,
        agent: str | None = AGENT,
        *,
        invocation_id: str | None = None,
        model_class: Any = ABSENT,
        type_: str = "agent.invocation-started",
        **extra: Any,
    ) -> str:
        """`agent.invocation-started`; returns the invocation id."""
        if invocation_id is None:
            self.invocations += 1
            invocation_id = f"inv-{self.invocations}"
        payload: dict[str, Any] = {"invocationId": invocation_id}
        if agent is not None:
            payload["agentId"] = agent
        payload |= {"source": "run-api", "modelClass": model_class, **extra}
        self.add(type_, _drop_absent(payload))
        return invocation_id

    def completed(
        self,
        invocation_id: str,
        agent: str | None = AGENT,
        *,
        at_ms: float | None = None,
        type_: str = "agent.invocation-completed",
    ) -> int:
        payload: dict[str, Any] = {"invocationId": invocation_id}
        if agent is not None:
            payload["agentId"] = agent
        payload["outcome"] = "completed"
        return self.add(type_, payload, at_ms=at_ms)

    def call(
        self,
        tool: str,
        inputs: Any = ABSENT,
        agent: str | None = AGENT,
        *,
        type_: str = "agent.tool-called",
        **extra: Any,
    ) -> int:
        return self.tool_call(Call(tool, inputs, agent, extra), type_=type_)

    def tool_call(self, call: Call, *, type_: str = "agent.tool-called") -> int:
        if call.raw is not None:
            return self.add(type_, raw=call.raw)
        return self.add(type_, call.payload(f"call-{self.next_sequence}"))

    def usage(self, **fields: Any) -> int:
        """`provider.usage` with defaults (10 input, 5 output tokens, no cost)."""
        return self.add("provider.usage", usage_payload(**fields))

    def bracket(
        self,
        calls: Iterable[str | tuple[str, Any] | Call] = (),
        usage: Iterable[Mapping[str, Any]] = (),
        *,
        agent: str | None = AGENT,
        model_class: Any = ABSENT,
        close: bool = True,
        duration_ms: float | None = None,
        invocation_id: str | None = None,
    ) -> str:
        """A whole invocation: started, tool calls, usages, completed (unless `close=False`).

        `duration_ms` places the completion exactly that long after the start.
        """
        invocation = self.started(agent, invocation_id=invocation_id, model_class=model_class)
        start_ms = self.clock_ms - self.step_ms
        for item in calls:
            self.tool_call(_as_call(item))
        for fields in usage:
            self.usage(**fields)
        if close:
            at = None if duration_ms is None else start_ms + duration_ms
            self.completed(invocation, agent, at_ms=at)
        return invocation

    def trial(
        self,
        task_id: str,
        calls: Iterable[str | tuple[str, Any] | Call] = (),
        usage: Iterable[Mapping[str, Any]] = (),
        *,
        judge: Iterable[Mapping[str, Any]] = (),
        agent: str | None = AGENT,
        model_class: Any = ABSENT,
        bracket: bool = True,
        close: bool = True,
        duration_ms: float | None = None,
        **scored: Any,
    ) -> int:
        """A bracket (unless `bracket=False`), judge usages outside it, then `eval.scored`.

        Returns the sequence of the `eval.scored`.
        """
        if bracket:
            self.bracket(
                calls,
                usage,
                agent=agent,
                model_class=model_class,
                close=close,
                duration_ms=duration_ms,
            )
        for fields in judge:
            self.usage(**fields)
        return self.scored(task_id, **scored)

    @property
    def events(self) -> list[dict[str, Any]]:
        return list(self.rows)


# --------------------------------------------------------------------------------------------------
# Suites
# --------------------------------------------------------------------------------------------------


def suite(
    *tasks: dict[str, Any],
    suite_id: str = SUITE_ID,
    version: str = VERSION,
    modes: Sequence[str] = ("golden",),
    **extra: Any,
) -> dict[str, Any]:
    """An AgentEvalSuite; `extra` adds top-level members (thresholds, trials, targetAgentId)."""
    return {
        "suiteId": suite_id,
        "version": version,
        "modes": list(modes),
        "tasks": list(tasks),
        **extra,
    }


def golden(
    task_id: str,
    trajectory: dict[str, Any] | None = None,
    *,
    fixtures: dict[str, Any] | None = None,
) -> dict[str, Any]:
    expected: dict[str, Any] = {"kind": "golden", "match": {"strategy": "contains", "value": "ok"}}
    if trajectory is not None:
        expected["trajectory"] = trajectory
    entry: dict[str, Any] = {"taskId": task_id, "input": {"q": task_id}, "expected": expected}
    if fixtures is not None:
        entry["fixtures"] = fixtures
    return entry


def rubric(task_id: str, trajectory: dict[str, Any] | None = None) -> dict[str, Any]:
    expected: dict[str, Any] = {"kind": "rubric", "rubric": [{"criterion": "c", "weight": 1}]}
    if trajectory is not None:
        expected["trajectory"] = trajectory
    return {"taskId": task_id, "input": {"q": task_id}, "expected": expected}


def trajectory_task(
    task_id: str, trajectory: dict[str, Any], *, fixtures: dict[str, Any] | None = None
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "taskId": task_id,
        "input": {"q": task_id},
        "expected": {"kind": "trajectory", "trajectory": trajectory},
    }
    if fixtures is not None:
        entry["fixtures"] = fixtures
    return entry


def traj(
    match: str,
    calls: Iterable[str | dict[str, Any]] = (),
    *,
    forbidden: Sequence[str] | None = None,
    include_delegates: bool | None = None,
) -> dict[str, Any]:
    """A trajectory expectation; a plain string call is `{"tool": name}`."""
    block: dict[str, Any] = {
        "match": match,
        "calls": [{"tool": c} if isinstance(c, str) else dict(c) for c in calls],
    }
    if forbidden is not None:
        block["forbidden"] = list(forbidden)
    if include_delegates is not None:
        block["includeDelegates"] = include_delegates
    return block


def expect(tool: str, args: Any = ABSENT, args_match: str | None = None) -> dict[str, Any]:
    """One expected call (`args` may be None: an explicit null)."""
    call: dict[str, Any] = {"tool": tool}
    if args is not ABSENT:
        call["args"] = args
    if args_match is not None:
        call["argsMatch"] = args_match
    return call


# --------------------------------------------------------------------------------------------------
# Grading and reading results
# --------------------------------------------------------------------------------------------------


def grade(
    logs: LogBuilder | Iterable[LogBuilder | Mapping[str, Any]],
    suites: Sequence[Mapping[str, Any]] = (),
    **options: Any,
) -> GradeResult:
    """Grade one or more logs (or loose event rows) with the given suites and options."""
    if isinstance(logs, LogBuilder):
        logs = [logs]
    rows: list[Mapping[str, Any]] = []
    for item in logs:
        if isinstance(item, LogBuilder):
            rows.extend(item.rows)
        else:
            rows.append(item)
    return grade_events(rows, list(suites), GradeOptions(**options) if options else None)


def summary_of(result: GradeResult, run_id: str = RUN) -> dict[str, Any]:
    assert run_id in result.summaries, (run_id, result.skipped, problems_of(result))
    return result.summaries[run_id]


def task_of(summary: Mapping[str, Any], task_id: str) -> dict[str, Any]:
    matches = [t for t in summary["tasks"] if t["taskId"] == task_id]
    assert len(matches) == 1, (task_id, summary)
    return matches[0]


def problems_of(result: GradeResult, run_id: str | None = RUN) -> list[dict[str, Any]]:
    rows = result.problems.to_dicts()
    return [r for r in rows if run_id is None or r["run_id"] == run_id]


def codes_of(result: GradeResult, run_id: str | None = RUN) -> list[str]:
    return [r["code"] for r in problems_of(result, run_id)]


def severity_of(result: GradeResult, code: str, run_id: str | None = RUN) -> set[str]:
    return {r["severity"] for r in problems_of(result, run_id) if r["code"] == code}


# --------------------------------------------------------------------------------------------------
# Raw event files for fault injection (tests/test_fault_injection.py)
# --------------------------------------------------------------------------------------------------

#: the Arrow type of each event column unless a test says otherwise
RAW_COLUMN_TYPES: dict[str, pa.DataType] = {
    "runId": pa.string(),
    "sequence": pa.int64(),
    "type": pa.string(),
    "payload": pa.string(),
    "timestamp": pa.string(),
}


def write_raw_events(
    path: Path,
    rows: Sequence[Mapping[str, Any]],
    types: Mapping[str, pa.DataType] | None = None,
) -> Path:
    """Write event rows with each column's Arrow type chosen, so a file can hold what a well-formed
    writer never would: `binary` run ids or payloads with invalid UTF-8 (the cell is `bytes`), a
    `float64` or `uint64` sequence, a null `type`. Payloads that are not text or bytes are written
    as JSON text; datetimes as ISO text. Columns are those of the first row, in its order."""
    types = {**RAW_COLUMN_TYPES, **(types or {})}
    names = list(rows[0]) if rows else list(RAW_COLUMN_TYPES)
    columns: dict[str, pa.Array] = {}
    for name in names:
        kind = types.get(name, pa.string())
        values = [_raw_cell(row.get(name), kind) for row in rows]
        columns[name] = pa.array(values, kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return path


def _raw_cell(value: Any, kind: pa.DataType) -> Any:
    if isinstance(value, dt.datetime):
        value = value.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if isinstance(value, dict | list):
        value = json.dumps(value)
    if pa.types.is_binary(kind) and isinstance(value, str):
        return value.encode("utf-8")
    return value
