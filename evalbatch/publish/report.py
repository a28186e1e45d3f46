"""One self-contained HTML report of an `evalbatch run` output directory.

The page opens with the verdict (regressions, failing suites, failing tasks and why), so a night
of 500 runs reads from the top. Charts are drawn with matplotlib (`Figure`, no pyplot, so no GUI
backend) and inlined as SVG; when there are more runs than a chart can hold it draws the worst
ones and says so. One small inline script sorts and filters the runs table; without it the page
is the same plain table. The page loads nothing (a Content-Security-Policy forbids it), and the
same outputs give the same bytes (fixed SVG id salt, no dates). Everything shown is an id, a code,
a count or a score (RFC 0244 §H).
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import math
import re
import shlex
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from evalbatch.errors import EvalbatchError, InputError
from evalbatch.history import series as history_series
from evalbatch.options import GradeOptions
from evalbatch.outputs import output_format
from evalbatch.outputs.outdir import RunOutputs, load, write_atomic
from evalbatch.publish.exports import package_version
from evalbatch.reduce import regression, stats

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

#: runs drawn in a per-task chart, and in a per-run chart; the tables hold every run
MAX_TASK_RUNS = 12
MAX_RUNS = 30
#: regression charts drawn, the largest drops first; the verdict lists every regression
MAX_REGRESSION_CHARTS = 6
#: suites given a trend chart (issue 18 item 1), in suiteId order; `evalbatch history` lists all
MAX_TREND_CHARTS = 12
#: rows of a verdict table shown open; the rest fold under a <details>
VERDICT_ROWS = 10

RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "evalbatch",
    "svg.fonttype": "path",
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


@dataclass(frozen=True)
class FailingTrial:
    """A failed trial of a run, or the trials of a task the log lacks (`trial_index` None,
    `count` of them, D-12), with its reason code (see REASONS)."""

    task_id: str
    trial_index: int | None
    reason: str
    score: float | None = None
    gating_score: float | None = None
    count: int = 1


@dataclass
class RunView:
    """One graded run as the page needs it."""

    run_id: str
    summary: dict[str, Any]
    label: str  # suite id, with the run id when the suite was graded in several runs
    tick: str  # the label on two lines, for an axis
    tasks: list[dict[str, Any]]
    trials: list[dict[str, Any]]
    anchor: str = ""  # the id of its section on the page
    failing: list[FailingTrial] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)  # runs.parquet's grading options

    @property
    def suite_id(self) -> str:
        return str(self.summary["suiteId"])

    @property
    def suite(self) -> str:
        return f"{self.summary['suiteId']}@{self.summary['suiteVersion']}"

    @property
    def failed_trials(self) -> int:
        return sum(f.count for f in self.failing)


@dataclass
class Report:
    """The page and the charts on it."""

    html: str
    charts: list[Chart] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Helpers


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}".rstrip("0").rstrip(".") if value != 0 else "0"
    return str(value)


def _usd(value: float | None) -> str:
    if value is None:
        return "–"
    return f"${value:.4f}".rstrip("0").rstrip(".") if value else "$0"


def _listed(parts: Sequence[str], limit: int = 12) -> str:
    shown = "; ".join(parts[:limit])
    return shown + (f"; and {len(parts) - limit} more" if len(parts) > limit else "")


_ID_REF = re.compile(r'(id="|href="#|url\(#)([^")]+)')


def _svg(fig: Any, alt: str, prefix: str) -> str:
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
        text[: opening - 1].replace("<svg ", f'<svg role="img" aria-label="{_esc(alt)}" ', 1)
        + ">"
        + f"<title>{_esc(alt)}</title>"
        + text[opening:]
    )


def _figure(height: float, **kwargs: Any) -> Any:
    return Figure(figsize=(WIDTH, max(1.8, height)), layout="constrained", **kwargs)


def _task_label(task_id: str, width: int = 28) -> str:
    return task_id if len(task_id) <= width else task_id[: width - 1] + "…"


def _fraction_mean(values: Iterable[Fraction]) -> float:
    items = list(values)
    return float(sum(items, Fraction(0)) / len(items)) if items else 0.0


def pass_curves(tasks: Sequence[dict[str, Any]]) -> list[tuple[int, float, float]]:
    """(k, pass@k, pass^k) for k = 1..min n: means over the run's tasks of the exact RFC 0244 §B
    values from each task's n and passed count."""
    counted = [(int(t["n"]), int(t["passed_count"] or 0)) for t in tasks if t.get("n")]
    if not counted:
        return []
    top = min(n for n, _ in counted)
    return [
        (
            k,
            _fraction_mean(stats.pass_at_k(n, c, k) for n, c in counted),
            _fraction_mean(stats.pass_hat_k(n, c, k) for n, c in counted),
        )
        for k in range(1, top + 1)
    ]


#: why a trial failed: reason code -> (label, colour), in the order the failure chart stacks
#: them. The trajectory codes are the trials table's (E-58); a trial that failed closed on a
#: fixture miss (D-9) is `failed-closed`, a trial the log lacks (D-12) `trial-missing`, and any
#: other failed trial failed on its output grade (E-47's order).
REASONS: dict[str, tuple[str, str]] = {
    "forbidden": ("trajectory: forbidden", VERMILION),
    "missing": ("trajectory: missing", ORANGE),
    "extra": ("trajectory: extra", YELLOW),
    "order": ("trajectory: order", PURPLE),
    "no-bracket": ("trajectory: no-bracket", SKY),
    "trajectory": ("trajectory: other", "#b07aa1"),
    "failed-closed": ("fixture miss (failed closed)", BLUE),
    "trial-missing": ("trial missing from the log", GREY),
    "output": ("graded fail on output", "#555555"),
}


def trial_reason(trial: dict[str, Any]) -> str:
    """The reason code of a failed trial row of `trials.parquet`."""
    if trial.get("failed_closed"):
        return "failed-closed"
    if trial.get("trajectory_matched") is False:
        reason = trial.get("trajectory_reason")
        return reason if reason in REASONS else "trajectory"
    return "output"


def failing_trials(
    tasks: Sequence[dict[str, Any]], trials: Sequence[dict[str, Any]]
) -> list[FailingTrial]:
    """A run's failed counted trials in task order, each task's missing trials after them."""
    by_task: dict[str, list[FailingTrial]] = {}
    for trial in trials:
        if not trial["passed"]:
            by_task.setdefault(trial["task_id"], []).append(
                FailingTrial(
                    trial["task_id"],
                    int(trial["trial_index"]),
                    trial_reason(trial),
                    trial["score"],
                    trial["gating_score"],
                )
            )
    found: list[FailingTrial] = []
    for task in tasks:
        found += by_task.get(task["task_id"], [])
        lacking = int(task["n"] or 0) - int(task.get("observed_trials") or 0)
        if lacking > 0:
            found.append(FailingTrial(task["task_id"], None, "trial-missing", count=lacking))
    return found


def failure_causes(view: RunView) -> Counter[str]:
    """Failed trials by cause (the labels of REASONS): E-47's order decides each one's cause."""
    found: Counter[str] = Counter()
    for failing in view.failing:
        found[REASONS[failing.reason][0]] += failing.count
    return found


def _anchor(run_id: str, taken: set[str]) -> str:
    """A page id for a run's section: `run-` and the run id's letters, digits, `_` and `-`
    (other characters become `-`), numbered when two runs would share it. Only run sections
    have ids starting with `run-`."""
    base = "run-" + (re.sub(r"[^A-Za-z0-9_-]+", "-", run_id).strip("-") or "x")
    anchor, number = base, 1
    while anchor in taken:
        number += 1
        anchor = f"{base}-{number}"
    taken.add(anchor)
    return anchor


