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
import io
import math
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from evalbatch.errors import EvalbatchError, InputError
from evalbatch.history import series as history_series
from evalbatch.options import GradeOptions
from evalbatch.outputs import output_format
from evalbatch.outputs.outdir import RunOutputs, load, write_atomic
from evalbatch.publish.exports import package_version
from evalbatch.publish.page_markup import (
    esc,
    fmt,
    num_cell,
    quantity,
    run_link,
    run_ref,
    table,
    usd,
    verdict_cell,
)
from evalbatch.publish.report_views import (
    REASONS,
    RegressionView,
    RunView,
    failure_causes,
    pass_curves,
    regression_views,
    run_views,
)
from evalbatch.publish.worst_runs import (
    MAX_REGRESSION_CHARTS,
    MAX_RUNS,
    MAX_TASK_RUNS,
    Picked,
    by_cost,
    by_failed_trials,
    by_score,
    pick,
    regressions_first,
)

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


#: the colour each reason code of a failed trial is stacked in (REASONS gives the order)
REASON_COLOURS: dict[str, str] = {
    "forbidden": VERMILION,
    "missing": ORANGE,
    "extra": YELLOW,
    "order": PURPLE,
    "no-bracket": SKY,
    "trajectory": "#b07aa1",
    "failed-closed": BLUE,
    "trial-missing": GREY,
    "output": "#555555",
}


def _drawn(picked: Picked) -> tuple[str, str]:
    """What a chart's caption adds and the HTML under it when it draws only some runs: which
    ones, with links to them and to the runs table; nothing when it draws them all."""
    if not picked.described:
        return "", ""
    note = (
        f" Drawn: {picked.described}, worst first; the runs table and the Parquet files hold "
        "every run."
    )
    more = (
        f'<p class="drawn">Drawn ({esc(picked.described)}): '
        + ", ".join(run_link(v) for v in picked.views)
        + '. Every run: the <a href="#runs">runs table</a>.</p>'
    )
    return note, more


def chart_suites(views: Sequence[RunView]) -> Chart:
    """Per suite run: aggregate score, share of tasks passed, share of trials passed."""
    picked = pick(views, MAX_RUNS, by_score, "lowest-scoring")
    shown, (note, more) = picked.views, _drawn(picked)
    fig = figure(0.55 * len(shown) + 1.2)
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
            ax.text(value + 0.01, y, fmt(value, 2), va="center", fontsize=8, color="#333333")
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
            f"{view.label}: score {fmt(values[0], 2)}, {s['passedCount']} of {s['taskCount']} "
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
    alt += "trials passed. " + listed(alt_parts)
    return Chart(
        "suites",
        "Suite results",
        "Aggregate score (mean task score), the share of tasks that passed under the suite's "
        "passRule, and the share of all trials that passed. Whether the suite passed is decided "
        "on the gating aggregate and the cost and latency bars (RFC 0244 §B)." + note,
        alt,
        svg(fig, alt, "suites"),
        more=more,
    )


