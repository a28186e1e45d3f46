"""How values are written in the report's HTML: escaping, numbers, dollars, counts with their
noun, table cells that sort by their exact value, tables, and links to a run's section.

Every section and chart caption writes its values through these, so a score or a cost reads the
same wherever it appears and every text from the data is escaped once, here.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

from evalbatch.publish.report_views import RunView


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}".rstrip("0").rstrip(".") if value != 0 else "0"
    return str(value)


def usd(value: float | None) -> str:
    if value is None:
        return "–"
    return f"${value:.4f}".rstrip("0").rstrip(".") if value else "$0"


def quantity(number: int, word: str, plural: str | None = None) -> str:
    """`1 run`, `2 runs`: a count with its noun in the right number."""
    return f"{number} {word if number == 1 else plural or word + 's'}"


def verdict_cell(passed: bool, sortable: bool = False) -> str:
    key = f' data-v="{int(passed)}"' if sortable else ""
    return f'<td class="pass"{key}>passed</td>' if passed else f'<td class="fail"{key}>failed</td>'


def num_cell(value: Any, text: str) -> str:
    """A numeric cell with its exact value for sorting (empty when there is none)."""
    key = "" if value is None else repr(float(value))
    return f'<td class=num data-v="{key}">{text}</td>'


def table(head: Sequence[str], rows: Sequence[str], numeric: Iterable[int] = ()) -> str:
    """A table with a header row of `head` (the columns numbered in `numeric` right-aligned)."""
    right = set(numeric)
    cells = "".join(
        f"<th class=num>{esc(h)}</th>" if n in right else f"<th>{esc(h)}</th>"
        for n, h in enumerate(head)
    )
    return (
        f'<div class="table-scroll"><table><thead><tr>{cells}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def run_link(view: RunView) -> str:
    """A link to a run's section; a run without one (not shown in detail) links to the command
    that writes it in full (`#more-runs`, its id filled in by the page's script)."""
    if not view.anchor:
        return (
            f'<a href="#more-runs" data-run="{esc(view.run_id)}"><code>{esc(view.run_id)}'
            "</code></a>"
        )
    return f'<a href="#{view.anchor}"><code>{esc(view.run_id)}</code></a>'


def run_ref(run_id: str, views_by_id: dict[str, RunView]) -> str:
    """A link to a run's section, or its id when the run is not in this directory."""
    view = views_by_id.get(run_id)
    return run_link(view) if view is not None else f"<code>{esc(run_id)}</code>"