def run_views(out: RunOutputs) -> list[RunView]:
    """The graded runs in runId order, each with its tasks, counted trials, failing trials and
    page anchor; a suite graded in several runs is labelled with the run id too."""
    tasks = out.table("tasks").sort("run_id", "task_pos")
    trials = out.table("trials").filter(pl.col("counted")).sort("run_id", "task_id", "trial_index")
    tasks_of = {key[0]: frame.to_dicts() for key, frame in tasks.group_by("run_id")}
    trials_of = {key[0]: frame.to_dicts() for key, frame in trials.group_by("run_id")}
    runs = out.tables.get("runs")
    options_of: dict[str, dict[str, Any]] = {}
    if runs is not None:
        wanted = [c for c in ("default_pass_score", "on_miss_default") if c in runs.columns]
        options_of = {
            row["run_id"]: {c: row[c] for c in wanted}
            for row in runs.select("run_id", *wanted).to_dicts()
        }
    by_suite = Counter(summary["suiteId"] for _, summary in out.summaries)
    taken: set[str] = set()
    views = []
    for run_id, summary in out.summaries:
        label = tick = summary["suiteId"]
        if by_suite[label] > 1:
            label, tick = f"{label} · {run_id}", f"{label}\n{run_id}"
        run_tasks = tasks_of.get(run_id, [])
        run_trials = trials_of.get(run_id, [])
        views.append(
            RunView(
                run_id=run_id,
                summary=summary,
                label=label,
                tick=tick,
                tasks=run_tasks,
                trials=run_trials,
                anchor=_anchor(run_id, taken),
                failing=failing_trials(run_tasks, run_trials),
                options=options_of.get(run_id, {}),
            )
        )
    return views


@dataclass(frozen=True)
class Picked:
    """The runs a chart draws and, when they are only some, what the caption adds and the HTML
    under it (links to the runs drawn and to the runs table)."""

    views: list[RunView]
    note: str = ""
    more: str = ""


def _run_link(view: RunView) -> str:
    return f'<a href="#{view.anchor}"><code>{_esc(view.run_id)}</code></a>'


def _by_score(view: RunView) -> tuple[Any, ...]:
    """Worst first: failed suites, then the lowest aggregate score."""
    return (bool(view.summary["passed"]), float(view.summary["aggregateScore"]), view.run_id)


def _by_failed_trials(view: RunView) -> tuple[Any, ...]:
    return (-view.failed_trials, view.run_id)


def _by_cost(view: RunView) -> tuple[Any, ...]:
    return (-float(view.summary.get("totalCostUsd") or 0.0), view.run_id)


def _pick(
    views: Sequence[RunView],
    limit: int,
    rank: Callable[[RunView], tuple[Any, ...]],
    which: str,
    of: str = "runs",
) -> Picked:
    """All `views` in runId order when they fit, else the `limit` worst by `rank`, worst first;
    `which` says how they were chosen ("lowest-scoring": "the 30 lowest-scoring of 500 runs")."""
    if len(views) <= limit:
        return Picked(list(views))
    shown = sorted(views, key=rank)[:limit]
    described = f"the {limit} {which} of {len(views)} {of}"
    note = f" Drawn: {described}, worst first; the runs table and the Parquet files hold every run."
    more = (
        f'<p class="drawn">Drawn ({_esc(described)}): '
        + ", ".join(_run_link(v) for v in shown)
        + '. Every run: the <a href="#runs">runs table</a>.</p>'
    )
    return Picked(shown, note, more)


# --------------------------------------------------------------------------------------------
# Charts


def chart_suites(views: Sequence[RunView]) -> Chart:
    """Per suite run: aggregate score, share of tasks passed, share of trials passed."""
    picked = _pick(views, MAX_RUNS, _by_score, "lowest-scoring")
    shown, note = picked.views, picked.note
    fig = _figure(0.55 * len(shown) + 1.2)
    ax = fig.add_subplot()
    series = (
        ("aggregate score", BLUE),
        ("tasks passed", GREEN),
        ("trials passed", SKY),
    )
    height = 0.26
    alt_parts = []
    for row, view in enumerate(shown):
        s = view.summary
        n_total = sum(int(t["n"] or 0) for t in view.tasks)
        c_total = sum(int(t["passed_count"] or 0) for t in view.tasks)
        values = (
            float(s["aggregateScore"]),
            s["passedCount"] / s["taskCount"] if s["taskCount"] else 0.0,
            c_total / n_total if n_total else 0.0,
        )
        for offset, ((name, colour), value) in enumerate(zip(series, values, strict=True)):
            y = row + (offset - 1) * height
            ax.barh(y, value, height=height * 0.92, color=colour, label=name if row == 0 else None)
            ax.text(value + 0.01, y, _fmt(value, 2), va="center", fontsize=8, color="#333333")
        verdict = "suite passed" if s["passed"] else "suite failed"
        ax.text(
            1.16,
            row,
            verdict,
            va="center",
            ha="left",
            fontsize=8.5,
            fontweight="bold",
            color=PASS if s["passed"] else FAIL,
        )
        alt_parts.append(
            f"{view.label}: score {_fmt(values[0], 2)}, {s['passedCount']} of {s['taskCount']} "
            f"tasks passed, {c_total} of {n_total} trials passed, {verdict}"
        )
    ax.set_yticks(range(len(shown)), [v.tick for v in shown])
    ax.invert_yaxis()
    ax.set_xlim(0, 1.15)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_xlabel("proportion")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=3, fontsize=8.5)
    alt = "Bar chart of each suite run's aggregate score, share of tasks passed and share of "
    alt += "trials passed. " + _listed(alt_parts)
    return Chart(
        "suites",
        "Suite results",
        "Aggregate score (mean task score), the share of tasks that passed under the suite's "
        "passRule, and the share of all trials that passed. Whether the suite passed is decided "
        "on the gating aggregate and the cost and latency bars (RFC 0244 §B)." + note,
        alt,
        _svg(fig, alt, "suites"),
        more=picked.more,
    )


def chart_trends(series: pl.DataFrame) -> list[Chart]:
    """Per suite with two runs or more in the series (`evalbatch.history.series`), its mean task
    score and the share of its trials that passed, run by run in time order (issue 18 item 1)."""
    per_run = (
        series.group_by("suite_id", "run_id")
        .agg(
            pl.col("started_at").first(),
            score=pl.col("score").mean(),
            passed=pl.col("passed_trials").sum() / pl.col("trials").sum(),
        )
        .sort("suite_id", "started_at", "run_id", nulls_last=True)
    )
    suites = [
        (suite_id, runs)
        for (suite_id,), runs in per_run.group_by("suite_id", maintain_order=True)
        if runs.height > 1
    ]
    note = ""
    if len(suites) > MAX_TREND_CHARTS:
        note = (
            f" Drawn for the first {MAX_TREND_CHARTS} of {len(suites)} suites by suiteId; "
            "`evalbatch history` lists every one."
        )
    charts = []
    for number, (suite_id, runs) in enumerate(suites[:MAX_TREND_CHARTS], start=1):
        fig = _figure(2.6)
        ax = fig.add_subplot()
        nights = list(range(runs.height))
        # the score's line is drawn wider, so it still shows where the two coincide
        for column, name, colour, style, width in (
            ("score", "mean task score", BLUE, "-", 3.0),
            ("passed", "trials passed", GREEN, "--", 1.4),
        ):
            values = [math.nan if v is None else v for v in runs[column].to_list()]
            ax.plot(nights, values, style, lw=width, marker="o", ms=3.5, color=colour, label=name)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("night (runs in the order of the eval's start)")
        ax.set_ylabel("proportion")
        ax.legend(loc="lower left", ncols=2, fontsize=8.5)
        starts = runs["started_at"].drop_nulls()
        span = f" from {starts[0]:%Y-%m-%d} to {starts[-1]:%Y-%m-%d}" if starts.len() else ""
        first, last = runs.row(0, named=True), runs.row(-1, named=True)
        alt = (
            f"Line chart of suite {suite_id} over {runs.height} runs{span}: mean task score "
            f"{_fmt(first['score'], 2)} on the first night, {_fmt(last['score'], 2)} on the last; "
            f"trials passed {_fmt(first['passed'], 2)} then {_fmt(last['passed'], 2)}."
        )
        charts.append(
            Chart(
                f"trend-{number}",
                f"Trend: {suite_id}",
                f"The suite's {runs.height} runs{span}, in the order of the eval's start: the "
                "mean task score (its aggregate score) and the share of its trials that passed."
                + note,
                alt,
                _svg(fig, alt, f"trend-{number}"),
            )
        )
    return charts


