"""Click parameter types and display helpers the commands share, so every command rejects the
same bad values and prints untrusted text the same way."""

from __future__ import annotations

import math
import re
from typing import Any

import click
import duckdb


class FiniteFloatRange(click.FloatRange):
    """A `click.FloatRange` that also refuses NaN (every comparison with NaN is false, so a plain
    range lets it through) and infinities."""

    name = "finite float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def printable(text: object) -> str:
    """`text` safe to print on a terminal: control characters (escape codes, newlines, NUL) and
    other unprintable ones are shown escaped (`\\x1b`, `\\n`), the rest as is."""
    value = str(text)
    if value.isprintable():
        return value
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in value
    )


#: the most DuckDB threads a command asks for: far past any machine's cores, well short of the
#: count that makes DuckDB spend minutes starting threads (E-82)
MAX_THREADS = 1024

#: a DuckDB memory size: a number and a unit (1000-based KB..TB, 1024-based KiB..TiB, or spelled
#: out), or a percentage of the machine's memory
_MEMORY_SIZE = re.compile(
    r"""(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?\s*
        (?:b|bytes?|k|kb|kilobytes?|m|mb|megabytes?|g|gb|gigabytes?|t|tb|terabytes?
          |kib|mib|gib|tib|%)""",
    re.IGNORECASE | re.VERBOSE,
)


class MemoryLimit(click.ParamType):
    """A DuckDB `memory_limit` such as 4GB, 500MiB, 1.5GB or 80% (of the machine's memory).

    The text must be one number and one unit (DuckDB itself reads `4 GB extra` as 4GB and `-4GB`
    as no limit at all), and DuckDB must accept it: an in-memory database is set to it once, so
    a size too large or too small to start with is refused here, not in the middle of grading.
    The value is passed on as written."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(value).strip()
        if not _MEMORY_SIZE.fullmatch(text):
            self.fail(
                f"{printable(value)!r} is not a memory size (a number and a unit: 4GB, 500MiB, "
                "1.5GB, or a share of the machine's memory: 80%).",
                param,
                ctx,
            )
        scratch = duckdb.connect()
        try:
            scratch.execute("SET memory_limit = $limit", {"limit": text})
            scratch.execute("SELECT current_setting('memory_limit')").fetchall()
        except duckdb.Error as exc:
            reason = " ".join(str(exc).split("\n\n", 1)[0].split())
            self.fail(
                f"{printable(value)!r} is not a memory limit DuckDB can use ({reason}).", param, ctx
            )
        finally:
            scratch.close()
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
