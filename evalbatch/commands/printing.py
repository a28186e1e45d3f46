"""What the commands print besides one-line messages: every `--json` document (`echo_json`),
`run`'s runs table, totals and problem counts (and their JSON), `regress`'s comparisons and
`verify`'s tables, `suite infer`'s tasks. Ids come from the log, so
every cell and line that holds one is printed escaped (E-83)."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from evalbatch.commands.types import printable
from evalbatch.text import errored_note

if TYPE_CHECKING:  # polars and rich load when a command prints, not for --help
    import polars as pl
    from rich.console import Console

    from evalbatch.infer.suite_proposal import SuiteProposal
    from evalbatch.pairing import sides
    from evalbatch.reduce import paired_verdict, verdict_plan
    from evalbatch.verify.audit_report import RunVerdict, VerifyReport
    from evalbatch.verify.conformance import ConformanceReport
    from evalbatch.verify.conformance import Row as ConformanceRow


def echo_json(document: Any) -> None:
    """Print a command's `--json` document: the one way every command does (E-133). Indented by
    2, keys in the order built, non-ASCII text as itself (`ensure_ascii=False`) and the bytes
    UTF-8 whatever the terminal's encoding; a lone surrogate (a path's undecodable byte) is the
    JSON escape `\\udcXX`, so the document always decodes."""
    text = json.dumps(document, indent=2, ensure_ascii=False)
    click.echo(text.encode("utf-8", "backslashreplace"))


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`1 summary`, `3 summaries`: a count and its noun, agreeing (`nouns`: an irregular
    plural)."""
    if count == 1:
        return f"{count} {noun}"
    if nouns is None:
        regular_y = noun.endswith("y") and noun[-2:-1] not in "aeiou"
        nouns = noun[:-1] + "ies" if regular_y else noun + "s"
    return f"{count} {nouns}"


def stdout_console() -> Console:
    """A console for tables on stdout: as wide as COLUMNS, or the terminal, when either is
    known; as wide as the table needs when stdout is a pipe or a file, so no id is cut there.
    Rich honours NO_COLOR and TERM=dumb; ids are never read as markup or emoji."""
    from rich.console import Console

    console = Console(highlight=False, markup=False, emoji=False)
    if console.is_terminal or os.environ.get("COLUMNS", "").isdigit():
        return console
    return Console(highlight=False, markup=False, emoji=False, width=_UNBOUNDED)


#: a width no table reaches: a pipe's table is as wide as its widest row
_UNBOUNDED = 100_000

#: the order of `run`'s table: failures first, then runs not graded, then passes
_RESULT_ORDER = {"failed": 0, "skipped": 1, "passed": 2}


def _result(graded: pl.Expr, passed: pl.Expr) -> pl.Expr:
    import polars as pl

    return (
        pl.when(~graded)
        .then(pl.lit("skipped"))
        .when(passed)
        .then(pl.lit("passed"))
        .otherwise(pl.lit("failed"))
    )


def runs_in_table_order(runs: pl.DataFrame) -> pl.DataFrame:
    """The runs with their `result` (failed, skipped, passed), failures first, then by run id."""
    import polars as pl

    return (
        runs.with_columns(result=_result(pl.col("graded"), pl.col("passed").fill_null(False)))
        .with_columns(rank=pl.col("result").replace_strict(_RESULT_ORDER, return_dtype=pl.Int8))
        .sort("rank", "run_id")
        .drop("rank")
    )