def chart_pass_k(views: Sequence[RunView]) -> Chart:
    """pass^k (solid) and pass@k (dashed) against k for each suite run."""
    picked = _pick(views, MAX_RUNS, _by_score, "lowest-scoring")
    shown, note = picked.views, picked.note
    fig = _figure(3.2 + 0.18 * (len(shown) + 3) / 2)
    ax = fig.add_subplot()
    top = 1
    alt_parts = []
    for number, view in enumerate(shown):
        colour = SERIES[number % len(SERIES)]
        curve = pass_curves(view.tasks)
        if not curve:
            continue
        ks = [k for k, _, _ in curve]
        top = max(top, ks[-1])
        ax.plot(ks, [h for _, _, h in curve], color=colour, marker="o", lw=2, label=view.label)
        ax.plot(
            ks, [a for _, a, _ in curve], color=colour, marker="o", lw=1.3, ls="--", mfc="white"
        )
        k = (view.summary.get("trialStats") or {}).get("k")
        if k in ks:
            ax.plot([k], [curve[k - 1][2]], marker="o", ms=12, mfc="none", mec=colour, mew=1.5)
        alt_parts.append(
            f"{view.label}: pass^k "
            + ", ".join(f"k={k} {_fmt(h, 2)}" for k, _, h in curve)
            + "; pass@k "
            + ", ".join(f"k={k} {_fmt(a, 2)}" for k, a, _ in curve)
        )
    ax.set_xlim(0.7, top + 0.3)
    ax.set_xticks(range(1, top + 1))
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("k (trials)")
    ax.set_ylabel("proportion of tasks")
    handles, _ = ax.get_legend_handles_labels()
    handles += [
        Line2D([], [], color="#444444", lw=2, label="pass^k: all k trials pass"),
        Line2D([], [], color="#444444", lw=1.3, ls="--", label="pass@k: at least one passes"),
        Line2D([], [], color="#444444", marker="o", ms=10, mfc="none", lw=0, label="suite's k"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=8.5)
    alt = "Line chart of pass^k and pass@k against k for each suite run. " + _listed(alt_parts)
    return Chart(
        "pass-k",
        "pass^k and pass@k by k",
        "For each k from 1 to the trial count n, the mean over tasks of pass^k = C(c,k)/C(n,k) "
        "(every one of k trials passes) and of the unbiased pass@k = 1 − C(n−c,k)/C(n,k), from "
        "each task's n and passed count c, computed exactly (RFC 0244 §B). A suite run once "
        "per task has only k = 1, where both equal the share of trials passed; a ring marks "
        "the k the suite reports." + note,
        alt,
        _svg(fig, alt, "passk"),
        more=picked.more,
    )


def _task_grid(views: Sequence[RunView], columns: int = 1) -> tuple[Any, list[list[Any]]]:
    counts = [max(1, len(v.tasks)) for v in views]
    fig = _figure(0.3 * sum(counts) + 0.62 * len(views) + 0.9)
    axes = fig.subplots(
        len(views),
        columns,
        squeeze=False,
        sharex="col",
        gridspec_kw={"height_ratios": counts},
    )
    for row, view in enumerate(views):
        for ax in axes[row]:
            ax.set_yticks(range(len(view.tasks)), [_task_label(t["task_id"]) for t in view.tasks])
            ax.set_ylim(len(view.tasks) - 0.5, -0.5)
            ax.grid(axis="y", visible=False)
        axes[row][0].set_title(view.label)
    return fig, [list(r) for r in axes]


def chart_task_scores(views: Sequence[RunView]) -> Chart:
    """Per task: its score (the mean of its trials) as a bar, each trial's score as a dot."""
    picked = _pick(views, MAX_TASK_RUNS, _by_score, "lowest-scoring")
    shown, note = picked.views, picked.note
    fig, axes = _task_grid(shown)
    alt_parts = []
    for row, view in enumerate(shown):
        ax = axes[row][0]
        trials_by_task: dict[str, list[dict[str, Any]]] = {}
        for trial in view.trials:
            trials_by_task.setdefault(trial["task_id"], []).append(trial)
        for y, task in enumerate(view.tasks):
            score = float(task["score"] or 0.0)
            ax.barh(y, score, height=0.62, color="#d9e6f2", edgecolor="#9fbad6", lw=0.6)
            trials = trials_by_task.get(task["task_id"], [])
            spread = 0.44
            for number, trial in enumerate(trials):
                offset = (
                    0.0 if len(trials) == 1 else -spread / 2 + spread * number / (len(trials) - 1)
                )
                passed = bool(trial["passed"])
                ax.plot(
                    float(trial["score"] or 0.0),
                    y + offset,
                    marker="o" if passed else "X",
                    ms=6.5,
                    color=PASS if passed else FAIL,
                    mec="white",
                    mew=0.6,
                    lw=0,
                )
            gating = task.get("gating_score")
            if gating is not None and not math.isclose(gating, score, abs_tol=1e-12):
                ax.plot(gating, y, marker="D", ms=7, mfc="none", mec="#222222", mew=1.3, lw=0)
            scores = ", ".join(_fmt(float(t["score"] or 0.0), 2) for t in trials)
            passes = sum(bool(t["passed"]) for t in trials)
            alt_parts.append(
                f"{view.label} {task['task_id']}: score {_fmt(score, 2)}, "
                f"trials {scores or 'none'} ({passes} passed)"
            )
        ax.set_xlim(-0.03, 1.05)
    axes[-1][0].set_xlabel("score")
    fig.legend(
        handles=[
            Patch(facecolor="#d9e6f2", edgecolor="#9fbad6", label="task score (mean of trials)"),
            Line2D([], [], marker="o", color=PASS, lw=0, label="trial passed"),
            Line2D([], [], marker="X", color=FAIL, lw=0, label="trial failed"),
            Line2D(
                [], [], marker="D", mfc="none", mec="#222222", lw=0, label="gating score (D-10)"
            ),
        ],
        loc="outside upper center",
        ncols=4,
        fontsize=8.5,
    )
    alt = "Chart of each task's score with one dot per trial score. " + _listed(alt_parts, 20)
    return Chart(
        "task-scores",
        "Task scores and trial spread",
        "Each bar is a task's score, the mean of its trial scores; each dot is one trial, green "
        "when it passed and a red cross when it failed. A diamond marks the gating score where "
        "it differs from the score: a trial whose tool path did not match, or that failed "
        "closed, counts 0 there (D-10)." + note,
        alt,
        _svg(fig, alt, "scores"),
        more=picked.more,
    )


def chart_failures(views: Sequence[RunView]) -> Chart:
    """Failed trials per suite run, stacked by cause."""
    picked = _pick(views, MAX_RUNS, _by_failed_trials, "with the most failed trials")
    shown, note = picked.views, picked.note
    fig = _figure(0.45 * len(shown) + 1.5)
    ax = fig.add_subplot()
    counts = [failure_causes(v) for v in shown]
    used = [(name, colour) for name, colour in REASONS.values() if any(c[name] for c in counts)]
    left = [0] * len(shown)
    for name, colour in used:
        values = [c[name] for c in counts]
        ax.barh(range(len(shown)), values, left=left, height=0.6, color=colour, label=name)
        left = [a + b for a, b in zip(left, values, strict=True)]
    alt_parts = []
    for row, view in enumerate(shown):
        total = sum(int(t["n"] or 0) for t in view.tasks)
        failed = sum(counts[row].values())
        ax.text(left[row] + 0.1, row, f"{failed} of {total} trials failed", va="center", fontsize=8)
        causes = ", ".join(f"{n} {name}" for name, n in sorted(counts[row].items()))
        alt_parts.append(
            f"{view.label}: {failed} of {total} failed" + (f" ({causes})" if causes else "")
        )
    ax.set_yticks(range(len(shown)), [v.tick for v in shown])
    ax.invert_yaxis()
    ax.set_xlim(0, max([*left, 1]) * 1.35 + 0.5)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("failed trials")
    ax.grid(axis="y", visible=False)
    if used:
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=3, fontsize=8.5)
    alt = "Stacked bar chart of failed trials per suite run by cause. " + _listed(alt_parts)
    return Chart(
        "failures",
        "Why trials failed",
        "Failed trials by cause: the trajectory reason code of a tool path that did not match "
        "(forbidden call, expected call missing, extra call, wrong order, no invocation "
        "bracket), a fixture miss that failed the trial closed (D-9), a trial the log lacks "
        "(D-12), or a fail on the output grade alone." + note,
        alt,
        _svg(fig, alt, "failures"),
        more=picked.more,
    )


