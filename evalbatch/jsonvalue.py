"""JSON values as the contract compares them (D-7 equality, D-8 subset).

Python's `==` makes `True == 1` and `json.loads` turns big integers and decimals into floats, so
values are parsed with exact decimals and compared through a canonical text: keys sorted, numbers
written by value (`1.0` -> `1`, `-0` -> `0`), booleans and null kept apart from numbers. Two values
are JSON-equal exactly when their canonical texts are equal.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from functools import lru_cache
from typing import Any, Literal

ArgsMatch = Literal["ignore", "exact", "subset"]


class NotJson(ValueError):
    """Text that is not JSON (including NaN and Infinity, which JSON does not have)."""


def reject_constant(name: str) -> Any:
    """`parse_constant` of every strict JSON reader: `NaN`, `Infinity` and `-Infinity` are not
    JSON (D-7). `NotJson` is a `ValueError`, which every reader of a user's JSON catches."""
    raise NotJson(f"{name} is not JSON")


def parse_exact(text: str) -> Any:
    """Parse JSON text with exact numbers; a repeated key keeps the last value (D-7)."""
    try:
        return json.loads(
            text, parse_float=Decimal, parse_int=Decimal, parse_constant=reject_constant
        )
    except (ValueError, RecursionError) as exc:
        raise NotJson(str(exc)) from exc


def _number_text(value: Decimal) -> str:
    """The shortest exact text of a number: digits without trailing zeros and a power of ten."""
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    digit_text = "".join(map(str, digits)).lstrip("0")
    if not digit_text:
        return "0"
    stripped = digit_text.rstrip("0")
    exponent += len(digit_text) - len(stripped)
    prefix = "-" if sign else ""
    return f"{prefix}{stripped}e{exponent}" if exponent else f"{prefix}{stripped}"


def compact(value: Any, number: Callable[[Decimal | int], str], sort_keys: bool) -> str:
    """A parsed value as compact JSON text, numbers written by `number` (a suite float by the
    decimal its shortest text shows), object keys sorted or in their order."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (Decimal, int)):
        return number(value)
    if isinstance(value, float):
        # a suite number parsed as a double: its shortest text is the decimal the author wrote
        return number(Decimal(repr(value)))
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(compact(item, number, sort_keys) for item in value) + "]"
    if isinstance(value, dict):
        items = sorted(value.items()) if sort_keys else value.items()
        return (
            "{"
            + ",".join(
                f"{json.dumps(k, ensure_ascii=False)}:{compact(v, number, sort_keys)}"
                for k, v in items
            )
            + "}"
        )
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def canonical(value: Any) -> str:
    """Canonical text of a parsed value (see module docstring)."""
    return compact(value, _canonical_number, sort_keys=True)


def _canonical_number(value: Decimal | int) -> str:
    return _number_text(value if isinstance(value, Decimal) else Decimal(value))


@lru_cache(maxsize=65536)
def canonical_text(text: str) -> str:
    """Canonical text of JSON text; raises NotJson (also past the depth Python recurses to)."""
    try:
        return canonical(parse_exact(text))
    except RecursionError as exc:
        raise NotJson("nested too deeply") from exc


def parse_value(text: str) -> Any:
    """Parse JSON text for comparison: integers stay `int` and other numbers become exact
    decimals (both compare by value, exactly); a repeated key keeps the last value (D-7)."""
    try:
        return json.loads(text, parse_float=Decimal, parse_constant=reject_constant)
    except (ValueError, RecursionError) as exc:
        raise NotJson(str(exc)) from exc


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, Decimal)) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """D-7 equality of parsed values: key order ignored, numbers by exact value, and booleans,
    null, strings and numbers never equal to one another (Python's `True == 1` is not JSON's)."""
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(json_equal(value, b[key]) for key, value in a.items())
        )
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(json_equal, a, b))
    if _is_number(a):
        return _is_number(b) and a == b
    return type(a) is type(b) and a == b


def is_subset(expected: Any, observed: Any) -> bool:
    """D-8: objects recurse as subsets; arrays, scalars and null must be JSON-equal."""
    if isinstance(expected, dict):
        if not isinstance(observed, dict):
            return False
        return all(
            key in observed and is_subset(value, observed[key]) for key, value in expected.items()
        )
    return json_equal(expected, observed)


def inputs_of_payload(text: str) -> Any:
    """The tool input of an agent.tool-called payload, parsed: `inputs`, else `arguments`, else
    {} (D-2), read from the payload's own text so no digit is lost."""
    payload = parse_value(text)
    if isinstance(payload, dict):
        for key in ("inputs", "arguments"):
            if key in payload:
                return payload[key]
    return {}


def observed_inputs(inputs: str, exact: str | None) -> Any:
    """A tool call's input as every comparison reads it: its `inputs` text, or, where DuckDB
    may have rounded a number of it, the input read again from the payload's own text
    (`exact_payload`, D-7). Raises NotJson (also past the depth Python recurses to)."""
    return inputs_of_payload(exact) if exact else parse_value(inputs)


def args_match(mode: ArgsMatch, expected: Any, observed: Any) -> bool:
    """Whether observed inputs match expected args under `argsMatch` (both parsed values)."""
    if mode == "ignore":
        return True
    if mode == "exact":
        return json_equal(expected, observed)
    return is_subset(expected, observed)
