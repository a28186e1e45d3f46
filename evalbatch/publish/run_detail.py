"""Each run in depth: its verdict line and failing trials, each with the `evalbatch explain`
command that shows why (Run by run), and every task of every run (Tasks).

A failing trial is listed with its reason code (E-47's order) and the command with the run's
non-default grading options, so the explanation grades as `run` did, and the event and suite
paths `run` was given, as `run-inputs.json` records them (E-118); EVENTS and SUITES stand for
them where the directory holds no record (E-95). Ids and paths only, shell-quoted and
HTML-escaped (RFC 0244 §H).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from evalbatch.options import GradeOptions
from evalbatch.outputs.run_inputs import RunInputs
from evalbatch.publish.page_markup import (
    esc,
    fmt,
    num_cell,
    quantity,
    run_ref,
    table,
    usd,
    verdict_cell,
)
from evalbatch.publish.report_views import FailingTrial, RunView
from evalbatch.publish.worst_runs import (
    MAX_TASKS_LISTED,
    Picked,
    pick_tasks,
    task_by_score,
)

#: failing trials listed in a run's section; the rest are one `evalbatch explain` away
MAX_FAILING_ROWS = 100


def _showable(path: str) -> bool:
    """A path a command on the page can name as it is: one printable line of UTF-8 (a name
    that is not UTF-8 reads back with lone surrogates, which no page can hold)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return path.isprintable()


def given_words(inputs: RunInputs | None) -> tuple[list[str], list[str]]:
    """The words of an `evalbatch explain` command that name the events and the suites: the
    paths `evalbatch run` was given (E-118), or EVENTS and `--suites SUITES` where the directory
    holds no record of them (or a path cannot be shown on one line)."""
    events = ["EVENTS"]
    suites = ["--suites", "SUITES"]
    if inputs is None:
        return events, suites
    if inputs.events and all(map(_showable, inputs.events)):
        events = list(inputs.events)
    if inputs.suites is not None and all(map(_showable, inputs.suites)):
        suites = [word for path in inputs.suites for word in ("--suites", path)]
    return events, suites


def explain_command(
    view: RunView,
    task_id: str | None,
    trial_index: int | None,
    inputs: RunInputs | None = None,
) -> str:
    """The `evalbatch explain` command that shows why a trial of `view` graded as it did: the
    event and suite paths `evalbatch run` was given (`given_words`), the run's grading options
    when they are not the defaults, ids and paths shell-quoted."""
    defaults = GradeOptions()
    events, suites = given_words(inputs)
    words = ["evalbatch", "explain", *events, *suites, "--run-id", view.run_id]
    pass_score = view.options.get("default_pass_score")
    if pass_score is not None and float(pass_score) != defaults.default_pass_score:
        words += ["--default-pass-score", repr(float(pass_score))]
    on_miss = view.options.get("on_miss_default")
    if on_miss is not None and on_miss != defaults.on_miss_default:
        words += ["--on-miss-default", str(on_miss)]
    if task_id is not None:
        words += ["--task-id", task_id]
    if trial_index is not None:
        words += ["--trial", str(trial_index)]
    return shlex.join(words)


def _sample_cell(trial: FailingTrial) -> str:
    """Under a failed trial's taskId, the Inspect sample and epoch it ran (E-146)."""
    if trial.sample_id is None:
        return ""
    epoch = f", epoch {trial.epoch}" if trial.epoch is not None else ""
    return f'<small class="names">sample {esc(trial.sample_id)}{epoch}</small>'


