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

import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

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
        super().__init__(f"nested deeper than {limit} levels, the limit on JSON input (E-115)")
        self.limit = limit


class TooLarge(ValueError):
    """Decompressed input past a cap of `InputLimits`; the message names the cap and the sizes,
    never content."""


#: a JSON string literal, escapes included: brackets inside one are not nesting. One left open
#: runs to the end of the text (as it does for the parser, which stops there), so every quote
#: starts a match and no text is scanned twice: linear, however many quotes are left open
_STRING = re.compile(rb'"(?:[^"\\]++|\\.?)*+(?:"|\Z)', re.DOTALL)
#: `bytes.translate` to one signed step per bracket (+1 opening, -1 as 0xFF closing), all else gone
_STEPS = bytes(1 if b in b"[{" else 0xFF if b in b"]}" else 0 for b in range(256))
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
#: brackets summed at a time: the running count never holds more than this many int32s
_SPAN = 1 << 20


def json_depth(text: str | bytes) -> int:
    """The deepest nesting of objects and arrays in JSON text (0 for a scalar). Text that is
    not JSON gets some number; the parser then says what is wrong with it. The running count
    is numpy's, a span at a time, so a document of many brackets costs a fraction of its parse
    and little memory."""
    import numpy as np  # loads only for text with more brackets than the limit

    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if raw.count(b"[") + raw.count(b"{") == 0:
        return 0
    steps = np.frombuffer(_outside_strings(raw).translate(_STEPS, _NOT_BRACKETS), np.int8)
    deepest = level = 0
    for start in range(0, len(steps), _SPAN):
        running = np.add.accumulate(steps[start : start + _SPAN], dtype=np.int32) + level
        deepest = max(deepest, int(running.max()))
        level = int(running[-1])
    return deepest


def _outside_strings(raw: bytes) -> bytes:
    """JSON text without its strings. With no escaped quote, every quote opens or closes one,
    so splitting at quotes is exact (and ten times faster than the pattern, which pays per
    string); else the pattern, which reads escapes."""
    if b'\\"' not in raw:
        return b"".join(raw.split(b'"')[0::2])
    return _STRING.sub(b"", raw)


def check_depth(text: str | bytes, limits: InputLimits = DEFAULT_LIMITS) -> None:
    """Raise `TooDeep` when `text` nests past `limits.max_depth`. Cheap for the common case:
    text with fewer opening brackets than the limit cannot nest past it."""
    opening = (
        text.count("[") + text.count("{")
        if isinstance(text, str)
        else (text.count(b"[") + text.count(b"{"))
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
        raise TooLarge(f"past the cap of {limits.max_member_bytes:,} bytes (--max-member-bytes)")
    if size > limits.ratio_floor_bytes and size > limits.max_ratio * max(compressed, 1):
        raise TooLarge(
            f"past the cap of {limits.max_ratio} decompressed bytes per compressed byte "
            f"(checked past {limits.ratio_floor_bytes:,} bytes; --max-ratio)"
        )


def loads(text: str | bytes, limits: InputLimits = DEFAULT_LIMITS, **options: Any) -> Any:
    """`json.loads(text, **options)` of a document a user gave: refused with `TooDeep` before
    it is parsed when it nests past `limits.max_depth` (E-115), so no reader, schema validator
    or comparison after it ever meets a `RecursionError`."""
    check_depth(text, limits)
    return json.loads(text, **options)


class RepeatedKeys:
    """An `object_pairs_hook` for `loads` that notes every object repeating a key: JSON leaves
    a repeated key undefined and Python keeps the last, so in a document that configures
    grading (a suite, a capabilities document) it is a fault to name, never a value chosen in
    silence. Objects are plain dicts (the last value, as `json` gives it); `paths` says where
    the repeats were."""

    def __init__(self) -> None:
        self._repeats: dict[int, tuple[dict[str, Any], list[str]]] = {}

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) < len(pairs):
            counts: dict[str, int] = {}
            for key, _ in pairs:
                counts[key] = counts.get(key, 0) + 1
            self._repeats[id(obj)] = (obj, [key for key, n in counts.items() if n > 1])
        return obj

    def paths(self, doc: Any) -> list[tuple[str | int, ...]]:
        """The path of each repeated key in `doc` (as parsed with this hook), in document
        order: the keys of an object as parts, list indexes as ints."""
        if not self._repeats:
            return []
        found: list[tuple[str | int, ...]] = []

        def walk(value: Any, parts: tuple[str | int, ...]) -> None:
            if isinstance(value, dict):
                noted = self._repeats.get(id(value))
                if noted is not None and noted[0] is value:
                    found.extend((*parts, key) for key in noted[1])
                for key, item in value.items():
                    walk(item, (*parts, key))
            elif isinstance(value, list):
                for index, item in enumerate(value):
                    walk(item, (*parts, index))

        walk(doc, ())  # depth bounded by `check_depth` before the parse
        return found


