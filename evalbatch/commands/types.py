"""Click parameter types and display helpers the commands share, so every command rejects the
same bad values and prints untrusted text the same way."""

from __future__ import annotations

import math
from typing import Any

import click


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