def run_section(
    view: RunView,
    views_by_id: dict[str, RunView],
    limit: int | None = MAX_FAILING_ROWS,
    inputs: RunInputs | None = None,
) -> str:
    """A run's verdict line and its failing trials, each with the command that explains it: the
    first `limit` of them (every one when None: a run named by `report --run-id`)."""
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
    # what an Inspect log calls the run (E-146)
    for column, label in (("task_name", "Inspect task"), ("model", "model"), ("log_file", "log")):
        if column in view.names:
            facts.append(f"{label} <code>{esc(view.names[column])}</code>")
    if view.errored_text is not None:  # errored Inspect samples and the mean without them (E-147)
        facts.append(esc(view.errored_text))
    reg = s.get("regression")
    if reg:
        facts.append(
            f"{esc(reg['verdict'])} against {run_ref(reg['baselineRunId'], views_by_id)} "
            f"(score delta {float(reg['scoreDelta']):+.3f})"
        )
    rows = [
        "<tr>"
        f"<td>{esc(f.task_id)}{_sample_cell(f)}</td>"
        + (
            num_cell(f.trial_index, str(f.trial_index))
            if f.trial_index is not None
            else num_cell(None, f"{f.count} missing")
        )
        + f"<td><code>{esc(f.reason)}</code></td>"
        + num_cell(f.score, fmt(f.score))
        + num_cell(f.gating_score, fmt(f.gating_score))
        + '<td><code class="cmd">'
        + esc(explain_command(view, f.task_id, f.trial_index, inputs))
        + "</code></td></tr>"
        for f in view.failing[:limit]
    ]
    failing_table = (
        table(("task", "trial", "reason", "score", "gating", "explain it"), rows, (1, 3, 4))
        if rows
        else ""
    )
    if limit is not None and len(view.failing) > limit:
        rest = len(view.failing) - limit
        every = explain_command(view, None, None, inputs)
        failing_table += (
            f'<p class="drawn">The first {limit} failing trials; '
            f'{esc(quantity(rest, "more"))}: <code class="cmd">{esc(every)}</code> explains '
            "every trial of the run.</p>"
        )
    return (
        f'<article class="run" id="{view.anchor}"><h3><code>{esc(view.run_id)}</code> '
        f"{result}</h3><p>{' · '.join(facts)}</p>{failing_table}</article>"
    )


#: what each reason code of a failed trial means, for the page
REASON_LEGEND = (
    "<code>forbidden</code>, <code>missing</code>, <code>extra</code>, <code>order</code>, "
    "<code>no-bracket</code>, <code>delegates-unseen</code>: the tool path did not match, for "
    "that reason (the trials table's "
    "code, E-58; <code>trajectory</code> when it has none); <code>sample-errored</code>: the "
    "Inspect sample errored (E-147); <code>failed-closed</code>: a "
    "fixture miss failed the trial (D-9); <code>trial-missing</code>: trials the log lacks "
    "(D-12); <code>output</code>: a fail on the output grade"
)


def more_runs(
    views: Sequence[RunView], shown: Picked[RunView], inputs: RunInputs | None = None
) -> str:
    """Where the runs without a section of their own are, and the commands that show one: the
    target of their links (`#more-runs`, the run's id filled in by the page's script)."""
    rest = len(views) - len(shown.views)
    template = "evalbatch report OUT_DIR --run-id RUN --out run.html"
    events, suites = given_words(inputs)
    explain = shlex.join(["evalbatch", "explain", *events, *suites, "--run-id", "RUN"])
    return (
        '<div id="more-runs" class="more"><h3>The other runs</h3>'
        f"<p>{esc(quantity(rest, 'run'))} {'has' if rest == 1 else 'have'} no section here "
        f"(this page shows {esc(shown.described or 'the runs named')} in full, so it opens in "
        "seconds however many runs a night holds): each is a row of the runs table, and every "
        "run is in <code>runs.parquet</code>, <code>tasks.parquet</code> and "
        "<code>trials.parquet</code>. One run in full: "
        f'<code class="cmd" id="more-runs-command" data-template="{esc(template)}">'
        f'{esc(template)}</code> (the page of that run), or <code class="cmd">'
        f"{esc(explain)}</code> (its trials call by call); any "
        'question of every run: <code class="cmd">evalbatch sql OUT_DIR</code>.</p></div>'
    )