@dataclass(frozen=True)
class RunTotals:
    """What every run of a `run` adds up to (the totals line and the JSON `totals`)."""

    eval_runs: int
    graded: int
    passed: int
    failed: int
    skipped: int
    mean_score: float | None  # over the graded runs
    total_cost_usd: float | None  # over the graded runs that know their cost
    costed_runs: int
    #: trials whose Inspect sample errored (E-147), and the mean score with them left out
    errored_trials: int = 0
    mean_without_errored: float | None = None
    errored_left_out: int = 0

    @classmethod
    def of(cls, runs: pl.DataFrame) -> RunTotals:
        import polars as pl

        graded = runs.filter("graded")
        costed = graded["total_cost_usd"].drop_nulls()
        passed = int(graded["passed"].sum())
        errored = int(graded["errored_trials"].sum()) if "errored_trials" in graded.columns else 0
        without = None
        if errored:
            means = graded.select(
                pl.coalesce("mean_without_errored", "aggregate_score").alias("mean")
            )["mean"]
            without = float(means.sum()) / graded.height
        left_out = graded["errored_left_out"].sum() if "errored_left_out" in graded.columns else 0
        return cls(
            eval_runs=runs.height,
            graded=graded.height,
            passed=passed,
            failed=graded.height - passed,
            skipped=runs.height - graded.height,
            mean_score=float(graded["aggregate_score"].sum()) / graded.height
            if graded.height
            else None,
            total_cost_usd=float(costed.sum()) if costed.len() else None,
            costed_runs=costed.len(),
            errored_trials=errored,
            mean_without_errored=without,
            errored_left_out=int(left_out or 0),
        )

    def line(self) -> str:
        """`total: 500 eval runs, 498 graded (440 passed, 58 failed), 2 skipped; mean score
        0.912; cost $12.3400`."""
        text = (
            f"total: {plural(self.eval_runs, 'eval run')}, {self.graded} graded "
            f"({self.passed} passed, {self.failed} failed), {self.skipped} skipped"
        )
        if self.mean_score is not None:
            text += f"; mean score {self.mean_score:.3f}"
        if self.total_cost_usd is not None:
            text += f"; cost ${self.total_cost_usd:,.4f}"
            if self.costed_runs < self.graded:
                text += f" (known for {self.costed_runs} of {self.graded} graded runs)"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "evalRuns": self.eval_runs,
            "graded": self.graded,
            "passed": self.passed,
            "failed": self.failed,
            "skipped": self.skipped,
            "meanScore": self.mean_score,
            "totalCostUsd": self.total_cost_usd,
            "costedRuns": self.costed_runs,
            "erroredTrials": self.errored_trials,
            "meanScoreWithoutErrored": self.mean_without_errored,
            "erroredLeftOut": self.errored_left_out,
        }

    def errored_line(self) -> str | None:
        """What errored Inspect samples did to the mean score (E-147), None when none did."""
        note = errored_note(
            self.errored_trials, self.mean_without_errored, self.errored_left_out, digits=3
        )
        return None if note is None else f"{note} (E-147)"


#: rows of `run`'s table; the rest are counted on the line after it (and are in runs.parquet)
RUNS_SHOWN = 50


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_runs(
    runs: pl.DataFrame,
    console: Console | None = None,
    limit: int = RUNS_SHOWN,
    kept: Collection[str] = (),
) -> None:
    """`run`'s table, failures first, at most `limit` rows, fitted to the console's width, then
    the totals over every run. Ids come from the log, so they are printed escaped. The runs an
    incremental run `kept` unchanged are counted on a line of their own, not listed (E-152): a
    night's table is the night's runs, however many nights the outputs hold."""
    import polars as pl

    if runs.height == 0:
        click.echo("no eval run was graded")
        return
    listed = runs.filter(~pl.col("run_id").is_in(sorted(kept))) if kept else runs
    if listed.height:
        _print_run_rows(listed, console or stdout_console(), limit)
    if kept:
        click.echo(
            f"kept {plural(runs.height - listed.height, 'eval run')} unchanged from the last "
            "run, not listed (see runs.parquet)"
        )
    totals = RunTotals.of(runs)
    click.echo(totals.line())
    if (errored := totals.errored_line()) is not None:
        click.echo(errored)


def _print_run_rows(runs: pl.DataFrame, console: Console, limit: int) -> None:
    """The table's rows, failures first, at most `limit`, then the rest counted by result."""
    from rich.table import Table
    from rich.text import Text

    ordered = runs_in_table_order(runs)
    table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
    table.add_column("run", overflow="fold")
    table.add_column("suite", overflow="fold")
    for name in ("score", "passed", "tasks", "pass@k", "pass^k"):
        table.add_column(name, justify="right", no_wrap=True)
    for r in ordered.head(limit).iter_rows(named=True):
        graded = r["graded"]
        table.add_row(
            Text(printable(r["run_id"])),
            Text(printable(f"{r['suite_id']}@{r['suite_version']}")),
            _ratio(r["aggregate_score"]) if graded else "-",
            Text("skipped" if not graded else "yes" if r["passed"] else "no"),
            f"{r['passed_count']}/{r['task_count']}" if graded else "-",
            _ratio(r["pass_at_k"]),
            _ratio(r["pass_hat_k"]),
        )
    with console.capture() as captured:
        console.print(table)
    for line in captured.get().splitlines():  # wrapped cells are padded: no trailing blanks
        click.echo(line.rstrip())
    if ordered.height > limit:
        rest = ordered.slice(limit)["result"].value_counts(sort=True)
        counts = dict(rest.iter_rows())
        described = ", ".join(f"{counts[r]} {r}" for r in _RESULT_ORDER if r in counts)
        click.echo(
            f"... and {plural(ordered.height - limit, 'more run')} ({described}); see runs.parquet"
        )