def chart_pass_k(views: Sequence[RunView]) -> Chart:
    """pass^k (solid) and pass@k (dashed) against k for each suite run."""
    picked = pick(views, MAX_RUNS, by_score, "lowest-scoring")
    shown, (note, more) = picked.views, _drawn(picked)
    fig = figure(3.2 + 0.18 * (len(shown) + 3) / 2)
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
            + ", ".join(f"k={k} {fmt(h, 2)}" for k, _, h in curve)
            + "; pass@k "
            + ", ".join(f"k={k} {fmt(a, 2)}" for k, a, _ in curve)
        )
    ax.set_xlim(0.7, top + 0.3)
    ax.set_xticks(range(1, top + 1))
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("k (trials)")
    ax.set_ylabel("proportion of tasks")
    handles, _ = ax.get_legend_handles_labels()
    handles += [
        legend_line(color="#444444", lw=2, label="pass^k: all k trials pass"),
        legend_line(color="#444444", lw=1.3, ls="--", label="pass@k: at least one passes"),
        legend_line(color="#444444", marker="o", ms=10, mfc="none", lw=0, label="suite's k"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=8.5)
    alt = "Line chart of pass^k and pass@k against k for each suite run. " + listed(alt_parts)
    return Chart(
        "pass-k",
        "pass^k and pass@k by k",
        "For each k from 1 to the trial count n, the mean over tasks of pass^k = C(c,k)/C(n,k) "
        "(every one of k trials passes) and of the unbiased pass@k = 1 − C(n−c,k)/C(n,k), from "
        "each task's n and passed count c, computed exactly (RFC 0244 §B). A suite run once "
        "per task has only k = 1, where both equal the share of trials passed; a ring marks "
        "the k the suite reports." + note,
        alt,
        svg(fig, alt, "passk"),
        more=more,
    )


def task_grid(views: Sequence[RunView], columns: int = 1) -> tuple[Any, list[list[Any]]]:
    counts = [max(1, len(v.tasks)) for v in views]
    fig = figure(0.3 * sum(counts) + 0.62 * len(views) + 0.9)
    axes = fig.subplots(
        len(views),
        columns,
        squeeze=False,
        sharex="col",
        gridspec_kw={"height_ratios": counts},
    )
    for row, view in enumerate(views):
        for ax in axes[row]:
            ax.set_yticks(range(len(view.tasks)), [task_label(t["task_id"]) for t in view.tasks])
            ax.set_ylim(len(view.tasks) - 0.5, -0.5)
            ax.grid(axis="y", visible=False)
        axes[row][0].set_title(view.label)
    return fig, [list(r) for r in axes]


def chart_task_scores(views: Sequence[RunView]) -> Chart:
    """Per task: its score (the mean of its trials) as a bar, each trial's score as a dot."""
    picked = pick(views, MAX_TASK_RUNS, by_score, "lowest-scoring")
    shown, (note, more) = picked.views, _drawn(picked)
    fig, axes = task_grid(shown)
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
            scores = ", ".join(fmt(float(t["score"] or 0.0), 2) for t in trials)
            passes = sum(bool(t["passed"]) for t in trials)
            alt_parts.append(
                f"{view.label} {task['task_id']}: score {fmt(score, 2)}, "
                f"trials {scores or 'none'} ({passes} passed)"
            )
        ax.set_xlim(-0.03, 1.05)
    axes[-1][0].set_xlabel("score")
    fig.legend(
        handles=[
            legend_patch(
                facecolor="#d9e6f2", edgecolor="#9fbad6", label="task score (mean of trials)"
            ),
            legend_line(marker="o", color=PASS, lw=0, label="trial passed"),
            legend_line(marker="X", color=FAIL, lw=0, label="trial failed"),
            legend_line(marker="D", mfc="none", mec="#222222", lw=0, label="gating score (D-10)"),
        ],
        loc="outside upper center",
        ncols=4,
        fontsize=8.5,
    )
    alt = "Chart of each task's score with one dot per trial score. " + listed(alt_parts, 20)
    return Chart(
        "task-scores",
        "Task scores and trial spread",
        "Each bar is a task's score, the mean of its trial scores; each dot is one trial, green "
        "when it passed and a red cross when it failed. A diamond marks the gating score where "
        "it differs from the score: a trial whose tool path did not match, or that failed "
        "closed, counts 0 there (D-10)." + note,
        alt,
        svg(fig, alt, "scores"),
        more=more,
    )


def chart_failures(views: Sequence[RunView]) -> Chart:
    """Failed trials per suite run, stacked by cause."""
    picked = pick(views, MAX_RUNS, by_failed_trials, "with the most failed trials")
    shown, (note, more) = picked.views, _drawn(picked)
    fig = figure(0.45 * len(shown) + 1.5)
    ax = fig.add_subplot()
    counts = [failure_causes(v) for v in shown]
    used = [
        (name, REASON_COLOURS[code])
        for code, name in REASONS.items()
        if any(c[name] for c in counts)
    ]
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
    alt = "Stacked bar chart of failed trials per suite run by cause. " + listed(alt_parts)
    return Chart(
        "failures",
        "Why trials failed",
        "Failed trials by cause: the trajectory reason code of a tool path that did not match "
        "(forbidden call, expected call missing, extra call, wrong order, no invocation "
        "bracket), a fixture miss that failed the trial closed (D-9), a trial the log lacks "
        "(D-12), or a fail on the output grade alone." + note,
        alt,
        svg(fig, alt, "failures"),
        more=more,
    )


def _efficiency(view: RunView, task_id: str) -> dict[str, Any]:
    for entry in view.summary["tasks"]:
        if entry["taskId"] == task_id:
            return dict(entry.get("efficiency") or {})
    return {}


def chart_efficiency(views: Sequence[RunView]) -> Chart:
    """Tool calls and tokens per trial, by task (RFC 0244 §C: reported, never gated)."""
    picked = pick(views, MAX_TASK_RUNS, by_score, "lowest-scoring")
    shown, (note, more) = picked.views, _drawn(picked)
    fig, axes = task_grid(shown, columns=2)
    alt_parts = []
    for row, view in enumerate(shown):
        calls_ax, tokens_ax = axes[row]
        for y, task in enumerate(view.tasks):
            eff = _efficiency(view, task["task_id"])
            calls = float(eff.get("toolCallCount") or 0.0)
            tokens_in = float(eff.get("inputTokens") or 0.0)
            tokens_out = float(eff.get("outputTokens") or 0.0)
            calls_ax.barh(y, calls, height=0.62, color=ORANGE)
            calls_ax.text(calls, y, f" {fmt(calls, 1)}", va="center", fontsize=7.5)
            tokens_ax.barh(y, tokens_in, height=0.62, color=BLUE)
            tokens_ax.barh(y, tokens_out, left=tokens_in, height=0.62, color=SKY)
            alt_parts.append(
                f"{view.label} {task['task_id']}: {fmt(calls, 1)} tool calls, "
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
            legend_patch(color=ORANGE, label="tool calls"),
            legend_patch(color=BLUE, label="input tokens"),
            legend_patch(color=SKY, label="output tokens"),
        ],
        loc="outside upper center",
        ncols=3,
        fontsize=8.5,
    )
    alt = "Bar charts of tool calls and tokens per trial, by task. " + listed(alt_parts, 20)
    return Chart(
        "efficiency",
        "Efficiency by task",
        "Means over each task's trials of the agent's tool calls and of its input and output "
        "tokens, counted inside the invocation brackets with judge calls left out (RFC 0244 §C). "
        "They are reported, never gated." + note,
        alt,
        svg(fig, alt, "efficiency"),
        more=more,
    )


