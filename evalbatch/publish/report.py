"""One self-contained HTML report of an `evalbatch run` output directory.

Charts are drawn with matplotlib (`Figure`, no pyplot, so no GUI backend) and inlined as SVG, so
the page needs no script, font or network to open, and the same outputs give the same bytes
(fixed SVG id salt, no dates). Everything shown is an id, a count or a score (RFC 0244 §H).
"""

from __future__ import annotations

import html
import io
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from evalbatch.errors import EvalbatchError, InputError
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
    """One figure on the page: its anchor, heading, caption, alt text and SVG."""

    anchor: str
    title: str
    caption: str
    alt: str
    svg: str


@dataclass
class RunView:
    """One graded run as the charts need it."""

    run_id: str
    summary: dict[str, Any]
    label: str  # suite id, with the run id when the suite was graded in several runs
    tick: str  # the label on two lines, for an axis
    tasks: list[dict[str, Any]]
    trials: list[dict[str, Any]]

    @property
    def suite_id(self) -> str:
        return str(self.summary["suiteId"])


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


def run_views(out: RunOutputs) -> list[RunView]:
    """The graded runs in runId order, each with its tasks and counted trials; a suite graded
    in several runs is labelled with the run id too."""
    tasks = out.table("tasks")
    trials = out.table("trials").filter(pl.col("counted"))
    by_suite = Counter(summary["suiteId"] for _, summary in out.summaries)
    views = []
    for run_id, summary in out.summaries:
        label = tick = summary["suiteId"]
        if by_suite[label] > 1:
            label, tick = f"{label} · {run_id}", f"{label}\n{run_id}"
        views.append(
            RunView(
                run_id=run_id,
                summary=summary,
                label=label,
                tick=tick,
                tasks=tasks.filter(pl.col("run_id") == run_id).sort("task_pos").to_dicts(),
                trials=trials.filter(pl.col("run_id") == run_id)
                .sort("task_id", "trial_index")
                .to_dicts(),
            )
        )
    return views


def _shown(views: Sequence[RunView], limit: int) -> tuple[list[RunView], str]:
    if len(views) <= limit:
        return list(views), ""
    return list(views[:limit]), (
        f" Showing the first {limit} of {len(views)} runs; the tables below and the Parquet "
        "files hold all of them."
    )


# --------------------------------------------------------------------------------------------
# Charts


def chart_suites(views: Sequence[RunView]) -> Chart:
    """Per suite run: aggregate score, share of tasks passed, share of trials passed."""
    shown, note = _shown(views, MAX_RUNS)
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
    )


def chart_pass_k(views: Sequence[RunView]) -> Chart:
    """pass^k (solid) and pass@k (dashed) against k for each suite run."""
    shown, note = _shown(views, MAX_RUNS)
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
    shown, note = _shown(views, MAX_TASK_RUNS)
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
    )


#: failure causes, in the order they are stacked
CAUSES = (
    ("trajectory: forbidden", VERMILION),
    ("trajectory: missing", ORANGE),
    ("trajectory: extra", YELLOW),
    ("trajectory: order", PURPLE),
    ("trajectory: no-bracket", SKY),
    ("trajectory: other", "#b07aa1"),
    ("fixture miss (failed closed)", BLUE),
    ("trial missing from the log", GREY),
    ("graded fail on output", "#555555"),
)


def failure_causes(view: RunView) -> Counter[str]:
    """Why each failed trial failed: the trajectory reason code, a fail-closed fixture miss, a
    trial the log lacks (D-12), else the output grade."""
    found: Counter[str] = Counter()
    known = {name for name, _ in CAUSES}
    for trial in view.trials:
        if trial["passed"]:
            continue
        if trial.get("failed_closed"):
            found["fixture miss (failed closed)"] += 1
        elif trial.get("trajectory_matched") is False:
            cause = f"trajectory: {trial.get('trajectory_reason') or 'other'}"
            found[cause if cause in known else "trajectory: other"] += 1
        else:
            found["graded fail on output"] += 1
    for task in view.tasks:
        lacking = int(task["n"] or 0) - int(task.get("observed_trials") or 0)
        if lacking > 0:
            found["trial missing from the log"] += lacking
    return found


def chart_failures(views: Sequence[RunView]) -> Chart:
    """Failed trials per suite run, stacked by cause."""
    shown, note = _shown(views, MAX_RUNS)
    fig = _figure(0.45 * len(shown) + 1.5)
    ax = fig.add_subplot()
    counts = [failure_causes(v) for v in shown]
    used = [(name, colour) for name, colour in CAUSES if any(c[name] for c in counts)]
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
    )


def _efficiency(view: RunView, task_id: str) -> dict[str, Any]:
    for entry in view.summary["tasks"]:
        if entry["taskId"] == task_id:
            return dict(entry.get("efficiency") or {})
    return {}


def chart_efficiency(views: Sequence[RunView]) -> Chart:
    """Tool calls and tokens per trial, by task (RFC 0244 §C: reported, never gated)."""
    shown, note = _shown(views, MAX_TASK_RUNS)
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
    )


def chart_cost(views: Sequence[RunView]) -> Chart | None:
    """Cost per task, with each run's total; None when no run has a cost."""
    with_cost = [v for v in views if any(t.get("cost_usd") is not None for t in v.tasks)]
    if not with_cost:
        return None
    shown, note = _shown(with_cost, MAX_TASK_RUNS)
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


