"""The report's charts of the runs themselves, one figure each: suite results, pass^k and
pass@k by k, task scores with their trials, why trials failed, efficiency and cost.

Each draws every run when they fit, else the worst by its own rank (`worst_runs`), and then
says in its caption which runs it drew and links to them and to the runs table (E-47). The
values drawn are the views' (`report_views`); the alt text lists them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from evalbatch.publish.page_markup import esc, fmt, run_link, usd
from evalbatch.publish.report_views import REASONS, RunView, failure_causes, pass_curves
from evalbatch.publish.svg_figures import (
    BLUE,
    FAIL,
    GREEN,
    GREY,
    ORANGE,
    PASS,
    PURPLE,
    SERIES,
    SKY,
    VERMILION,
    YELLOW,
    Chart,
    figure,
    legend_line,
    legend_patch,
    listed,
    svg,
    task_label,
)
from evalbatch.publish.worst_runs import (
    MAX_RUNS,
    MAX_TASK_RUNS,
    MAX_TASKS_DRAWN,
    Picked,
    PickedTasks,
    by_cost,
    by_failed_trials,
    by_score,
    pick,
    pick_tasks,
    task_by_cost,
    task_by_score,
)

#: the colour each reason code of a failed trial is stacked in (REASONS gives the order)
REASON_COLOURS: dict[str, str] = {
    "forbidden": VERMILION,
    "missing": ORANGE,
    "extra": YELLOW,
    "order": PURPLE,
    "no-bracket": SKY,
    "delegates-unseen": "#2F4B7C",  # a child run's log could not be read (E-102)
    "trajectory": "#b07aa1",
    "sample-errored": "#8c564b",  # an Inspect sample that errored (E-147)
    "failed-closed": BLUE,
    "trial-missing": GREY,
    "output": "#555555",
}


def _drawn(picked: Picked[RunView]) -> tuple[str, str]:
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


#: what a per-task chart's caption adds: a run of many tasks draws only its worst
TASKS_NOTE = (
    f" A run of more than {MAX_TASKS_DRAWN} tasks draws its {MAX_TASKS_DRAWN} worst here, as "
    "its heading says; tasks.parquet holds every task."
)


def task_grid(
    drawn: Sequence[tuple[RunView, PickedTasks]], columns: int = 1, total: str = ""
) -> tuple[Any, list[list[Any]]]:
    """One row of axes per run, one bar row per task drawn, titled with the run's label and,
    when it draws only some of its tasks, which."""
    counts = [max(1, len(picked.tasks)) for _, picked in drawn]
    fig = figure(0.3 * sum(counts) + 0.62 * len(drawn) + 0.9)
    axes = fig.subplots(
        len(drawn),
        columns,
        squeeze=False,
        sharex="col",
        gridspec_kw={"height_ratios": counts},
    )
    for row, (view, picked) in enumerate(drawn):
        tasks = picked.tasks
        for ax in axes[row]:
            ax.set_yticks(range(len(tasks)), [task_label(t["task_id"]) for t in tasks])
            ax.set_ylim(len(tasks) - 0.5, -0.5)
            ax.grid(axis="y", visible=False)
        axes[row][0].set_title(view.label + (f" ({picked.described})" if picked.described else ""))
    return fig, [list(r) for r in axes]


def chart_task_scores(views: Sequence[RunView]) -> Chart:
    """Per task: its score (the mean of its trials) as a bar, each trial's score as a dot."""
    picked = pick(views, MAX_TASK_RUNS, by_score, "lowest-scoring")
    shown, (note, more) = picked.views, _drawn(picked)
    drawn = [
        (v, pick_tasks(v.tasks, MAX_TASKS_DRAWN, task_by_score, "lowest-scoring")) for v in shown
    ]
    fig, axes = task_grid(drawn)
    alt_parts = []
    for row, (view, tasks) in enumerate(drawn):
        ax = axes[row][0]
        trials_by_task: dict[str, list[dict[str, Any]]] = {}
        for trial in view.trials:
            trials_by_task.setdefault(trial["task_id"], []).append(trial)
        for y, task in enumerate(tasks.tasks):
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
        "closed, counts 0 there (D-10)." + note + _tasks_note(drawn),
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
        "bracket), an Inspect sample that errored (E-147), a fixture miss that failed the trial "
        "closed (D-9), a trial the log lacks "
        "(D-12), or a fail on the output grade alone." + note,
        alt,
        svg(fig, alt, "failures"),
        more=more,
    )