def _efficiency(view: RunView, task_id: str) -> dict[str, Any]:
    for entry in view.summary["tasks"]:
        if entry["taskId"] == task_id:
            return dict(entry.get("efficiency") or {})
    return {}


def chart_efficiency(views: Sequence[RunView]) -> Chart:
    """Tool calls and tokens per trial, by task (RFC 0244 §C: reported, never gated)."""
    picked = _pick(views, MAX_TASK_RUNS, _by_score, "lowest-scoring")
    shown, note = picked.views, picked.note
    fig, axes = _task_grid(shown, columns=2)
    alt_parts = []
    for row, view in enumerate(shown):
        calls_ax, tokens_ax = axes[row]
        for y, task in enumerate(view.tasks):
            eff = _efficiency(view, task["task_id"])
            calls = float(eff.get("toolCallCount") or 0.0)
            tokens_in = float(eff.get("inputTokens") or 0.0)
            tokens_out = float(eff.get("outputTokens") or 0.0)
            calls_ax.barh(y, calls, height=0.62, color=ORANGE)
            calls_ax.text(calls, y, f" {_fmt(calls, 1)}", va="center", fontsize=7.5)
            tokens_ax.barh(y, tokens_in, height=0.62, color=BLUE)
            tokens_ax.barh(y, tokens_out, left=tokens_in, height=0.62, color=SKY)
            alt_parts.append(
                f"{view.label} {task['task_id']}: {_fmt(calls, 1)} tool calls, "
                f"{tokens_in:.0f} input and {tokens_out:.0f} output tokens per trial"
            )
        tokens_ax.set_yticklabels([])
        calls_ax.xaxis.get_major_locator().set_params(integer=True)
    axes[-1][0].set_xlabel("tool calls per trial")
    axes[-1][1].set_xlabel("tokens per trial")
    for column in (0, 1):
        top = axes[-1][column].get_xlim()[1]
        axes[-1][column].set_xlim(0, top * 1.12)
    fig.legend(
        handles=[
            Patch(color=ORANGE, label="tool calls"),
            Patch(color=BLUE, label="input tokens"),
            Patch(color=SKY, label="output tokens"),
        ],
        loc="outside upper center",
        ncols=3,
        fontsize=8.5,
    )
    alt = "Bar charts of tool calls and tokens per trial, by task. " + _listed(alt_parts, 20)
    return Chart(
        "efficiency",
        "Efficiency by task",
        "Means over each task's trials of the agent's tool calls and of its input and output "
        "tokens, counted inside the invocation brackets with judge calls left out (RFC 0244 §C). "
        "They are reported, never gated." + note,
        alt,
        _svg(fig, alt, "efficiency"),
        more=picked.more,
    )


def chart_cost(views: Sequence[RunView]) -> Chart | None:
    """Cost per task, with each run's total; None when no run has a cost."""
    with_cost = [v for v in views if any(t.get("cost_usd") is not None for t in v.tasks)]
    if not with_cost:
        return None
    picked = _pick(with_cost, MAX_TASK_RUNS, _by_cost, "costliest", "runs with a cost")
    shown, note = picked.views, picked.note
    fig, axes = _task_grid(shown)
    alt_parts = []
    for row, view in enumerate(shown):
        ax = axes[row][0]
        for y, task in enumerate(view.tasks):
            cost = task.get("cost_usd")
            if cost is None:
                continue
            ax.barh(y, cost, height=0.62, color=PURPLE)
            ax.text(cost, y, f" {_usd(cost)}", va="center", fontsize=7.5)
        total = view.summary.get("totalCostUsd")
        ax.set_title(f"{view.label} (total {_usd(total)})")
        alt_parts.append(
            f"{view.label}: total {_usd(total)}; "
            + ", ".join(f"{t['task_id']} {_usd(t.get('cost_usd'))}" for t in view.tasks)
        )
    axes[-1][0].set_xlabel("cost per task (USD, all trials)")
    top = axes[-1][0].get_xlim()[1]
    axes[-1][0].set_xlim(0, top * 1.15)
    alt = "Bar chart of the cost of each task in US dollars. " + _listed(alt_parts)
    return Chart(
        "cost",
        "Cost",
        "Each task's cost over all its trials, judge calls included: provider.usage "
        "costEstimateUsd, or the host's eval.scored costUsd when the log has no usage cost "
        "(D-14, D-6). The heading gives the run's totalCostUsd." + note,
        alt,
        _svg(fig, alt, "cost"),
        more=picked.more,
    )


@dataclass
class RegressionView:
    """A candidate run's regression block with the paired differences behind it."""

    candidate: RunView
    block: dict[str, Any]
    differences: list[tuple[str, float]]
    comparison: regression.Comparison | None
    note: str


def regression_views(views: Sequence[RunView], tasks: pl.DataFrame) -> list[RegressionView]:
    """Recompute each regression block's comparison (the options `run` uses, with the block's
    method and alpha) for the per-task differences and the interval."""
    found = []
    for view in views:
        block = view.summary.get("regression")
        if not block:
            continue
        base = tasks.filter(pl.col("run_id") == block["baselineRunId"])
        cand = tasks.filter(pl.col("run_id") == view.run_id)
        comparison = None
        note = ""
        differences: list[tuple[str, float]] = []
        if base.height and cand.height:
            options = regression.RegressOptions(method=block["method"], alpha=block["alpha"])
            comparison = regression.compare(
                base,
                cand,
                options,
                suite_id=view.suite_id,
                base_run=block["baselineRunId"],
                cand_run=view.run_id,
            )
            paired = base.join(cand, on="task_id", suffix="_cand").sort("task_id")
            differences = [
                (task, float(c) - float(b))
                for task, b, c in paired.select(
                    "task_id", "gating_score", "gating_score_cand"
                ).iter_rows()
            ]
            if (
                comparison.verdict != block["verdict"]
                or comparison.paired_task_count != block["pairedTaskCount"]
            ):
                note = (
                    " The comparison was made with other options than `run`'s defaults, so "
                    "its interval is not drawn."
                )
                comparison = None
        else:
            note = " The baseline's task rows are not in this directory."
        found.append(RegressionView(view, block, differences, comparison, note))
    return found


