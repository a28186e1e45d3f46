"""How explain writes counts, flags, numbers and call positions in its sentences.

One wording for the lines that say why a trial graded as it did, the findings and the text.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any


def count_of(n: int, noun: str) -> str:
    """`n` and its noun, plural unless one: `1 miss`, `2 misses`, `3 tool calls`."""
    return f"{n} {noun}{'' if n == 1 else ('es' if noun.endswith('s') else 's')}"


def yes_no(flag: bool | None) -> str:
    """A flag for reading; `-` when it is unknown."""
    return "-" if flag is None else ("yes" if flag else "no")


def shown_number(value: Any) -> str:
    """A number for reading: integers plainly, others to 6 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def position_names(positions: Sequence[int], prefix: str = "O") -> str:
    """Calls or entries by position: `O0, O2` (observed calls), `F1` (fixture entries)."""
    return ", ".join(f"{prefix}{p}" for p in positions)