def size_text(count: int) -> str:
    """A byte count as a cap is spelled: `64 MiB`, `1 GiB`, else `1,000 bytes`."""
    for unit, name in ((GIB, "GiB"), (MIB, "MiB"), (1 << 10, "KiB")):
        if count >= unit and count % unit == 0:
            return f"{count // unit} {name}"
    return f"{count:,} bytes"


class Source(Protocol):
    """What bytes are read from: a file, a decompressor, an archive member."""

    def read(self, size: int = -1, /) -> bytes: ...


class CountedReader(io.RawIOBase):
    """A compressed source that counts the bytes read from it, for the ratio cap: what a
    decompressor has consumed is what it has read (give or take its read-ahead)."""

    def __init__(self, source: Source) -> None:
        super().__init__()
        self.source = source
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.source.read(len(buffer))
        buffer[: len(data)] = data
        self.count += len(data)
        return len(data)


class CappedReader(io.RawIOBase):
    """The decompressed bytes of one compressed input (a gzip file, an archive member), refused
    with `TooLarge` once more than `limits.max_member_bytes` have come out, or more than
    `limits.max_ratio` per compressed byte past `limits.ratio_floor_bytes` (E-116).

    `decompressed` is read one buffer at a time and never past the member cap, so at most a
    buffer past the ratio cap is ever held; `compressed` says how many compressed bytes have
    been read so far. Wrap it in an `io.BufferedReader` to read lines.

    Damaged compressed data (cut short, a bad checksum, garbage after the end) fails only after
    the bytes before it have been handed on (E-75): `decompressed` is read a piece at a time
    (`read1` where it has one, so no buffer of it drops what it inflated when the damage is
    met), and an error met with part of a buffer filled is raised by the next read instead."""

    def __init__(
        self, decompressed: Source, compressed: Callable[[], int], limits: InputLimits
    ) -> None:
        super().__init__()
        self.decompressed = decompressed
        self.compressed = compressed
        self.limits = limits
        self.count = 0
        self._read = getattr(decompressed, "read1", decompressed.read)
        self._failed: Exception | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        """Fill `buffer` (short only at the end, at damaged data, or at the member cap: up to it,
        then one byte more to learn whether there is more), then check the caps on what came
        out."""
        if self._failed is not None:
            raise self._failed
        view = memoryview(buffer).cast("B")
        want = min(len(view), max(self.limits.max_member_bytes - self.count, 1))
        filled = 0
        while filled < want:
            try:
                data = self._read(want - filled)
            except Exception as exc:  # whatever the decompressor meets: after the bytes before
                if not filled:
                    raise
                self._failed = exc
                break
            if not data:
                break
            view[filled : filled + len(data)] = data
            filled += len(data)
        self.count += filled
        self._check()
        return filled

    def _check(self) -> None:
        try:
            check_inflated(self.count, self.compressed(), self.limits)
        except TooLarge as exc:
            raise TooLarge(f"it decompresses {exc}") from None