def regressions_first(items: Sequence[RegressionView]) -> list[RegressionView]:
    """Regression blocks worst first: regressed ones, then by score delta, then runId."""
    return sorted(
        items,
        key=lambda i: (
            i.block["verdict"] != "regressed",
            float(i.block["scoreDelta"]),
            i.candidate.run_id,
        ),
    )


def chart_regression(item: RegressionView, number: int, note: str = "") -> Chart:
    """Paired per-task differences (candidate − baseline gating score) with the interval;
    `note` ends the caption (which blocks are drawn, when not all are)."""
    block = item.block
    rows = sorted(item.differences, key=lambda d: (d[1], d[0]))
    fig = _figure(0.3 * max(1, len(rows)) + 1.6)
    ax = fig.add_subplot()
    level = round(100 * (1 - float(block["alpha"])), 2)
    comparison = item.comparison
    if comparison is not None and comparison.interval is not None:
        low, high = comparison.interval
        ax.axvspan(low, high, color=BLUE, alpha=0.14, lw=0, label=f"{level:g}% interval")
    ax.axvline(0, color="#333333", lw=1)
    mean = comparison.mean_difference if comparison is not None else None
    if mean is None and rows:
        mean = sum(d for _, d in rows) / len(rows)
    if mean is not None:
        ax.axvline(mean, color=BLUE, lw=2, label=f"mean difference {mean:+.3f}")
    for y, (_, diff) in enumerate(rows):
        colour = PASS if diff > 0 else FAIL if diff < 0 else GREY
        ax.plot([0, diff], [y, y], color=colour, lw=1.2)
        ax.plot(diff, y, marker="o", ms=7, color=colour, lw=0)
    ax.set_yticks(range(len(rows)), [_task_label(t) for t, _ in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.grid(axis="y", visible=False)
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel("candidate − baseline (task gating score)")
    verdict = str(block["verdict"]).upper()
    ax.set_title(
        f"{verdict} · {block['method']} · α = {block['alpha']} · "
        f"{block['pairedTaskCount']} paired tasks",
        color=FAIL if verdict == "REGRESSED" else PASS if verdict == "IMPROVED" else "#222222",
    )
    fig.legend(loc="outside lower center", ncols=2, fontsize=8.5)
    interval = ""
    if comparison is not None and comparison.interval is not None:
        interval = (
            f", {level:g}% interval {comparison.interval[0]:+.3f} to {comparison.interval[1]:+.3f}"
        )
    alt = (
        f"Dot chart of paired task differences for {item.candidate.label}, candidate run "
        f"{item.candidate.run_id} against baseline {block['baselineRunId']}: verdict "
        f"{block['verdict']}, {block['pairedTaskCount']} paired tasks, score delta "
        f"{block['scoreDelta']:+.3f}{interval}. " + _listed([f"{t} {d:+.2f}" for t, d in rows], 20)
    )
    return Chart(
        f"regression-{number}",
        f"Regression: {item.candidate.label}",
        f"Candidate {item.candidate.run_id} against baseline {block['baselineRunId']}, paired "
        f"by taskId ({block['pairedTaskCount']} tasks). Each dot is one task's change in gating "
        "score; the line is the mean paired difference and the band its interval at the "
        "block's alpha (RFC 0244 §F)." + item.note + note,
        alt,
        _svg(fig, alt, f"regression{number}"),
    )


# --------------------------------------------------------------------------------------------
# Page

CSS = """
:root { color-scheme: light; --ink: #1f2328; --muted: #59636e; --line: #d8dee4; --pass: #00704f;
  --fail: #b34700; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue",
  Arial, sans-serif; color: var(--ink); background: #fff; }
header { background: #0b3d62; color: #fff; padding: 28px 0 22px; }
header h1 { margin: 0 0 4px; font-size: 26px; font-weight: 650; }
header p { margin: 0; color: #cfe0ee; }
.wrap { max-width: 1180px; margin: 0 auto; padding: 0 24px; }
nav { border-bottom: 1px solid var(--line); background: var(--bg); }
nav ol { list-style: none; margin: 0; padding: 10px 0; display: flex; flex-wrap: wrap;
  gap: 4px 18px; }
nav a { color: #0b5c99; text-decoration: none; font-size: 14px; }
nav a:hover { text-decoration: underline; }
section { padding: 22px 0 8px; border-bottom: 1px solid var(--line); }
h2 { font-size: 20px; margin: 0 0 10px; }
figure { margin: 0 0 14px; }
figure svg { display: block; width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: 13.5px; margin-top: 6px; max-width: 80ch; }
table { border-collapse: collapse; width: 100%; font-size: 13.5px; margin: 6px 0 12px; }
th, td { padding: 5px 7px; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; }
th { background: var(--bg); font-weight: 600; vertical-align: bottom; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
.pass { color: var(--pass); font-weight: 600; }
.fail { color: var(--fail); font-weight: 600; }
.table-scroll { overflow-x: auto; }
details summary { cursor: pointer; color: #0b5c99; margin: 4px 0 8px; }
code { font-size: 13px; background: var(--bg); padding: 1px 4px; border-radius: 3px;
  white-space: nowrap; }
footer { color: var(--muted); font-size: 13px; padding: 18px 0 40px; }
h3 { font-size: 16px; margin: 16px 0 4px; }
.lead { font-size: 17px; font-weight: 650; margin: 0 0 8px; padding: 9px 14px;
  border-left: 6px solid; border-radius: 3px; }
.lead.fail { border-color: var(--fail); background: #fcefe6; }
.lead.pass { border-color: var(--pass); background: #e9f5ef; }
.drawn { color: var(--muted); font-size: 13px; margin: 0 0 12px; }
.filter { display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: center; font-size: 14px;
  margin: 4px 0; }
.filter input[type=search] { font: inherit; padding: 3px 6px; width: 24em; max-width: 100%; }
th button { font: inherit; color: inherit; background: none; border: 0; padding: 0;
  cursor: pointer; text-align: inherit; }
th[aria-sort=ascending] button::after { content: " ▲"; }
th[aria-sort=descending] button::after { content: " ▼"; }
article.run { border-top: 1px solid var(--line); padding: 6px 0 2px; }
article.run h3 { margin: 4px 0 2px; }
article.run p { margin: 0 0 6px; }
code.cmd { white-space: normal; overflow-wrap: anywhere; }
"""


def _verdict_cell(passed: bool, sortable: bool = False) -> str:
    key = f' data-v="{int(passed)}"' if sortable else ""
    return f'<td class="pass"{key}>passed</td>' if passed else f'<td class="fail"{key}>failed</td>'


def _count(number: int, word: str, plural: str | None = None) -> str:
    """`1 run`, `2 runs`: a count with its noun in the right number."""
    return f"{number} {word if number == 1 else plural or word + 's'}"


def _num(value: Any, text: str) -> str:
    """A numeric cell with its exact value for sorting (empty when there is none)."""
    key = "" if value is None else repr(float(value))
    return f'<td class=num data-v="{key}">{text}</td>'


def _table(head: Sequence[str], rows: Sequence[str], numeric: Iterable[int] = ()) -> str:
    """A table with a header row of `head` (the columns numbered in `numeric` right-aligned)."""
    right = set(numeric)
    cells = "".join(
        f"<th class=num>{_esc(h)}</th>" if n in right else f"<th>{_esc(h)}</th>"
        for n, h in enumerate(head)
    )
    return (
        f'<div class="table-scroll"><table><thead><tr>{cells}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _folded(
    head: Sequence[str], rows: Sequence[str], more: str, numeric: Iterable[int] = ()
) -> str:
    """The first VERDICT_ROWS rows as a table, the rest under a <details> (`more`: what they
    are, "failing task"), so the verdict stays short however many runs there are."""
    numeric = list(numeric)
    shown = _table(head, rows[:VERDICT_ROWS], numeric)
    if len(rows) <= VERDICT_ROWS:
        return shown
    rest = _count(len(rows) - VERDICT_ROWS, f"more {more}")
    return (
        shown
        + f"<details><summary>{_esc(rest)}</summary>"
        + _table(head, rows[VERDICT_ROWS:], numeric)
        + "</details>"
    )


def _links(views: Sequence[RunView], limit: int = 5) -> str:
    shown = ", ".join(_run_link(v) for v in views[:limit])
    return shown + (f" and {len(views) - limit} more" if len(views) > limit else "")


def _reason_counts(reasons: Counter[str]) -> str:
    """`missing × 3, output × 1` in REASONS order."""
    return ", ".join(
        f"<code>{_esc(code)}</code> × {reasons[code]}" for code in REASONS if reasons[code]
    )


def _interval(item: RegressionView) -> str:
    comparison = item.comparison
    if comparison is None or comparison.interval is None:
        return "–"
    level = round(100 * (1 - float(item.block["alpha"])), 2)
    low, high = comparison.interval
    return f"{low:+.3f} to {high:+.3f} ({level:g}%)"


def _run_ref(run_id: str, views_by_id: dict[str, RunView]) -> str:
    """A link to a run's section, or its id when the run is not in this directory."""
    view = views_by_id.get(run_id)
    return _run_link(view) if view is not None else f"<code>{_esc(run_id)}</code>"


def _regressions_part(items: Sequence[RegressionView], views_by_id: dict[str, RunView]) -> str:
    regressed = [i for i in regressions_first(items) if i.block["verdict"] == "regressed"]
    verdicts = Counter(str(i.block["verdict"]) for i in items)
    if not items:
        told = (
            "<p>No run was compared with a baseline: none names one (eval.started "
            "baselineRunId) that was graded into this directory (RFC 0244 §F).</p>"
        )
    else:
        listed = ", ".join(f"{n} {verdict}" for verdict, n in sorted(verdicts.items()))
        told = (
            f"<p>{_esc(_count(len(items), 'run'))} compared with their baseline: {listed}. "
            "Regressed runs, the largest drop first:</p>"
            if regressed
            else f"<p>None. {_esc(_count(len(items), 'run'))} compared with their baseline: "
            f"{listed}.</p>"
        )
    rows = [
        "<tr>"
        f"<td>{_run_link(i.candidate)}</td><td>{_esc(i.candidate.suite)}</td>"
        f"<td>{_run_ref(i.block['baselineRunId'], views_by_id)}</td>"
        + _num(i.block["scoreDelta"], f"{float(i.block['scoreDelta']):+.3f}")
        + f"<td class=num>{_interval(i)}</td><td>{_esc(i.block['method'])}</td>"
        f"<td class=num>{_esc(i.block['pairedTaskCount'])}</td></tr>"
        for i in regressed
    ]
    head = ("candidate run", "suite", "baseline run", "score delta", "interval", "method", "tasks")
    table = _folded(head, rows, "regression", (3, 4, 6)) if rows else ""
    return '<h3 id="regressions">Regressions</h3>' + told + table


def _failing_suites_part(views: Sequence[RunView]) -> str:
    runs_of: Counter[str] = Counter(v.suite for v in views)
    failed: dict[str, list[RunView]] = {}
    for view in sorted(views, key=_by_score):
        if not view.summary["passed"]:
            failed.setdefault(view.suite, []).append(view)
    order = sorted(failed, key=lambda suite: (-len(failed[suite]), suite))
    rows = [
        "<tr>"
        f"<td>{_esc(suite)}</td>"
        + _num(len(failed[suite]), f"{len(failed[suite])} of {_count(runs_of[suite], 'run')}")
        + _num(
            failed[suite][0].summary["aggregateScore"],
            _fmt(float(failed[suite][0].summary["aggregateScore"])),
        )
        + f"<td>{_links(failed[suite])}</td></tr>"
        for suite in order
    ]
    if not rows:
        return '<h3 id="failing-suites">Failing suites</h3><p>None: every suite run passed.</p>'
    return (
        '<h3 id="failing-suites">Failing suites</h3>'
        "<p>Suites with a run that failed (RFC 0244 §B: the gating aggregate, cost and latency "
        "bars), the most failed runs first; each run's section lists its failing trials.</p>"
        + _folded(
            ("suite", "failed runs", "lowest score", "runs, lowest score first"),
            rows,
            "failing suite",
            (1, 2),
        )
    )


def _failing_tasks_part(views: Sequence[RunView]) -> str:
    runs_of: Counter[str] = Counter(v.suite for v in views)
    failed_in: dict[tuple[str, str], list[RunView]] = {}
    reasons: dict[tuple[str, str], Counter[str]] = {}
    for view in sorted(views, key=_by_score):
        for task in view.tasks:
            if task["passed"]:
                continue
            key = (view.suite, task["task_id"])
            failed_in.setdefault(key, []).append(view)
            counted = reasons.setdefault(key, Counter())
            for failing in view.failing:
                if failing.task_id == task["task_id"]:
                    counted[failing.reason] += failing.count
    order = sorted(
        failed_in,
        key=lambda key: (-len(failed_in[key]), -sum(reasons[key].values()), key),
    )
    rows = []
    for key in order:
        suite, task_id = key
        runs = failed_in[key]
        rows.append(
            f"<tr><td>{_esc(task_id)}</td><td>{_esc(suite)}</td>"
            + _num(len(runs), f"{len(runs)} of {_count(runs_of[suite], 'run')}")
            + f"<td>{_reason_counts(reasons[key]) or 'no failed trial'}</td>"
            f"<td>{_links(runs)}</td></tr>"
        )
    if not rows:
        return '<h3 id="failing-tasks">Failing tasks</h3><p>None: every task passed.</p>'
    return (
        '<h3 id="failing-tasks">Failing tasks</h3>'
        "<p>Tasks that failed in a run, the most runs first, with their failed trials counted by "
        'reason code (see <a href="#by-run">run by run</a>).</p>'
        + _folded(
            ("task", "suite", "failed in", "failed trials by reason", "runs"),
            rows,
            "failing task",
            (2,),
        )
    )


def _verdict(views: Sequence[RunView], items: Sequence[RegressionView]) -> str:
    """The section the page opens with: one line of verdict, then regressions, failing suites
    and failing tasks, each worst first."""
    views_by_id = {v.run_id: v for v in views}
    regressed = sum(i.block["verdict"] == "regressed" for i in items)
    failed = sum(not v.summary["passed"] for v in views)
    failing_tasks = len(
        {(v.suite, t["task_id"]) for v in views for t in v.tasks if not t["passed"]}
    )
    parts = [
        _count(regressed, "regression") if regressed else "no regression",
        f"{failed} of {_count(len(views), 'suite run')} failed"
        if failed
        else f"{_count(len(views), 'suite run')} passed",
        _count(failing_tasks, "failing task") if failing_tasks else "no failing task",
    ]
    state = "fail" if regressed or failed else "pass"
    lead = " · ".join(parts)
    return (
        '<section id="verdict" aria-labelledby="verdict-h"><h2 id="verdict-h">Verdict</h2>'
        f'<p id="verdict-lead" class="lead {state}">{_esc(lead[:1].upper() + lead[1:])}</p>'
        + _regressions_part(items, views_by_id)
        + _failing_suites_part(views)
        + _failing_tasks_part(views)
        + "</section>"
    )


def _runs_table(views: Sequence[RunView]) -> str:
    head = (
        "suite@version",
        "run",
        "score",
        "result",
        "tasks passed",
        "failed trials",
        "k",
        "pass@k",
        "pass^k",
        "stderr",
        "cost",
        "regression",
    )
    rows = []
    for view in views:
        s = view.summary
        st = s.get("trialStats") or {}
        reg = s.get("regression")
        regression_text = f"{reg['verdict']} ({float(reg['scoreDelta']):+.3f})" if reg else "–"
        rows.append(
            f'<tr data-passed="{"yes" if s["passed"] else "no"}">'
            f"<td>{_esc(view.suite)}</td><td>{_run_link(view)}</td>"
            + _num(s["aggregateScore"], _fmt(float(s["aggregateScore"])))
            + _verdict_cell(s["passed"], sortable=True)
            + _num(s["passedCount"], f"{s['passedCount']}/{s['taskCount']}")
            + _num(view.failed_trials, str(view.failed_trials))
            + _num(st.get("k"), _fmt(st.get("k")))
            + _num(st.get("passAtK"), _fmt(st.get("passAtK")))
            + _num(st.get("passHatK"), _fmt(st.get("passHatK")))
            + _num(st.get("scoreStderr"), _fmt(st.get("scoreStderr")))
            + _num(s.get("totalCostUsd"), _usd(s.get("totalCostUsd")))
            + f"<td>{_esc(regression_text)}</td></tr>"
        )
    return _table(head, rows, (2, 4, 5, 6, 7, 8, 9, 10)).replace(
        "<table>", '<table id="runs-table">', 1
    )


def _tasks_table(views: Sequence[RunView]) -> str:
    head = (
        "<tr><th>suite</th><th>task</th><th class=num>score</th><th class=num>gating</th>"
        "<th>result</th><th class=num>passed/n</th><th class=num>pass@k</th>"
        "<th class=num>pass^k</th><th class=num>cost</th><th class=num>latency ms</th>"
        "<th>trajectory</th><th class=num>fixture misses</th></tr>"
    )
    rows = []
    for view in views:
        for t in view.tasks:
            matched = t.get("trajectory_matched")
            rows.append(
                "<tr>"
                f"<td>{_esc(view.label)}</td><td>{_esc(t['task_id'])}</td>"
                f"<td class=num>{_fmt(t['score'])}</td>"
                f"<td class=num>{_fmt(t['gating_score'])}</td>{_verdict_cell(bool(t['passed']))}"
                f"<td class=num>{_fmt(t['passed_count'])}/{_fmt(t['n'])}</td>"
                f"<td class=num>{_fmt(t.get('pass_at_k'))}</td>"
                f"<td class=num>{_fmt(t.get('pass_hat_k'))}</td>"
                f"<td class=num>{_usd(t.get('cost_usd'))}</td>"
                f"<td class=num>{_fmt(t.get('latency_ms'))}</td>"
                f"<td>{'–' if matched is None else 'matched' if matched else 'unmatched'}</td>"
                f"<td class=num>{_fmt(t.get('fixture_miss_count'))}</td>"
                "</tr>"
            )
    return f'<div class="table-scroll"><table>{head}{"".join(rows)}</table></div>'


def _problems_line(out: RunOutputs) -> str:
    problems = out.tables.get("problems")
    if problems is None:
        return ""
    if problems.height == 0:
        return "<p>No problems were recorded while grading.</p>"
    counts = Counter(problems["code"].to_list())
    listed = ", ".join(f"<code>{_esc(c)}</code> × {n}" for c, n in sorted(counts.items()))
    recorded = "problem was" if problems.height == 1 else "problems were"
    return (
        f"<p>{problems.height} {recorded} recorded while grading ({listed}); "
        "see <code>problems.parquet</code>.</p>"
    )


def explain_command(view: RunView, task_id: str, trial_index: int | None) -> str:
    """The `evalbatch explain` command that shows why a trial of `view` graded as it did: the
    run's grading options when they are not the defaults, ids shell-quoted. EVENTS and SUITES
    stand for what `evalbatch run` was given (the output directory does not record paths)."""
    defaults = GradeOptions()
    words = ["evalbatch", "explain", "EVENTS", "--suites", "SUITES", "--run-id", view.run_id]
    pass_score = view.options.get("default_pass_score")
    if pass_score is not None and float(pass_score) != defaults.default_pass_score:
        words += ["--default-pass-score", repr(float(pass_score))]
    on_miss = view.options.get("on_miss_default")
    if on_miss is not None and on_miss != defaults.on_miss_default:
        words += ["--on-miss-default", str(on_miss)]
    words += ["--task-id", task_id]
    if trial_index is not None:
        words += ["--trial", str(trial_index)]
    return shlex.join(words)


def _run_section(view: RunView, views_by_id: dict[str, RunView]) -> str:
    """A run's verdict line and its failing trials, each with the command that explains it."""
    s = view.summary
    result = (
        '<span class="pass">passed</span>' if s["passed"] else '<span class="fail">failed</span>'
    )
    facts = [
        _esc(view.suite),
        f"score {_fmt(float(s['aggregateScore']))}",
        f"{s['passedCount']} of {_esc(_count(int(s['taskCount']), 'task'))} passed",
        _esc(_count(view.failed_trials, "failed trial")),
    ]
    reg = s.get("regression")
    if reg:
        facts.append(
            f"{_esc(reg['verdict'])} against {_run_ref(reg['baselineRunId'], views_by_id)} "
            f"(score delta {float(reg['scoreDelta']):+.3f})"
        )
    rows = [
        "<tr>"
        f"<td>{_esc(f.task_id)}</td>"
        + (
            _num(f.trial_index, str(f.trial_index))
            if f.trial_index is not None
            else _num(None, f"{f.count} missing")
        )
        + f"<td><code>{_esc(f.reason)}</code></td>"
        + _num(f.score, _fmt(f.score))
        + _num(f.gating_score, _fmt(f.gating_score))
        + f'<td><code class="cmd">{_esc(explain_command(view, f.task_id, f.trial_index))}</code>'
        "</td></tr>"
        for f in view.failing
    ]
    table = (
        _table(("task", "trial", "reason", "score", "gating", "explain it"), rows, (1, 3, 4))
        if rows
        else ""
    )
    return (
        f'<article class="run" id="{view.anchor}"><h3><code>{_esc(view.run_id)}</code> '
        f"{result}</h3><p>{' · '.join(facts)}</p>{table}</article>"
    )


#: what each reason code of a failed trial means, for the page
REASON_LEGEND = (
    "<code>forbidden</code>, <code>missing</code>, <code>extra</code>, <code>order</code>, "
    "<code>no-bracket</code>: the tool path did not match, for that reason (the trials table's "
    "code, E-58; <code>trajectory</code> when it has none); <code>failed-closed</code>: a "
    "fixture miss failed the trial (D-9); <code>trial-missing</code>: trials the log lacks "
    "(D-12); <code>output</code>: a fail on the output grade"
)


def _by_run(views: Sequence[RunView]) -> str:
    views_by_id = {v.run_id: v for v in views}
    return (
        '<section id="by-run" aria-labelledby="by-run-h"><h2 id="by-run-h">Run by run</h2>'
        f"<p>Each run's failed trials with their reason code ({REASON_LEGEND}). The command "
        "shows the detail: expected and observed calls and the check that failed. EVENTS and "
        "SUITES stand for the event logs and suite files given to <code>evalbatch run</code>. "
        "Its output names tools and arguments, so it is for the team's own eyes and is not in "
        "this page.</p>" + "".join(_run_section(v, views_by_id) for v in views) + "</section>"
    )


#: sorts the runs table by a click on a column heading and filters it by text and result; the
#: table is complete without it (no row is hidden until the reader filters)
RUNS_SCRIPT = """
(() => {
  const table = document.getElementById("runs-table");
  if (!table) return;
  const body = table.tBodies[0];
  const rows = [...body.rows];
  const texts = rows.map(r => r.textContent.toLowerCase());
  const bar = document.createElement("div");
  bar.className = "filter";
  bar.innerHTML = '<label>Filter runs <input type="search" id="runs-filter" ' +
    'placeholder="run, suite, passed, failed, regressed"></label>' +
    '<label><input type="checkbox" id="runs-failed"> failed only</label>' +
    '<span id="runs-count" aria-live="polite"></span>';
  table.parentNode.before(bar);
  const text = bar.querySelector("#runs-filter");
  const failedOnly = bar.querySelector("#runs-failed");
  const count = bar.querySelector("#runs-count");
  const apply = () => {
    const words = text.value.toLowerCase().split(/\\s+/).filter(Boolean);
    let shown = 0;
    rows.forEach((row, i) => {
      const keep = words.every(w => texts[i].includes(w)) &&
        (!failedOnly.checked || row.dataset.passed === "no");
      row.hidden = !keep;
      shown += keep ? 1 : 0;
    });
    count.textContent = shown + " of " + rows.length + " runs";
  };
  const key = (row, column) => {
    const cell = row.cells[column];
    const value = cell.dataset.v;
    if (value === undefined) return cell.textContent.trim().toLowerCase();
    return value === "" ? null : Number(value);
  };
  const heads = [...table.tHead.rows[0].cells];
  heads.forEach((th, column) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = th.textContent;
    th.textContent = "";
    th.append(button);
    button.addEventListener("click", () => {
      const up = th.getAttribute("aria-sort") !== "ascending";
      heads.forEach(h => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      const order = rows.map((row, i) => [key(row, column), i, row]);
      order.sort((a, b) => {
        if (a[0] === null || b[0] === null) {
          return a[0] === b[0] ? a[1] - b[1] : a[0] === null ? 1 : -1;
        }
        const c = typeof a[0] === "number" ? a[0] - b[0] : a[0].localeCompare(b[0]);
        return (up ? c : -c) || a[1] - b[1];
      });
      body.append(...order.map(item => item[2]));
    });
  });
  text.addEventListener("input", apply);
  failedOnly.addEventListener("change", apply);
  apply();
})();
"""


def _content_policy(script: str) -> str:
    """The page may run only its own script and load nothing at all."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


def _figure_html(chart: Chart) -> str:
    return (
        f'<section id="{chart.anchor}" aria-labelledby="{chart.anchor}-h">'
        f'<h2 id="{chart.anchor}-h">{_esc(chart.title)}</h2>'
        f"<figure>{chart.svg}<figcaption>{_esc(chart.caption)}</figcaption></figure>"
        f"{chart.more}</section>"
    )


def _regression_charts(
    items: Sequence[RegressionView], views_by_id: dict[str, RunView]
) -> list[Chart]:
    """Charts of the regression blocks, regressions first and the largest drop first, at most
    MAX_REGRESSION_CHARTS of them; each links to its runs."""
    ordered = regressions_first(items)
    drawn = ordered[:MAX_REGRESSION_CHARTS]
    note = ""
    if len(ordered) > len(drawn):
        note = (
            f" Drawn for {len(drawn)} of {_count(len(ordered), 'compared run')}, regressions "
            "and the largest drops first; the verdict lists every regression."
        )
    charts = []
    for number, item in enumerate(drawn, start=1):
        chart = chart_regression(item, number, note)
        chart.more = (
            f'<p class="drawn">Candidate {_run_link(item.candidate)}; baseline '
            f"{_run_ref(item.block['baselineRunId'], views_by_id)}.</p>"
        )
        charts.append(chart)
    return charts


def build_report(
    out: RunOutputs, title: str | None = None, history: pl.DataFrame | None = None
) -> Report:
    """The report page for the outputs in `out` (summaries, tasks, trials; runs and problems
    optional): the verdict, the runs table, the charts, then each run's failing trials. With a
    `history` series (`evalbatch.history.series`), a trend chart per suite of several runs.

    Raises:
        InputError: no graded run.
        EvalbatchError: matplotlib is not installed.
    """
    if not HAVE_MATPLOTLIB:
        raise EvalbatchError("the report needs matplotlib: pip install matplotlib")
    if not out.summaries:
        raise InputError(f"{out.path}: no graded run in summaries.jsonl; nothing to report")
    views = run_views(out)
    items = regression_views(views, out.table("tasks"))
    with matplotlib.rc_context(RC):
        charts = _regression_charts(items, {v.run_id: v for v in views})
        charts += chart_trends(history) if history is not None else []
        charts += [
            chart_suites(views),
            chart_pass_k(views),
            chart_task_scores(views),
            chart_failures(views),
            chart_efficiency(views),
        ]
        cost = chart_cost(views)
        if cost is not None:
            charts.append(cost)
    name = out.path.resolve().name or str(out.path)
    page_title = title or f"Eval report: {name}"
    tasks = sum(len(v.tasks) for v in views)
    trials = sum(len(v.trials) for v in views)
    subtitle = (
        f"{_count(len(views), 'graded eval run')} · {_count(tasks, 'task')} · "
        f"{_count(trials, 'trial')} · graded by evalbatch {package_version()} under OpenWOP "
        "RFC 0244"
    )
    drawn = [c for c in charts if not c.anchor.startswith("regression-")]
    contents = [
        ("verdict", "Verdict"),
        ("runs", "Runs"),
        *([("regression-1", "Regression charts")] if len(drawn) < len(charts) else []),
        *((c.anchor, c.title) for c in drawn),
        ("by-run", "Run by run"),
        ("tasks", "Tasks"),
    ]
    nav = "".join(f'<li><a href="#{anchor}">{_esc(text)}</a></li>' for anchor, text in contents)
    body = [
        f'<header><div class="wrap"><h1>{_esc(page_title)}</h1><p>{_esc(subtitle)}</p></div>'
        "</header>",
        f'<nav aria-label="Contents"><div class="wrap"><ol>{nav}</ol></div></nav>',
        '<main class="wrap">',
        _verdict(views, items),
        '<section id="runs" aria-labelledby="runs-h"><h2 id="runs-h">Runs</h2>'
        + _runs_table(views)
        + _problems_line(out)
        + "</section>",
        *(_figure_html(chart) for chart in charts),
        ""
        if cost is not None
        else '<section id="cost" aria-labelledby="cost-h"><h2 id="cost-h">Cost</h2><p>No run '
        "here has a cost: its log has neither provider.usage costEstimateUsd nor eval.scored "
        "costUsd (D-14).</p></section>",
        _by_run(views),
        '<section id="tasks" aria-labelledby="tasks-h"><h2 id="tasks-h">Tasks</h2>'
        "<details><summary>Every task of every run</summary>"
        + _tasks_table(views)
        + "</details></section>",
        "</main>",
        '<footer><div class="wrap">Ids, codes, counts and scores only: no tool names, arguments '
        "or outputs (RFC 0244 §H). Made from <code>summaries.jsonl</code>, "
        "<code>tasks.parquet</code> and <code>trials.parquet</code>.</div></footer>",
        f"<script>{RUNS_SCRIPT}</script>",
    ]
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_content_policy(RUNS_SCRIPT)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_esc(page_title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
    return Report(html=page, charts=charts)


def write_report(
    out_dir: str | Path,
    output: str | Path | None = None,
    title: str | None = None,
    history: Sequence[str | Path] = (),
) -> tuple[Path, Report]:
    """Read OUT_DIR, build the report and write it (default OUT_DIR/report.html) whole. With
    `history`, output directories of other nights, the page adds a trend chart per suite over
    their runs and OUT_DIR's (each directory read whole, as `evalbatch history` reads it)."""
    out = load(out_dir, tables=("tasks", "trials"), optional=("runs", "problems"))
    nights = history_series.series([out_dir, *history]) if history else None
    report = build_report(out, title, nights)
    target = Path(output) if output else out.path / output_format.REPORT_FILE
    return write_atomic(target, report.html), report