#: the severities in the order they are told
_SEVERITIES = ("error", "warning", "info")


def problem_counts(problems: pl.DataFrame) -> dict[str, dict[str, int]]:
    """Each severity's problem codes and how often each came up, most frequent first."""
    counts: dict[str, dict[str, int]] = {}
    ranked = (
        problems.group_by("severity", "code").len().sort(["len", "code"], descending=[True, False])
    )
    for severity, code, count in ranked.iter_rows():
        counts.setdefault(severity, {})[code] = count
    return {severity: counts[severity] for severity in _SEVERITIES if severity in counts}


def problems_line(problems: pl.DataFrame) -> str | None:
    """`problems: 1 error (file-unreadable 1), 3 warnings (payload-ignored 2, ...); see
    problems.parquet`, or None when there is none."""
    parts = []
    for severity, codes in problem_counts(problems).items():
        total = plural(sum(codes.values()), severity, "info" if severity == "info" else None)
        named = ", ".join(f"{code} {count}" for code, count in codes.items())
        parts.append(f"{total} ({named})")
    return f"problems: {', '.join(parts)}; see problems.parquet" if parts else None


def print_problems(problems: pl.DataFrame, limit: int = 20) -> None:
    """Problem counts by severity and code, then the first errors (`print_skipped`)."""
    line = problems_line(problems)
    if line is not None:
        click.echo(line)
    print_skipped(problems, limit)


def print_skipped(problems: pl.DataFrame, limit: int = 20) -> None:
    """The first errors on stderr, each a run or file skipped (their messages name runs:
    escaped)."""
    errors = problems.filter(problems["severity"] == "error")
    for message in errors["message"].head(limit):
        click.echo(f"  skipped: {printable(message)}", err=True)
    if errors.height > limit:
        click.echo(f"  ... and {errors.height - limit} more", err=True)


def problems_json(problems: pl.DataFrame) -> dict[str, Any]:
    """`{"error": 1, "warning": 3, "info": 0, "byCode": {"payload-ignored": 2, ...}}`."""
    counts = problem_counts(problems)
    return {
        **{severity: sum(counts.get(severity, {}).values()) for severity in _SEVERITIES},
        "byCode": {code: n for codes in counts.values() for code, n in codes.items()},
    }


def run_json(runs: pl.DataFrame) -> list[dict[str, Any]]:
    """Every run, in the table's order, as `run --json` lists it."""
    return [
        {
            "runId": r["run_id"],
            "suiteId": r["suite_id"],
            "suiteVersion": r["suite_version"],
            "result": r["result"],
            "aggregateScore": r["aggregate_score"],
            "passedCount": r["passed_count"],
            "taskCount": r["task_count"],
            "passAtK": r["pass_at_k"],
            "passHatK": r["pass_hat_k"],
            "totalCostUsd": r["total_cost_usd"],
        }
        for r in runs_in_table_order(runs).iter_rows(named=True)
    ]


def family_line(report: sides.RegressionReport, alpha: float) -> str | None:
    """`gated 3 suites at once: Holm, family-wise error at alpha 0.05 (adjusted p-values;
    intervals at 98.33%)`, when several suites were tested (E-98); else None."""
    if report.correction is None:
        return None
    from evalbatch.reduce.paired_verdict import CORRECTION_NAMES

    head = f"gated {report.family_size} suites at once: {CORRECTION_NAMES[report.correction]}"
    if report.correction == "none":
        return f"{head} (each suite at alpha {alpha})"
    level = round(100 * (1 - alpha / report.family_size), 2)
    return f"{head} at alpha {alpha} (adjusted p-values; intervals at {level:g}%)"


