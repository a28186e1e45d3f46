"""Click parameter types and display helpers the commands share, so every command rejects the
same bad values and prints untrusted text the same way."""

from __future__ import annotations

import math
import re
from typing import Any

import click

from evalbatch.options import Bounds
from evalbatch.text import printable

__all__ = ["ByteSize", "FiniteFloatRange", "MemoryLimit", "bounded", "printable"]


class FiniteFloatRange(click.FloatRange):
    """A `click.FloatRange` that also refuses NaN (every comparison with NaN is false, so a plain
    range lets it through) and infinities."""

    name = "finite float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def bounded(bounds: Bounds) -> click.IntRange | FiniteFloatRange:
    """The click type of an option whose range `evalbatch.options` declares: the command refuses
    what the option object would (E-130), as a usage error before anything is read."""
    if bounds.integer:
        low, high = (None if end is None else int(end) for end in (bounds.low, bounds.high))
        return click.IntRange(low, high, bounds.low_open, bounds.high_open)
    return FiniteFloatRange(bounds.low, bounds.high, bounds.low_open, bounds.high_open)


#: bytes per unit of a DuckDB memory size (DuckDB's own spellings, any case)
_MEMORY_UNITS: dict[str, int] = {
    **dict.fromkeys(("b", "byte", "bytes"), 1),
    **dict.fromkeys(("k", "kb", "kilobyte", "kilobytes"), 1000),
    **dict.fromkeys(("m", "mb", "megabyte", "megabytes"), 1000**2),
    **dict.fromkeys(("g", "gb", "gigabyte", "gigabytes"), 1000**3),
    **dict.fromkeys(("t", "tb", "terabyte", "terabytes"), 1000**4),
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}

#: one number and one unit (or %), spaces allowed between them
_MEMORY_SIZE = re.compile(r"((?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)\s*([a-z]+|%)", re.IGNORECASE)

#: the least memory limit taken: DuckDB cannot run a query under a few hundred KB (E-82)
MIN_MEMORY_BYTES = 1000**2

#: the largest DuckDB takes (an unsigned 64-bit count of bytes)
MAX_MEMORY_BYTES = 2**64 - 1


class MemoryLimit(click.ParamType):
    """A DuckDB `memory_limit` such as 4GB, 500MiB, 1.5GB or 80% (of the machine's memory).

    The text must be one number and one of DuckDB's units (DuckDB itself reads `4 GB extra` as
    4GB and `-4GB` as no limit at all), from 1MB up to what DuckDB can hold, or a percentage
    above 0 and at most 100. The value is passed on to DuckDB as written."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(value).strip()
        found = _MEMORY_SIZE.fullmatch(text)
        unit = found.group(2).lower() if found else ""
        if found is None or (unit != "%" and unit not in _MEMORY_UNITS):
            self.fail(
                f"{printable(value)!r} is not a memory size (a number and a unit: 4GB, 500MiB, "
                "1.5GB, or a share of the machine's memory: 80%).",
                param,
                ctx,
            )
        number = float(found.group(1))
        if unit == "%":
            if not 0 < number <= 100:
                self.fail(
                    f"{printable(value)!r}: a percentage is above 0 and at most 100.", param, ctx
                )
        elif not MIN_MEMORY_BYTES <= number * _MEMORY_UNITS[unit] <= MAX_MEMORY_BYTES:
            self.fail(
                f"{printable(value)!r}: a memory limit is from 1MB to 18 million TB.", param, ctx
            )
        return text


_EPOCH_SECONDS = re.compile(r"\d+(?:\.\d+)?")


class EpochSeconds(click.ParamType):
    """A time as Unix epoch seconds, written in plain decimal digits (1793620800, 1793620800.5):
    no sign, exponent, NaN or infinity. The value is passed on as written, so a record keeps the
    spelling it was given."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(value).strip()
        if not _EPOCH_SECONDS.fullmatch(text):
            self.fail(f"{printable(value)!r} is not a number of seconds (1793620800).", param, ctx)
        return text


class ByteSize(click.ParamType):
    """A size in bytes, as a whole number (1048576) or a number and a unit (64MiB, 1GiB, 500MB):
    the caps on decompressed input (E-116). At least 1 byte; the value is an int."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int):
            return value
        text = str(value).strip()
        found = _MEMORY_SIZE.fullmatch(text)
        unit = found.group(2).lower() if found else ""
        number = float("nan")
        if text.isascii() and text.isdigit():
            number = int(text)
        elif found is not None and unit in _MEMORY_UNITS:
            number = float(found.group(1)) * _MEMORY_UNITS[unit]
        if not math.isfinite(number):
            self.fail(
                f"{printable(value)!r} is not a size (bytes, or a number and a unit: 64MiB, "
                "1GiB, 500MB).",
                param,
                ctx,
            )
        if not 1 <= number <= MAX_MEMORY_BYTES // 2:
            self.fail(f"{printable(value)!r}: a size is from 1 byte to 8 EiB.", param, ctx)
        return int(number)