def chart_cost(views: Sequence[RunView]) -> Chart | None:
    """Cost per task, with each run's total; None when no run has a cost."""
    with_cost = [v for v in views if any(t.get("cost_usd") is not None for t in v.tasks)]
    if not with_cost:
        return None
    picked = pick(with_cost, MAX_TASK_RUNS, by_cost, "costliest", "runs with a cost")
    shown, (note, more) = picked.views, _drawn(picked)
    fig, axes = task_grid(shown)
    alt_parts = []
    for row, view in enumerate(shown):
        ax = axes[row][0]
        for y, task in enumerate(view.tasks):
            cost = task.get("cost_usd")
            if cost is None:
                continue
            ax.barh(y, cost, height=0.62, color=PURPLE)
            ax.text(cost, y, f" {usd(cost)}", va="center", fontsize=7.5)
        total = view.summary.get("totalCostUsd")
        ax.set_title(f"{view.label} (total {usd(total)})")
        alt_parts.append(
            f"{view.label}: total {usd(total)}; "
            + ", ".join(f"{t['task_id']} {usd(t.get('cost_usd'))}" for t in view.tasks)
        )
    axes[-1][0].set_xlabel("cost per task (USD, all trials)")
    top = axes[-1][0].get_xlim()[1]
    axes[-1][0].set_xlim(0, top * 1.15)
    alt = "Bar chart of the cost of each task in US dollars. " + listed(alt_parts)
    return Chart(
        "cost",
        "Cost",
        "Each task's cost over all its trials, judge calls included: provider.usage "
        "costEstimateUsd, or the host's eval.scored costUsd when the log has no usage cost "
        "(D-14, D-6). The heading gives the run's totalCostUsd." + note,
        alt,
        svg(fig, alt, "cost"),
        more=more,
    )


