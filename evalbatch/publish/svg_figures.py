"""The report's figures: matplotlib drawn to inline SVG in one style, and the chart record.

The one module that imports matplotlib (`Figure`, no pyplot, so no GUI backend), guarded so a
broken install is a clear error from `build_report` rather than an import failure. It holds the
palette (Okabe–Ito), the style every chart is drawn in, a figure the width of the page column,
legend handles, and the step from figure to SVG: no prolog, ids numbered per figure, a fixed id
salt and no date, so the same outputs give the same bytes (E-47).
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalbatch.publish.page_markup import esc

try:
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    HAVE_MATPLOTLIB = True
except ImportError:  # pragma: no cover - matplotlib is a dependency; this is for broken installs
    HAVE_MATPLOTLIB = False

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

# Okabe–Ito colours: distinguishable with the common colour-vision deficiencies
BLUE, ORANGE, SKY, GREEN = "#0072B2", "#E69F00", "#56B4E9", "#009E73"
VERMILION, PURPLE, YELLOW, GREY = "#D55E00", "#CC79A7", "#F0E442", "#8C8C8C"
PASS, FAIL = GREEN, VERMILION
SERIES = (BLUE, ORANGE, GREEN, VERMILION, PURPLE, SKY, YELLOW, GREY)

RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "evalbatch",
    # text as SVG text in matplotlib's own font (it measured the layout in it), not as glyph
    # paths: a third smaller, selectable, and read by screen readers and page search
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 9.5,
    "axes.titlesize": 10.5,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#888888",
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#e6e6e6",
    "grid.linewidth": 0.8,
    "legend.frameon": False,
    "xtick.color": "#444444",
    "ytick.color": "#444444",
}

WIDTH = 9.0  # inches; drawn at 100% of the page column


@dataclass
class Chart:
    """One figure on the page: its anchor, heading, caption, alt text and SVG; `more` is HTML
    under the caption (links to the runs drawn, when a chart holds only some)."""

    anchor: str
    title: str
    caption: str
    alt: str
    svg: str
    more: str = ""


def chart_style() -> AbstractContextManager[Any]:
    """The style every chart is drawn in (RC): enter it around the drawing."""
    return matplotlib.rc_context(RC)


def listed(parts: Sequence[str], limit: int = 12) -> str:
    """The first `limit` of `parts` for an alt text, and how many more there are."""
    shown = "; ".join(parts[:limit])
    return shown + (f"; and {len(parts) - limit} more" if len(parts) > limit else "")


_ID_REF = re.compile(r'(id="|href="#|url\(#)([^")]+)')


def svg(fig: Any, alt: str, prefix: str) -> str:
    """The figure as inline SVG: no XML prolog or DTD, ids numbered and unique to this figure
    (several SVGs share one HTML document), labelled for assistive technology."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    # matplotlib derives ids from float coordinates, whose last bits can differ from one
    # layout to the next: number them in order of appearance instead
    ids = set(re.findall(r'id="([^"]+)"', text))
    names: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        old = match.group(2)
        if old not in ids:
            return match.group(0)
        return match.group(1) + names.setdefault(old, f"{prefix}-{len(names) + 1}")

    text = _ID_REF.sub(rename, text)
    opening = text.index(">") + 1
    return (
        text[: opening - 1].replace("<svg ", f'<svg role="img" aria-label="{esc(alt)}" ', 1)
        + ">"
        + f"<title>{esc(alt)}</title>"
        + text[opening:]
    )


def figure(height: float, **kwargs: Any) -> Any:
    return Figure(figsize=(WIDTH, max(1.8, height)), layout="constrained", **kwargs)


def legend_line(**kwargs: Any) -> Any:
    """A line or marker for a legend, drawn nowhere else (matplotlib's `Line2D` keywords)."""
    return Line2D([], [], **kwargs)


def legend_patch(**kwargs: Any) -> Any:
    """A filled box for a legend (matplotlib's `Patch` keywords)."""
    return Patch(**kwargs)


def task_label(task_id: str, width: int = 28) -> str:
    return task_id if len(task_id) <= width else task_id[: width - 1] + "…"
