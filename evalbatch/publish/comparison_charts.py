"""The report's charts that compare: a candidate run against its baseline (RFC 0244 §F), and a
suite across nights (`--history`, E-96).

A regression chart draws each task's paired difference in gating score with the recomputed
interval (E-48), the MAX_PAIRED_DRAWN that changed most when there are more; at most
MAX_REGRESSION_CHARTS are drawn, the largest drops first, and the verdict lists the
MAX_REGRESSIONS largest. A trend chart draws a suite's mean task score and share of trials
passed run by run (its last MAX_TREND_RUNS runs), for the first MAX_TREND_CHARTS suites with
two runs or more (E-96, E-106).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from evalbatch.publish.page_markup import fmt, quantity, run_link, run_ref
from evalbatch.publish.report_views import RegressionView, RunView
from evalbatch.publish.svg_figures import (
    BLUE,
    FAIL,
    GREEN,
    GREY,
    PASS,
    Chart,
    figure,
    listed,
    svg,
    task_label,
)
from evalbatch.publish.worst_runs import (
    MAX_REGRESSION_CHARTS,
    MAX_REGRESSIONS,
    regressions_first,
)

#: suites given a trend chart (E-96), in suiteId order; `evalbatch history` lists all
MAX_TREND_CHARTS = 12
#: runs of a suite a trend chart draws: its latest (a suite graded 10,000 times is not 10,000
#: points); `evalbatch history` lists every run
MAX_TREND_RUNS = 200
#: paired tasks a regression chart draws: those that changed most; the mean and the interval
#: are over every paired task
MAX_PAIRED_DRAWN = 30


def chart_trends(series: pl.DataFrame) -> list[Chart]:
    """Per series (suite, agent, model: `evalbatch.history.series`, E-151) with two nights or
    more, its mean task score and the share of its trials that passed, night by night in time
    order (E-96): the series `evalbatch history` lines up, never two agents' runs interleaved."""
    key = ["suite_id", "agent_id", "model"]
    per_run = (
        series.group_by(*key, "night_label")
        .agg(
            pl.col("started_at").min(),
            score=pl.col("score").mean(),
            passed=pl.col("passed_trials").sum() / pl.col("trials").sum(),
        )
        .sort(*key, "started_at", "night_label", nulls_last=True)
    )
    suites = [
        (" · ".join(str(part) for part in names if part is not None), runs)
        for names, runs in per_run.group_by(key, maintain_order=True)
        if runs.height > 1
    ]
    note = ""
    if len(suites) > MAX_TREND_CHARTS:
        note = (
            f" Drawn for the first {MAX_TREND_CHARTS} of {len(suites)} series by suiteId; "
            "`evalbatch history` lists every one."
        )
    charts = []
    for number, (suite_id, every_run) in enumerate(suites[:MAX_TREND_CHARTS], start=1):
        runs = every_run.tail(MAX_TREND_RUNS)
        latest = (
            f" Drawn: its last {MAX_TREND_RUNS} of {every_run.height:,} nights; `evalbatch "
            "history --points` lists every one."
            if every_run.height > runs.height
            else ""
        )
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
        ax.set_xlabel("night (in the order of the eval's start)")
        ax.set_ylabel("proportion")
        ax.legend(loc="lower left", ncols=2, fontsize=8.5)
        starts = runs["started_at"].drop_nulls()
        span = f" from {starts[0]:%Y-%m-%d} to {starts[-1]:%Y-%m-%d}" if starts.len() else ""
        first, last = runs.row(0, named=True), runs.row(-1, named=True)
        alt = (
            f"Line chart of suite {suite_id} over {runs.height} nights{span}: mean task score "
            f"{fmt(first['score'], 2)} on the first night, {fmt(last['score'], 2)} on the last; "
            f"trials passed {fmt(first['passed'], 2)} then {fmt(last['passed'], 2)}."
        )
        charts.append(
            Chart(
                f"trend-{number}",
                f"Trend: {suite_id}",
                f"The series' {runs.height} nights{span}, in the order of the eval's start: the "
                "mean task score (its aggregate score; a night's runs averaged) and the share "
                "of its trials that passed." + latest + note,
                alt,
                svg(fig, alt, f"trend-{number}"),
            )
        )
    return charts


def chart_regression(item: RegressionView, number: int, note: str = "") -> Chart:
    """Paired per-task differences (candidate − baseline gating score) with the interval;
    `note` ends the caption (which blocks are drawn, when not all are)."""
    block = item.block
    every = item.differences
    changed = sorted(every, key=lambda d: (-abs(d[1]), d[0]))[:MAX_PAIRED_DRAWN]
    rows = sorted(changed, key=lambda d: (d[1], d[0]))
    if len(rows) < len(every):
        note = (
            f" Drawn: the {len(rows)} tasks that changed most of {len(every):,} paired tasks; "
            "the mean and the interval are over all of them." + note
        )
    fig = figure(0.3 * max(1, len(rows)) + 1.6)
    ax = fig.add_subplot()
    level = round(100 * (1 - float(block["alpha"])), 2)
    comparison = item.comparison
    if comparison is not None and comparison.interval is not None:
        low, high = comparison.interval
        ax.axvspan(low, high, color=BLUE, alpha=0.14, lw=0, label=f"{level:g}% interval")
    ax.axvline(0, color="#333333", lw=1)
    mean = comparison.mean_difference if comparison is not None else None
    if mean is None and every:
        mean = sum(d for _, d in every) / len(every)
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
            f"and the largest drops first; the verdict lists the {MAX_REGRESSIONS} largest "
            "drops and the runs table (filter `regressed`) every regression."
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