#: suites given a trend chart (issue 18 item 1), in suiteId order; `evalbatch history` lists all
MAX_TREND_CHARTS = 12


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
        fig = figure(2.6)
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
            f"{fmt(first['score'], 2)} on the first night, {fmt(last['score'], 2)} on the last; "
            f"trials passed {fmt(first['passed'], 2)} then {fmt(last['passed'], 2)}."
        )
        charts.append(
            Chart(
                f"trend-{number}",
                f"Trend: {suite_id}",
                f"The suite's {runs.height} runs{span}, in the order of the eval's start: the "
                "mean task score (its aggregate score) and the share of its trials that passed."
                + note,
                alt,
                svg(fig, alt, f"trend-{number}"),
            )
        )
    return charts


def chart_regression(item: RegressionView, number: int, note: str = "") -> Chart:
    """Paired per-task differences (candidate − baseline gating score) with the interval;
    `note` ends the caption (which blocks are drawn, when not all are)."""
    block = item.block
    rows = sorted(item.differences, key=lambda d: (d[1], d[0]))
    fig = figure(0.3 * max(1, len(rows)) + 1.6)
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
    ax.set_yticks(range(len(rows)), [task_label(t) for t, _ in rows])
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
        f"{block['scoreDelta']:+.3f}{interval}. " + listed([f"{t} {d:+.2f}" for t, d in rows], 20)
    )
    return Chart(
        f"regression-{number}",
        f"Regression: {item.candidate.label}",
        f"Candidate {item.candidate.run_id} against baseline {block['baselineRunId']}, paired "
        f"by taskId ({block['pairedTaskCount']} tasks). Each dot is one task's change in gating "
        "score; the line is the mean paired difference and the band its interval at the "
        "block's alpha (RFC 0244 §F)." + item.note + note,
        alt,
        svg(fig, alt, f"regression{number}"),
    )


def regression_charts(
    items: Sequence[RegressionView], views_by_id: dict[str, RunView]
) -> list[Chart]:
    """Charts of the regression blocks, regressions first and the largest drop first, at most
    MAX_REGRESSION_CHARTS of them; each links to its runs."""
    ordered = regressions_first(items)
    drawn = ordered[:MAX_REGRESSION_CHARTS]
    note = ""
    if len(ordered) > len(drawn):
        note = (
            f" Drawn for {len(drawn)} of {quantity(len(ordered), 'compared run')}, regressions "
            "and the largest drops first; the verdict lists every regression."
        )
    charts = []
    for number, item in enumerate(drawn, start=1):
        chart = chart_regression(item, number, note)
        chart.more = (
            f'<p class="drawn">Candidate {run_link(item.candidate)}; baseline '
            f"{run_ref(item.block['baselineRunId'], views_by_id)}.</p>"
        )
        charts.append(chart)
    return charts


#: rows of a verdict table shown open; the rest fold under a <details>
VERDICT_ROWS = 10


def _folded(
    head: Sequence[str], rows: Sequence[str], more: str, numeric: Iterable[int] = ()
) -> str:
    """The first VERDICT_ROWS rows as a table, the rest under a <details> (`more`: what they
    are, "failing task"), so the verdict stays short however many runs there are."""
    numeric = list(numeric)
    shown = table(head, rows[:VERDICT_ROWS], numeric)
    if len(rows) <= VERDICT_ROWS:
        return shown
    rest = quantity(len(rows) - VERDICT_ROWS, f"more {more}")
    return (
        shown
        + f"<details><summary>{esc(rest)}</summary>"
        + table(head, rows[VERDICT_ROWS:], numeric)
        + "</details>"
    )


def _links(views: Sequence[RunView], limit: int = 5) -> str:
    shown = ", ".join(run_link(v) for v in views[:limit])
    return shown + (f" and {len(views) - limit} more" if len(views) > limit else "")


