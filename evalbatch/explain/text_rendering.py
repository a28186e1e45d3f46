"""An explanation for a terminal: a header per run and task, a block per trial.

Each trial's block gives its verdict and where its events are, its numbers, the lines that say
why, the expected and observed calls side by side with their pairing (E-56: `=` paired in the
maximum matching, `x` the call a finding compared an unpaired expected call with), the findings,
the fixture replay and the usage. Long JSON cells are cut and only the first findings are listed:
`--json` (`json_shape`) keeps every character and every finding.
"""

from __future__ import annotations

from evalbatch.explain.explanation import (
    Cut,
    Explanation,
    FailedCheck,
    Fixtures,
    SampleText,
    TaskExplanation,
    Trajectory,
    TrialExplanation,
)
from evalbatch.explain.inspect_viewer import VIEW_COMMAND, sample_url
from evalbatch.explain.observed_calls import ObservedCall
from evalbatch.explain.wording import count_of, shown_number, yes_no
from evalbatch.options import GradeOptions
from evalbatch.text import printable

#: a JSON cell longer than this is cut in the text (the JSON output keeps every character)
CELL_WIDTH = 40

#: findings shown per trial in the text (the JSON output has them all)
FINDINGS_SHOWN = 4


def _cut(text: str, width: int = CELL_WIDTH) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 3] + "..."


