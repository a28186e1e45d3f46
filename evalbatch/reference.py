"""A plain, per-record reference grader of CONTRACT §1.1, §2, §3 and §4.

It reads one event at a time in ordinary Python and follows the contract's wording as literally as
it can, so the vectorized engine can be checked against it (the role a conformance suite's
reference grader plays). Speed is not a goal here; clarity is. Numbers are kept exact (`int`,
`Decimal`, `Fraction`) until the summary is written, so ties and sums do not depend on float
evaluation order (D-17).

Where the contract is silent this module follows `docs/decisions.md` (E-n).
"""

from __future__ import annotations

import calendar
import datetime as dt
import itertools
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any, TypeGuard

from evalbatch.options import GradeOptions
from evalbatch.problems import (
    MAX_COST_USD,
    MAX_LATENCY_MS,
    MAX_SEQUENCE,
    MAX_TOKENS,
    MAX_TRIALS,
    severity,
)

__all__ = [
    "ReferenceResult",
    "args_subset",
    "call_matches",
    "grade_reference",
    "grade_trajectory",
    "json_equal",
    "max_matching",
    "parse_json_text",
    "timestamp_ms",
]

# --------------------------------------------------------------------------------------------------
# Event types (D-1)
# --------------------------------------------------------------------------------------------------

STARTED = "agent.invocation-started"
COMPLETED = "agent.invocation-completed"
TOOL_CALLED = "agent.tool-called"
USAGE = "provider.usage"
EVAL_STARTED = "eval.started"
EVAL_SCORED = "eval.scored"
EVAL_COMPLETED = "eval.completed"

#: v1 spellings and the v2 names they stand for (D-1).
V1_TO_V2: dict[str, str] = {
    "agent.invocation.started": STARTED,
    "agent.invocation.completed": COMPLETED,
    "agent.toolCalled": TOOL_CALLED,
    "agent.toolReturned": "agent.tool-returned",
    "core.dispatch.join": "dispatch.joined",
    "core.workflowChain.event": "workflow-chain.event",
}

#: The types grading reads; a non-JSON payload on one of them makes the run ungradable (D-3).
GRADED_TYPES = frozenset(
    {STARTED, COMPLETED, TOOL_CALLED, USAGE, EVAL_STARTED, EVAL_SCORED, EVAL_COMPLETED}
)

#: The events that name child runs (E-102), their v1 spellings, and what a child run must hold
#: readable for its calls to count.
DISPATCHED = "node.dispatched"
CHAIN_EVENT = "workflow-chain.event"
JOINED = "dispatch.joined"
DISPATCH_TYPES = frozenset({DISPATCHED, CHAIN_EVENT, JOINED})
DELEGATE_READ_TYPES = DISPATCH_TYPES | {TOOL_CALLED, EVAL_STARTED}

#: OpenWOP model classes (E-14).
MODEL_CLASSES = frozenset(
    {"reasoning", "writing", "coding", "research", "classification", "general"}
)

#: D-17: |x - t| <= 1e-9 * max(1, |t|) counts as x = t.
TIE_TOLERANCE = Fraction(1, 10**9)


def _v2_type(value: Any) -> str | None:
    """D-1: map a v1 spelling to its v2 name; a non-string type is no known type."""
    if not isinstance(value, str):
        return None
    return V1_TO_V2.get(value, value)


# --------------------------------------------------------------------------------------------------
# JSON values (D-7, D-8)
# --------------------------------------------------------------------------------------------------


class _NotJson:
    """Marker for a payload whose text is not JSON."""

    def __repr__(self) -> str:
        return "<not JSON>"


NOT_JSON = _NotJson()


# kept apart from `jsonvalue.reject_constant`: the reference grader shares no code with the engine
def _reject_constant(name: str) -> Any:
    """`NaN`, `Infinity` and `-Infinity` are not JSON (D-7)."""
    raise ValueError(f"{name} is not JSON")


def _parse_int(text: str) -> int | Decimal:
    """Keep integers exact; very long ones go through Decimal to avoid int's digit limit."""
    return int(text) if len(text) <= 4000 else Decimal(text)


def parse_json_text(text: str) -> Any:
    """Parse JSON text into exact values (ints, Decimals); raise ValueError when it is not JSON.

    A repeated key keeps the last value, as JSON parsers do (D-7).
    """
    return json.loads(
        text,
        parse_float=Decimal,
        parse_int=_parse_int,
        parse_constant=_reject_constant,
        object_pairs_hook=dict,
    )


def _normalize(value: Any) -> Any:
    """Turn Python-side JSON (suites, structured payloads) into the exact form payloads use.

    A float read from JSON text stands for the shortest decimal that round-trips it, which is
    what the author wrote; `Decimal(repr(x))` recovers that value exactly.
    """
    if isinstance(value, bool) or value is None or isinstance(value, (str, int, Decimal)):
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, Fraction):
        return value
    if isinstance(value, Mapping):
        return {str(k): _normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalize(v) for v in value]
    return value


def _is_number(value: Any) -> TypeGuard[int | Decimal | Fraction]:
    """A JSON number: never a boolean (D-7, D-11)."""
    return isinstance(value, (int, Decimal, Fraction)) and not isinstance(value, bool)


def _is_integral(value: Any) -> TypeGuard[int | Decimal | Fraction]:
    """An integral JSON number (`1.0` counts, D-5)."""
    if not _is_number(value):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, Decimal):
        return value.is_finite() and value == value.to_integral_value()
    return value.denominator == 1


def _within(value: Any, limit: int) -> TypeGuard[int | Decimal | Fraction]:
    """A JSON number from 0 to `limit`, the limit compared on the double value (E-20, E-77)."""
    if not (_is_number(value) and value >= 0):
        return False
    try:
        return value <= limit or float(value) <= limit
    except OverflowError:  # an integer too large for a double
        return False