def _reason_counts(reasons: Counter[str]) -> str:
    """`missing × 3, output × 1` in REASONS order."""
    return ", ".join(
        f"<code>{esc(code)}</code> × {reasons[code]}" for code in REASONS if reasons[code]
    )


def _interval(item: RegressionView) -> str:
    comparison = item.comparison
    if comparison is None or comparison.interval is None:
        return "–"
    level = round(100 * (1 - float(item.block["alpha"])), 2)
    low, high = comparison.interval
    return f"{low:+.3f} to {high:+.3f} ({level:g}%)"


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
            f"<p>{esc(quantity(len(items), 'run'))} compared with their baseline: {listed}. "
            "Regressed runs, the largest drop first:</p>"
            if regressed
            else f"<p>None. {esc(quantity(len(items), 'run'))} compared with their baseline: "
            f"{listed}.</p>"
        )
    rows = [
        "<tr>"
        f"<td>{run_link(i.candidate)}</td><td>{esc(i.candidate.suite)}</td>"
        f"<td>{run_ref(i.block['baselineRunId'], views_by_id)}</td>"
        + num_cell(i.block["scoreDelta"], f"{float(i.block['scoreDelta']):+.3f}")
        + f"<td class=num>{_interval(i)}</td><td>{esc(i.block['method'])}</td>"
        f"<td class=num>{esc(i.block['pairedTaskCount'])}</td></tr>"
        for i in regressed
    ]
    head = ("candidate run", "suite", "baseline run", "score delta", "interval", "method", "tasks")
    folded = _folded(head, rows, "regression", (3, 4, 6)) if rows else ""
    return '<h3 id="regressions">Regressions</h3>' + told + folded