def _table(rows: list[list[str]], right: set[int], indent: str) -> list[str]:
    """Columns padded to their widest cell; columns in `right` are right-aligned."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for cells in rows:
        parts = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        lines.append((indent + "  ".join(parts)).rstrip())
    return lines


def _args_cell(args_match: str, args: str | None) -> str:
    if args is None or args_match == "ignore":
        return "any args"
    return f"{args_match} {_cut(args, CELL_WIDTH - len(args_match) - 1)}"


def _observed_flags(call: ObservedCall, extra: set[int]) -> str:
    flags = []
    if call.forbidden:
        flags.append("FORBIDDEN")
    if call.pos in extra:
        flags.append("EXTRA")
    if call.pos is None:
        flags.append(f"not in the path (agent {call.agent_id or 'none'})")
    if call.from_run_id is not None:
        flags.append(f"in child run {call.from_run_id}")  # E-102: its event is that run's
    return ", ".join(flags)


def _trajectory_lines(traj: Trajectory) -> list[str]:
    delegates = ", delegates included" if traj.include_delegates else ""
    state = "matched" if traj.matched else f"unmatched ({traj.reason})"
    lines = [
        f"    trajectory {traj.mode}{delegates}: {state}; expected {traj.expected_count}, "
        f"observed {traj.observed_count}, matched {traj.matched_count}, "
        f"forbidden {traj.forbidden_count}"
    ]
    header = ["E", "tool", "args", "", "O", "event", "tool", "inputs", ""]
    rows = [header]
    by_pos = {c.pos: c for c in traj.observed}
    extra = {
        f.observed_pos for f in traj.findings if f.code == "extra" and f.observed_pos is not None
    }

    def right_cells(call: ObservedCall | None) -> list[str]:
        if call is None:
            return ["", "", "", "", ""]
        return [
            "-" if call.pos is None else str(call.pos),
            str(call.sequence),
            call.tool,
            _cut(call.inputs or "null"),
            _observed_flags(call, extra),
        ]

    # beside an unpaired expected call: the call a finding compared it with, marked `x`
    beside: dict[int, int] = {}
    for f in traj.findings:
        if (
            f.code in ("missing", "order")
            and f.why in ("args-differ", "tool-differs")
            and f.expected_pos is not None
            and f.observed_pos is not None
            and by_pos[f.observed_pos].expected_pos is None
            and f.observed_pos not in beside.values()
        ):
            beside.setdefault(f.expected_pos, f.observed_pos)
    for e in traj.expected:
        if e.observed_pos is not None:
            partner, mark = by_pos.get(e.observed_pos), "="
        elif e.pos in beside:
            partner, mark = by_pos[beside[e.pos]], "x"
        else:
            partner, mark = None, ""
        rows.append(
            [str(e.pos), e.tool, _args_cell(e.args_match, e.args), mark, *right_cells(partner)]
        )
    for call in traj.observed:
        if call.expected_pos is None and call.pos not in beside.values():
            rows.append(["", "", "", "", *right_cells(call)])
    for call in traj.others:
        rows.append(["", "", "", "", *right_cells(call)])
    if len(rows) > 1:
        lines += _table(rows, {4, 5}, "      ")
    if beside:
        lines.append("      (= paired in the maximum matching; x the call it was compared with)")
    lines += _finding_lines(traj.findings, "    why: ")
    return lines


def _finding_lines(findings: list[FailedCheck], label: str) -> list[str]:
    lines = []
    pad = " " * len(label)
    for number, finding in enumerate(findings[:FINDINGS_SHOWN]):
        lines.append(f"{label if number == 0 else pad}{finding.message}")
    if len(findings) > FINDINGS_SHOWN:
        lines.append(f"{pad}... and {len(findings) - FINDINGS_SHOWN} more (--json lists all)")
    return lines


def _fixture_lines(fix: Fixtures) -> list[str]:
    declared = fix.on_miss_declared or f"absent, read as {fix.on_miss} (D-9)"
    if not fix.fixtured:
        return [f"    fixtures: {fix.note}"]
    outcome = (
        "failed closed (D-9)"
        if fix.failed_closed
        else ("counted only (D-9)" if fix.misses else "every call served")
    )
    lines = [f"    fixtures (onMiss {declared}): {count_of(fix.misses, 'miss')}, {outcome}"]
    rows = [["call", "event", "tool", "inputs", "served by"]]
    for call in fix.calls:
        served = f"F{call.entry_pos}" if call.entry_pos is not None else "MISS"
        inputs = _cut(call.inputs or "null")
        rows.append([str(call.call_pos), str(call.sequence), call.tool, inputs, served])
    if len(rows) > 1:
        lines += _table(rows, {0, 1}, "      ")
    unused = [f"F{e.pos}" for e in fix.entries if e.served_call_pos is None]
    if unused:
        lines.append(f"      entries not used: {', '.join(unused)}")
    lines += _finding_lines([c.miss for c in fix.calls if c.miss is not None], "    miss: ")
    return lines


def _headline(trial: TrialExplanation) -> str:
    where = (
        f"eval.scored event {trial.sequence}" if trial.sequence is not None else "no eval.scored"
    )
    if trial.status == "missing":
        return f"  trial {trial.trial_index}  MISSING  ({where})"
    if trial.status == "left-out":
        return f"  trial {trial.trial_index}  LEFT OUT  {trial.left_out}  ({where})"
    assert trial.grade is not None
    row = trial.grade.row
    tags = []
    if row["trajectory_reason"]:
        tags.append(row["trajectory_reason"])
    if row["failed_closed"]:
        tags.append("failed closed")
    if row.get("errored"):
        tags.append("errored")
    if not tags and not row["passed"]:
        tags.append("output grade")
    bracket = trial.bracket
    if bracket is not None and bracket.start_sequence is not None:
        span = f"{bracket.start_sequence}-{bracket.end_sequence}"
        where += f"; bracket events {span}" + ("" if bracket.closed else " (unclosed)")
    elif bracket is not None:
        where += "; no bracket"
    tag = f"  {', '.join(tags)}" if tags else ""
    return f"  trial {trial.trial_index}  {trial.verdict.upper()}{tag}  ({where})"


def _usage_line(trial: TrialExplanation) -> list[str]:
    assert trial.grade is not None
    g = trial.grade
    row = g.row
    latency = (
        f"latency {shown_number(row['latency_ms'])} ms ("
        + ("host latencyMs" if g.latency_source == "host" else "bracket span")
        + ")"
        if row["latency_ms"] is not None
        else "no latency"
    )
    if g.cost_source == "usage":
        cost = f"cost {shown_number(row['usage_cost_usd'])} USD (provider.usage in the segment)"
    elif g.cost_source == "host":
        cost = (
            f"cost {shown_number(g.host_cost_usd)} USD "
            "(host costUsd: no usage cost in the run, D-14)"
        )
    else:
        cost = "no cost"
    lines = [
        f"    usage: {count_of(row['tool_call_count'], 'tool call')}, "
        f"{count_of(row['model_call_count'], 'model call')}, "
        f"{row['input_tokens']} in / {row['output_tokens']} out tokens (in the bracket)",
        f"    {cost}; {latency}",
    ]
    judge = trial.judge
    if judge is not None and judge.count:
        cost_text = f", {shown_number(judge.cost_usd)} USD" if judge.cost_usd is not None else ""
        lines.append(
            f"    judge: {count_of(judge.count, 'model call')} outside the bracket "
            f"({judge.input_tokens} in / {judge.output_tokens} out tokens{cost_text}): "
            "in cost, not in efficiency (D-6)"
        )
    return lines


def _sample_line(trial: TrialExplanation, names: dict[str, str]) -> list[str]:
    """A trial of an Inspect log: its sample, epoch and model, and its page in Inspect's viewer
    (E-146)."""
    if trial.sample_id is None:
        return []
    line = f"    Inspect sample {trial.sample_id}"
    if trial.epoch is not None:
        line += f", epoch {trial.epoch}"
    if "model" in names:
        line += f", model {names['model']}"
    if "log_file" in names and trial.epoch is not None:
        line += f": {sample_url(names['log_file'], trial.sample_id, trial.epoch)}"
    return [line]


def _shown_text(text: Cut) -> str:
    """A text from the log on one line: escaped (a newline is `\\n`, E-83), and when cut, how
    much of it is shown."""
    shown = printable(text.shown) if text.shown else "(empty)"
    if text.cut:
        shown += f" ... [the first {len(text.shown):,} of {text.length:,} characters]"
    return shown


def _sample_text_lines(text: SampleText | None) -> list[str]:
    """With `--sample-text`: what the trial's sample said, after the lines of its grade (E-150)."""
    if text is None:
        return []
    if text.unread is not None:
        return [f"    sample text {text.unread}"]
    scorer = f"scorer {text.scorer}"
    lines = []
    if text.answer is not None:
        source = scorer if text.answer_from == "score" else "the model's output"
        lines.append(f"    answer ({source}): {_shown_text(text.answer)}")
    if text.target is not None:
        lines.append(f"    target: {_shown_text(text.target)}")
    if text.explanation is not None:
        lines.append(f"    explanation ({scorer}): {_shown_text(text.explanation)}")
    if text.error is not None:
        lines.append(f"    error: {_shown_text(text.error)}")
    return lines


