"""A call's arguments as explain shows them, and where they first differ from what was expected.

Arguments are shown as compact JSON, numbers by their exact value (D-7 equates `4200`, `4200.0`
and `42e2`), so no digit is lost. Where observed inputs first fail to match expected args is a
JSONPath and both sides (E-57): under `exact` D-7 equality, under `subset` (D-8) the expected keys
only. Both the trajectory's findings and the fixture replay's misses say where with these.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from evalbatch import jsonvalue

#: what an observed call's arguments are compared under, in words (§3.1)
ARGS_WORDS = {"ignore": "any args", "exact": "exact", "subset": "subset"}


@dataclass(frozen=True)
class ArgsDiff:
    """Where arguments first differ: a JSONPath and both sides as JSON text (None: absent)."""

    path: str
    expected: str | None
    observed: str | None


def _value(text: str | None, exact: str | None = None) -> Any:
    """A parsed JSON value as the grader reads it (`with_args_match`), or the text itself."""
    if exact:
        return jsonvalue.inputs_of_payload(exact)
    return jsonvalue.parse_value(text) if text is not None else None


def _number_text(value: Decimal | int) -> str:
    """A number by value, plainly: 4200 for 42e2 or 4200.0, 0.5 for 0.50 (D-7 equates them)."""
    if isinstance(value, int):
        return str(value)
    if value == value.to_integral_value() and value.adjusted() < 21:
        return str(int(value))
    if -7 < value.adjusted() < 21:
        return format(value, "f").rstrip("0")
    return str(value.normalize())


def display(value: Any) -> str:
    """A parsed JSON value as compact JSON text: keys in their order, numbers by exact value."""
    return jsonvalue.compact(value, _number_text, sort_keys=False)


def display_text(text: str | None, exact: str | None = None) -> str | None:
    """JSON text (a tool call's inputs, a suite's args) for showing; the text as written when
    it is not JSON."""
    if text is None and not exact:
        return None
    try:
        return display(_value(text, exact))
    except (jsonvalue.NotJson, TypeError):
        return text


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _member(path: str, key: str) -> str:
    return f"{path}.{key}" if _IDENTIFIER.match(key) else f"{path}[{json.dumps(key)}]"


def _text(value: Any) -> str:
    return display(value)


def _equal_difference(expected: Any, observed: Any, path: str) -> ArgsDiff | None:
    """The first place two values are not JSON-equal (D-7), keys in sorted order."""
    if isinstance(expected, dict) and isinstance(observed, dict):
        for key in sorted(set(expected) | set(observed)):
            where = _member(path, key)
            if key not in observed:
                return ArgsDiff(where, _text(expected[key]), None)
            if key not in expected:
                return ArgsDiff(where, None, _text(observed[key]))
            found = _equal_difference(expected[key], observed[key], where)
            if found is not None:
                return found
        return None
    if isinstance(expected, list) and isinstance(observed, list):
        for index, (a, b) in enumerate(zip(expected, observed, strict=False)):
            found = _equal_difference(a, b, f"{path}[{index}]")
            if found is not None:
                return found
        if len(expected) != len(observed):
            index = min(len(expected), len(observed))
            return ArgsDiff(
                f"{path}[{index}]",
                _text(expected[index]) if index < len(expected) else None,
                _text(observed[index]) if index < len(observed) else None,
            )
        return None
    if jsonvalue.json_equal(expected, observed):
        return None
    return ArgsDiff(path, _text(expected), _text(observed))


def args_difference(mode: str, expected: Any, observed: Any, path: str = "$") -> ArgsDiff | None:
    """Where observed inputs first fail to match expected args under `mode` (None: they match).

    `exact` is D-7 equality; `subset` (D-8) checks each expected key, objects recursing as subsets
    and anything else by equality. None exactly when `jsonvalue.args_match` is true.
    """
    if mode == "ignore":
        return None
    if mode == "subset" and isinstance(expected, dict):
        if not isinstance(observed, dict):
            return ArgsDiff(path, _text(expected), _text(observed))
        for key in sorted(expected):
            where = _member(path, key)
            if key not in observed:
                return ArgsDiff(where, _text(expected[key]), None)
            found = args_difference("subset", expected[key], observed[key], where)
            if found is not None:
                return found
        return None
    return _equal_difference(expected, observed, path)


def implied_diff(mode: str, args: str | None, inputs: str, exact: str | None) -> ArgsDiff:
    """The difference the grader's verdict implies (its fallback: the whole values)."""
    try:
        expected = jsonvalue.parse_value(args) if args is not None else None
        observed = _value(inputs, exact)
    except jsonvalue.NotJson:
        return ArgsDiff("$", args, inputs)
    found = args_difference(mode, expected, observed)
    return found or ArgsDiff("$", _text(expected), _text(observed))


def diff_words(diff: ArgsDiff) -> str:
    expected = "absent" if diff.expected is None else diff.expected
    observed = "absent" if diff.observed is None else diff.observed
    return f"{diff.path}: expected {expected}, observed {observed}"
