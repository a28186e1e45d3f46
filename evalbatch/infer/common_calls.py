"""What the passing trials of one task agree on (E-145): the calls every one of them made, in
order, with the argument values none of them varied. Pure functions of parsed values: which
trials passed, and what each called, is the grading's.

The calls proposed are the longest common subsequence of the passing trials' tool names, and
they are proposed only where that subsequence is every passing trial's whole path, i.e. the
trials made the same calls in the same order. Then it is unique (no tie is ever broken), each
expected call stands for the call at the same place in every trial, and the expectation matches
every passing trial whatever the match mode. Where it is shorter than some passing trial's path,
the trials disagree: a call one of them made and another passed without is neither required nor
ruled out by what passed, and choosing is guessing, so nothing is proposed. Where it is empty (no
tool is in every path, or no call was made) they share no call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from evalbatch import jsonvalue


class _Marker:
    """A value that is no JSON value, named for its repr."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: no value: an argument path whose value varied, or a value a suite cannot hold exactly
NOTHING: Final = _Marker("NOTHING")
#: a call input that could not be parsed (nested past Python's recursion, E-60): never stable
UNREADABLE: Final = _Marker("UNREADABLE")

#: why a task gets no expectation: the codes `suite infer` prints and `--json` lists
NO_PASSING_TRIAL = "no-passing-trial"
PATH_UNKNOWN = "path-unknown"
NO_COMMON_CALL = "no-common-call"
DISAGREE = "passing-trials-disagree"
REASONS = (NO_PASSING_TRIAL, PATH_UNKNOWN, NO_COMMON_CALL, DISAGREE)

#: the digits an integral number may have to be written as a JSON integer (Python writes at
#: most 4,300)
_MAX_DIGITS = 4000


@dataclass(frozen=True)
class PassingTrial:
    """One passing trial as inference reads it: its target agent's calls in order, each (tool
    name, parsed input or UNREADABLE), and whether a bracket showed them at all (D-18)."""

    calls: tuple[tuple[str, Any], ...]
    has_bracket: bool = True


@dataclass(frozen=True)
class Proposal:
    """What one task gets: its expected calls (`calls`), or none, and why: `reason` (a code of
    REASONS) and `detail`, content-free (counts, never a tool name or a value)."""

    task_id: str
    trials: int
    passing: int
    calls: tuple[dict[str, Any], ...] | None = None
    reason: str | None = None
    detail: str | None = None


def propose(task_id: str, trials: int, passing: Sequence[PassingTrial]) -> Proposal:
    """The expected calls of a task, from its `trials` counted trials and the `passing` ones
    among them (in a fixed order: the first one's argument keys lead), or why there are none."""
    count = len(passing)

    def none(reason: str, detail: str) -> Proposal:
        return Proposal(task_id, trials, count, reason=reason, detail=detail)

    if not passing:
        if not trials:
            return none(NO_PASSING_TRIAL, "it has no counted trial")
        if trials == 1:
            return none(NO_PASSING_TRIAL, "its 1 counted trial did not pass")
        return none(NO_PASSING_TRIAL, f"none of its {trials} counted trials passed")
    blind = sum(not trial.has_bracket for trial in passing)
    if blind:
        return none(
            PATH_UNKNOWN,
            f"{blind} of its {_count(count, 'passing trial')} had no bracket: what "
            f"{'it' if blind == 1 else 'they'} called is unknown (D-18)",
        )
    paths = [tuple(tool for tool, _ in trial.calls) for trial in passing]
    if not shares_a_call(paths):
        if not any(paths):
            return none(NO_COMMON_CALL, f"its {_count(count, 'passing trial')} made no call")
        return none(NO_COMMON_CALL, f"its {count} passing trials share no call")
    distinct = sorted({len(path) for path in paths})
    sequences = len(set(paths))
    if sequences > 1:
        low, high = distinct[0], distinct[-1]
        lengths = f"{_count(low, 'call')} each" if low == high else f"{low} to {high} calls"
        return none(
            DISAGREE,
            f"its {count} passing trials made {sequences} different call sequences ({lengths})",
        )
    calls = tuple(
        expected_call(tool, [trial.calls[place][1] for trial in passing])
        for place, tool in enumerate(paths[0])
    )
    return Proposal(task_id, trials, count, calls=calls)


def shares_a_call(paths: Sequence[Sequence[str]]) -> bool:
    """Whether the paths' longest common subsequence is not empty: some tool is in every one."""
    common = set(paths[0]) if paths else set()
    for path in paths[1:]:
        common &= set(path)
    return bool(common)


def expected_call(tool: str, inputs: Sequence[Any]) -> dict[str, Any]:
    """An expected call of `tool` from its input in each passing trial: the argument paths that
    never varied, compared as a subset (D-8), or the tool name alone when none did. An empty
    object at the top is left out too: it would only say the input is an object."""
    args = stable_args(inputs)
    if args is NOTHING or args == {}:
        return {"tool": tool}
    return {"tool": tool, "args": args, "argsMatch": "subset"}


def stable_args(values: Sequence[Any]) -> Any:
    """The part of `values` (one call's input in each passing trial) that is the same in every
    one, as a suite holds it: each argument path whose value is JSON-equal (D-7) in all of them,
    objects recursing; a path whose value varied, or that some input lacks, left out, and an
    array that differs anywhere left out whole (D-8 compares arrays whole). NOTHING when no path
    is the same, or what is cannot be written exactly (`suite_value`)."""
    if not values or any(value is UNREADABLE for value in values):
        return NOTHING
    first = values[0]
    try:
        if all(jsonvalue.json_equal(first, other) for other in values[1:]):
            return suite_value(first)
        if not all(isinstance(value, dict) for value in values):
            return NOTHING
        kept = {}
        for key in first:
            if all(key in other for other in values[1:]):
                value = stable_args([other[key] for other in values])
                if value is not NOTHING and _is_text(key):
                    kept[key] = value
    except RecursionError:  # nested past what Python recurses through: nothing is claimed
        return NOTHING
    return kept or NOTHING


def suite_value(value: Any, whole: bool = False) -> Any:
    """`value` (parsed with exact numbers) as a suite file holds it exactly, or NOTHING. An
    integral number is an int; any other number a float only where the float is that very
    decimal (a suite's numbers are read as doubles, D-7, so a longer decimal could never match
    again); a string that is not UTF-8 text (a lone surrogate) has no place in a file. An
    object keeps the members that can be held (NOTHING when it loses them all), unless `whole`:
    inside an array, compared whole (D-8), a value is all or nothing."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value if _is_text(value) else NOTHING
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal):
        return _number(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else NOTHING
    if isinstance(value, list):
        items = [suite_value(item, whole=True) for item in value]
        return NOTHING if any(item is NOTHING for item in items) else items
    if isinstance(value, dict):
        held = {key: suite_value(item, whole) for key, item in value.items()}
        kept = {k: v for k, v in held.items() if v is not NOTHING and _is_text(k)}
        if len(kept) < len(value) and (whole or not kept):
            return NOTHING
        return kept
    return NOTHING


def _number(value: Decimal) -> Any:
    if not value.is_finite():
        return NOTHING
    if value == value.to_integral_value():
        return int(value) if value.adjusted() < _MAX_DIGITS else NOTHING
    near = float(value)
    return near if math.isfinite(near) and Decimal(repr(near)) == value else NOTHING


def _is_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _count(count: int, noun: str) -> str:
    """`1 call`, `3 calls`: a count and its noun (regular plurals only)."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