def _failing_suites_part(views: Sequence[RunView]) -> str:
    runs_of: Counter[str] = Counter(v.suite for v in views)
    failed: dict[str, list[RunView]] = {}
    for view in sorted(views, key=by_score):
        if not view.summary["passed"]:
            failed.setdefault(view.suite, []).append(view)
    order = sorted(failed, key=lambda suite: (-len(failed[suite]), suite))
    rows = [
        "<tr>"
        f"<td>{esc(suite)}</td>"
        + num_cell(len(failed[suite]), f"{len(failed[suite])} of {quantity(runs_of[suite], 'run')}")
        + num_cell(
            failed[suite][0].summary["aggregateScore"],
            fmt(float(failed[suite][0].summary["aggregateScore"])),
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
    for view in sorted(views, key=by_score):
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
            f"<tr><td>{esc(task_id)}</td><td>{esc(suite)}</td>"
            + num_cell(len(runs), f"{len(runs)} of {quantity(runs_of[suite], 'run')}")
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


def verdict_section(views: Sequence[RunView], items: Sequence[RegressionView]) -> str:
    """The section the page opens with: one line of verdict, then regressions, failing suites
    and failing tasks, each worst first."""
    views_by_id = {v.run_id: v for v in views}
    regressed = sum(i.block["verdict"] == "regressed" for i in items)
    failed = sum(not v.summary["passed"] for v in views)
    failing_tasks = len(
        {(v.suite, t["task_id"]) for v in views for t in v.tasks if not t["passed"]}
    )
    parts = [
        quantity(regressed, "regression") if regressed else "no regression",
        f"{failed} of {quantity(len(views), 'suite run')} failed"
        if failed
        else f"{quantity(len(views), 'suite run')} passed",
        quantity(failing_tasks, "failing task") if failing_tasks else "no failing task",
    ]
    state = "fail" if regressed or failed else "pass"
    lead = " · ".join(parts)
    return (
        '<section id="verdict" aria-labelledby="verdict-h"><h2 id="verdict-h">Verdict</h2>'
        f'<p id="verdict-lead" class="lead {state}">{esc(lead[:1].upper() + lead[1:])}</p>'
        + _regressions_part(items, views_by_id)
        + _failing_suites_part(views)
        + _failing_tasks_part(views)
        + "</section>"
    )


def runs_section(views: Sequence[RunView], out: RunOutputs) -> str:
    """The Runs section: the runs table, then what grading recorded as problems."""
    return (
        '<section id="runs" aria-labelledby="runs-h"><h2 id="runs-h">Runs</h2>'
        + runs_table(views)
        + problems_line(out)
        + "</section>"
    )


def runs_table(views: Sequence[RunView]) -> str:
    """One row per run, in the views' order, with `data-passed` for the failed-only filter."""
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
            f"<td>{esc(view.suite)}</td><td>{run_link(view)}</td>"
            + num_cell(s["aggregateScore"], fmt(float(s["aggregateScore"])))
            + verdict_cell(s["passed"], sortable=True)
            + num_cell(s["passedCount"], f"{s['passedCount']}/{s['taskCount']}")
            + num_cell(view.failed_trials, str(view.failed_trials))
            + num_cell(st.get("k"), fmt(st.get("k")))
            + num_cell(st.get("passAtK"), fmt(st.get("passAtK")))
            + num_cell(st.get("passHatK"), fmt(st.get("passHatK")))
            + num_cell(st.get("scoreStderr"), fmt(st.get("scoreStderr")))
            + num_cell(s.get("totalCostUsd"), usd(s.get("totalCostUsd")))
            + f"<td>{esc(regression_text)}</td></tr>"
        )
    return table(head, rows, (2, 4, 5, 6, 7, 8, 9, 10)).replace(
        "<table>", '<table id="runs-table">', 1
    )


def problems_line(out: RunOutputs) -> str:
    """How many problems grading recorded, by code; nothing when the table was not read."""
    problems = out.tables.get("problems")
    if problems is None:
        return ""
    if problems.height == 0:
        return "<p>No problems were recorded while grading.</p>"
    counts = Counter(problems["code"].to_list())
    listed = ", ".join(f"<code>{esc(c)}</code> × {n}" for c, n in sorted(counts.items()))
    recorded = "problem was" if problems.height == 1 else "problems were"
    return (
        f"<p>{problems.height} {recorded} recorded while grading ({listed}); "
        "see <code>problems.parquet</code>.</p>"
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


def run_section(view: RunView, views_by_id: dict[str, RunView]) -> str:
    """A run's verdict line and its failing trials, each with the command that explains it."""
    s = view.summary
    result = (
        '<span class="pass">passed</span>' if s["passed"] else '<span class="fail">failed</span>'
    )
    facts = [
        esc(view.suite),
        f"score {fmt(float(s['aggregateScore']))}",
        f"{s['passedCount']} of {esc(quantity(int(s['taskCount']), 'task'))} passed",
        esc(quantity(view.failed_trials, "failed trial")),
    ]
    reg = s.get("regression")
    if reg:
        facts.append(
            f"{esc(reg['verdict'])} against {run_ref(reg['baselineRunId'], views_by_id)} "
            f"(score delta {float(reg['scoreDelta']):+.3f})"
        )
    rows = [
        "<tr>"
        f"<td>{esc(f.task_id)}</td>"
        + (
            num_cell(f.trial_index, str(f.trial_index))
            if f.trial_index is not None
            else num_cell(None, f"{f.count} missing")
        )
        + f"<td><code>{esc(f.reason)}</code></td>"
        + num_cell(f.score, fmt(f.score))
        + num_cell(f.gating_score, fmt(f.gating_score))
        + f'<td><code class="cmd">{esc(explain_command(view, f.task_id, f.trial_index))}</code>'
        "</td></tr>"
        for f in view.failing
    ]
    failing_table = (
        table(("task", "trial", "reason", "score", "gating", "explain it"), rows, (1, 3, 4))
        if rows
        else ""
    )
    return (
        f'<article class="run" id="{view.anchor}"><h3><code>{esc(view.run_id)}</code> '
        f"{result}</h3><p>{' · '.join(facts)}</p>{failing_table}</article>"
    )


#: what each reason code of a failed trial means, for the page
REASON_LEGEND = (
    "<code>forbidden</code>, <code>missing</code>, <code>extra</code>, <code>order</code>, "
    "<code>no-bracket</code>: the tool path did not match, for that reason (the trials table's "
    "code, E-58; <code>trajectory</code> when it has none); <code>failed-closed</code>: a "
    "fixture miss failed the trial (D-9); <code>trial-missing</code>: trials the log lacks "
    "(D-12); <code>output</code>: a fail on the output grade"
)


def by_run_section(views: Sequence[RunView]) -> str:
    """The Run by run section: the reason codes explained, then each run's section."""
    views_by_id = {v.run_id: v for v in views}
    return (
        '<section id="by-run" aria-labelledby="by-run-h"><h2 id="by-run-h">Run by run</h2>'
        f"<p>Each run's failed trials with their reason code ({REASON_LEGEND}). The command "
        "shows the detail: expected and observed calls and the check that failed. EVENTS and "
        "SUITES stand for the event logs and suite files given to <code>evalbatch run</code>. "
        "Its output names tools and arguments, so it is for the team's own eyes and is not in "
        "this page.</p>" + "".join(run_section(v, views_by_id) for v in views) + "</section>"
    )


def tasks_section(views: Sequence[RunView]) -> str:
    """The Tasks section: every task of every run, folded under a <details>."""
    return (
        '<section id="tasks" aria-labelledby="tasks-h"><h2 id="tasks-h">Tasks</h2>'
        "<details><summary>Every task of every run</summary>"
        + tasks_table(views)
        + "</details></section>"
    )


def tasks_table(views: Sequence[RunView]) -> str:
    """One row per task of each run, in the views' order: scores, counts, cost, latency."""
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
                f"<td>{esc(view.label)}</td><td>{esc(t['task_id'])}</td>"
                f"<td class=num>{fmt(t['score'])}</td>"
                f"<td class=num>{fmt(t['gating_score'])}</td>{verdict_cell(bool(t['passed']))}"
                f"<td class=num>{fmt(t['passed_count'])}/{fmt(t['n'])}</td>"
                f"<td class=num>{fmt(t.get('pass_at_k'))}</td>"
                f"<td class=num>{fmt(t.get('pass_hat_k'))}</td>"
                f"<td class=num>{usd(t.get('cost_usd'))}</td>"
                f"<td class=num>{fmt(t.get('latency_ms'))}</td>"
                f"<td>{'–' if matched is None else 'matched' if matched else 'unmatched'}</td>"
                f"<td class=num>{fmt(t.get('fixture_miss_count'))}</td>"
                "</tr>"
            )
    return f'<div class="table-scroll"><table>{head}{"".join(rows)}</table></div>'


@dataclass
class Report:
    """The page and the charts on it."""

    html: str
    charts: list[Chart] = field(default_factory=list)


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
        f'<h2 id="{chart.anchor}-h">{esc(chart.title)}</h2>'
        f"<figure>{chart.svg}<figcaption>{esc(chart.caption)}</figcaption></figure>"
        f"{chart.more}</section>"
    )


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
    with chart_style():
        charts = regression_charts(items, {v.run_id: v for v in views})
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
        f"{quantity(len(views), 'graded eval run')} · {quantity(tasks, 'task')} · "
        f"{quantity(trials, 'trial')} · graded by evalbatch {package_version()} under OpenWOP "
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
    nav = "".join(f'<li><a href="#{anchor}">{esc(text)}</a></li>' for anchor, text in contents)
    body = [
        f'<header><div class="wrap"><h1>{esc(page_title)}</h1><p>{esc(subtitle)}</p></div>'
        "</header>",
        f'<nav aria-label="Contents"><div class="wrap"><ol>{nav}</ol></div></nav>',
        '<main class="wrap">',
        verdict_section(views, items),
        runs_section(views, out),
        *(_figure_html(chart) for chart in charts),
        ""
        if cost is not None
        else '<section id="cost" aria-labelledby="cost-h"><h2 id="cost-h">Cost</h2><p>No run '
        "here has a cost: its log has neither provider.usage costEstimateUsd nor eval.scored "
        "costUsd (D-14).</p></section>",
        by_run_section(views),
        tasks_section(views),
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
        f"<title>{esc(page_title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
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