def chart_regression(item: RegressionView, number: int) -> Chart:
    """Paired per-task differences (candidate − baseline gating score) with the interval."""
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
        "block's alpha (RFC 0244 §F)." + item.note,
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
.pass { color: var(--pass); font-weight: 600; }
.fail { color: var(--fail); font-weight: 600; }
.table-scroll { overflow-x: auto; }
details summary { cursor: pointer; color: #0b5c99; margin: 4px 0 8px; }
code { font-size: 13px; background: var(--bg); padding: 1px 4px; border-radius: 3px;
  white-space: nowrap; }
footer { color: var(--muted); font-size: 13px; padding: 18px 0 40px; }
"""


def _verdict_cell(passed: bool) -> str:
    return '<td class="pass">passed</td>' if passed else '<td class="fail">failed</td>'


def _runs_table(views: Sequence[RunView]) -> str:
    head = (
        "<tr><th>suite@version</th><th>run</th><th class=num>score</th><th>result</th>"
        "<th class=num>tasks passed</th><th class=num>k</th><th class=num>pass@k</th>"
        "<th class=num>pass^k</th><th class=num>stderr</th><th class=num>cost</th>"
        "<th>regression</th></tr>"
    )
    rows = []
    for view in views:
        s = view.summary
        st = s.get("trialStats") or {}
        reg = s.get("regression")
        rows.append(
            "<tr>"
            f"<td>{_esc(s['suiteId'])}@{_esc(s['suiteVersion'])}</td>"
            f"<td><code>{_esc(view.run_id)}</code></td>"
            f"<td class=num>{_fmt(float(s['aggregateScore']))}</td>{_verdict_cell(s['passed'])}"
            f"<td class=num>{s['passedCount']}/{s['taskCount']}</td>"
            f"<td class=num>{_fmt(st.get('k'))}</td><td class=num>{_fmt(st.get('passAtK'))}</td>"
            f"<td class=num>{_fmt(st.get('passHatK'))}</td>"
            f"<td class=num>{_fmt(st.get('scoreStderr'))}</td>"
            f"<td class=num>{_usd(s.get('totalCostUsd'))}</td>"
            f"<td>{_esc(reg['verdict']) if reg else '–'}</td>"
            "</tr>"
        )
    return f'<div class="table-scroll"><table>{head}{"".join(rows)}</table></div>'


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
    return (
        f"<p>{problems.height} problem(s) were recorded while grading ({listed}); "
        "see <code>problems.parquet</code>.</p>"
    )


def _figure_html(chart: Chart) -> str:
    return (
        f'<section id="{chart.anchor}" aria-labelledby="{chart.anchor}-h">'
        f'<h2 id="{chart.anchor}-h">{_esc(chart.title)}</h2>'
        f"<figure>{chart.svg}<figcaption>{_esc(chart.caption)}</figcaption></figure></section>"
    )


def build_report(out: RunOutputs, title: str | None = None) -> Report:
    """The report page for the outputs in `out` (summaries, tasks, trials; problems optional).

    Raises:
        InputError: no graded run.
        EvalbatchError: matplotlib is not installed.
    """
    if not HAVE_MATPLOTLIB:
        raise EvalbatchError("the report needs matplotlib: pip install matplotlib")
    if not out.summaries:
        raise InputError(f"{out.path}: no graded run in summaries.jsonl; nothing to report")
    views = run_views(out)
    with matplotlib.rc_context(RC):
        charts = [
            chart_suites(views),
            chart_pass_k(views),
            chart_task_scores(views),
            chart_failures(views),
            chart_efficiency(views),
        ]
        cost = chart_cost(views)
        if cost is not None:
            charts.append(cost)
        for number, item in enumerate(regression_views(views, out.table("tasks")), start=1):
            charts.append(chart_regression(item, number))
    name = out.path.resolve().name or str(out.path)
    page_title = title or f"Eval report: {name}"
    tasks = sum(len(v.tasks) for v in views)
    trials = sum(len(v.trials) for v in views)
    subtitle = (
        f"{len(views)} graded eval run(s) · {tasks} tasks · {trials} trials · graded by "
        f"evalbatch {package_version()} under OpenWOP RFC 0244"
    )
    nav = "".join(
        f'<li><a href="#{c.anchor}">{_esc(c.title)}</a></li>'
        for c in [Chart("runs", "Runs", "", "", ""), *charts, Chart("tasks", "Tasks", "", "", "")]
    )
    body = [
        f'<header><div class="wrap"><h1>{_esc(page_title)}</h1><p>{_esc(subtitle)}</p></div>'
        "</header>",
        f'<nav aria-label="Contents"><div class="wrap"><ol>{nav}</ol></div></nav>',
        '<main class="wrap">',
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
        '<section id="tasks" aria-labelledby="tasks-h"><h2 id="tasks-h">Tasks</h2>'
        "<details><summary>Every task of every run</summary>"
        + _tasks_table(views)
        + "</details></section>",
        "</main>",
        '<footer><div class="wrap">Scores, counts and ids only: no tool names, arguments or '
        "outputs (RFC 0244 §H). Made from <code>summaries.jsonl</code>, <code>tasks.parquet</code>"
        " and <code>trials.parquet</code>.</div></footer>",
    ]
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_esc(page_title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
    return Report(html=page, charts=charts)


def write_report(
    out_dir: str | Path, output: str | Path | None = None, title: str | None = None
) -> tuple[Path, Report]:
    """Read OUT_DIR, build the report and write it (default OUT_DIR/report.html) whole."""
    out = load(out_dir, tables=("tasks", "trials"), optional=("problems",))
    report = build_report(out, title)
    target = Path(output) if output else out.path / "report.html"
    return write_atomic(target, report.html), report