def print_comparison(
    c: paired_verdict.Comparison, alpha: float, suite_plan: verdict_plan.Plan | None = None
) -> None:
    """One suite: its verdict, each side's run, grading and mean score, then the difference, and
    its plan when it has one (E-99). Ids come from the data and are escaped (E-83)."""
    adjusted = ""
    if c.family is not None:
        adjusted = f", {c.family.correction}-adjusted p {c.family.adjusted_p_value:.4g}"
    click.echo(
        f"suite {printable(c.suite_id)}@{printable(c.suite_version)}: {c.verdict.upper()} "
        f"({c.method}, alpha {alpha}{adjusted})"
    )
    click.echo(
        f"  baseline {printable(c.baseline_run_id)} -> candidate {printable(c.candidate_run_id)}"
    )
    for label, side in (("baseline", c.baseline), ("candidate", c.candidate)):
        if side is not None:
            mean = "-" if side.mean_score is None else f"{side.mean_score:.4f}"
            names = side.names_text()  # an Inspect log's task and model (E-146)
            click.echo(
                f"  {label + ':':<10} mean score {mean} over {side.task_count} task(s), "
                f"{side.grading.describe()}" + (f"; {printable(names)}" if names else "")
            )
            if (errored := side.errored_text()) is not None:
                click.echo(f"  {'':<10} {errored}")
    line = f"  paired tasks {c.paired_task_count}, score delta {c.score_delta:+.4f}"
    if c.mean_difference is not None:
        line += f", mean paired difference {c.mean_difference:+.4f}"
    if c.interval is not None:
        level = round(100 * (1 - (alpha if c.family is None else c.family.interval_alpha)), 2)
        line += f" [{level:g}% interval {c.interval[0]:+.4f}, {c.interval[1]:+.4f}]"
    if c.p_value is not None:
        line += f", p {c.p_value:.4g}"
    click.echo(line)
    if c.reason:
        click.echo(f"  no test: {printable(c.reason)}")
    if c.moved:
        moved = ", ".join(f"{printable(task)} {diff:+.3f}" for task, diff in c.moved)
        click.echo(f"  moved most: {moved}")
    compares = c.compares_line()
    if compares is not None:
        click.echo(f"  {compares}")
    if c.within_margin:
        click.echo(
            f"  within the margin: significant, but the interval lies inside ±{c.margin:g} "
            "(--min-drop sets the smallest drop that fails the gate, E-137)"
        )
    if c.verdict == "regressed" and not c.fails_gate and c.mean_difference is not None:
        click.echo(
            f"  a drop of {-c.mean_difference:.4f} is below --min-drop {c.min_drop:g}: "
            "this suite does not fail the gate"
        )
    _print_changes(c)
    if suite_plan is not None:
        click.echo(f"  {suite_plan.line()}")


def _print_changes(c: paired_verdict.Comparison) -> None:
    """What the candidate did differently on the tasks that moved (E-136): per direction, the
    changes most of its tasks share, then how many more there are. Bounded however many tasks."""
    from evalbatch.reduce import behaviour_changes  # its wording; polars is loaded by now

    if c.changes_unknown is not None:
        click.echo(f"  changes: not known: {printable(c.changes_unknown)}")
    changes = c.changes
    if changes is None or not (changes.dropped_count or changes.rose_count):
        return
    for direction in behaviour_changes.direction_lines(changes):
        click.echo(f"  {direction.heading}")
        for line in direction.lines:
            click.echo(f"    {printable(line)}")
        if direction.others:
            click.echo(f"    {direction.rest} (--json lists them)")
    if not changes.call_level:
        click.echo(f"    ({behaviour_changes.CALLS_NOT_COMPARED})")


