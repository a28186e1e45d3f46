"""How much a user's input may make evalbatch hold: nesting depth, decompressed sizes and the
compression ratio (E-115, E-116).

A JSON document read from a user (a suite, a capabilities document, a host summary, an NDJSON
line, an SSE frame, an Inspect log) is checked for depth before it is parsed, so excessive
nesting is one clear problem instead of a `RecursionError` in the parser, the schema validator or
the comparison; compressed input is read against caps so that a small file cannot inflate into
gigabytes. A breach is the problem of the file (or line) it is in: the rest of the input is still
read. The defaults are documented in docs/inputs.md; commands that read compressed input take
options to raise them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import accumulate

#: JSON nesting deeper than this is refused (objects and arrays each count one level). Python's
#: own parser stops near 1,000 and the schema validator far sooner; no document the contract
#: describes comes near it.
MAX_JSON_DEPTH = 64
MIB = 1 << 20
GIB = 1 << 30


@dataclass(frozen=True)
class InputLimits:
    """Caps on what one input may make evalbatch hold (E-116).

    Attributes:
        max_depth: deepest JSON nesting accepted in any document read from a user.
        max_line_bytes: one line of JSON lines, one SSE frame or one whole JSON document, after
            decompression.
        max_member_bytes: one member of an archive (an Inspect `.eval` sample), or one whole
            compressed file, after decompression.
        max_ratio: decompressed bytes per compressed byte, checked once more than
            `ratio_floor_bytes` have come out (a small file may compress very well).
        ratio_floor_bytes: below this many decompressed bytes the ratio is not checked.
    """

    max_depth: int = MAX_JSON_DEPTH
    max_line_bytes: int = 64 * MIB
    max_member_bytes: int = 512 * MIB
    max_ratio: int = 200
    ratio_floor_bytes: int = 16 * MIB

    def __post_init__(self) -> None:
        for name in ("max_depth", "max_line_bytes", "max_member_bytes", "max_ratio"):
            if getattr(self, name) < 1:
                raise ValueError(f"InputLimits.{name} must be at least 1")
        if self.ratio_floor_bytes < 0:
            raise ValueError("InputLimits.ratio_floor_bytes must not be negative")


DEFAULT_LIMITS = InputLimits()


class TooDeep(ValueError):
    """JSON nested past `InputLimits.max_depth`; the message names the limit, never content."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"nested deeper than {limit} levels")
        self.limit = limit


class TooLarge(ValueError):
    """Decompressed input past a cap of `InputLimits`; the message names the cap and the sizes,
    never content."""


#: a JSON string literal, escapes included: brackets inside one are not nesting
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def json_depth(text: str | bytes) -> int:
    """The deepest nesting of objects and arrays in JSON text (0 for a scalar). Text that is
    not JSON gets some number; the parser then says what is wrong with it."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if raw.count(b"[") + raw.count(b"{") == 0:
        return 0
    brackets = _BRACKETS.findall(_STRING.sub(b"", raw))
    return max(accumulate(_STEP[b[0]] for b in brackets), default=0)


def check_depth(text: str | bytes, limits: InputLimits = DEFAULT_LIMITS) -> None:
    """Raise `TooDeep` when `text` nests past `limits.max_depth`. Cheap for the common case:
    text with fewer opening brackets than the limit cannot nest past it."""
    opening = text.count("[") + text.count("{") if isinstance(text, str) else (
        text.count(b"[") + text.count(b"{")
    )
    if opening <= limits.max_depth:
        return
    if json_depth(text) > limits.max_depth:
        raise TooDeep(limits.max_depth)


def check_inflated(size: int, compressed: int, limits: InputLimits = DEFAULT_LIMITS) -> None:
    """Raise `TooLarge` when `size` bytes decompressed from `compressed` bytes breach E-116's
    caps: more than `limits.max_member_bytes`, or, once more than `limits.ratio_floor_bytes`
    have come out, more than `limits.max_ratio` per compressed byte. Call it as the bytes come
    out (or with a size a header declares), so that a breach stops the read."""
    if size > limits.max_member_bytes:
        raise TooLarge(f"past the cap of {limits.max_member_bytes:,} bytes")
    if size > limits.ratio_floor_bytes and size > limits.max_ratio * max(compressed, 1):
        raise TooLarge(
            f"past the cap of {limits.max_ratio} decompressed bytes per compressed byte "
            f"(checked past {limits.ratio_floor_bytes:,} bytes)"
        )
