"""Fuzzing: mutate valid logs and suites, and hold the grader to the contract.

A fixed, clean log (`base_log()`: fifteen eval runs, three of each of five kinds — a suite with
trials, fixtures, delegates and judge calls, passing and failing; a suite without trials whose
cost comes from the host record; a suite that is not supplied, D-4) is graded once. Each example
then mutates 1 to 10 of its runs, one mutation each — drops, duplicates, reorders and corrupts
events, puts wrong JSON types in payload fields, huge strings, deep nesting and unicode into
payloads (`MUTATIONS`, each citing its rule) — shuffles the rows, grades the whole log again and
requires:

1. no traceback: the library raises nothing for bad events (CONTRACT §6);
2. every fault reported: a mutated run either grades exactly as before (the mutation is harmless
   by the contract: D-1, D-2, D-3, D-7, E-5, E-6 ...) or carries a new problem row, and each
   mutation gets what its rule says (e.g. `event-conflict` for a conflicting duplicate, D-3;
   `payload-invalid` for a payload that is not JSON, D-3/D-7; `trial-index-invalid` and the
   positional index, D-5), pointing at the event (docs/decisions.md "Problems", E-23);
3. every untouched run graded exactly as before: its `summaries.jsonl` line byte-identical and
   its problem rows unchanged (§4 determinism, §6 "never loses good data").

The same is done to suite files (`test_suite_mutations_*`), to the random logs of
tests/strategies.py, and through the CLI (`evalbatch run` in click's CliRunner: exit code 0 or 3
as the problems say, or 2 with a one-line message, never a traceback).

Reproducible: examples are derandomized; within an example every choice comes from a
`random.Random` seeded by Hypothesis (`Chooser`), so each sub-choice of a mutation is equally
likely and a failing example prints its choices (`note`). There is no shrinking (each example
grades a whole log). The cases the fuzzing found are pinned as plain tests at the end.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
import random
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, event, given, note, settings
from hypothesis import strategies as st

from evalbatch.api import GradeResult, grade_events, grade_paths
from evalbatch.cli import main
from evalbatch.errors import SuiteError
from evalbatch.inputs import suites
from evalbatch.outputs.writer import summary_line
from tests.strategies import (
    NOT_JSON_EDITS,
    break_json,
    deep_json_text,
    huge_strings,
    logs_and_suites,
    unicode_texts,
)

#: a slow family (fuzzing):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

#: Derandomized (CI sees the same examples every run), no deadline (a grading takes ~0.5 s), and
#: no shrinking: each example grades a whole log, so shrinking a failure would take minutes; the
#: failing example is printed with its noted choices and is small already.
FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class _Short:
    """A short repr for Hypothesis' report of a failing example (the base log is long)."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


TARGET = "acme.agents.support"
HELPER = "acme.agents.helper"
EPOCH = dt.datetime(2026, 10, 14, 12, 0, 0, tzinfo=dt.UTC)
ALPHA_ID = "acme.fuzz.evals.alpha"
BETA_ID = "acme.fuzz.evals.beta"
GAMMA_ID = "acme.fuzz.evals.gamma"  # never supplied: D-4
VERSION = "1.0.0"
DEPTHS = (64, 500, 1_000, 3_000)  # nesting depths of JSON values in payloads
SHAPES = ("array", "object", "mixed")

#: the event types grading reads (D-3), v2 names
GRADED_TYPES = frozenset(
    {
        "agent.invocation-started",
        "agent.invocation-completed",
        "agent.tool-called",
        "provider.usage",
        "eval.started",
        "eval.scored",
        "eval.completed",
    }
)
#: D-1
V1_NAMES = {
    "agent.invocation-started": "agent.invocation.started",
    "agent.invocation-completed": "agent.invocation.completed",
    "agent.tool-called": "agent.toolCalled",
    "agent.tool-returned": "agent.toolReturned",
}