def _names_lines(names: dict[str, str]) -> list[str]:
    """A run from an Inspect log: what Inspect calls it, and the command that serves its log to
    Inspect's viewer, where each trial's line below is a page (E-146)."""
    if not names:
        return []
    told = [
        f"{label} {names[key]}"
        for key, label in (("task_name", "task"), ("model", "model"), ("log_file", "log"))
        if key in names
    ]
    lines = [f"Inspect: {', '.join(told)}"]
    if "log_file" in names:
        lines.append(
            f"  to see its samples: {VIEW_COMMAND} (LOG_DIR: the directory holding "
            f"{names['log_file']}), then open a trial's address below"
        )
    return lines


def _trial_lines(trial: TrialExplanation, names: dict[str, str] | None = None) -> list[str]:
    lines = [_headline(trial), *_sample_line(trial, names or {})]
    if trial.grade is not None:
        row = trial.grade.row
        g = trial.grade
        host = f"host score {shown_number(g.host_score)}, host passed {yes_no(g.host_passed)}"
        lines.append(
            f"    score {shown_number(row['score'])}, gating {shown_number(row['gating_score'])}, "
            f"passed {yes_no(row['passed'])}  ({host})"
        )
    lines += [f"    - {why}" for why in trial.why]
    lines += _sample_text_lines(trial.sample_text)
    if trial.trajectory is not None:
        lines += _trajectory_lines(trial.trajectory)
    if trial.fixtures is not None:
        lines += _fixture_lines(trial.fixtures)
    if trial.grade is not None:
        lines += _usage_line(trial)
    if trial.problems:
        listed = ", ".join(
            f"{p.code} (event {p.sequence})" if p.sequence is not None else p.code
            for p in trial.problems
        )
        lines.append(f"    problems: {listed}")
    return lines


def _task_header(task: TaskExplanation, has_suite: bool) -> str:
    if not task.in_suite:
        return f"task {task.task_id}  not in the suite: its trials are left out (D-13)"
    if has_suite:
        kind = task.kind or "?"
        if task.trajectory_mode:
            kind += f", trajectory {task.trajectory_mode}"
    else:
        kind = "host record"
    trials = f"{task.n} trial{'s' if task.n != 1 else ''}" if task.n is not None else "trials"
    return (
        f"task {task.task_id}  {kind}, {trials}: task score {shown_number(task.score)}, "
        f"passed {yes_no(task.passed)}"
    )


def render_text(expl: Explanation) -> str:
    """The explanation for a terminal: a header per run and task, a block per trial."""
    suite = f"{expl.suite_id}@{expl.suite_version}"
    if not expl.graded:
        lines = [f"run {expl.run_id}  suite {suite}: NOT GRADED"]
        lines += [f"  {p.code}: {p.message}" for p in expl.not_graded]
    elif expl.graded_from == "suite":
        lines = [f"run {expl.run_id}  suite {suite} (graded from the suite)"]
    else:
        lines = [
            f"run {expl.run_id}  suite {suite} not given: graded from the host record, "
            "no trajectory or fixture checks (D-4)"
        ]
    defaults = GradeOptions()
    if expl.options != defaults:
        lines.append(
            f"options: --default-pass-score {shown_number(expl.options.default_pass_score)} "
            f"--on-miss-default {expl.options.on_miss_default}"
        )
    shown = [p for p in expl.problems if p.code != "suite-missing"]  # the header says so
    if shown:
        listed = ", ".join(
            f"{p.code} (event {p.sequence})" if p.sequence is not None else p.code for p in shown
        )
        lines.append(f"run problems: {listed}")
    lines += _names_lines(expl.names)
    if expl.sample_log is not None:
        lines.append(
            f"  sample text (--sample-text) read from {printable(expl.sample_log)}: for reading, "
            "never for publishing"
        )
    lines += [f"note: {note}" for note in expl.notes]
    for task in expl.tasks:
        lines.append("")
        lines.append(_task_header(task, expl.graded_from == "suite"))
        if not task.trials:
            lines.append("  no trial")
        for trial in task.trials:
            lines += _trial_lines(trial, expl.names)
    return "\n".join(lines) + "\n"