def _sequence(value: Any) -> int | None:
    """A row's sequence: an integer 0..MAX_SEQUENCE (`3.0` in a double column counts), else None
    (E-3, E-76)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value) if 0 <= value <= MAX_SEQUENCE else None


def _exact(value: int | Decimal | Fraction) -> Fraction:
    """The exact rational value of a JSON number."""
    return Fraction(value)


def json_equal(a: Any, b: Any) -> bool:
    """D-7 JSON equality.

    Numbers by exact decimal value (`1 == 1.0`, `-0 == 0`, big integers exact); booleans are not
    numbers; null equals only null; strings exactly; objects by key set and values, key order
    ignored; arrays element by element, in order.
    """
    a, b = _normalize(a), _normalize(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if a is None or b is None:
        return a is None and b is None
    if _is_number(a) or _is_number(b):
        return _is_number(a) and _is_number(b) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list) or isinstance(b, list):
        return (
            isinstance(a, list)
            and isinstance(b, list)
            and len(a) == len(b)
            and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and all(json_equal(a[key], b[key]) for key in a)
        )
    return False


def args_subset(args: Any, inputs: Any) -> bool:
    """D-8: does `inputs` hold `args` as a subset?

    An object `args` needs an object `inputs` holding each of its keys, values matching
    recursively (objects as subsets; arrays, scalars and null JSON-equal). Any other `args`
    must JSON-equal `inputs`. `{}` matches any object.
    """
    args, inputs = _normalize(args), _normalize(inputs)
    if isinstance(args, dict):
        if not isinstance(inputs, dict):
            return False
        return all(key in inputs and args_subset(value, inputs[key]) for key, value in args.items())
    return json_equal(args, inputs)


def call_matches(spec: Mapping[str, Any], tool_name: Any, inputs: Any) -> bool:
    """§3.1: an expected call (or fixture entry) matches a tool call.

    The tool must be equal; without `args` the tool alone decides, whatever `argsMatch` says;
    `argsMatch` absent means `ignore`. A present `"args": null` is compared like any value.
    """
    if not isinstance(tool_name, str) or spec.get("tool") != tool_name:
        return False
    if "args" not in spec:
        return True
    how = spec.get("argsMatch", "ignore")
    if how == "exact":
        return json_equal(inputs, spec["args"])
    if how == "subset":
        return args_subset(spec["args"], inputs)
    return True


def max_matching(adjacent: Sequence[Sequence[bool]]) -> int:
    """Size of a maximum bipartite matching (Kuhn's augmenting paths).

    `adjacent[i][j]` says left item i may pair with right item j. Greedy pairing is not enough
    for any-order matching with subset args (§3.2).
    """
    right_count = len(adjacent[0]) if adjacent else 0
    owner: list[int] = [-1] * right_count

    def augment(left: int, visited: list[bool]) -> bool:
        for right in range(right_count):
            if adjacent[left][right] and not visited[right]:
                visited[right] = True
                if owner[right] == -1 or augment(owner[right], visited):
                    owner[right] = left
                    return True
        return False

    return sum(1 for left in range(len(adjacent)) if augment(left, [False] * right_count))


# --------------------------------------------------------------------------------------------------
# Trajectory grading (§3.2, D-18)
# --------------------------------------------------------------------------------------------------


def _mode_matches(mode: str, adjacent: list[list[bool]], expected: int, observed: int) -> bool:
    """Apply one of the four match modes to the call-match matrix E x O."""
    if mode == "exact":
        return observed == expected and all(adjacent[i][i] for i in range(expected))
    if mode == "in-order":
        # Leftmost-first is optimal for finding E as an ordered subsequence of O.
        position = 0
        for i in range(expected):
            while position < observed and not adjacent[i][position]:
                position += 1
            if position == observed:
                return False
            position += 1
        return True
    if mode == "any-order":
        return max_matching(adjacent) == expected
    if mode == "subset":
        return all(any(adjacent[i][j] for i in range(expected)) for j in range(observed))
    return False


def grade_trajectory(
    expectation: Mapping[str, Any],
    observed: Sequence[tuple[Any, Any]],
    bracket_present: bool = True,
) -> dict[str, Any]:
    """Grade an observed trajectory `[(toolName, inputs), ...]` against `expected.trajectory`.

    Returns the summary block `{mode, matched, expectedCount, observedCount, matchedCount,
    forbiddenCount}`. Without a bracket the path cannot be shown, so it is unmatched (D-18).
    """
    expectation = _normalize(expectation)
    mode = expectation.get("match")
    calls = expectation.get("calls")
    calls = calls if isinstance(calls, list) else []
    if not bracket_present:
        observed = []
    adjacent = [
        [isinstance(spec, dict) and call_matches(spec, tool, inputs) for tool, inputs in observed]
        for spec in calls
    ]
    forbidden = expectation.get("forbidden")
    forbidden = forbidden if isinstance(forbidden, list) else []
    forbidden_count = sum(1 for tool, _ in observed if isinstance(tool, str) and tool in forbidden)
    mode_ok = _mode_matches(str(mode), adjacent, len(calls), len(observed))
    return {
        "mode": mode,
        "matched": bool(bracket_present and mode_ok and forbidden_count == 0),
        "expectedCount": len(calls),
        "observedCount": len(observed),
        "matchedCount": max_matching(adjacent),
        "forbiddenCount": forbidden_count,
    }


#: E-3: a runId of Unicode white space only (or empty) names no run, as a null one
_BLANK = re.compile("[\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*")


# --------------------------------------------------------------------------------------------------
# Timestamps (E-17)
# --------------------------------------------------------------------------------------------------

_TIMESTAMP = re.compile(
    r"^(\d{4,6})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?$"
)

#: the Gregorian calendar repeats every 400 years, which are exactly this many seconds
_SECONDS_PER_400_YEARS = 146_097 * 86_400


def _utc_seconds(year: int, month: int, day: int, hour: int, minute: int, second: int) -> int:
    """Seconds since the epoch of a proleptic Gregorian date-time of any year >= 0 (ValueError
    for a date that does not exist): year 0 is a calendar year, though Python's has none."""
    cycles, year_in_cycle = divmod(year, 400)
    shifted = (year_in_cycle + 400, month, day, hour, minute, second)
    dt.datetime(*shifted)  # month 13, 30 February, hour 24: ValueError
    seconds = calendar.timegm((*shifted, 0, 0, 0))
    return seconds + (cycles - 1) * _SECONDS_PER_400_YEARS


#: E-124: a timestamp names an instant from year 1 up to, not including, year 10000 (UTC)
_FIRST_MS = Fraction(_utc_seconds(1, 1, 1, 0, 0, 0) * 1000)
_END_MS = Fraction(_utc_seconds(10000, 1, 1, 0, 0, 0) * 1000)


def timestamp_ms(value: Any) -> Fraction | None:
    """An ISO-8601 date-time as exact milliseconds since the epoch; None when not parseable or
    outside years 1 to 9999 in UTC (E-124).

    A time without an offset is read as UTC.
    """
    instant = _instant_ms(value)
    if instant is None or not _FIRST_MS <= instant < _END_MS:
        return None
    return instant


def _instant_ms(value: Any) -> Fraction | None:
    """`timestamp_ms` before its range check."""
    if isinstance(value, dt.datetime):
        offset = value.utcoffset() or dt.timedelta()
        whole_seconds = calendar.timegm(value.replace(tzinfo=None).timetuple())
        seconds = Fraction(whole_seconds) + Fraction(value.microsecond, 10**6)
        return (seconds - Fraction(offset.days * 86_400 + offset.seconds)) * 1000
    if not isinstance(value, str):
        return None
    found = _TIMESTAMP.match(value.strip())
    if found is None:
        return None
    try:
        seconds = Fraction(_utc_seconds(*(int(found.group(i)) for i in range(1, 7))))
    except ValueError:
        return None
    digits = found.group(7)
    if digits:
        seconds += Fraction(int(digits), 10 ** len(digits))
    if found.group(9):
        offset_minutes = int(found.group(10)) * 60 + int(found.group(11))
        if found.group(9) == "-":
            offset_minutes = -offset_minutes
        seconds -= offset_minutes * 60
    return seconds * 1000


# --------------------------------------------------------------------------------------------------
# Public result
# --------------------------------------------------------------------------------------------------


@dataclass
class ReferenceResult:
    """What the reference grader produced for one batch of events."""

    summaries: dict[str, dict]  # runId -> EvalSummary dict, for every graded eval run
    problems: list[dict]  # {"runId", "sequence", "code", "severity"}
    skipped: set[str]  # runIds of eval runs not graded (an error-severity problem)


# --------------------------------------------------------------------------------------------------
# Events of one run
# --------------------------------------------------------------------------------------------------


@dataclass
class _Event:
    """One event of a run after de-duplication (D-3, E-4)."""

    sequence: int
    type: str | None
    text: Any
    value: Any  # parsed payload, or NOT_JSON
    timestamp: Any
    instant: Fraction | None

    @property
    def fields(self) -> dict[str, Any]:
        """A payload that is not a JSON object has no fields (E-6)."""
        return self.value if isinstance(self.value, dict) else {}


def _parse_payload(payload: Any) -> Any:
    """A payload as an exact JSON value; a null cell reads as JSON null, bad text as NOT_JSON."""
    if payload is None:
        return None
    if isinstance(payload, (bytes, bytearray)):
        try:
            payload = payload.decode("utf-8")
        except UnicodeDecodeError:
            return NOT_JSON
    if isinstance(payload, str):
        try:
            return parse_json_text(payload)
        except (ValueError, RecursionError):
            return NOT_JSON
    return _normalize(payload)


def _rows_by_sequence(rows: Iterable[Mapping[str, Any]]) -> tuple[dict[int, list[_Event]], int]:
    """A run's rows as events, grouped by sequence (D-3 copies side by side), and how many rows
    had no usable sequence (E-3)."""
    by_sequence: dict[int, list[_Event]] = defaultdict(list)
    unusable = 0
    for row in rows:
        sequence = _sequence(row.get("sequence"))
        if sequence is None:
            unusable += 1
            continue
        payload = row.get("payload")
        timestamp = row.get("timestamp")
        by_sequence[sequence].append(
            _Event(
                sequence=sequence,
                type=_v2_type(row.get("type")),
                text=payload,
                value=_parse_payload(payload),
                timestamp=timestamp,
                instant=timestamp_ms(timestamp),
            )
        )
    return by_sequence, unusable


def _same_event(a: _Event, b: _Event) -> bool:
    """E-4: one event when the types are equal and the payloads JSON-equal (or, when either is
    not JSON, the payload texts are equal)."""
    if a.type != b.type:
        return False
    if a.value is NOT_JSON or b.value is NOT_JSON:
        return a.text == b.text
    return json_equal(a.value, b.value)


def _earliest(events: list[_Event]) -> _Event:
    """Of equal rows keep the one with the earliest timestamp (D-3); unparseable ones last."""
    return min(events, key=lambda e: (e.instant is None, e.instant or 0))


# --------------------------------------------------------------------------------------------------
# Payload readers (D-2)
# --------------------------------------------------------------------------------------------------


def _first_string(fields: Mapping[str, Any], *names: str) -> str | None:
    """The first of the alias fields that holds a string."""
    for name in names:
        value = fields.get(name)
        if isinstance(value, str):
            return value
    return None


def _agent_id(fields: Mapping[str, Any]) -> str | None:
    """D-2: `agentId`, else `agent.agentId`; only a string names an agent."""
    direct = fields.get("agentId")
    if isinstance(direct, str):
        return direct
    agent = fields.get("agent")
    if isinstance(agent, dict) and isinstance(agent.get("agentId"), str):
        return agent["agentId"]
    return None


def _tool_name(fields: Mapping[str, Any]) -> str | None:
    """D-2: `toolName`, else `toolId`."""
    return _first_string(fields, "toolName", "toolId")


def _tool_inputs(fields: Mapping[str, Any]) -> Any:
    """D-2: `inputs`, else `arguments`; absent is `{}`, an explicit null stays null."""
    if "inputs" in fields:
        return fields["inputs"]
    if "arguments" in fields:
        return fields["arguments"]
    return {}


# --------------------------------------------------------------------------------------------------
# Delegates that ran as child runs (E-102)
# --------------------------------------------------------------------------------------------------


def _named_children(event: _Event) -> list[str] | None:
    """The child runs a dispatch event names, in order; None when it hides which ran (not JSON,
    a node.dispatched without a string childRunId, a childRunId that is not a string, a
    mergeOrder that is not a list of strings)."""
    if event.value is NOT_JSON:
        return None
    fields = event.fields
    if event.type == JOINED:
        order = fields.get("mergeOrder")
        if isinstance(order, list) and all(isinstance(child, str) for child in order):
            return list(order)
        return None
    if "childRunId" not in fields:
        return [] if event.type == CHAIN_EVENT else None
    child = fields["childRunId"]
    return [child] if isinstance(child, str) else None


def _children_in(scope: Sequence[_Event]) -> tuple[list[tuple[int, str]], list[int]]:
    """The child runs a scope (a bracket, or a child's whole run) names, as (anchor, run id) in
    slot order, and the sequences of its dispatch events that hide their children.

    A child stands at the first event naming it; the children of one dispatch.joined (the first
    that lists it) stand together at the first event naming any of them, in mergeOrder.
    """
    first: dict[str, int] = {}
    joins: dict[str, tuple[int, int]] = {}  # child -> (its join's sequence, place in mergeOrder)
    hidden: list[int] = []
    for event in scope:
        if event.type not in DISPATCH_TYPES:
            continue
        named = _named_children(event)
        if named is None:
            hidden.append(event.sequence)
            continue
        for rank, child in enumerate(named):
            first.setdefault(child, event.sequence)
            if event.type == JOINED and child not in joins:
                joins[child] = (event.sequence, rank)
    anchors = {
        child: min(first[other] for other in joins if joins[other][0] == joins[child][0])
        if child in joins
        else seq
        for child, seq in first.items()
    }
    order = sorted(first, key=lambda c: (anchors[c], joins.get(c, (0, 0))[1], c))
    return [(anchors[child], child) for child in order], hidden


def _read_child(rows: Sequence[Mapping[str, Any]]) -> list[_Event] | None:
    """A child run's events, de-duplicated as an eval run's are (D-3); None when its log cannot
    be read whole: a row without a usable sequence or a type, two different events under one
    sequence, a payload that is not JSON on an event a delegated trajectory reads, or a dispatch
    event that hides which children ran (E-102)."""
    by_sequence, unusable = _rows_by_sequence(rows)
    if unusable:
        return None
    events: list[_Event] = []
    for sequence in sorted(by_sequence):
        copies = by_sequence[sequence]
        if not all(_same_event(copies[0], other) for other in copies[1:]):
            return None
        event = _earliest(copies)
        if event.type is None:
            return None
        if event.value is NOT_JSON:
            if event.type in DELEGATE_READ_TYPES:
                return None
            continue
        events.append(event)
    if _children_in(events)[1]:
        return None
    return events


def _claimed_suite(events: Sequence[_Event]) -> tuple[str, str] | None:
    """The (suiteId, suiteVersion) a run's first eval.started names, when both are strings."""
    started = next((e for e in events if e.type == EVAL_STARTED), None)
    if started is None:
        return None
    suite_id, version = started.fields.get("suiteId"), started.fields.get("suiteVersion")
    return (suite_id, version) if isinstance(suite_id, str) and isinstance(version, str) else None


# --------------------------------------------------------------------------------------------------
# Trials
# --------------------------------------------------------------------------------------------------


@dataclass
class _Trial:
    """A counted trial: its segment (ending with its eval.scored) and its bracket (§2.1)."""

    task_id: str
    index: int
    segment: list[_Event]
    start: _Event | None = None
    end: _Event | None = None
    inside: list[_Event] = field(default_factory=list)

    @property
    def scored(self) -> _Event:
        return self.segment[-1]


@dataclass
class _TrialGrade:
    """Everything §3 reads from one counted trial, kept exact."""

    index: int
    score: Fraction
    passed: bool
    gating: Fraction
    trajectory: dict[str, Any] | None
    misses: int
    tool_calls: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    latency: Fraction | None
    usage_cost: Fraction
    host_cost: Fraction | None
    model_class: str | None
    has_bracket: bool


def _find_bracket(segment: list[_Event]) -> tuple[_Event | None, _Event | None, list[_Event]]:
    """The first invocation-started of the segment through its own completion (§2.1, E-12).

    Returns (start, end, events strictly inside). `end` is None when the completion never comes
    inside the segment; the bracket then runs to the end of the segment.
    """
    for i, event in enumerate(segment):
        if event.type != STARTED:
            continue
        invocation = event.fields.get("invocationId")
        if invocation is not None:
            for j in range(i + 1, len(segment)):
                other = segment[j]
                if other.type == COMPLETED and json_equal(
                    other.fields.get("invocationId"), invocation
                ):
                    return event, other, segment[i + 1 : j]
        return event, None, segment[i + 1 : -1]
    return None, None, []


def _pass_at_k(n: int, c: int, k: int) -> Fraction:
    """pass@k = 1 - C(n-c, k) / C(n, k); 0 when c = 0 (RFC 0244 §B)."""
    if c == 0:
        return Fraction(0)
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def _pass_hat_k(n: int, c: int, k: int) -> Fraction:
    """pass^k = C(c, k) / C(n, k); 0 when c < k (RFC 0244 §B)."""
    return Fraction(math.comb(c, k), math.comb(n, k))


def _at_least(value: Fraction, bar: Fraction) -> bool:
    """value >= bar, with D-17's tie tolerance."""
    return value >= bar or abs(value - bar) <= TIE_TOLERANCE * max(Fraction(1), abs(bar))


def _at_most(value: Fraction, bar: Fraction) -> bool:
    """value <= bar, with D-17's tie tolerance."""
    return value <= bar or abs(value - bar) <= TIE_TOLERANCE * max(Fraction(1), abs(bar))


def _mean(values: Sequence[Fraction]) -> Fraction:
    return sum(values, Fraction(0)) / len(values)


def _round_half_up(value: Fraction) -> int:
    return math.floor(value + Fraction(1, 2))


def _p95(latencies: list[int]) -> int:
    """Nearest-rank p95: the value at rank ceil(0.95 N) of the ascending list (E-17)."""
    ordered = sorted(latencies)
    rank = math.ceil(Fraction(95, 100) * len(ordered))
    return ordered[rank - 1]


# --------------------------------------------------------------------------------------------------
# Grading one run
# --------------------------------------------------------------------------------------------------


#: the vendor event `ingest` writes per trial of an Inspect log (E-146), marking an errored sample
INSPECT_SAMPLE = "evalbatch.inspect.sample"


def _errored_trials(events: Sequence[_Event]) -> set[tuple[str, int]]:
    """E-147: the trials an Inspect log's mapping marked as errored: the first
    evalbatch.inspect.sample (by sequence) naming a (taskId, trialIndex), when its `errored` is
    true."""
    seen: dict[tuple[str, int], bool] = {}
    for event in events:
        if event.type != INSPECT_SAMPLE or not isinstance(event.fields, dict):
            continue
        task, index = event.fields.get("taskId"), event.fields.get("trialIndex")
        if isinstance(task, str) and _is_integral(index) and index >= 0:
            seen.setdefault((task, int(index)), event.fields.get("errored") is True)
    return {key for key, errored in seen.items() if errored}


class _RunGrader:
    """Grades one eval run; collects its problems as it goes."""

    def __init__(
        self,
        run_id: str,
        rows: list[Mapping[str, Any]],
        suites: dict[tuple[str, str], dict[str, Any]],
        conflicts: set[tuple[str, str]],
        options: GradeOptions,
        logs: Mapping[str, list[Mapping[str, Any]]] | None = None,
    ) -> None:
        self.run_id = run_id
        self.rows = rows
        self.suites = suites
        self.conflicts = conflicts
        self.options = options
        self.logs = logs or {}  # every run's rows: the child runs a trial's bracket names
        self.suite_key: tuple[str, str] | None = None  # the suite this run's eval.started names
        self.problems: list[dict[str, Any]] = []
        self.summary: dict[str, Any] | None = None
        #: the (taskId, trialIndex) of each trial whose Inspect sample errored (E-147)
        self.errored: set[tuple[str, int]] = set()

    # ---- problems -------------------------------------------------------------------------------

    def problem(self, code: str, sequence: int | None = None) -> None:
        self.problems.append(
            {"runId": self.run_id, "sequence": sequence, "code": code, "severity": severity(code)}
        )

    @property
    def has_error(self) -> bool:
        return any(p["severity"] == "error" for p in self.problems)

    # ---- envelope (§1.1, D-1, D-3, E-3..E-5) ----------------------------------------------------

    def _events(self) -> list[_Event]:
        """De-duplicate, parse and order the run's rows; record envelope problems."""
        by_sequence, unusable = _rows_by_sequence(self.rows)
        for _ in range(unusable):
            self.problem("sequence-invalid")

        events: list[_Event] = []
        for sequence in sorted(by_sequence):
            copies = by_sequence[sequence]
            if not all(_same_event(copies[0], other) for other in copies[1:]):
                self.problem("event-conflict", sequence)
                continue
            event = _earliest(copies)
            if event.type is None:
                # E-80: a row without a type may be any event, a forbidden call too: fail closed
                self.problem("type-missing", sequence)
            if event.value is NOT_JSON:
                if event.type in GRADED_TYPES:
                    self.problem("payload-invalid", sequence)
                else:
                    self.problem("payload-ignored", sequence)
                    if event.type not in DISPATCH_TYPES:
                        continue  # a dispatch that hides its child still fails a path (E-102)
            events.append(event)

        sequences = sorted(by_sequence)
        for before, after in itertools.pairwise(sequences):
            if after - before > 1:
                self.problem("sequence-gap", after)
        return events

    # ---- the run ---------------------------------------------------------------------------------

    def grade(self) -> None:
        events = self._events()
        self.errored = _errored_trials(events)

        # The eval span (§2.1, E-2).
        starts = [e for e in events if e.type == EVAL_STARTED]
        if not starts:
            return  # its eval.started row was unusable: an error is already recorded
        first_start = starts[0]
        for extra in starts[1:]:
            self.problem("eval-restarted", extra.sequence)
        completed = next(
            (e for e in events if e.type == EVAL_COMPLETED and e.sequence > first_start.sequence),
            None,
        )
        if completed is None:
            self.problem("eval-incomplete", first_start.sequence)
        else:
            for e in events:
                if e.type == EVAL_SCORED and e.sequence > completed.sequence:
                    self.problem("scored-after-completed", e.sequence)
                elif e.type == EVAL_COMPLETED and e.sequence > completed.sequence:
                    self.problem("completed-repeated", e.sequence)
        if self.has_error:
            return

        # The suite (§1.3, D-4).
        started = first_start.fields
        suite_id = started.get("suiteId")
        suite_version = started.get("suiteVersion")
        suite: dict[str, Any] | None = None
        if isinstance(suite_id, str) and isinstance(suite_version, str):
            key = (suite_id, suite_version)
            self.suite_key = key
            if key in self.conflicts:
                self.problem("suite-conflict", first_start.sequence)
                return
            suite = self.suites.get(key)
        if suite is None:
            trial_count = first_start.fields.get("trialCount")
            # read as a double (E-10): past 2^53 every double is integral
            if (
                _is_number(trial_count)
                and trial_count > MAX_TRIALS
                and (_is_integral(trial_count) or float(trial_count) >= 2**53)
            ):
                # E-78: no run is graded with a trial count cut to the limit
                self.problem("trial-count-limit", first_start.sequence)
                return
            self.problem("suite-missing", first_start.sequence)

        end = completed.sequence if completed is not None else math.inf
        span = [e for e in events if first_start.sequence < e.sequence < end]
        self.summary = self._grade_span(suite, first_start, span, events)

    # ---- trials (D-5, E-8..E-11) -----------------------------------------------------------------

    def _segments(self, span: list[_Event]) -> list[list[_Event]]:
        """Each eval.scored closes the segment of events since the previous one (§2.1)."""
        segments: list[list[_Event]] = []
        current: list[_Event] = []
        for event in span:
            current.append(event)
            if event.type == EVAL_SCORED:
                segments.append(current)
                current = []
        return segments

    def _trial_index(self, fields: Mapping[str, Any], scored: _Event, position: int) -> int:
        """D-5 / E-9: an integral number >= 0, else the position among the task's eval.scored."""
        if "trialIndex" not in fields:
            return position
        value = fields["trialIndex"]
        if _is_integral(value) and value >= 0:
            return int(value)
        self.problem("trial-index-invalid", scored.sequence)
        return position

    def _counted_trials(
        self,
        segments: list[list[_Event]],
        known: set[str] | None,
        limit: int | None,
    ) -> tuple[list[_Trial], list[str]]:
        """Place every eval.scored in a trial or leave it out, in log order (E-8).

        `known` is the suite's taskIds (None: no suite, every string taskId is a task); `limit`
        the trial count (None: no limit). Returns the kept trials and the taskIds seen, in order
        of first appearance.
        """
        positions: dict[str, int] = defaultdict(int)
        taken: dict[str, set[int]] = defaultdict(set)
        seen: list[str] = []
        trials: list[_Trial] = []
        for segment in segments:
            scored = segment[-1]
            fields = scored.fields
            task_id = fields.get("taskId")
            if isinstance(task_id, str):
                position = positions[task_id]
                positions[task_id] += 1
                if task_id not in seen:
                    seen.append(task_id)
            else:
                position = 0
            index = self._trial_index(fields, scored, position)
            if not isinstance(task_id, str) or (known is not None and task_id not in known):
                self.problem("task-unknown", scored.sequence)
                continue
            if limit is not None and index >= limit:
                self.problem("trial-extra", scored.sequence)
                continue
            if index in taken[task_id]:
                self.problem("trial-duplicate", scored.sequence)
                continue
            taken[task_id].add(index)
            start, end, inside = _find_bracket(segment)
            trials.append(_Trial(task_id, index, segment, start, end, inside))
        return trials, seen

    # ---- delegates (E-102) ---------------------------------------------------------------------

    def _widened(
        self,
        scope: Sequence[_Event],
        path: tuple[str, ...],
        root: int | None,
        faults: list[tuple[str, int]],
    ) -> list[tuple[tuple[int, ...], _Event]]:
        """The calls of a scope and, at their places, of the child runs it names, recursively,
        each with its order key, sorted. `path` holds the runs from the trial's down to this
        scope's; `root` the bracket's event that led here (None in the bracket itself); a child
        that cannot be read adds (code, event) to `faults` and contributes no call."""
        items: list[tuple[tuple[int, ...], _Event]] = [
            ((e.sequence,), e) for e in scope if e.type == TOOL_CALLED
        ]
        slots, hidden = _children_in(scope)
        faults.extend(("delegate-log-invalid", sequence) for sequence in hidden)
        for slot, (anchor, child) in enumerate(slots):
            at = anchor if root is None else root
            events: list[_Event] | None = None
            if child in path:
                code: str | None = "delegate-cycle"
            elif child not in self.logs:
                code = "delegate-log-missing"
            elif (events := _read_child(self.logs[child])) is None:
                code = "delegate-log-invalid"
            elif (claim := _claimed_suite(events)) is not None and claim != self.suite_key:
                code = "delegate-suite-mismatch"
            else:
                code = None
            if code is not None or events is None:
                faults.append((code or "delegate-log-invalid", at))
                continue
            for key, event in self._widened(events, (*path, child), at, faults):
                items.append(((anchor, slot, *key), event))
        return sorted(items, key=lambda item: item[0])

    # ---- one trial (§2.2, §3.1..§3.4) ----------------------------------------------------------

    def _grade_trial(
        self,
        trial: _Trial,
        task: Mapping[str, Any] | None,
        live_shadow: bool,
        target_agent: Any,
    ) -> _TrialGrade:
        scored = trial.scored.fields
        if trial.start is None:
            self.problem("bracket-missing", trial.scored.sequence)
        elif trial.end is None:
            self.problem("bracket-unclosed", trial.start.sequence)
        bracket_agent = _agent_id(trial.start.fields) if trial.start is not None else None
        if (
            trial.start is not None
            and isinstance(target_agent, str)
            and bracket_agent != target_agent
        ):
            self.problem("target-agent-mismatch", trial.start.sequence)

        calls = [e for e in trial.inside if e.type == TOOL_CALLED]
        usages = [e for e in trial.inside if e.type == USAGE]

        # Efficiency: every tool call and model call inside the bracket (§2.2, RFC 0244 §C).
        input_tokens = output_tokens = 0
        for usage in usages:
            valid = True
            for name in ("inputTokens", "outputTokens"):
                value = usage.fields.get(name)
                if _is_integral(value) and _within(value, MAX_TOKENS):
                    if name == "inputTokens":
                        input_tokens += int(value)
                    else:
                        output_tokens += int(value)
                else:
                    valid = False
            if not valid:
                self.problem("usage-tokens-invalid", usage.sequence)

        expected = task.get("expected") if task is not None else None
        expected = expected if isinstance(expected, dict) else {}
        kind = expected.get("kind")
        expectation = expected.get("trajectory") if task is not None else None
        expectation = expectation if isinstance(expectation, dict) else None

        # Trajectory (§2.2, §3.2, D-18).
        block: dict[str, Any] | None = None
        matched = True
        if expectation is not None:
            include_delegates = expectation.get("includeDelegates") is True
            faults: list[tuple[str, int]] = []
            if include_delegates:
                # every call in the bracket, and the child runs' calls at their places (E-102)
                path = [e for _, e in self._widened(trial.inside, (self.run_id,), None, faults)]
            else:
                path = [
                    e
                    for e in calls
                    if bracket_agent is not None and _agent_id(e.fields) == bracket_agent
                ]
            observed = [(_tool_name(e.fields), _tool_inputs(e.fields)) for e in path]
            block = grade_trajectory(expectation, observed, trial.start is not None)
            for code, sequence in faults:
                self.problem(code, sequence)
            if faults:
                block["matched"] = False  # no pass on evidence that is not there
            matched = block["matched"]
        elif kind == "trajectory":
            matched = False

        # Fixture replay (§3.3, D-9).
        misses = 0
        fail_closed = False
        fixtures = task.get("fixtures") if task is not None else None
        fixtures = fixtures if isinstance(fixtures, dict) else {}
        responses = fixtures.get("toolResponses")
        if isinstance(responses, list) and not live_shadow:
            consumed = [False] * len(responses)
            for call in calls:
                call_name, call_inputs = _tool_name(call.fields), _tool_inputs(call.fields)
                for i, entry in enumerate(responses):
                    if (
                        not consumed[i]
                        and isinstance(entry, dict)
                        and call_matches(entry, call_name, call_inputs)
                    ):
                        consumed[i] = True
                        break
                else:
                    misses += 1
            on_miss = fixtures.get("onMiss")
            if on_miss is None:
                on_miss = "fail" if self.options.on_miss_default == "fail" else "count"
            fail_closed = misses > 0 and on_miss == "fail"

        # Score, pass, gating score (§3.4, D-10, D-11; an errored Inspect sample, E-147).
        errored = (trial.task_id, trial.index) in self.errored
        if errored:
            self.problem("sample-errored", trial.scored.sequence)
            score, passed = Fraction(0), False
        elif kind == "trajectory":
            score = Fraction(1 if matched else 0)
            passed = matched
        else:
            host_score = scored.get("score")
            if _is_number(host_score) and 0 <= host_score <= 1:
                score = _exact(host_score)
            else:
                self.problem("score-invalid", trial.scored.sequence)
                score = Fraction(0)
            host_passed = scored.get("passed")
            if not isinstance(host_passed, bool):
                self.problem("passed-invalid", trial.scored.sequence)
                host_passed = False
            if _is_number(host_score) and 0 <= host_score <= 1:
                passed = host_passed and matched
            else:
                passed = False
        if fail_closed:
            score, passed = Fraction(0), False
        gating = Fraction(0) if (not matched or fail_closed or errored) else score

        # Latency (§3.5, E-17).
        latency: Fraction | None = None
        host_latency = scored.get("latencyMs")
        if _within(host_latency, MAX_LATENCY_MS):
            latency = _exact(host_latency)
        elif trial.start is not None:
            finish = trial.end if trial.end is not None else trial.scored
            if trial.start.instant is not None and finish.instant is not None:
                span = finish.instant - trial.start.instant
                latency = span if span >= 0 else None

        # Cost from usage over the whole segment, judge calls included (D-6, D-14, E-15).
        usage_cost = Fraction(0)
        for event in trial.segment:
            if event.type == USAGE:
                usage_cost += self._usage_cost(event)

        model_class = trial.start.fields.get("modelClass") if trial.start is not None else None
        return _TrialGrade(
            index=trial.index,
            score=score,
            passed=passed,
            gating=gating,
            trajectory=block,
            misses=misses,
            tool_calls=len(calls),
            model_calls=len(usages),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            latency=latency,
            usage_cost=usage_cost,
            host_cost=self._host_cost_value(scored),
            model_class=model_class if model_class in MODEL_CLASSES else None,
            has_bracket=trial.start is not None,
        )

    def _usage_cost(self, usage: _Event) -> Fraction:
        """D-14 / E-15: what one provider.usage adds to a USD sum."""
        fields = usage.fields
        if "costEstimateUsd" not in fields:
            return Fraction(0)
        cost = fields["costEstimateUsd"]
        if not _within(cost, MAX_COST_USD):
            self.problem("cost-invalid", usage.sequence)
            return Fraction(0)
        currency = fields.get("currency")
        if currency is not None and not (isinstance(currency, str) and currency.upper() == "USD"):
            self.problem("non-usd-cost", usage.sequence)
            return Fraction(0)
        if fields.get("cacheHit") is True:
            return Fraction(0)
        return _exact(cost)

    @staticmethod
    def _host_cost_value(scored: Mapping[str, Any]) -> Fraction | None:
        """A valid eval.scored.costUsd (a number 0..MAX_COST_USD), or None."""
        value = scored.get("costUsd")
        if _within(value, MAX_COST_USD):
            return _exact(value)
        return None

    # ---- the whole span (§3.5, §3.6, D-4) --------------------------------------------------------

    def _grade_span(
        self,
        suite: dict[str, Any] | None,
        eval_started: _Event,
        span: list[_Event],
        events: list[_Event],
    ) -> dict[str, Any]:
        started = eval_started.fields
        suite_id, suite_version = started.get("suiteId"), started.get("suiteVersion")
        segments = self._segments(span)
        trial_count: int | None = None
        modes = started.get("modes")
        live_shadow = isinstance(modes, list) and "live-shadow" in modes

        if suite is not None:
            tasks = [t for t in suite.get("tasks", []) if isinstance(t, dict)]
            # suite JSON: a string once the suite is validated, anything in a hand-built suite
            task_ids: list[Any] = [t.get("taskId") for t in tasks]
            trials_block = suite.get("trials") if isinstance(suite.get("trials"), dict) else None
            count = int((trials_block or {}).get("count", 1))
            k = int((trials_block or {}).get("k", count))
            pass_rule = (trials_block or {}).get("passRule", "all")
            thresholds_block = suite.get("thresholds")
            thresholds = thresholds_block if isinstance(thresholds_block, dict) else {}
            kept, _ = self._counted_trials(segments, set(task_ids), count)
            target_agent = suite.get("targetAgentId")
        else:
            if "trialCount" in started:
                value = started["trialCount"]
                if _is_integral(value) and value >= 1:
                    trial_count = int(value)
                else:
                    self.problem("trial-count-invalid", eval_started.sequence)
            kept, task_ids = self._counted_trials(segments, None, trial_count)
            tasks = [{"taskId": task_id} for task_id in task_ids]
            pass_rule = "all"
            thresholds = {}
            target_agent = None

        pass_score_value = thresholds.get("passScore")
        pass_score = (
            _exact(pass_score_value)
            if _is_number(pass_score_value)
            else Fraction(_normalize(self.options.default_pass_score))
        )

        # Grade each counted trial in log order (problems then follow the log).
        by_task: dict[str, list[_TrialGrade]] = defaultdict(list)
        task_by_id = {t.get("taskId"): t for t in tasks}
        for trial in kept:
            task = task_by_id[trial.task_id] if suite is not None else None
            by_task[trial.task_id].append(self._grade_trial(trial, task, live_shadow, target_agent))

        # The run's cost source (D-14, E-16).
        usage_source = any(
            e.type == USAGE and _within(e.fields.get("costEstimateUsd"), MAX_COST_USD)
            for e in events
        )
        host_source = False
        if not usage_source:
            for trial in kept:
                fields = trial.scored.fields
                if "costUsd" in fields and self._host_cost_value(fields) is None:
                    self.problem("cost-invalid", trial.scored.sequence)
            host_source = any(
                g.host_cost is not None for grades in by_task.values() for g in grades
            )
        has_cost = usage_source or host_source

        if suite is None:
            blocks = trial_count is not None or any(len(g) > 1 for g in by_task.values())
            k = trial_count if trial_count is not None else 1
        else:
            blocks = trials_block is not None

        entries: list[dict[str, Any]] = []
        task_scores: list[Fraction] = []
        task_gatings: list[Fraction] = []
        pass_at: list[Fraction] = []
        pass_hat: list[Fraction] = []
        latencies: list[int] = []
        total_cost = Fraction(0)
        passed_count = 0
        for task in tasks:
            task_id = task.get("taskId")
            graded = by_task.get(task_id, []) if isinstance(task_id, str) else []
            grades = sorted(graded, key=lambda g: g.index)
            if suite is not None:
                n = count
            else:
                n = trial_count if trial_count is not None else len(grades)
            if not grades:
                self.problem("task-missing")
            elif n > len(grades):
                present = {g.index for g in grades}
                for index in range(n):
                    if index not in present:
                        self.problem("trial-missing")

            # Missing trials count as failed, score 0, gating 0 (D-12, D-13).
            c = sum(1 for g in grades if g.passed)
            mean_score = sum((g.score for g in grades), Fraction(0)) / n if n else Fraction(0)
            mean_gating = sum((g.gating for g in grades), Fraction(0)) / n if n else Fraction(0)
            if pass_rule == "any":
                task_passed = c >= 1
            elif pass_rule == "mean":
                task_passed = _at_least(mean_gating, pass_score)
            else:
                task_passed = c == n
            at_k = _pass_at_k(n, c, k) if n else Fraction(0)
            hat_k = _pass_hat_k(n, c, k) if n else Fraction(0)

            entry: dict[str, Any] = {
                "taskId": task_id,
                "score": float(mean_score),
                "passed": task_passed,
            }
            if has_cost:
                task_cost = sum(
                    (
                        g.usage_cost if usage_source else (g.host_cost or Fraction(0))
                        for g in grades
                    ),
                    Fraction(0),
                )
                total_cost += task_cost
                entry["costUsd"] = float(task_cost)
            timed = [g.latency for g in grades if g.latency is not None]
            if timed:
                latency_ms = _round_half_up(_mean(timed))
                entry["latencyMs"] = latency_ms
                latencies.append(latency_ms)
            expectation = (task.get("expected") or {}).get("trajectory") if suite else None
            if isinstance(expectation, dict) and grades:
                entry["trajectory"] = grades[-1].trajectory
            if blocks:
                entry["trials"] = {
                    "n": n,
                    "passedCount": c,
                    "meanScore": float(mean_score),
                    "passAtK": float(at_k),
                    "passHatK": float(hat_k),
                }
            if grades:
                entry["efficiency"] = {
                    "toolCallCount": float(_mean([Fraction(g.tool_calls) for g in grades])),
                    "modelCallCount": float(_mean([Fraction(g.model_calls) for g in grades])),
                    "inputTokens": float(_mean([Fraction(g.input_tokens) for g in grades])),
                    "outputTokens": float(_mean([Fraction(g.output_tokens) for g in grades])),
                }
            fixtures = task.get("fixtures") if suite is not None else None
            if isinstance(fixtures, dict) and isinstance(fixtures.get("toolResponses"), list):
                entry["fixtureMissCount"] = sum(g.misses for g in grades)

            entries.append(entry)
            task_scores.append(mean_score)
            task_gatings.append(mean_gating)
            pass_at.append(at_k)
            pass_hat.append(hat_k)
            passed_count += task_passed

        # Suite summary (§3.6, D-15, D-17).
        task_count = len(tasks)
        aggregate = _mean(task_scores) if task_count else Fraction(0)
        suite_passed = task_count > 0 and _at_least(_mean(task_gatings), pass_score)
        max_cost = thresholds.get("maxCostUsd")
        if _is_number(max_cost):
            suite_passed = suite_passed and has_cost and _at_most(total_cost, _exact(max_cost))
        max_p95 = thresholds.get("maxP95LatencyMs")
        if _is_number(max_p95):
            suite_passed = (
                suite_passed
                and bool(latencies)
                and _at_most(Fraction(_p95(latencies)), _exact(max_p95))
            )

        summary: dict[str, Any] = {
            "suiteId": suite_id if isinstance(suite_id, str) else None,
            "suiteVersion": suite_version if isinstance(suite_version, str) else None,
            "aggregateScore": float(aggregate),
            "passed": bool(suite_passed),
            "taskCount": task_count,
            "passedCount": passed_count,
        }
        if has_cost:
            summary["totalCostUsd"] = float(total_cost)
        all_grades = [g for grades in by_task.values() for g in grades]
        bracketed = [g for g in all_grades if g.has_bracket]
        classes = {g.model_class for g in bracketed}
        if bracketed and len(classes) == 1 and None not in classes:
            summary["evaluatedModelClass"] = classes.pop()
        if blocks and task_count > 0:
            stats: dict[str, Any] = {
                "k": k,
                "passAtK": float(_mean(pass_at)),
                "passHatK": float(_mean(pass_hat)),
            }
            if task_count >= 2:
                mean = _mean(task_scores)
                variance = sum(((x - mean) ** 2 for x in task_scores), Fraction(0)) / (
                    task_count - 1
                )
                stats["scoreStderr"] = math.sqrt(float(variance / task_count))
            summary["trialStats"] = stats
        summary["tasks"] = entries
        return summary


# --------------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------------


def _index_suites(
    suites: Sequence[Mapping[str, Any]],
) -> tuple[dict[tuple[str, str], dict[str, Any]], set[tuple[str, str]]]:
    """Suites by (suiteId, version); a key claimed with different content is a conflict (§1.3)."""
    index: dict[tuple[str, str], dict[str, Any]] = {}
    conflicts: set[tuple[str, str]] = set()
    for suite in suites:
        normalized = _normalize(suite)
        suite_id, version = normalized.get("suiteId"), normalized.get("version")
        if not (isinstance(suite_id, str) and isinstance(version, str)):
            continue
        key = (suite_id, version)
        if key in index and not json_equal(index[key], normalized):
            conflicts.add(key)
        index.setdefault(key, normalized)
    return index, conflicts


_DEFAULT_OPTIONS = GradeOptions()


def grade_reference(
    events: Iterable[Mapping[str, Any]],
    suites: Sequence[Mapping[str, Any]],
    options: GradeOptions = _DEFAULT_OPTIONS,
) -> ReferenceResult:
    """Grade every eval run in `events` against `suites`, one record at a time.

    Runs without an `eval.started` are not eval runs and yield nothing (E-1). A run with an
    error-severity problem gets no summary and is listed in `skipped`.
    """
    suite_index, conflicts = _index_suites(suites)
    problems: list[dict[str, Any]] = []
    rows_by_run: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in events:
        run_id = row.get("runId")
        if run_id is None or (isinstance(run_id, str) and _BLANK.fullmatch(run_id)):
            sequence = row.get("sequence")
            problems.append(
                {
                    "runId": None,
                    "sequence": sequence
                    if isinstance(sequence, int) and not isinstance(sequence, bool)
                    else None,
                    "code": "row-invalid",
                    "severity": severity("row-invalid"),
                }
            )
            continue
        rows_by_run[run_id].append(row)

    summaries: dict[str, dict] = {}
    skipped: set[str] = set()
    for run_id in sorted(rows_by_run, key=str):
        rows = rows_by_run[run_id]
        if not any(_v2_type(row.get("type")) == EVAL_STARTED for row in rows):
            continue  # E-1: not an eval run
        grader = _RunGrader(run_id, rows, suite_index, conflicts, options, rows_by_run)
        grader.grade()
        problems.extend(grader.problems)
        if grader.summary is None:
            skipped.add(run_id)
        else:
            summaries[run_id] = grader.summary
    return ReferenceResult(summaries=summaries, problems=problems, skipped=skipped)