class _Sentinel:
    """A marker that survives copy.deepcopy."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __deepcopy__(self, memo: dict[int, Any]) -> _Sentinel:
        return self


_NULL_CELL: Any = _Sentinel("NULL_CELL")  # a payload cell that is null (E-6: read as JSON null)


def iso(ms: int) -> str:
    stamp = EPOCH + dt.timedelta(milliseconds=ms)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


# --------------------------------------------------------------------------------------------
# The base log: five clean runs, each event tagged with its role


def suite_alpha() -> dict[str, Any]:
    """Trials (count 3, k 2), a trajectory in any-order with subset args and a forbidden tool, a
    trajectory task with delegates, fixtures failing closed."""
    return {
        "suiteId": ALPHA_ID,
        "version": VERSION,
        "targetAgentId": TARGET,
        "modes": ["golden"],
        "thresholds": {"passScore": 0.5, "maxCostUsd": 1},
        "trials": {"count": 3, "k": 2, "passRule": "all"},
        "tasks": [
            {
                "taskId": "t-golden",
                "input": {"ticket": "golden"},
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "contains", "value": "ok"},
                    "trajectory": {
                        "match": "any-order",
                        "calls": [
                            {"tool": "crm:lookup", "args": {"orderId": 7}, "argsMatch": "subset"},
                            {"tool": "mail:send"},
                        ],
                        "forbidden": ["billing:refund-all"],
                    },
                },
            },
            {
                "taskId": "t-path",
                "input": {"ticket": "path"},
                "expected": {
                    "kind": "trajectory",
                    "trajectory": {
                        "match": "in-order",
                        "calls": [
                            {"tool": "kb:search"},
                            {"tool": "crm:note", "args": {"n": 1}, "argsMatch": "exact"},
                        ],
                        "includeDelegates": True,
                    },
                },
            },
            {
                "taskId": "t-fix",
                "input": {"ticket": "fix"},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "ok"}},
                "fixtures": {
                    "toolResponses": [
                        {"tool": "kb:search", "response": {"hits": 1}},
                        {
                            "tool": "crm:lookup",
                            "args": {"orderId": 7},
                            "argsMatch": "subset",
                            "response": {"status": "shipped"},
                        },
                    ],
                    "onMiss": "fail",
                },
            },
        ],
    }


def suite_beta() -> dict[str, Any]:
    """No trials block; an exact-args trajectory and a rubric task."""
    return {
        "suiteId": BETA_ID,
        "version": VERSION,
        "modes": ["golden", "rubric"],
        "tasks": [
            {
                "taskId": "t-a",
                "input": {"ticket": "a"},
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "contains", "value": "ok"},
                    "trajectory": {
                        "match": "exact",
                        "calls": [
                            {
                                "tool": "crm:lookup",
                                "args": {"orderId": 1, "tags": ["x", "y"]},
                                "argsMatch": "exact",
                            }
                        ],
                    },
                },
            },
            {
                "taskId": "t-b",
                "input": {"ticket": "b"},
                "expected": {"kind": "rubric", "rubric": [{"criterion": "polite", "weight": 1}]},
            },
        ],
    }


@dataclass(repr=False)
class Ev(_Short):
    """One event of the base log, with what it is for (`role`) so a mutation knows what the
    contract says about changing it."""

    run: str | None
    seq: int | None
    type: str
    payload: Any
    ms: int
    role: str
    task: str | None = None
    kind: str | None = None  # the task's kind; None in a run without its suite (host-graded)
    index: int | None = None  # the trial index
    nested: bool = False  # an outer bracket start whose bracket holds a nested invocation
    text: str | None = None  # a verbatim payload text, overriding `payload`
    ts: str | object | None = _NULL_CELL  # a verbatim timestamp; default: iso(ms)

    def __repr__(self) -> str:
        text = f", text={self.text[:80]!r}" if self.text is not None else ""
        return f"Ev({self.run} #{self.seq} {self.type} {self.role}{text})"

    def row(self) -> dict[str, Any]:
        if self.text is not None:
            payload: Any = self.text
        elif self.payload is _NULL_CELL:
            payload = None
        else:
            payload = json.dumps(self.payload)
        return {
            "runId": self.run,
            "sequence": self.seq,
            "type": self.type,
            "payload": payload,
            "timestamp": iso(self.ms) if self.ts is _NULL_CELL else self.ts,
        }

    def payload_text(self) -> str:
        return self.text if self.text is not None else json.dumps(self.payload)


@dataclass(repr=False)
class RunInfo(_Short):
    run_id: str
    suite: dict[str, Any] | None  # None: not supplied (D-4)
    count: int  # trials per task (the suite's, or eval.started.trialCount)
    usage_costs: bool  # some provider.usage carries costEstimateUsd (D-14 cost source)

    def __repr__(self) -> str:
        return f"RunInfo({self.run_id})"


class RunWriter:
    def __init__(self, info: RunInfo, start_ms: int) -> None:
        self.info = info
        self.events: list[Ev] = []
        self.ms = start_ms
        self.invocations = 0
        self.kinds = {
            t["taskId"]: t["expected"]["kind"] for t in (info.suite or {}).get("tasks", [])
        }

    def add(self, type_: str, payload: Any, role: str, **tags: Any) -> Ev:
        event = Ev(self.info.run_id, len(self.events), type_, payload, self.ms, role, **tags)
        self.events.append(event)
        self.ms += 100
        return event

    def started(self, agent: str, role: str, **tags: Any) -> str:
        self.invocations += 1
        invocation = f"{self.info.run_id}:inv-{self.invocations}"
        payload = {"invocationId": invocation, "agentId": agent, "source": "run-api"}
        if role == "outer-start":
            payload["modelClass"] = "general"
        self.add("agent.invocation-started", payload, role, **tags)
        return invocation

    def completed(self, invocation: str, agent: str, role: str, **tags: Any) -> None:
        payload = {"invocationId": invocation, "agentId": agent, "outcome": "completed"}
        self.add("agent.invocation-completed", payload, role, **tags)

    def call(self, tool: str, inputs: Any, agent: str = TARGET, **tags: Any) -> None:
        call_id = f"call-{len(self.events)}"
        payload = {"agentId": agent, "toolName": tool, "callId": call_id, "inputs": inputs}
        self.add("agent.tool-called", payload, "call", **tags)
        returned = {"agentId": agent, "toolName": tool, "callId": call_id, "status": "ok"}
        self.add("agent.tool-returned", returned, "returned", **tags)

    def usage(self, role: str, tokens: tuple[int, int], cost: float | None, **tags: Any) -> None:
        payload: dict[str, Any] = {
            "provider": "acme",
            "model": "m-1",
            "inputTokens": tokens[0],
            "outputTokens": tokens[1],
        }
        if cost is not None:
            payload["costEstimateUsd"] = cost
        self.add("provider.usage", payload, role, **tags)

    def trial(
        self,
        task: str,
        index: int,
        calls: Iterable[tuple[str, Any]],
        *,
        delegate: tuple[str, Any] | None = None,
        usage_cost: float | None = None,
        judge_cost: float | None = None,
        score: Any = 1,
        passed: Any = True,
        **scored: Any,
    ) -> None:
        tags = {"task": task, "kind": self.kinds.get(task), "index": index}
        outer = self.started(TARGET, "outer-start", nested=delegate is not None, **tags)
        calls = list(calls)
        for tool, inputs in calls[:1]:
            self.call(tool, inputs, **tags)
        self.usage("usage-bracket", (100 + index, 10), usage_cost, **tags)
        if delegate is not None:
            nested = self.started(HELPER, "nested-start", **tags)
            self.call(*delegate, agent=HELPER, **tags)
            self.usage("usage-bracket", (30, 3), None, **tags)
            self.completed(nested, HELPER, "nested-complete", **tags)
        for tool, inputs in calls[1:]:
            self.call(tool, inputs, **tags)
        self.add("agent.reasoned", {"agentId": TARGET, "reasoning": "..."}, "reasoned", **tags)
        self.completed(outer, TARGET, "outer-complete", **tags)
        if judge_cost is not None or index % 2 == 0:
            self.usage("usage-judge", (50, 5), judge_cost, **tags)
        payload = {"taskId": task, "score": score, "passed": passed, "trialIndex": index, **scored}
        self.add("eval.scored", payload, "scored", **tags)


def _alpha_run(run_id: str, start_ms: int, failing: bool) -> tuple[RunInfo, list[Ev]]:
    info = RunInfo(run_id, suite_alpha(), 3, usage_costs=True)
    w = RunWriter(info, start_ms)
    w.add("run.started", {"workflowId": "wf-fuzz"}, "run-started")
    w.add(
        "eval.started",
        {"suiteId": ALPHA_ID, "suiteVersion": VERSION, "taskCount": 3, "modes": ["golden"]},
        "eval-started",
    )
    for index in range(3):
        forbidden = failing and index == 1
        golden_calls = [("crm:lookup", {"orderId": 7, "fields": ["status"]}), ("mail:send", {})]
        if forbidden:
            golden_calls.append(("billing:refund-all", {"all": True}))
        w.trial(
            "t-golden",
            index,
            golden_calls,
            delegate=("kb:search", {"q": "order 7"}),
            usage_cost=0.001,
            judge_cost=0.0005,
            score=0.25 if failing else 1,
        )
        note = [] if failing and index == 2 else [("crm:note", {"n": 1})]
        w.trial(
            "t-path",
            index,
            [("kb:search", {"q": "path"})],
            delegate=note[0] if note else None,
            score=0.5,
            passed=False,
        )
        fix_calls = [("kb:search", {"q": "fix"}), ("crm:lookup", {"orderId": 7})]
        if failing and index == 0:
            fix_calls.append(("mail:send", {"to": "ops"}))  # no fixture: fails closed (D-9)
        w.trial("t-fix", index, fix_calls, usage_cost=0.002, score=0.8)
    w.add(
        "eval.completed",
        {"aggregateScore": 0.5, "passed": False, "taskCount": 3, "passedCount": 1},
        "eval-completed",
    )
    w.add("run.completed", {"outcome": "completed"}, "run-completed")
    return info, w.events


def _beta_run(run_id: str, start_ms: int, score_b: float) -> tuple[RunInfo, list[Ev]]:
    info = RunInfo(run_id, suite_beta(), 1, usage_costs=False)
    w = RunWriter(info, start_ms)
    w.add("run.started", {"workflowId": "wf-fuzz"}, "run-started")
    w.add(
        "eval.started",
        {"suiteId": BETA_ID, "suiteVersion": VERSION, "taskCount": 2, "modes": ["golden"]},
        "eval-started",
    )
    w.trial(
        "t-a",
        0,
        [("crm:lookup", {"orderId": 1, "tags": ["x", "y"]})],
        latencyMs=250,
        costUsd=0.01,
    )
    w.trial("t-b", 0, [("kb:search", {"q": "b"})], score=score_b, costUsd=0.02)
    w.add(
        "eval.completed",
        {"aggregateScore": 0.85, "passed": False, "taskCount": 2, "passedCount": 1},
        "eval-completed",
    )
    w.add("run.completed", {"outcome": "completed"}, "run-completed")
    return info, w.events


def _gamma_run(run_id: str, start_ms: int) -> tuple[RunInfo, list[Ev]]:
    info = RunInfo(run_id, None, 2, usage_costs=True)
    w = RunWriter(info, start_ms)
    w.add("run.started", {"workflowId": "wf-fuzz"}, "run-started")
    w.add(
        "eval.started",
        {
            "suiteId": GAMMA_ID,
            "suiteVersion": VERSION,
            "taskCount": 2,
            "modes": ["golden"],
            "trialCount": 2,
        },
        "eval-started",
    )
    for index in range(2):
        w.trial("t-x", index, [("kb:search", {"q": "x"})], usage_cost=0.003, score=0.9)
        w.trial(
            "t-y",
            index,
            [("crm:lookup", {"orderId": 2})],
            delegate=("mail:send", {}),
            score=0.5,
            passed=index == 0,
        )
    w.add(
        "eval.completed",
        {"aggregateScore": 0.7, "passed": False, "taskCount": 2, "passedCount": 1},
        "eval-completed",
    )
    w.add("run.completed", {"outcome": "completed"}, "run-completed")
    return info, w.events


REPLICAS = 3  # copies of the five kinds of run: one grading checks many mutations at once


def base_log() -> tuple[dict[str, RunInfo], dict[str, list[Ev]]]:
    """Fifteen runs (three of each of five kinds), in run-id order."""
    made = []
    for copy_no in range(REPLICAS):
        ids = [f"acme/run-fuzz-{5 * copy_no + n:012d}" for n in range(1, 6)]
        hour = 3_600_000
        start = 5 * hour * copy_no
        made += [
            _alpha_run(ids[0], start, failing=False),
            _alpha_run(ids[1], start + hour, failing=True),
            _beta_run(ids[2], start + 2 * hour, score_b=0.7),
            _gamma_run(ids[3], start + 3 * hour),
            _beta_run(ids[4], start + 4 * hour, score_b=1),
        ]
    infos = {info.run_id: info for info, _ in made}
    events = {info.run_id: evs for info, evs in made}
    return infos, events


def base_suites() -> list[dict[str, Any]]:
    return [suite_alpha(), suite_beta()]


# --------------------------------------------------------------------------------------------
# Outcomes: what a grading produced, per run, in comparable form

ProblemKey = tuple[str, int | None, str]  # (code, sequence, severity)


@dataclass(repr=False)
class Outcome(_Short):
    def __repr__(self) -> str:
        return f"Outcome({sorted(self.lines)})"

    lines: dict[str, str]  # run id -> its summaries.jsonl line (bytes as text)
    skipped: set[str]
    problems: dict[str | None, set[ProblemKey]]  # run id (None: no run) -> problem keys

    @classmethod
    def of_result(cls, result: GradeResult) -> Outcome:
        lines = {run: summary_line(run, s) for run, s in result.summaries.items()}
        return cls(lines, set(result.skipped), _problem_keys(result.problems))

    @classmethod
    def of_dir(cls, out: Path) -> Outcome:
        text = (out / "summaries.jsonl").read_text(encoding="utf-8")
        lines = {json.loads(line)["runId"]: line + "\n" for line in text.splitlines()}
        runs = pl.read_parquet(out / "runs.parquet")
        skipped = set(runs.filter(~pl.col("graded"))["run_id"].to_list())
        return cls(lines, skipped, _problem_keys(pl.read_parquet(out / "problems.parquet")))

    def of_run(self, run_id: str | None) -> set[ProblemKey]:
        return self.problems.get(run_id, set())


def _problem_keys(frame: pl.DataFrame) -> dict[str | None, set[ProblemKey]]:
    out: dict[str | None, set[ProblemKey]] = {}
    for row in frame.iter_rows(named=True):
        out.setdefault(row["run_id"], set()).add((row["code"], row["sequence"], row["severity"]))
    return out


# --------------------------------------------------------------------------------------------
# Mutations of one run's events, each with what the contract says must follow


@dataclass
class Expect:
    """What grading must give a mutated run.

    same: its summary line is byte-identical to the base grade and no new error problem appears.
    codes: (code, sequence or None) that must be among the run's new problem rows.
    graded: False when the run must be skipped (an error problem).
    vanish: no longer an eval run (E-1): no summary, not skipped.
    legit: the contract lets the grade change without a problem (only robustness and isolation
        are checked), e.g. a tool call renamed.
    same_or_codes: either `same`, or these codes are reported (an implementation limit that is
        reported, e.g. a payload nested deeper than the parser goes).
    """

    name: str
    rule: str
    same: bool = False
    codes: tuple[tuple[str, int | None], ...] = ()
    graded: bool | None = None
    vanish: bool = False
    legit: bool = False
    same_or_codes: tuple[tuple[str, int | None], ...] = ()
    global_codes: tuple[str, ...] = ()


class Chooser:
    """The choices of one example: uniform (a `random.Random` seeded from Hypothesis, so even the
    first example is a varied one, and every sub-choice of a mutation is equally likely) and
    noted, so a failing example prints what was chosen. Text comes from Hypothesis strategies."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data
        self.rng = random.Random(data.draw(st.integers(0, 2**32 - 1), label="seed"))

    def _note(self, label: str | None, value: Any) -> None:
        if label is not None:
            text = repr(value)
            note(f"{label}: {text[:120]}{'...' if len(text) > 120 else ''}")

    def pick(self, options: Any, label: str | None = None) -> Any:
        options = list(options)
        value = options[self.rng.randrange(len(options))]
        self._note(label, value)
        return value

    def flip(self, label: str | None = None) -> bool:
        value = self.rng.random() < 0.5
        self._note(label, value)
        return value

    def integer(self, low: int, high: int, label: str | None = None) -> int:
        value = self.rng.randint(low, high)
        self._note(label, value)
        return value

    def perm(self, items: Any) -> list[Any]:
        out = list(items)
        self.rng.shuffle(out)
        return out

    def subset(self, items: Any, label: str | None = None) -> list[Any]:
        out = [x for x in items if self.rng.random() < 0.5] or [self.pick(items)]
        self._note(label, out)
        return out

    def draw(self, strategy: st.SearchStrategy[Any], label: str | None = None) -> Any:
        value = self.data.draw(strategy)
        self._note(label, value)
        return value


