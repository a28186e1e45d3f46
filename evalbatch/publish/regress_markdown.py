"""`regress --markdown FILE`: the verdict and what changed, as GitHub-flavoured Markdown for a
pull-request comment or a CI job summary (E-138).

A headline with the gate's outcome, one table of the suites compared, then per suite the changes
most shared by the tasks that dropped (and those that rose) in a table, the rest folded under a
`<details>`. Bounded whatever the number of tasks: at most `SHOWN` change rows per direction
open, `FOLDED` more folded, then a count. Ids and tool names come from the logs: every cell is
escaped so that it stays one cell of text (no pipe, markup, HTML or line break of its own).
Tool outputs and prompts are never in it, nor argument values (the changes hold none, §H)
unless the report was made with them (`--with-argument-values`, E-141): then, under each open
table, the values behind its changed argument paths in a few of their tasks, and a line under
the headline saying the file holds them.
"""

from __future__ import annotations

import re

from evalbatch.pairing.sides import RegressionReport
from evalbatch.reduce import behaviour_changes, paired_verdict
from evalbatch.text import printable

#: change rows shown per direction, then folded, before the rest are only counted
SHOWN = 5
FOLDED = 50

#: the characters that could make text in a table cell into something else: emphasis, code,
#: links and images, HTML and entities, strikethrough, a cell's end
_MARKUP = re.compile(r"([\\`*_\[\]<>|~&])")


def cell(text: object) -> str:
    """`text` as one table cell of plain text: control characters escaped (E-83), and the
    punctuation that is markup inside a cell backslash-escaped, so an id cannot open a link, a
    tag or a new cell."""
    return _MARKUP.sub(r"\\\1", printable(str(text)))


def _headline(report: RegressionReport) -> str:
    if report.exit_code == 2:
        outcome = "NOTHING COMPARED"
    elif any(c.fails_gate for c in report.comparisons):
        outcome = "REGRESSED"
    elif any(c.verdict == "regressed" for c in report.comparisons):
        outcome = "regressed below --min-drop: the gate passes"
    else:
        outcome = "no suite regressed"
    return f"## evalbatch regress: {outcome}"


def _number(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:+.{digits}f}"


def _suite_row(c: paired_verdict.Comparison) -> str:
    interval = "–" if c.interval is None else f"[{c.interval[0]:+.4f}, {c.interval[1]:+.4f}]"
    p_value = "–" if c.p_value is None else f"{c.p_value:.4g}"
    compared = "gating scores" if c.score == "gating" else "output scores"
    verdict = f"**{c.verdict.upper()}**" if c.fails_gate else c.verdict.upper()
    cells = [
        cell(f"{c.suite_id}@{c.suite_version}"),
        verdict,
        str(c.paired_task_count),
        compared,
        _number(c.mean_difference),
        interval,
        p_value,
        _number(c.other_difference),
    ]
    return "| " + " | ".join(cells) + " |"


def _change_rows(counts: list[behaviour_changes.ChangeCount], moved: int) -> list[str]:
    rows = []
    for count in counts:
        steady = f"{count.steady} of {count.steady_of}" if count.steady_of else "–"
        rows.append(f"| {cell(count.description)} | {count.tasks} of {moved} | {steady} |")
    return rows


def _value_rows(
    changes: behaviour_changes.Changes, counts: list[behaviour_changes.ChangeCount]
) -> list[str]:
    """E-141: the argument values behind the changed argument paths among `counts`, one row
    per example task; nothing when the report holds no values."""
    rows = [
        f"| {cell(count.description)} | {cell(task)} | {cell(values.baseline)} "
        f"| {cell(values.candidate)} |"
        for count in counts
        for task, values in changes.examples(count)
    ]
    if not rows:
        return []
    return [
        f"Argument values behind the changes above, in up to {behaviour_changes.VALUE_TASKS} "
        f"of their tasks (JSON, each value cut to {behaviour_changes.VALUE_CHARS} characters):",
        "",
        "| change | task | baseline | candidate |",
        "|---|---|---|---|",
        *rows,
        "",
    ]


def _changes(c: paired_verdict.Comparison) -> list[str]:
    lines = [f"### {cell(c.suite_id)}: what changed", ""]
    if c.changes is None:
        lines.append(f"Changes not known: {cell(c.changes_unknown or 'not compared')}.")
        return lines
    changes = c.changes
    if not (changes.dropped_count or changes.rose_count):
        lines.append("No paired task moved.")
        return lines
    for label, counts, moved in (
        ("dropped", changes.dropped, changes.dropped_count),
        ("rose", changes.rose, changes.rose_count),
    ):
        if not moved:
            continue
        header = [
            f"| change | tasks that {label} | tasks that did not move |",
            "|---|---:|---:|",
        ]
        lines += [*header, *_change_rows(counts[:SHOWN], moved), ""]
        lines += _value_rows(changes, counts[:SHOWN])
        folded = counts[SHOWN : SHOWN + FOLDED]
        if folded:
            lines += [
                f"<details><summary>{len(folded)} other change(s) of the tasks that "
                f"{label}</summary>",
                "",
                *header,
                *_change_rows(folded, moved),
                "",
                "</details>",
                "",
            ]
        rest = len(counts) - SHOWN - len(folded)
        if rest > 0:
            lines += [f"and {rest} more (`--json` lists them all).", ""]
    if not changes.call_level:
        told = behaviour_changes.CALLS_NOT_COMPARED
        lines.append(f"{told[:1].upper()}{told[1:]}.")
    return lines


def markdown_summary(report: RegressionReport) -> str:
    """The whole summary, ending in a newline."""
    lines = [_headline(report), ""]
    if any(c.changes is not None and c.changes.argument_values for c in report.comparisons):
        lines += [
            "**This summary holds argument values from the logs** (`--with-argument-values`): "
            "post it only where the logs themselves may be read.",
            "",
        ]
    lines += [
        "| suite | verdict | paired tasks | compares | mean paired difference | interval | p "
        "| other score moved |",
        "|---|---|---:|---|---:|---|---:|---:|",
        *(_suite_row(c) for c in report.comparisons),
        "",
    ]
    for c in report.comparisons:
        if c.within_margin:
            lines += [
                f"{cell(c.suite_id)}: significant, but the interval lies inside "
                f"±{c.margin:g} (`--min-drop` sets the smallest drop that fails the gate).",
                "",
            ]
    for side, suite in report.unpaired:
        lines += [f"Not compared (one side only): {cell(side)}: {cell(suite)}", ""]
    for c in report.comparisons:
        lines += [*_changes(c), ""]
    return "\n".join(lines).rstrip("\n") + "\n"
