"""Text from the data shown to a person: ids and names are untrusted, so a terminal gets them
escaped (E-83). Every layer uses it, so it lives below them all."""

from __future__ import annotations


def printable(text: object) -> str:
    """`text` safe to print on a terminal: control characters (escape codes, newlines, NUL) and
    other unprintable ones are shown escaped (`\\x1b`, `\\n`), the rest as is."""
    value = str(text)
    if value.isprintable():
        return value
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in value
    )