Mutation = Callable[[Chooser, RunInfo, list[Ev]], Expect]


def _pick(c: Chooser, events: list[Ev], where: Callable[[Ev], bool], label: str) -> Ev:
    candidates = [e for e in events if where(e)]
    return c.pick(candidates, label)


def _outer_start(events: list[Ev], e: Ev) -> int | None:
    """The sequence of the bracket start of `e`'s trial."""
    return next(
        x.seq for x in events if x.role == "outer-start" and x.task == e.task and x.index == e.index
    )


def _is_graded_type(e: Ev) -> bool:
    return e.type in GRADED_TYPES


def _later(c: Chooser, e: Ev) -> Ev:
    """A copy of `e` stamped at the same time or later."""
    return dataclasses.replace(e, ms=e.ms + c.pick((0, 1, 7, 5_000)))


def m_duplicate(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """D-3: an exact copy of any event (an export retry), same or later timestamp."""
    e = _pick(c, events, lambda e: True, "duplicated")
    events.append(_later(c, e))
    return Expect("duplicate", "D-3", same=True)


def dump_respelled(c: Chooser, value: Any) -> str:
    """JSON text of `value` that is D-7-equal to it but spelled differently: keys reordered,
    whitespace, numbers re-written by value (`7` -> `7.0`, `70e-1`; `0.001` -> `1E-3`),
    strings with `\\u` escapes (ASCII letters included) or `\\/`."""
    ws = ("", " ", "\n\t", "\r\n  ")
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        forms = (str(value), f"{value}.0", f"{value}e0", f"{value * 10}e-1", f"{value}.000E+0")
        return c.pick(forms)
    if isinstance(value, float):
        exact = Decimal(repr(value))
        forms = (repr(value), f"{exact:E}", f"{exact * 10}e-1", f"{value!r}0")
        return c.pick(forms)
    if isinstance(value, str):
        mode = c.pick(("plain", "ascii", "all-escaped", "solidus"))
        if mode == "plain":
            return json.dumps(value, ensure_ascii=False)
        if mode == "ascii":
            return json.dumps(value, ensure_ascii=True)
        if mode == "solidus":
            return json.dumps(value, ensure_ascii=False).replace("/", "\\/")
        escaped = json.dumps(value, ensure_ascii=True)[1:-1]
        out = []
        i = 0
        while i < len(escaped):  # escape every plain character, keep existing escapes
            if escaped[i] == "\\":
                step = 6 if escaped[i + 1] == "u" else 2
                out.append(escaped[i : i + step])
                i += step
            else:
                out.append(f"\\u{ord(escaped[i]):04x}")
                i += 1
        return '"' + "".join(out) + '"'
    if isinstance(value, list):
        sep = c.pick(ws)
        return "[" + sep + ("," + sep).join(dump_respelled(c, v) for v in value) + sep + "]"
    assert isinstance(value, dict)
    keys = list(value)
    order = c.perm(keys) if len(keys) > 1 else keys
    sep = c.pick(ws)
    members = [f"{dump_respelled(c, k)}{sep}:{sep}{dump_respelled(c, value[k])}" for k in order]
    return "{" + sep + ("," + sep).join(members) + sep + "}"


def m_duplicate_respelled(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """D-3 + D-7: a copy whose payload is JSON-equal but spelled differently, stamped later
    (the earliest is kept, so the kept event is the original either way)."""
    e = _pick(c, events, lambda e: isinstance(e.payload, dict), "duplicated")
    twin = dataclasses.replace(e, ms=e.ms + c.pick((1, 3_000)))
    twin.text = dump_respelled(c, e.payload)
    events.append(twin)
    return Expect("duplicate-respelled", "D-3, D-7", same=True)


def m_respell(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """D-7: an event's payload rewritten JSON-equal (key order, whitespace, number spelling
    `1` = `1.0` = `10e-1`, `\\u` escapes of any character): the same event, the same grade."""
    e = _pick(c, events, lambda e: isinstance(e.payload, dict), "respelled")
    e.text = dump_respelled(c, e.payload)
    return Expect("respell", "D-7, D-5", same=True)


def m_conflict(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """D-3 / E-4: a second row with the same (runId, sequence) but other content: the run is
    corrupt, not graded (`event-conflict`, naming the event)."""
    e = _pick(c, events, lambda e: isinstance(e.payload, dict), "conflicting")
    twin = _later(c, e)
    how = c.pick(("extra-key", "other-value", "other-type"), "how")
    if how == "extra-key":
        twin.payload = {**e.payload, "x-fuzz": 1}
    elif how == "other-value":
        key = c.pick(sorted(e.payload), "key")
        twin.payload = {**e.payload, key: [e.payload[key], "changed"]}
    else:
        others = sorted({"agent.tool-called", "provider.usage", "run.started"} - {e.type})
        twin.type = c.pick(others)
    events.append(twin)
    return Expect("conflict", "D-3", graded=False, codes=(("event-conflict", e.seq),))


def m_drop(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """D-3 / E-5: a dropped event leaves a gap (`sequence-gap` at the event after it), except the
    first and the last event; a dropped eval.started leaves no eval run (E-1); a dropped
    eval.completed is `eval-incomplete` (§2.1)."""
    e = _pick(c, events, lambda e: True, "dropped")
    events.remove(e)
    if e.role == "eval-started":
        return Expect("drop eval.started", "E-1", vanish=True)
    first, last = e.seq == 0, e.seq == len(events)  # (one event fewer now)
    if first or last:
        same = e.role in ("run-started", "run-completed", "returned", "reasoned")
        return Expect(f"drop {e.role} at an end", "E-5", same=same, legit=not same)
    assert e.seq is not None
    codes: list[tuple[str, int | None]] = [("sequence-gap", e.seq + 1)]
    if e.role == "eval-completed":
        started = next(x.seq for x in events if x.role == "eval-started")
        codes.append(("eval-incomplete", started))
        return Expect("drop eval.completed", "D-3, §2.1", same=True, codes=tuple(codes))
    # a nested invocation's start or end bounds nothing: the bracket is the outer invocation's
    same = e.role in ("returned", "reasoned", "nested-start", "nested-complete")
    return Expect(f"drop {e.role}", "D-3, E-5, §2.1", codes=tuple(codes), same=same)


def m_retype(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """D-1: an event's type changed to an unknown one is ignored, never an error. What follows
    from losing it: none for a type grading does not read; `bracket-missing` (D-18) for a bracket
    start; `bracket-unclosed` (§2.1) for its completion; `eval-incomplete` for eval.completed;
    no eval run (E-1) for eval.started; for the rest the grade may change."""
    e = _pick(c, events, lambda e: True, "retyped")
    e.type = c.pick(("acme.fuzz.unknown", "eval.unknown", "agent.tool-result"))
    scored = next(x.seq for x in events if x.role == "scored" and x.ms > e.ms) if e.task else None
    started = next(x.seq for x in events if x.role == "eval-started")
    if e.role in ("run-started", "run-completed", "returned", "reasoned"):
        return Expect(f"retype {e.role}", "D-1", same=True)
    if e.role == "eval-started":
        return Expect("retype eval.started", "E-1", vanish=True)
    if e.role == "eval-completed":
        return Expect(
            "retype eval.completed", "§2.1", same=True, codes=(("eval-incomplete", started),)
        )
    if e.role == "outer-start" and not e.nested:
        return Expect("retype bracket start", "§2.1, D-18", codes=(("bracket-missing", scored),))
    if e.role == "outer-complete":
        outer = _outer_start(events, e)
        return Expect("retype bracket end", "§2.1", codes=(("bracket-unclosed", outer),))
    if e.role in ("nested-start", "nested-complete"):
        return Expect(f"retype {e.role}", "§2.1", same=True)
    if e.role == "scored":
        return Expect("retype eval.scored", "D-12, D-13")
    return Expect(f"retype {e.role}", "D-1", legit=True)


def m_v1_name(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """D-1: a v2 type written with its v1 spelling is the same event."""
    e = _pick(c, events, lambda e: e.type in V1_NAMES, "renamed")
    e.type = V1_NAMES[e.type]
    return Expect("v1 name", "D-1", same=True)


def m_alias(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """D-2: payload aliases (`toolId`, `arguments`, `toolCallId`, `agent.agentId`) read the same."""
    e = _pick(
        c,
        events,
        lambda e: e.type in ("agent.tool-called", "agent.invocation-started"),
        "aliased",
    )
    renames = {"toolName": "toolId", "inputs": "arguments", "callId": "toolCallId"}
    chosen = c.subset([*sorted(renames), "agentId"])
    payload: dict[str, Any] = {}
    for key, value in e.payload.items():
        if key in chosen and key in renames:
            payload[renames[key]] = value
        elif key in chosen and key == "agentId":
            payload["agent"] = {"agentId": value}
        else:
            payload[key] = value
    e.payload = payload
    return Expect("alias", "D-2", same=True)


def m_not_json(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """D-3 / D-7: a payload that is not JSON (truncated, NaN, Infinity, comments, single quotes,
    trailing commas, two values, raw control characters ...): on a type grading reads the run is
    ungradable (`payload-invalid`); on any other type a warning (`payload-ignored`) and the event
    is ignored, so the grade is unchanged."""
    e = _pick(c, events, lambda e: isinstance(e.payload, dict), "broken")
    edit = c.pick(NOT_JSON_EDITS, "edit")
    e.text = break_json(e.payload_text(), edit)
    if _is_graded_type(e):
        return Expect(
            f"not JSON ({edit})", "D-3", graded=False, codes=(("payload-invalid", e.seq),)
        )
    return Expect(f"not JSON ({edit})", "D-3", same=True, codes=(("payload-ignored", e.seq),))


def m_non_object(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """E-6: a payload that is JSON but not an object (or a null cell) has no fields."""
    e = _pick(c, events, lambda e: True, "flattened")
    value = c.pick(("[]", "[1, 2]", '"text"', "42", "true", "null", None))
    if value is None:
        e.payload, e.text = _NULL_CELL, None
    else:
        e.text = value
    if e.role in ("run-started", "run-completed", "returned", "reasoned", "eval-completed"):
        return Expect("non-object payload", "E-6", same=True)
    if e.role == "usage-bracket":
        return Expect("non-object usage", "E-6, §2.2", codes=(("usage-tokens-invalid", e.seq),))
    if e.role == "outer-start":
        return Expect("non-object bracket start", "E-6, E-12", codes=(("bracket-unclosed", e.seq),))
    if e.role == "outer-complete":
        outer = _outer_start(events, e)
        return Expect("non-object bracket end", "E-6, §2.1", codes=(("bracket-unclosed", outer),))
    if e.role in ("nested-start", "nested-complete"):
        return Expect(f"non-object {e.role}", "E-6, §2.1", same=True)
    if e.role == "scored" or e.role == "eval-started":
        return Expect(f"non-object {e.role}", "E-6")
    return Expect(f"non-object {e.role}", "E-6", legit=True)


TASK_IDS = frozenset({"t-golden", "t-path", "t-fix", "t-a", "t-b", "t-x", "t-y"})
BAD_SCORES = ("0.5", True, False, None, [], {}, 1.5, -0.1, "NaN")
BAD_BOOLEANS = ("true", 1, 0, None, [], {"v": True}, "false")
BAD_INDICES = ("1", True, -1, 0.5, None, [], {}, "0")
BAD_COUNTS = ("7", -1, 2.5, None, True, [3])
BAD_COSTS = ("0.01", -0.5, None, True, {}, [0.01])


#: payload field -> the roles of the events that carry it
FIELD_ROLES: dict[str, tuple[str, ...]] = {
    "score": ("scored",),
    "passed": ("scored",),
    "trialIndex": ("scored",),
    "taskId": ("scored",),
    "latencyMs": ("scored",),
    "costUsd": ("scored",),
    "inputTokens": ("usage-bracket", "usage-judge"),
    "outputTokens": ("usage-bracket", "usage-judge"),
    "costEstimateUsd": ("usage-bracket", "usage-judge"),
    "currency": ("usage-bracket", "usage-judge"),
    "cacheHit": ("usage-bracket", "usage-judge"),
    "invocationId": ("outer-start", "nested-start", "outer-complete"),
    "agentId": ("outer-start",),
    "suiteVersion": ("eval-started",),
    "trialCount": ("eval-started",),
    "baselineRunId": ("eval-started",),
    "toolName": ("call",),
}


def m_field(c: Chooser, info: RunInfo, events: list[Ev], name: str) -> Expect:
    """Wrong JSON types and values in the payload fields grading reads, each with its rule:
    D-11 (score, passed), D-5 (trialIndex), D-13 (taskId), §3.5 (latencyMs), E-16/D-14 (costs,
    currency, cacheHit), §2.2 (tokens), §2.1 (invocationId), D-4/E-10 (suite, trialCount)."""
    roles = FIELD_ROLES[name]
    e = _pick(c, events, lambda e: e.role in roles, f"{name} of")
    p = e.payload
    host_kind = e.kind != "trajectory"  # golden, rubric, or no suite: the host's score counts

    def setv(values: tuple[Any, ...], allow_absent: bool = True) -> Any:
        options = [*values, "<absent>"] if allow_absent else list(values)
        value = c.pick(options, name)
        if value == "<absent>":
            p.pop(name, None)
        else:
            p[name] = copy.deepcopy(value)
        return value

    if name == "score":
        setv(BAD_SCORES)
        if host_kind:
            return Expect("bad score", "D-11", codes=(("score-invalid", e.seq),))
        return Expect("bad score of a trajectory task", "D-11, §3.4", same=True)
    if name == "passed":
        setv(BAD_BOOLEANS)
        if host_kind:
            return Expect("bad passed", "D-11", codes=(("passed-invalid", e.seq),))
        return Expect("bad passed of a trajectory task", "D-11, §3.4", same=True)
    if name == "trialIndex":
        how = c.pick(("invalid", "respelled", "repeated", "extra"))
        if how == "invalid":
            setv(BAD_INDICES, allow_absent=False)
            # the positional index equals the explicit one in the base log: same grade
            return Expect(
                "bad trialIndex", "D-5", same=True, codes=(("trial-index-invalid", e.seq),)
            )
        if how == "respelled":
            index = e.payload["trialIndex"]
            spelled = c.pick((f"{index}.0", f"{index}e0", f"{index * 10}e-1"))
            text = json.dumps({k: v for k, v in p.items() if k != "trialIndex"})
            e.text = text[:-1] + f', "trialIndex": {spelled}}}'
            return Expect("trialIndex 1.0", "D-5", same=True)
        if how == "repeated" and e.index:
            p["trialIndex"] = c.integer(0, e.index - 1)
            return Expect("repeated trialIndex", "D-5", codes=(("trial-duplicate", e.seq),))
        p["trialIndex"] = info.count + c.pick((0, 1, 1000))
        return Expect("trialIndex >= count", "D-5", codes=(("trial-extra", e.seq),))
    if name == "taskId":
        if info.suite is None:
            setv(("t-nope", 7, None, ["t-x"]))
            return Expect("taskId changed (no suite)", "D-4, D-12")
        how = c.pick(("fixed", "huge", "unicode"))
        if how == "fixed":
            value = c.pick(("t-nope", "T-GOLDEN", "t-gölden", "t-golden\u200b", "t-a "), "taskId")
        else:
            strategy = huge_strings() if how == "huge" else unicode_texts()
            value = c.draw(strategy.filter(lambda v: v not in TASK_IDS), "taskId")
        p["taskId"] = value
        return Expect("unknown taskId", "D-13", codes=(("task-unknown", e.seq),))
    if name == "latencyMs":
        had = "latencyMs" in p
        setv(("250", -5, True, None, [1], {}), allow_absent=had)
        if had:
            return Expect("bad latencyMs", "§3.5", legit=True)
        return Expect("bad latencyMs, bracket span used", "§3.5", same=True)
    if name == "costUsd":
        setv(BAD_COSTS, allow_absent=False)
        return Expect(
            "bad eval.scored.costUsd",
            "E-16, D-14",
            codes=(("cost-invalid", e.seq),),
            same=info.usage_costs,
        )
    if name in ("inputTokens", "outputTokens"):
        how = c.pick(("bad", "respelled"))
        if how == "respelled":
            value = p[name]
            e.text = json.dumps(p).replace(f'"{name}": {value}', f'"{name}": {value}.0')
            return Expect("tokens 10.0", "§2.2, D-5", same=True)
        setv(("7", -1, 2.5, None, True, [], {}))
        if e.role == "usage-bracket":
            return Expect("bad tokens", "§2.2", codes=(("usage-tokens-invalid", e.seq),))
        return Expect("bad judge tokens", "D-6", same=True)
    if name == "costEstimateUsd":
        setv(BAD_COSTS, allow_absent=False)
        return Expect("bad costEstimateUsd", "D-14", codes=(("cost-invalid", e.seq),))
    if name == "currency":
        value = setv(("EUR", "usd", "Usd", None), allow_absent=False)
        if value == "EUR" and "costEstimateUsd" in p:
            return Expect("cost in EUR", "D-14", codes=(("non-usd-cost", e.seq),))
        return Expect(f"currency {value}", "D-14", same=value != "EUR")
    if name == "cacheHit":
        setv(("true", 1, "yes", None, False), allow_absent=False)
        return Expect("cacheHit not true", "D-14, D-7", same=True)
    if name == "invocationId":
        setv((12345, "other-invocation", None, ["x"]))
        if e.role == "nested-start":
            return Expect("nested invocationId", "§2.1", same=True)
        outer = e.seq if e.role == "outer-start" else _outer_start(events, e)
        return Expect("bracket never closes", "§2.1", codes=(("bracket-unclosed", outer),))
    if name == "agentId":
        setv((None, 7, "", "acme.agents.other"))
        if info.suite is not None and "targetAgentId" in info.suite:
            # §2.1: the target agent is the bracket's agentId; E-13: none named, no target agent
            return Expect("bracket agent", "§2.1, E-13", codes=(("target-agent-mismatch", e.seq),))
        return Expect("bracket agent", "§2.1, E-13", legit=True)
    if name == "suiteVersion":
        p["suiteVersion"] = c.pick(("9.9.9", "1.0.0-rc1", "", 1))
        if info.suite is None:
            return Expect("other version, no suite anyway", "D-4", legit=True)
        if p["suiteVersion"] == "9.9.9":
            return Expect("suite not supplied", "D-4", codes=(("suite-missing", e.seq),))
        return Expect("suite version no suite can have", "D-4, §4")
    if name == "trialCount":
        setv(BAD_COUNTS, allow_absent=info.suite is not None)
        if info.suite is None:
            return Expect(
                "bad trialCount (no suite)", "D-4, E-10", codes=(("trial-count-invalid", e.seq),)
            )
        return Expect("trialCount with a suite", "D-4", same=True)
    if name == "baselineRunId":
        p["baselineRunId"] = "acme/run-not-in-this-input-0001"
        return Expect("baseline not in input", "§3.6", same=True)
    assert name == "toolName"
    if c.flip():
        p["toolName"] = c.pick((7, None, [], {"a": 1}, "", "crm:lookup\u200b"), "toolName")
    else:
        p["toolName"] = c.draw(huge_strings())
    return Expect("toolName changed", "§3.1", legit=True)


#: roles whose payload a repeated top-level key may be put in (eval and bracket events: E-26)
REPEATABLE = ("scored", "eval-started", "outer-start", "outer-complete")


def m_extra_field(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """Fields grading does not read are ignored, whatever they hold: a 1-2 MB string, JSON nested
    64-3,000 levels deep, any unicode (§2.2 reads named fields only). A parser's depth limit may
    reject the deepest (RFC 8259 §9 allows limits), but then the fault must be reported."""
    e = _pick(c, events, lambda e: isinstance(e.payload, dict), "extended")
    what = c.pick(("huge", "deep", "unicode"), "value")
    if what == "huge":
        value_text = json.dumps(c.draw(huge_strings()), ensure_ascii=c.flip())
    elif what == "deep":
        value_text = deep_json_text(c.pick(DEPTHS, "depth"), c.pick(SHAPES, "shape"))
    else:
        value_text = json.dumps(c.draw(unicode_texts()), ensure_ascii=c.flip())
    key = json.dumps(c.pick(("x-fuzz", "note", "x-ünïcödé-🙂")))
    base = e.payload_text()
    e.text = "{" + key + ": " + value_text + (", " + base[1:] if base != "{}" else "}")
    if e.role in REPEATABLE and c.flip("and a repeated key"):
        first = json.dumps(next(iter(e.payload)))  # a decoy copy first: the last one wins (D-7)
        e.text = "{" + first + ': "decoy", ' + e.text[1:]
    code = "payload-invalid" if _is_graded_type(e) else "payload-ignored"
    if what == "deep":
        return Expect("deep extra field", "§2.2, D-3", same_or_codes=((code, e.seq),))
    return Expect(f"{what} extra field", "§2.2", same=True)


def m_repeated_key(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """D-7 (and E-26 for eval and bracket events): a repeated key keeps its last value, so a
    wrong-typed first copy of a field changes nothing; in tool inputs too."""

    def fits(e: Ev) -> bool:
        inputs = e.payload.get("inputs") if e.role == "call" else None
        return e.role in REPEATABLE or (isinstance(inputs, dict) and bool(inputs))

    e = _pick(c, events, fits, "repeated key in")
    if e.role == "call":
        inputs = e.payload["inputs"]
        key = c.pick(sorted(inputs))
        decoy = json.dumps({key: "decoy"})[1:-1]
        head = {k: v for k, v in e.payload.items() if k != "inputs"}
        e.text = (
            json.dumps(head)[:-1] + ', "inputs": {' + decoy + ", " + json.dumps(inputs)[1:] + "}"
        )
        return Expect("repeated key in inputs", "D-7", same=True)
    key = c.pick(sorted(e.payload))
    decoy = json.dumps({key: c.pick(("decoy", None, [1], {"a": 1}, -1))})
    e.text = "{" + decoy[1:-1] + ", " + e.payload_text()[1:]
    return Expect("repeated key", "D-7, E-26", same=True)


def m_inputs(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """D-7 / D-8: tool inputs of any shape (huge strings, deep nesting, unicode, other types) are
    compared, never a crash; the grade may change (an expected call may stop matching)."""
    compared = ("crm:lookup", "crm:note")  # tools whose arguments some suite compares
    only_compared = c.flip()

    def fits(e: Ev) -> bool:
        return e.role == "call" and (not only_compared or e.payload["toolName"] in compared)

    e = _pick(c, events, fits, "inputs of")
    what = c.pick(("huge", "deep", "unicode", "scalar"), "inputs")
    if what == "huge":
        text = json.dumps({"orderId": 7, "blob": c.draw(huge_strings())})
    elif what == "deep":
        text = deep_json_text(c.pick(DEPTHS, "depth"), c.pick(SHAPES, "shape"))
    elif what == "unicode":
        text = json.dumps({"orderId": 7, "q": c.draw(unicode_texts())})
    else:
        text = json.dumps(c.pick((None, 7, "7", [7], True, 1e300, 10**30)))
    head = {k: v for k, v in e.payload.items() if k != "inputs"}
    e.text = json.dumps(head)[:-1] + ', "inputs": ' + text + "}"
    return Expect(f"{what} inputs", "D-7, D-8", legit=True)


def m_timestamp(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """§2.2 / §3.5: timestamps only give bracket spans; a bad one elsewhere changes nothing."""
    e = _pick(
        c,
        events,
        lambda e: (
            e.role not in ("outer-start", "outer-complete", "nested-start", "nested-complete")
        ),
        "restamped",
    )
    e.ts = c.pick(
        (
            None,
            "not a time",
            "2026-13-45T99:99:99Z",
            "",
            "🙂",
            "0000-01-01T00:00:00Z",  # years past 1..9999 do not parse (E-124)
            "10000-01-01T00:00:00Z",
        )
    )
    return Expect("bad timestamp", "§3.5, E-17, E-124", same=True)


def m_shift(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """E-5 / §1.1: the run's sequences start elsewhere and its clock is moved: order and spans are
    unchanged, a log that does not start at 0 has no gap."""
    offset = c.pick((1, 17, 10**9))
    clock = c.pick((0, 86_400_000))
    for e in events:
        assert e.seq is not None
        e.seq += offset
        e.ms += clock
    return Expect("shifted", "E-5", same=True)


def m_swap(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """§1.1: swapping two events' sequences reorders the log; the grade may change."""
    a = _pick(c, events, lambda e: True, "swap a")
    b = _pick(c, events, lambda e: e is not a, "swap b")
    a.seq, b.seq = b.seq, a.seq
    same = {a.role, b.role} <= {"returned", "reasoned"}
    return Expect("swap", "§1.1", same=same, legit=not same)


def m_envelope(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """E-3: a row whose sequence is null makes its run ungradable (`sequence-invalid`); a row
    whose runId is null is dropped with a warning that names no run (`row-invalid`)."""
    e = _pick(c, events, lambda e: True, "envelope of")
    if c.flip("null sequence"):
        e.seq = None
        return Expect("null sequence", "E-3", graded=False, codes=(("sequence-invalid", None),))
    e.run = None
    if e.role == "eval-started":
        return Expect(
            "null runId on eval.started", "E-3, E-1", vanish=True, global_codes=("row-invalid",)
        )
    return Expect("null runId", "E-3", global_codes=("row-invalid",), legit=True)


def m_append(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
    """§2.1: a second eval.started makes the run ungradable (`eval-restarted`); an eval.scored
    after eval.completed belongs to no trial (`scored-after-completed`, grade unchanged)."""
    last = max(e.seq for e in events if e.seq is not None)
    end_ms = max(e.ms for e in events) + 100
    started = next(e for e in events if e.role == "eval-started")
    if c.flip("restart"):
        where = c.pick(("end", "middle"))
        if where == "end":
            events.append(dataclasses.replace(started, seq=last + 1, ms=end_ms, role="extra"))
        else:
            scored = next(e for e in events if e.role == "scored")
            assert scored.seq is not None
            for e in events:
                if e.seq is not None and e.seq > scored.seq:
                    e.seq += 1
            events.append(dataclasses.replace(started, seq=scored.seq + 1, ms=scored.ms + 1))
        return Expect("eval restarted", "§2.1", graded=False, codes=(("eval-restarted", None),))
    task = c.pick(sorted({e.task for e in events if e.task}))
    late = Ev(
        info.run_id,
        last + 1,
        "eval.scored",
        {"taskId": task, "score": 0, "passed": False},
        end_ms,
        "extra",
    )
    events.append(late)
    return Expect(
        "scored after completed",
        "§2.1, E-2",
        same=True,
        codes=(("scored-after-completed", last + 1),),
    )


def _field_mutation(name: str) -> Mutation:
    def mutation(c: Chooser, info: RunInfo, events: list[Ev]) -> Expect:
        return m_field(c, info, events, name)

    mutation.__doc__ = f"`{name}` made wrong: " + (m_field.__doc__ or "")
    return mutation


MUTATIONS: dict[str, Mutation] = {
    "duplicate": m_duplicate,
    "duplicate-respelled": m_duplicate_respelled,
    "respell": m_respell,
    "conflict": m_conflict,
    "drop": m_drop,
    "retype": m_retype,
    "v1-name": m_v1_name,
    "alias": m_alias,
    "not-json": m_not_json,
    "non-object": m_non_object,
    **{f"field:{name}": _field_mutation(name) for name in FIELD_ROLES},
    "extra-field": m_extra_field,
    "repeated-key": m_repeated_key,
    "inputs": m_inputs,
    "timestamp": m_timestamp,
    "shift": m_shift,
    "swap": m_swap,
    "envelope": m_envelope,
    "append": m_append,
}


# --------------------------------------------------------------------------------------------
# Checking an outcome against the base and the expectations


def check_outcome(
    base: Outcome,
    got: Outcome,
    infos: dict[str, RunInfo],
    expects: dict[str, Expect],
) -> None:
    """Untouched runs: byte-identical line and unchanged problems. Mutated runs: `Expect`."""
    for run_id in infos:
        expect = expects.get(run_id)
        if expect is None:
            assert got.lines.get(run_id) == base.lines.get(run_id), f"untouched {run_id} changed"
            assert got.of_run(run_id) == base.of_run(run_id), f"untouched {run_id}: problems"
            assert (run_id in got.skipped) == (run_id in base.skipped), run_id
            continue
        check_run(run_id, expect, base, got)
    for code in {c for e in expects.values() for c in e.global_codes}:
        assert code in {c for c, _, _ in got.of_run(None)}, f"no {code} row"


def check_run(run_id: str, expect: Expect, base: Outcome, got: Outcome) -> None:
    where = f"{run_id}: {expect.name} ({expect.rule})"
    new = got.of_run(run_id) - base.of_run(run_id)
    new_codes = {(code, seq) for code, seq, _ in new} | {(code, None) for code, _, _ in new}
    same = got.lines.get(run_id) == base.lines.get(run_id) and run_id in got.lines
    if expect.vanish:
        assert run_id not in got.lines and run_id not in got.skipped, where
        return
    if expect.graded is False:
        assert run_id in got.skipped and run_id not in got.lines, f"{where}: graded, new {new}"
    for code in expect.codes:
        assert code in new_codes, f"{where}: no {code} among new problems {sorted(new, key=str)}"
    if expect.same:
        assert same, (
            f"{where}: summary changed\nbase: {base.lines.get(run_id)}"
            f"\ngot:  {got.lines.get(run_id)}\nnew problems: {sorted(new, key=str)}"
        )
        assert not [p for p in new if p[2] == "error"], f"{where}: new error {new}"
    if expect.same_or_codes and not same:
        for code in expect.same_or_codes:
            assert code in new_codes, f"{where}: changed without {code}: {sorted(new, key=str)}"
    if not expect.legit:
        # every fault reported: graded exactly as before, or a new problem row says why
        assert same or new, f"{where}: the grade changed and no problem says why"


# --------------------------------------------------------------------------------------------
# The base grade, computed once


@dataclass(repr=False)
class Base(_Short):
    infos: dict[str, RunInfo]
    events: dict[str, list[Ev]]
    outcome: Outcome
    suites: list[dict[str, Any]] = field(default_factory=base_suites)

    def __repr__(self) -> str:
        return "Base(base_log())"


def _rows(events: dict[str, list[Ev]]) -> list[dict[str, Any]]:
    return [e.row() for evs in events.values() for e in evs]


@pytest.fixture(scope="module")
def base() -> Base:
    infos, events = base_log()
    result = grade_events(_rows(events), base_suites())
    outcome = Outcome.of_result(result)
    # the base is clean: every run graded, the only problem is the unsupplied suite (D-4)
    assert set(outcome.lines) == set(infos), result.skipped
    problems = {(run, code) for run, keys in outcome.problems.items() for code, _, _ in keys}
    gamma = {run for run, info in infos.items() if info.suite is None}
    assert problems == {(run, "suite-missing") for run in gamma}, problems
    return Base(infos, events, outcome)


def mutate_runs(
    c: Chooser, base: Base, first: str | None = None, most: int = 10
) -> tuple[dict[str, list[Ev]], dict[str, Expect]]:
    """Mutate 1 to `most` runs (five or more stay untouched), one mutation each: `first` (when
    given) for every victim but the last of several, whose mutation is chosen at random."""
    victims = c.rng.sample(list(base.infos), c.integer(1, most))
    events = {run: copy.deepcopy(evs) for run, evs in base.events.items()}
    expects = {}
    for number, run_id in enumerate(victims):
        mixed = first is None or (number == len(victims) - 1 and number > 0)
        name = c.pick(sorted(MUTATIONS)) if mixed else first
        note(f"--- {run_id}: {name}")
        expects[run_id] = MUTATIONS[name](c, base.infos[run_id], events[run_id])
        event(f"{name}: {expects[run_id].name}")
    return events, expects


def shuffled_rows(c: Chooser, events: dict[str, list[Ev]]) -> list[dict[str, Any]]:
    return c.perm(_rows(events))


@pytest.mark.parametrize("kind", sorted(MUTATIONS))
@settings(FUZZ, max_examples=2)
@given(data=st.data())
def test_event_mutations_are_reported_and_isolated(
    base: Base, kind: str, data: st.DataObject
) -> None:
    """D-1, D-2, D-3, D-4, D-5, D-7, D-11, D-12, D-13, D-14, D-18, E-1..E-6, E-16, §2.1, §3.5,
    §6: 1 to 10 of the 15 runs mutated by `kind` (drop, duplicate, reorder, corrupt, wrong
    types, huge, deep, unicode ...; the last of several by a random kind), row order shuffled.
    No exception; each mutated run gets what its rule says (or, at the least, a problem row when
    its grade changed); every untouched run is byte-identical."""
    c = Chooser(data)
    events, expects = mutate_runs(c, base, first=kind)
    result = grade_events(shuffled_rows(c, events), base.suites)
    check_outcome(base.outcome, Outcome.of_result(result), base.infos, expects)


# --------------------------------------------------------------------------------------------
# Suites


def _suite_text(doc: Any) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False)


def suite_mutation(c: Chooser, doc: dict[str, Any]) -> tuple[list[str], str, str]:
    """Mutate one suite document; returns (file texts for it, outcome kind, description)."""
    kind = c.pick(
        (
            "respell",
            "copy",
            "opaque",
            "integral-float",
            "invalid",
            "conflict",
            "version",
            "unusable",
        ),
        "suite mutation",
    )
    if kind == "respell":  # D-7: key order, whitespace, number spelling, escapes
        return [dump_respelled(c, doc)], "same", "respelled"
    if kind == "copy":  # §1.3: identical copies are one suite
        return [_suite_text(doc), dump_respelled(c, doc)], "same", "identical copy"
    if kind == "opaque":  # task input and match.value are opaque JSON
        task = c.pick(doc["tasks"])
        how = c.pick(("huge", "unicode", "nested"))
        value: Any = [[[[[{"a": [None]}]]]]]
        if how != "nested":
            value = c.draw(huge_strings() if how == "huge" else unicode_texts())
        task["input"] = {"blob": value}
        return [_suite_text(doc)], "same", "opaque input"
    if kind == "integral-float":  # JSON Schema: 3.0 is an integer; D-7: equal to 3
        text = _suite_text(doc)
        text = text.replace('"count": 3', '"count": 3.0').replace('"k": 2', '"k": 2.0')
        text = text.replace('"weight": 1', '"weight": 1.0').replace(
            '"orderId": 7', '"orderId": 7.0'
        )
        return [text], "same", "integral numbers as N.0"
    if kind == "invalid":  # §1.3: validation faults, each makes the suite's runs suite-invalid
        fault = c.pick(
            (
                "superset",
                "argsMatch",
                "count-string",
                "count-zero",
                "k-over-count",
                "passRule",
                "onMiss",
                "duplicate-task",
                "unknown-key",
                "kind-trajectory-with-match",
                "passScore-string",
                "tasks-empty",
                "modes-wrong",
                "taskId-unicode",
            ),
            "fault",
        )
        tasks = doc["tasks"]
        if fault == "superset":
            traj = next(t["expected"]["trajectory"] for t in tasks if "trajectory" in t["expected"])
            traj["match"] = "superset"
        elif fault == "argsMatch":
            traj = next(t["expected"]["trajectory"] for t in tasks if "trajectory" in t["expected"])
            traj["calls"][0]["argsMatch"] = c.pick(("fuzzy", 1, None))
        elif fault == "count-string":
            doc["trials"] = {"count": "3"}
        elif fault == "count-zero":
            doc["trials"] = {"count": c.pick((0, -1, 2.5))}
        elif fault == "k-over-count":
            doc["trials"] = {"count": 2, "k": 3}
        elif fault == "passRule":
            doc["trials"] = {"count": 1, "passRule": "most"}
        elif fault == "onMiss":
            tasks[0]["fixtures"] = {"toolResponses": [], "onMiss": "maybe"}
        elif fault == "duplicate-task":
            tasks.append(copy.deepcopy(tasks[0]))
        elif fault == "unknown-key":
            where = c.pick(("top", "task", "expected"))
            target = (
                doc if where == "top" else tasks[0] if where == "task" else tasks[0]["expected"]
            )
            target[c.pick(("x-fuzz", "ünknown", "Tasks"))] = 1
        elif fault == "kind-trajectory-with-match":
            tasks[0]["expected"] = {
                "kind": "trajectory",
                "match": {"strategy": "exact", "value": "ok"},
                "trajectory": {"match": "exact", "calls": []},
            }
        elif fault == "passScore-string":
            doc["thresholds"] = {"passScore": c.pick(("0.5", 1.5, -1, None))}
        elif fault == "tasks-empty":
            doc["tasks"] = []
        elif fault == "modes-wrong":
            doc["modes"] = c.pick(("golden", [], ["golden", "golden"], ["x"]))
        else:
            tasks[0]["taskId"] = c.pick(("t-gölden", "T-golden", "t golden"))
        return [_suite_text(doc)], "invalid", f"invalid: {fault}"
    if kind == "conflict":  # §1.3: one id and version, two contents
        other = copy.deepcopy(doc)
        other["modes"] = ["regression"]
        return [_suite_text(doc), _suite_text(other)], "conflict", "conflicting copies"
    if kind == "version":  # D-4: the runs' suite is no longer supplied
        doc["version"] = "2.0.0"
        return [_suite_text(doc)], "missing", "other version"
    how = c.pick(
        (
            "not-json",
            "nan",
            "no-suiteId",
            "suiteId-number",
            "version-null",
            "array",
            "deep",
            "bad-utf8",
        ),
        "unusable",
    )
    text = _suite_text(doc)
    if how == "not-json":
        return [break_json(text, c.pick(NOT_JSON_EDITS))], "unusable", how
    if how == "nan":
        nan = c.pick(("NaN", "Infinity", "-Infinity"))
        text = text.replace('"modes": [', f'"thresholds": {{"passScore": {nan}}}, "modes": [', 1)
        return [text], "unusable", how
    if how == "no-suiteId":
        doc.pop("suiteId")
    elif how == "suiteId-number":
        doc["suiteId"] = 7
    elif how == "version-null":
        doc["version"] = None
    elif how == "array":
        return [_suite_text([doc])], "unusable", how
    elif how == "deep":  # valid JSON far deeper than any suite needs: an implementation limit
        depth = 100_000
        return ["[" * depth + "]" * depth], "unusable", how
    else:
        return ["\udcff"], "unusable", how  # written with surrogateescape: invalid UTF-8
    return [_suite_text(doc)], "unusable", how


def write_suites(directory: Path, texts: dict[str, list[str]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, versions in texts.items():
        for number, text in enumerate(versions):
            path = directory / f"{name}-{number}.json"
            path.write_bytes(text.encode("utf-8", errors="surrogateescape"))


def _suite_runs(infos: dict[str, RunInfo], suite_id: str) -> list[str]:
    return [r for r, i in infos.items() if i.suite is not None and i.suite["suiteId"] == suite_id]


def suite_expects(
    infos: dict[str, RunInfo], suite_id: str, outcome: str, description: str
) -> dict[str, Expect]:
    rule = {"same": "§1.3, D-7", "invalid": "§1.3", "conflict": "§1.3", "missing": "D-4"}[outcome]
    expects = {}
    for run_id in _suite_runs(infos, suite_id):
        if outcome == "same":
            expects[run_id] = Expect(description, rule, same=True)
        elif outcome == "invalid":
            expects[run_id] = Expect(description, rule, graded=False, codes=(("suite-invalid", 1),))
        elif outcome == "conflict":
            expects[run_id] = Expect(
                description, rule, graded=False, codes=(("suite-conflict", 1),)
            )
        else:
            expects[run_id] = Expect(description, rule, codes=(("suite-missing", 1),))
    return expects


@settings(FUZZ, max_examples=24)
@given(data=st.data())
def test_suite_mutations_are_reported_and_isolated(base: Base, data: st.DataObject) -> None:
    """§1.3, D-4, D-7: one suite file mutated. Harmless rewrites (key order, number spelling,
    escapes, identical copies, integral numbers written `3.0`, opaque task inputs of any size)
    grade exactly as before; validation faults make that suite's runs `suite-invalid`, a
    conflicting copy `suite-conflict`, another version `suite-missing` (graded from the host
    record); a file that is not JSON (NaN included) or names no string suiteId/version raises
    the project's SuiteError. The other suite's runs are byte-identical throughout."""
    c = Chooser(data)
    which = c.pick((ALPHA_ID, BETA_ID), "suite")
    docs = {ALPHA_ID: suite_alpha(), BETA_ID: suite_beta()}
    texts, outcome, description = suite_mutation(c, docs[which])
    event(f"{outcome}: {description}")
    files = {s: [_suite_text(d)] for s, d in docs.items() if s != which} | {which: texts}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_suites(root / "suites", files)
        events = root / "events.parquet"
        write_rows(events, _rows(base.events))
        if outcome == "unusable":
            with pytest.raises(SuiteError) as caught:
                grade_paths([events], [root / "suites"])
            assert "\n" not in str(caught.value), caught.value
            return
        result = grade_paths([events], [root / "suites"])
    expects = suite_expects(base.infos, which, outcome, description)
    check_outcome(base.outcome, Outcome.of_result(result), base.infos, expects)


@settings(FUZZ, max_examples=300)
@given(data=st.data())
def test_compiled_suite_schema_agrees_with_the_detailed_one(data: st.DataObject) -> None:
    """§1.3: suites are checked by the compiled validator first and by the detailed one only
    when it finds a fault, so the two must agree on every mutated suite: a fault the compiled
    one missed would let an invalid suite grade."""
    c = Chooser(data)
    doc = suite_alpha() if c.pick((True, False), "suite") else suite_beta()
    texts, _, description = suite_mutation(c, doc)
    for text in texts:
        try:
            mutated = json.loads(
                text,
                parse_constant=suites.jsonvalue.reject_constant,
                parse_float=suites._finite_float,
            )
        except (ValueError, RecursionError):
            continue  # not strict JSON, or too deep: refused before any schema (SuiteError)
        fast = suites._fast_validator(suites.SUITE_SCHEMA).is_valid(mutated)
        detailed = not any(suites._validator(suites.SUITE_SCHEMA).iter_errors(mutated))
        assert fast == detailed, description


# --------------------------------------------------------------------------------------------
# The CLI


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    table = pa.table(
        {
            "runId": pa.array([r["runId"] for r in rows], pa.string()),
            "sequence": pa.array([r["sequence"] for r in rows], pa.int64()),
            "type": pa.array([r["type"] for r in rows], pa.string()),
            "payload": pa.array([r["payload"] for r in rows], pa.string()),
            "timestamp": pa.array([r["timestamp"] for r in rows], pa.string()),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def run_cli(*args: str | Path) -> tuple[int, str, str]:
    """`evalbatch ARGS` through the console-script entry point (`main`, which maps the project's
    errors to exit code 2) inside click's CliRunner isolation: (exit code, stdout, stderr)."""
    runner = CliRunner()
    argv = sys.argv
    with runner.isolation() as (stdout, stderr, _):
        sys.argv = ["evalbatch", *map(str, args)]
        code: Any = 0
        try:
            main()
        except SystemExit as exc:
            code = exc.code
        finally:
            sys.argv = argv
        out, err = stdout.getvalue().decode(), stderr.getvalue().decode()
    return (0 if code is None else int(code)), out, err


def assert_no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text, text
        assert "internal error" not in text, text


@pytest.fixture(scope="module")
def cli_base(base: Base, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """The base log graded through `evalbatch run`."""
    root = tmp_path_factory.mktemp("cli-base")
    write_suites(root / "suites", {s["suiteId"]: [_suite_text(s)] for s in base.suites})
    events = write_rows(root / "events" / "all.parquet", _rows(base.events))
    code, out, err = run_cli("run", events, "--suites", root / "suites", "--out", root / "out")
    assert code == 0, (out, err)
    outcome = Outcome.of_dir(root / "out")
    assert outcome.lines == base.outcome.lines  # the CLI writes what the library grades
    return outcome


@settings(FUZZ, max_examples=14)
@given(data=st.data())
def test_cli_run_on_mutated_input(base: Base, cli_base: Outcome, data: st.DataObject) -> None:
    """§4, §6, §1.3, E-22 through `evalbatch run` (CliRunner): mutated runs split over several
    Parquet files, sometimes with a file that is not Parquet or lacks a column, sometimes a suite
    file that cannot be used. Exit code 3 exactly when problems.parquet holds an error row, else
    0; an unusable suite file exits 2 with a one-line message and writes nothing; never a
    traceback. Untouched runs' summaries.jsonl lines are byte-identical to the base's."""
    c = Chooser(data)
    events, expects = mutate_runs(c, base, most=6)
    rows = shuffled_rows(c, events)
    bad_file = c.pick((None, None, "not-parquet", "no-type-column", "empty"))
    bad_suite = c.pick((None, None, None, None, "not-json", "no-version"))
    event(f"bad file: {bad_file}, bad suite: {bad_suite}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suites = {s["suiteId"]: [_suite_text(s)] for s in base.suites}
        if bad_suite == "not-json":
            suites["broken"] = ['{"suiteId": "acme.fuzz.evals.broken", "version": "1.0.0",']
        elif bad_suite == "no-version":
            suites["broken"] = ['{"suiteId": "acme.fuzz.evals.broken"}']
        write_suites(root / "suites", suites)
        parts = c.integer(1, 3, "files")
        for part in range(parts):
            write_rows(root / "events" / f"part-{part}.parquet", rows[part::parts])
        if bad_file == "not-parquet":
            (root / "events" / "zz-bad.parquet").write_bytes(b"PAR1 this is not parquet")
        elif bad_file == "no-type-column":
            other = write_rows(root / "events" / "zz-bad.parquet", rows[:5])
            pq.write_table(pq.read_table(other).drop(["type"]), other)
        elif bad_file == "empty":
            (root / "events" / "zz-bad.parquet").write_bytes(b"")
        out = root / "out"
        code, stdout, stderr = run_cli(
            "run", root / "events", "--suites", root / "suites", "--out", out, "--quiet"
        )
        assert_no_traceback(stdout, stderr)
        if bad_suite is not None:
            lines = [line for line in stderr.splitlines() if line.strip()]
            assert code == 2 and len(lines) == 1, (code, stderr)
            assert not (out / "summaries.jsonl").exists()
            return
        assert code in (0, 3), (code, stdout, stderr)
        got = Outcome.of_dir(out)
        errors = pl.read_parquet(out / "problems.parquet").filter(pl.col("severity") == "error")
    assert code == (3 if errors.height else 0), (code, errors)
    if bad_file is not None:
        codes = {c for c, _, _ in got.of_run(None)}
        assert codes & {"file-unreadable", "columns-missing"}, codes
    check_outcome(cli_base, got, base.infos, expects)


# --------------------------------------------------------------------------------------------
# Whole random logs (tests/strategies.py) with a random mutation: robustness and isolation


KEEP = "acme/run-fuzz-000000000003"


@pytest.fixture(scope="module")
def kept_alone() -> Outcome:
    """The clean run KEEP graded on its own."""
    _, clean = base_log()
    return Outcome.of_result(grade_events([e.row() for e in clean[KEEP]], [suite_beta()]))


@settings(FUZZ, max_examples=10)
@given(data=st.data())
def test_random_logs_mutated_never_crash_and_stay_isolated(
    kept_alone: Outcome, data: st.DataObject
) -> None:
    """§6, D-3: random plausible logs (tests/strategies.py, all the contract's corners) with a
    second, clean reference run beside them; one random run of the log has an event corrupted
    (not JSON, a wrong-typed field, dropped, duplicated with other content). Grading never
    raises, and the clean run is byte-identical to its grade without the corrupted one."""
    events, suites = data.draw(logs_and_suites(), label="log")
    c = Chooser(data)
    _, clean = base_log()
    clean_rows = [e.row() for e in clean[KEEP]]
    run_ids = sorted({r["runId"] for r in events if r["runId"] is not None})
    if run_ids:
        victim = c.pick(run_ids, "victim")
        rows = [r for r in events if r["runId"] == victim]
        row = c.pick(rows, "event")
        how = c.pick(("not-json", "field", "drop", "conflict", "deep"))
        text = row["payload"] if isinstance(row["payload"], str) else "{}"
        if how == "not-json" and text.startswith("{"):
            row["payload"] = break_json(text, c.pick(NOT_JSON_EDITS))
        elif how == "field" and text.startswith("{") and text != "{}":
            doc = json.loads(text)
            key = c.pick(sorted(doc))
            doc[key] = c.pick(("x", -1, 0.5, None, [], {}, True, 10**25))
            row["payload"] = json.dumps(doc)
        elif how == "drop":
            events = [r for r in events if r is not row]
        elif how == "conflict":
            events = [*events, {**row, "payload": json.dumps({"x-fuzz": 1})}]
        else:
            row["payload"] = deep_json_text(c.pick(DEPTHS), c.pick(SHAPES))
    together = Outcome.of_result(grade_events([*events, *clean_rows], [*suites, suite_beta()]))
    assert together.lines[KEEP] == kept_alone.lines[KEEP]
    assert together.of_run(KEEP) == kept_alone.of_run(KEEP)


def test_fuzz_mutation_table_is_complete() -> None:
    """§6 (meta): every mutation kind the property tests draw is listed, and each names the
    contract rule it checks."""
    assert set(MUTATIONS) >= {"duplicate", "drop", "swap", "not-json", "field:score", "inputs"}
    for mutation in MUTATIONS.values():
        assert mutation.__doc__ and any(tag in mutation.__doc__ for tag in ("D-", "E-", "§"))


# --------------------------------------------------------------------------------------------
# Minimal cases the fuzzing found, kept as plain tests so every CI run checks them whatever the
# random draws


def _one_trial_log(
    *, started: str, tool_called: str | None = None, extra: tuple[tuple[str, str], ...] = ()
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """eval.started; a bracket (started payload text as given) holding crm:lookup, a nested
    helper invocation with kb:search, any `extra` events, the completion of `inv-outer`; then
    eval.scored of t-a and eval.completed (t-b of suite_beta() is missing: `task-missing`)."""
    run = "acme/run-fuzz-found-000001"
    texts: list[tuple[str, str]] = [
        (
            "eval.started",
            json.dumps({"suiteId": BETA_ID, "suiteVersion": VERSION, "modes": ["golden"]}),
        ),
        ("agent.invocation-started", started),
        (
            "agent.tool-called",
            tool_called
            or json.dumps(
                {
                    "agentId": TARGET,
                    "toolName": "crm:lookup",
                    "callId": "c-1",
                    "inputs": {"orderId": 1, "tags": ["x", "y"]},
                }
            ),
        ),
        (
            "agent.invocation-started",
            json.dumps({"invocationId": "inv-nested", "agentId": HELPER, "source": "run-api"}),
        ),
        (
            "agent.tool-called",
            json.dumps({"agentId": HELPER, "toolName": "kb:search", "callId": "c-2"}),
        ),
        (
            "agent.invocation-completed",
            json.dumps({"invocationId": "inv-nested", "agentId": HELPER, "outcome": "completed"}),
        ),
        *extra,
        (
            "agent.invocation-completed",
            json.dumps({"invocationId": "inv-outer", "agentId": TARGET, "outcome": "completed"}),
        ),
        ("eval.scored", json.dumps({"taskId": "t-a", "score": 1, "passed": True})),
        ("eval.completed", json.dumps({"aggregateScore": 1, "passed": True})),
    ]
    rows = [
        {"runId": run, "sequence": n, "type": t, "payload": p, "timestamp": iso(100 * n)}
        for n, (t, p) in enumerate(texts)
    ]
    where = {"started": 1, "call": 2, "scored": len(texts) - 2}
    return rows, where


@pytest.mark.parametrize("invocation", [12345, None, "<absent>"], ids=["number", "null", "absent"])
def test_found_bracket_start_without_its_completion_stays_unclosed(invocation: Any) -> None:
    """§2.1, E-12: the bracket runs from the segment's first agent.invocation-started to the
    completion with *its* invocationId; a start whose invocationId is not a string (or absent)
    is never closed (`bracket-unclosed`), and a nested invocation's completion must not close it.
    Found by `test_event_mutations_are_reported_and_isolated[field:invocationId]`."""
    payload: dict[str, Any] = {"agentId": TARGET, "source": "run-api"}
    if invocation != "<absent>":
        payload["invocationId"] = invocation
    rows, where = _one_trial_log(started=json.dumps(payload))
    result = grade_events(rows, [suite_beta()])
    keys = Outcome.of_result(result).of_run(rows[0]["runId"])
    assert ("bracket-unclosed", where["started"], "warning") in keys, keys
    task = result.summaries[rows[0]["runId"]]["tasks"][0]
    # the bracket reaches the end of the segment: the target's crm:lookup, the helper's kb:search
    assert task["efficiency"]["toolCallCount"] == 2, task


@pytest.mark.parametrize(
    "edit", ["trailing-comma", "array-trailing-comma", "object-trailing-comma"]
)
@pytest.mark.parametrize("graded_type", [True, False], ids=["provider.usage", "tool-returned"])
def test_found_trailing_commas_are_not_json(edit: str, graded_type: bool) -> None:
    """D-3, D-7: JSON (RFC 8259) has no trailing commas, so a payload with one is not JSON: on a
    type grading reads the run is not graded (`payload-invalid`), on another type the event is
    ignored with `payload-ignored`. Found by `test_event_mutations_are_reported_and_isolated
    [not-json]`."""
    usage = json.dumps({"provider": "acme", "model": "m-1", "inputTokens": 1, "outputTokens": 1})
    text = break_json(usage, edit)
    type_ = "provider.usage" if graded_type else "agent.tool-returned"
    rows, _ = _one_trial_log(
        started=json.dumps({"invocationId": "inv-outer", "agentId": TARGET, "source": "run-api"}),
        extra=((type_, text),),
    )
    sequence = 6  # the extra event, after the nested completion
    assert rows[sequence]["payload"] == text
    result = grade_events(rows, [suite_beta()])
    keys = Outcome.of_result(result).of_run(rows[0]["runId"])
    if graded_type:
        assert ("payload-invalid", sequence, "error") in keys, keys
        assert result.skipped == [rows[0]["runId"]]
    else:
        assert ("payload-ignored", sequence, "warning") in keys, keys


@pytest.mark.parametrize("depth", [1_000, 3_000])
def test_found_deeply_nested_tool_inputs_are_compared_without_a_crash(depth: int) -> None:
    """D-7, D-8, §6: tool inputs nested `depth` levels deep are valid JSON; compared under
    `argsMatch: exact` they simply do not equal the expected args (the trajectory is unmatched),
    or, if a parser limit is hit, the run carries a problem naming the event. Never an exception.
    Found by `test_event_mutations_are_reported_and_isolated[inputs]`."""
    deep = deep_json_text(depth, "array")
    head = json.dumps({"agentId": TARGET, "toolName": "crm:lookup", "callId": "c-1"})
    call = head[:-1] + ', "inputs": ' + deep + "}"
    rows, where = _one_trial_log(
        started=json.dumps({"invocationId": "inv-outer", "agentId": TARGET, "source": "run-api"}),
        tool_called=call,
    )
    result = grade_events(rows, [suite_beta()])
    run = rows[0]["runId"]
    if run in result.summaries:
        assert result.summaries[run]["tasks"][0]["trajectory"]["matched"] is False
    else:
        keys = Outcome.of_result(result).of_run(run)
        assert any(seq == where["call"] for _, seq, _ in keys), keys


@pytest.mark.parametrize("depth", [500, 1_000])
def test_found_deep_payload_with_a_repeated_key(depth: int) -> None:
    """D-7, E-26, §6: an eval.scored whose payload has a repeated key (the last wins) and an
    unread field nested `depth` levels deep grades as without that field, or (a parser limit) is
    reported against the event; never an exception. Found by
    `test_event_mutations_are_reported_and_isolated[extra-field]`."""
    rows, where = _one_trial_log(
        started=json.dumps({"invocationId": "inv-outer", "agentId": TARGET, "source": "run-api"})
    )
    plain = grade_events(rows, [suite_beta()])
    scored = rows[where["scored"]]
    deep = deep_json_text(depth, "mixed")
    scored["payload"] = '{"score": "decoy", "x-deep": ' + deep + ", " + scored["payload"][1:]
    result = grade_events(rows, [suite_beta()])
    run = rows[0]["runId"]
    if run in result.summaries:
        assert summary_line(run, result.summaries[run]) == summary_line(run, plain.summaries[run])
    else:
        keys = Outcome.of_result(result).of_run(run)
        assert ("payload-invalid", where["scored"], "error") in keys, keys
