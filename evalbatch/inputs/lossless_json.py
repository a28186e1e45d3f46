"""JSON read and written without loss (E-32), for converting event exports to Parquet (§1.2).

`parse` is strict (NaN and Infinity are not JSON) but every number keeps the text it was written
with (`Number`) and every object keeps its key order and repeated keys (`Object`); `dump` writes
such a value back as compact JSON text, numbers as written. So a payload ingested from any format
is the payload the host wrote, token for token.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from evalbatch.inputs.limits import InputLimits, loads
from evalbatch.jsonvalue import reject_constant

_INT64_MAX = 2**63 - 1


class Number(str):
    """A JSON number as written (`1.0`, `1e2`, `12345678901234567890`): never re-rendered."""

    __slots__ = ()


class Object(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs: key order and repeated keys survive."""

    __slots__ = ()

    def get(self, key: str, default: Any = None) -> Any:
        """The value JSON parsers see: the last of repeated keys (D-7)."""
        for name, value in reversed(self):
            if name == key:
                return value
        return default

    def __contains__(self, key: object) -> bool:
        return any(name == key for name, _ in self)


def is_text(value: Any) -> bool:
    """A JSON string (a number's text is a `Number`, not a string)."""
    return isinstance(value, str) and not isinstance(value, Number)


def is_array(value: Any) -> bool:
    return isinstance(value, list) and not isinstance(value, Object)


def parse(text: str | bytes, limits: InputLimits | None = None) -> Any:
    """Parse JSON strictly, keeping number texts, key order and repeated keys. With `limits`
    (text a user gave), text nested past their depth is refused with `TooDeep` before it is
    parsed (E-115); without, it is text parsed once already (a written row, Inspect's values)."""
    options: dict[str, Any] = {
        "object_pairs_hook": Object,
        "parse_float": Number,
        "parse_int": Number,
        "parse_constant": reject_constant,
    }
    return json.loads(text, **options) if limits is None else loads(text, limits, **options)


def _dump_into(value: Any, out: list[str], ascii_only: bool) -> None:
    if isinstance(value, Object):
        out.append("{")
        for index, (key, item) in enumerate(value):
            if index:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=ascii_only))
            out.append(":")
            _dump_into(item, out, ascii_only)
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _dump_into(item, out, ascii_only)
        out.append("]")
    elif isinstance(value, Number):
        out.append(str.__str__(value))
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=ascii_only))
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    else:
        out.append("null")


def dump(value: Any) -> str:
    """Compact JSON text of a parsed value, numbers as written. Text that cannot be UTF-8 (a lone
    surrogate escape) is written as escapes, so the JSON value is the same."""
    out: list[str] = []
    _dump_into(value, out, ascii_only=False)
    text = "".join(out)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        out = []
        _dump_into(value, out, ascii_only=True)
        text = "".join(out)
    return text


def as_int(value: Any) -> int | None:
    """An integral JSON number that fits int64 (`3.0` counts, as D-5 reads `1.0`); else None."""
    if not isinstance(value, Number):
        return None
    try:
        number = json.loads(str.__str__(value), parse_float=Decimal)
    except ValueError:
        return None
    if isinstance(number, int):
        whole = number
    elif number == number.to_integral_value():
        whole = int(number)
    else:
        return None
    return whole if abs(whole) <= _INT64_MAX else None