def _efficiency(view: RunView) -> dict[str, dict[str, Any]]:
    """Each task's efficiency block in the run's summary, by taskId."""
    return {entry["taskId"]: dict(entry.get("efficiency") or {}) for entry in view.summary["tasks"]}


def _tokens(efficiency: dict[str, Any]) -> float:
    return float(efficiency.get("inputTokens") or 0.0) + float(
        efficiency.get("outputTokens") or 0.0
    )


def _tasks_note(drawn: Sequence[tuple[RunView, PickedTasks]]) -> str:
    return TASKS_NOTE if any(picked.described for _, picked in drawn) else ""


def chart_efficiency(views: Sequence[RunView]) -> Chart:
    """Tool calls and tokens per trial, by task (RFC 0244 §C: reported, never gated)."""
    picked = pick(views, MAX_TASK_RUNS, by_score, "lowest-scoring")
    shown, (note, more) = picked.views, _drawn(picked)
    drawn = []
    for view in shown:
        of_task = _efficiency(view)

        def heaviest(task: dict[str, Any], of_task: dict[str, Any] = of_task) -> tuple[Any, ...]:
            return (-_tokens(of_task.get(task["task_id"], {})), task["task_pos"])

        drawn.append((view, pick_tasks(view.tasks, MAX_TASKS_DRAWN, heaviest, "most tokens")))
    fig, axes = task_grid(drawn, columns=2)
    alt_parts = []
    for row, (view, tasks) in enumerate(drawn):
        calls_ax, tokens_ax = axes[row]
        of_task = _efficiency(view)
        for y, task in enumerate(tasks.tasks):
            eff = of_task.get(task["task_id"], {})
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
        "They are reported, never gated." + note + _tasks_note(drawn),
        alt,
        svg(fig, alt, "efficiency"),
        more=more,
    )


def chart_cost(views: Sequence[RunView]) -> Chart | None:
    """Cost per task, with each run's total; None when no run has a cost."""
    with_cost = [v for v in views if v.task_cost]
    if not with_cost:
        return None
    picked = pick(with_cost, MAX_TASK_RUNS, by_cost, "costliest", "runs with a cost")
    shown, (note, more) = picked.views, _drawn(picked)
    drawn = [(v, pick_tasks(v.tasks, MAX_TASKS_DRAWN, task_by_cost, "costliest")) for v in shown]
    fig, axes = task_grid(drawn)
    alt_parts = []
    for row, (view, tasks) in enumerate(drawn):
        ax = axes[row][0]
        for y, task in enumerate(tasks.tasks):
            cost = task.get("cost_usd")
            if cost is None:
                continue
            ax.barh(y, cost, height=0.62, color=PURPLE)
            ax.text(cost, y, f" {usd(cost)}", va="center", fontsize=7.5)
        total = view.summary.get("totalCostUsd")
        which = f"; {tasks.described}" if tasks.described else ""
        ax.set_title(f"{view.label} (total {usd(total)}{which})")
        alt_parts.append(
            f"{view.label}: total {usd(total)}; "
            + ", ".join(f"{t['task_id']} {usd(t.get('cost_usd'))}" for t in tasks.tasks)
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
        "(D-14, D-6). The heading gives the run's totalCostUsd." + note + _tasks_note(drawn),
        alt,
        svg(fig, alt, "cost"),
        more=more,
    )
