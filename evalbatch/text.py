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


def errored_note(
    errored: int | None, mean_without: float | None, left_out: int | None = None, digits: int = 4
) -> str | None:
    """How a run's errored Inspect samples count (E-147), in the words every output uses: those
    failed and the mean without them (Inspect's reading), or those left out at ingest."""
    parts = []
    if errored:
        without = "-" if mean_without is None else f"{mean_without:.{digits}f}"
        parts.append(
            f"{errored} errored sample{'s' if errored != 1 else ''} counted as failed "
            f"(score 0); mean {without} leaving {'them' if errored != 1 else 'it'} out, "
            "as Inspect does"
        )
    if left_out:
        parts.append(
            f"{left_out} errored sample{'s' if left_out != 1 else ''} left out, as Inspect does"
        )
    return "; ".join(parts) or None