def _paths_told(inputs: RunInputs | None) -> str:
    """What the page says of the event and suite paths in its `explain` commands."""
    if inputs is None:
        return (
            "EVENTS and SUITES stand for the event logs and suite files given to "
            "<code>evalbatch run</code>: this directory holds no record of them for these "
            "outputs (<code>run-inputs.json</code>, which every run writes, E-118). "
        )
    events, suites = given_words(inputs)
    told = (
        "The event logs and suite files are named as they were given to <code>evalbatch "
        "run</code> (a relative path from the directory it ran in). "
    )
    if "EVENTS" in events:
        told += "EVENTS stands for the event logs: a path given cannot be shown on one line. "
    if "SUITES" in suites:
        why = (
            "the suites were given as documents, not files"
            if inputs.suites is None
            else "a path given cannot be shown on one line"
        )
        told += f"SUITES stands for the suite files: {why}. "
    return told


def by_run_section(
    views: Sequence[RunView],
    shown: Picked[RunView],
    whole: bool = False,
    inputs: RunInputs | None = None,
) -> str:
    """The Run by run section: the reason codes explained, then the section of each run shown
    in full (`shown`: every run when they fit, else the worst or the runs named; `whole`: every
    failing trial of each, for the runs named by `report --run-id`), then where the others
    are."""
    views_by_id = {v.run_id: v for v in views}
    limit = None if whole else MAX_FAILING_ROWS
    return (
        '<section id="by-run" aria-labelledby="by-run-h"><h2 id="by-run-h">Run by run</h2>'
        f"<p>Each run's failed trials with their reason code ({REASON_LEGEND}). The command "
        "shows the detail: expected and observed calls and the check that failed. "
        + _paths_told(inputs)
        + "Its output names tools and arguments, so it is for the team's own eyes and is not in "
        "this page.</p>"
        + "".join(run_section(v, views_by_id, limit, inputs) for v in shown.views)
        + (more_runs(views, shown, inputs) if len(shown.views) < len(views) else "")
        + "</section>"
    )


def tasks_section(views: Sequence[RunView], shown: Picked[RunView], whole: bool = False) -> str:
    """The Tasks section: the tasks of each run shown in full (at most MAX_TASKS_LISTED a run,
    every one when `whole`), folded under a <details>."""
    limit = None if whole else MAX_TASKS_LISTED
    which = (
        "Every task of every run"
        if len(shown.views) == len(views)
        else f"Every task of {shown.described or 'the runs named'} (every run's: tasks.parquet)"
    )
    if limit is not None and any(len(view.tasks) > limit for view in shown.views):
        which += f", at most {limit} a run"
    return (
        '<section id="tasks" aria-labelledby="tasks-h"><h2 id="tasks-h">Tasks</h2>'
        f"<details><summary>{esc(which)}</summary>"
        + tasks_table(shown.views, limit)
        + "</details></section>"
    )


def tasks_table(views: Sequence[RunView], limit: int | None = MAX_TASKS_LISTED) -> str:
    """One row per task of each run, in the views' order: scores, counts, cost, latency; a
    run of more than `limit` tasks lists its lowest-scoring, and says so."""
    head = (
        "<tr><th>suite</th><th>task</th><th class=num>score</th><th class=num>gating</th>"
        "<th>result</th><th class=num>passed/n</th><th class=num>pass@k</th>"
        "<th class=num>pass^k</th><th class=num>cost</th><th class=num>latency ms</th>"
        "<th>trajectory</th><th class=num>fixture misses</th></tr>"
    )
    rows = []
    for view in views:
        picked = pick_tasks(view.tasks, limit or len(view.tasks), task_by_score, "lowest-scoring")
        if picked.described:
            rows.append(
                f'<tr><td colspan="12" class="drawn">{esc(view.label)}: {esc(picked.described)}'
                " (every task: <code>tasks.parquet</code>)</td></tr>"
            )
        for t in picked.tasks:
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