def _cell(value: Any) -> str:
    """A finding's value as a table cell: JSON spelling, floats to 10 significant digits."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return f"{value:.10g}"
    return str(value)


def _table(header: list[str], rows: list[list[str]], right: Collection[int] = ()) -> None:
    """Columns padded to their widest cell; columns in `right` are right-aligned. Cells hold ids
    from the log, so they are printed escaped."""
    rows = [[printable(cell) for cell in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        parts = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    click.echo(line(header))
    for row in rows:
        click.echo(line(row))


def _run_notes(run: RunVerdict) -> str:
    notes = []
    if run.problems:
        notes.append(f"not recomputed: {', '.join(run.problems)}")
    if run.on_miss_reading:
        notes.append(f"absent onMiss read as {run.on_miss_reading}")
    if run.summary_checked:
        notes.append("summary checked")
    unwritten = [f.rsplit(".", 1)[-1] for f in sorted(run.not_written) if "completed" in f]
    if unwritten:
        notes.append(f"Inspect writes no {', '.join(unwritten)}: not compared (E-148)")
    errored = run.not_written.get("eval.scored.score", 0)
    if errored or run.errored_left_out:
        count = max(errored, run.errored_left_out)
        text = f"{plural(count, 'errored sample')}: no score from Inspect, failed here"
        if run.errored_left_out:
            text += "; aggregateScore compared without them, as Inspect computes it"
        notes.append(f"{text} (E-147)")
    return "; ".join(notes)


def print_verify(report: VerifyReport, tables: bool = True) -> None:
    """Findings, then per-run verdicts, then the per-host-field tally (unless not `tables`),
    then the verdict."""
    if tables and report.findings:
        _table(
            ["run", "task", "trial", "field", "host", "recomputed", "rule", "reason"],
            [
                [
                    f.run_id,
                    f.task_id or "-",
                    "-" if f.trial_index is None else str(f.trial_index),
                    f.field,
                    _cell(f.host),
                    _cell(f.recomputed),
                    f.rule,
                    f.reason or "",
                ]
                for f in report.findings
            ],
            right={2},
        )
        click.echo("")
    if tables and report.runs:
        _table(
            ["run", "verdict", "findings", "graded from", "notes"],
            [
                [
                    r.run_id,
                    r.verdict,
                    str(r.findings),
                    r.graded_from or "-",
                    _run_notes(r),
                ]
                for r in report.runs
            ],
            right={2},
        )
        click.echo("")
        _table(
            ["host field", "compared", "disagree"],
            [
                [name, str(count), str(report.disagreed.get(name, 0))]
                for name, count in sorted(report.compared.items())
            ],
            right={1, 2},
        )
        click.echo("")
    for skipped in report.skipped_files:
        click.echo(
            f"  skipped file: {printable(skipped.path)} [{skipped.code}]: its runs were not "
            "verified",
            err=True,
        )
    counts = Counter(r.verdict for r in report.runs)
    described = ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items()))
    click.echo(
        f"verdict: {report.verdict} ({len(report.runs)} eval runs: {described or 'none'}; "
        f"{len(report.findings)} findings)"
    )


def _evidence(row: ConformanceRow) -> str:
    """A row's evidence in words (counts only), or why it has none."""
    if row.verdict in ("unwitnessable", "inapplicable") and not row.runs:
        return row.note
    text = plural(len(row.runs), "run")
    if row.requirement.unit != "run":
        text += f", {plural(row.units, row.requirement.unit)}"
    if row.findings:
        text += f", {plural(row.findings, 'finding')}"
    return f"{text}; {row.note}" if row.note else text


def print_conformance(report: ConformanceReport, table: bool = True) -> None:
    """One row per RFC 0244 requirement: its id, section, verdict and evidence (E-104); without
    `table`, the verdict line alone (what was not recomputed still goes to stderr)."""
    if table:
        _table(
            ["requirement", "rfc", "verdict", "evidence"],
            [
                [row.requirement.id, row.requirement.section, row.verdict, _evidence(row)]
                for row in report.rows
            ],
        )
        click.echo("")
    for run_id in report.not_recomputed:
        click.echo(f"  not recomputed: run {printable(run_id)}: evidence of nothing", err=True)
    for skipped in report.skipped_files:
        click.echo(
            f"  skipped file: {printable(skipped['path'])} [{skipped['code']}]: its runs are "
            "evidence of nothing",
            err=True,
        )
    counts = Counter(row.verdict for row in report.rows)
    described = ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items()))
    click.echo(f"conformance: {report.verdict} ({described})")


def _proposal_source(proposal: SuiteProposal) -> str:
    if proposal.suite_paths:
        return f"from {', '.join(proposal.suite_paths)}"
    return "made from the log: no suite given for it, passed as the host recorded (D-4)"


def print_proposal(proposal: SuiteProposal, written: str) -> None:
    """The suite, a row per task (its trials, how many passed, what it got or why not), and
    where the file went. Ids are escaped; no tool name is printed (they are in the file)."""
    trials = sum(task.trials for task in proposal.tasks)
    passing = sum(task.passing for task in proposal.tasks)
    click.echo(
        printable(
            f"suite {proposal.suite_id} {proposal.version}: "
            f"{plural(len(proposal.run_ids), 'run')}, "
            f"{plural(trials, 'counted trial')}, {passing} passed "
            f"({_proposal_source(proposal)})"
        )
    )
    rows = []
    for task in proposal.tasks:
        if task.calls is not None:
            got = f"{proposal.mode}: {plural(len(task.calls), 'call')}"
        else:
            got = f"none ({task.reason}): {task.detail}"
        rows.append([task.task_id, str(task.trials), str(task.passing), got])
    _table(["task", "trials", "passed", "expectation"], rows, right={1, 2})
    click.echo(
        f"wrote {printable(written)}: {proposal.with_expectation} of "
        f"{plural(len(proposal.tasks), 'task')} with an expectation"
    )
