"""`evalbatch regress BASE CAND`: the paired regression verdict of CAND against BASE, per suite.

`evalbatch.api.regress_paths` does the comparison; this module parses the options, prints the
comparisons (`printing.print_comparison`, or JSON) and what was not compared, and applies
--fail-on to the report's exit code.
"""

from __future__ import annotations

import sys
from datetime import datetime

import click

from evalbatch.commands import faults, filters, printing, resources
from evalbatch.commands.click_options import quiet_option, suites_option
from evalbatch.commands.types import bounded, printable
from evalbatch.errors import EXIT_FAILED
from evalbatch.options import (
    ALPHA,
    CORRECTIONS,
    EFFECT,
    MARGIN,
    METHODS,
    MIN_DROP,
    MIN_RESAMPLES,
    POWER,
    RESAMPLES,
    SCORES,
    SEED,
    Correction,
    Method,
    Resources,
    Score,
)


@click.command(
    name="regress", cls=faults.Command, short_help="Paired regression verdict of CAND against BASE."
)
@click.argument("base")
@click.argument("cand")
@suites_option
@click.option(
    "--method",
    type=click.Choice(METHODS),
    default="paired-bootstrap",
    show_default=True,
    help="The paired test: bootstrap percentile interval, Student t, exact sign test, or exact "
    "McNemar on task passes (§5).",
)
@click.option(
    "--alpha",
    type=bounded(ALPHA),
    default=0.05,
    show_default=True,
    help="Two-sided significance level.",
)
@click.option(
    "--margin",
    type=bounded(MARGIN),
    default=0.02,
    show_default=True,
    help="Equivalence margin, in score points (0 <= x < 1): the mean paired difference's "
    "interval inside ±margin means unchanged (bootstrap, t).",
)
@click.option(
    "--min-drop",
    type=bounded(MIN_DROP),
    default=0.0,
    show_default=True,
    help="The smallest drop in score points (mean paired difference, 0 <= x < 1) a regressed "
    "suite must show to fail the gate (E-137); 0 fails it on every regressed suite (D-16).",
)
@click.option(
    "--seed",
    type=bounded(SEED),
    default=0,
    show_default=True,
    help="Bootstrap random seed: the same seed gives the same interval.",
)
@click.option(
    "--resamples",
    type=bounded(RESAMPLES),
    default=MIN_RESAMPLES,
    show_default=True,
    help="Bootstrap resamples of the tasks (10,000 to 1,000,000: at least §5's 10,000).",
)
@click.option(
    "--score",
    "score_kind",
    type=click.Choice(SCORES),
    default="gating",
    show_default=True,
    help="Compare task gating scores (D-19) or meanScore.",
)
@click.option(
    "--base-run-id",
    "base_run",
    default=None,
    help="The baseline run's runId, when BASE holds several runs of a suite (default: its "
    "only one).",
)
@click.option(
    "--cand-run-id",
    "cand_run",
    default=None,
    help="The candidate run's runId, when CAND holds several runs of a suite (default: its "
    "only one).",
)
@click.option(
    "--allow-mixed",
    is_flag=True,
    help="Compare runs graded differently (suite vs host record, other suite file or grading "
    "options); refused by default.",
)
@click.option(
    "--allow-same-run",
    is_flag=True,
    help="Compare a run with itself or with a copy of its events (same events under another "
    "name); refused by default, since such a gate always passes.",
)
@click.option(
    "--fail-on",
    type=click.Choice(["regressed", "inconclusive"]),
    default="regressed",
    show_default=True,
    help="inconclusive: also exit 1 on an inconclusive verdict or a suite on one side only.",
)
@click.option(
    "--correction",
    type=click.Choice(CORRECTIONS),
    default="holm",
    show_default=True,
    help="When several suites are tested at once: Holm (family-wise error at --alpha), "
    "Benjamini-Hochberg (false discovery rate) or none; one suite is never adjusted.",
)
@click.option(
    "--plan",
    "with_plan",
    is_flag=True,
    help="Plan every suite: the effect detectable now and the tasks, or trials per task, "
    "needed to detect --effect (default: only under an inconclusive verdict).",
)
@click.option(
    "--effect",
    type=bounded(EFFECT),
    default=0.05,
    show_default=True,
    help="The change in score points (0 to 1) a plan sizes the comparison to detect.",
)
@click.option(
    "--power",
    type=bounded(POWER),
    default=0.8,
    show_default=True,
    help="The chance a plan asks of detecting --effect.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the comparisons as JSON (default: a table)."
)
@click.option(
    "--junit",
    "junit_path",
    default=None,
    metavar="FILE",
    help="Also write a JUnit XML test report to FILE (a test suite per eval suite, a test case "
    "per paired task; a task that dropped in a suite failing the gate is a failure saying what "
    "changed, E-139; default: none).",
)
@click.option(
    "--markdown",
    "markdown_path",
    default=None,
    metavar="FILE",
    help="Also write the verdict and what changed as Markdown to FILE, for a pull-request "
    "comment or a CI job summary (E-138; default: none); names tools and argument paths, "
    "never values (unless --with-argument-values).",
)
@click.option(
    "--with-argument-values",
    "argument_values",
    is_flag=True,
    help="Add to the --markdown and --junit files, for reading in private, the argument values "
    "behind each changed argument path (baseline and candidate, JSON cut to 60 characters, in "
    "a few tasks); the terminal and --json never show values, so without either file it is a "
    "usage error (E-141; default: off, the files name tools and argument paths only).",
)
@quiet_option(
    "Print no comparison tables; the exit code is the verdict (warnings still on stderr)."
)
@filters.run_filter_options
@resources.resource_options()
def regress_command(
    base: str,
    cand: str,
    suite_paths: tuple[str, ...],
    method: Method,
    alpha: float,
    margin: float,
    min_drop: float,
    seed: int,
    resamples: int,
    score_kind: Score,
    base_run: str | None,
    cand_run: str | None,
    allow_mixed: bool,
    allow_same_run: bool,
    fail_on: str,
    correction: Correction,
    with_plan: bool,
    effect: float,
    power: float,
    as_json: bool,
    markdown_path: str | None,
    junit_path: str | None,
    argument_values: bool,
    quiet: bool,
    run_ids: tuple[str, ...],
    filter_suites: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
    resources: Resources,
) -> None:
    """Paired regression verdict of CAND against BASE, per suite (RFC 0244 §F).

    Each side is an event log (file, directory or glob: Parquet, or Inspect eval logs and
    eval-set directories, E-144; graded with --suites, or from the host record) or a
    tasks.parquet written by `evalbatch run` (with the runs.parquet beside it).
    Several suites tested at once are held to --alpha together (--correction); --plan says how
    many tasks or trials a verdict needs.

    \b
    Example:
      evalbatch regress data/samples/regress/baseline.parquet \\
        data/samples/regress/candidate.parquet --suites data/samples/suites   # exit 1: regressed

    Exit codes: 0 no suite regressed; 1 some suite regressed (or, with --fail-on inconclusive,
    was inconclusive or on one side only); 2 nothing compared (a run of a pair not graded
    included), an unknown run named, a run compared with itself (without --allow-same-run), sides
    graded differently (without --allow-mixed), unusable input or a usage error.
    """
    # the engine loads when the command runs, not for --help
    from evalbatch import api
    from evalbatch.files import write_aside
    from evalbatch.outputs.destinations import Inputs, refuse_overwrite
    from evalbatch.reduce import paired_verdict

    if argument_values and markdown_path is None and junit_path is None:
        # the values go only to files the user places (E-141): refused rather than ignored
        raise click.UsageError(
            "--with-argument-values adds argument values to the --markdown and --junit files "
            "only (the terminal and --json never show them): give --markdown FILE or --junit FILE"
        )
    reads = Inputs(events=[base, cand], suites=list(suite_paths))
    for option, path in (("--markdown", markdown_path), ("--junit", junit_path)):
        if path is not None:  # before anything is read or written (E-120)
            refuse_overwrite(option, path, reads)
    options = paired_verdict.RegressOptions(
        method=method,
        alpha=alpha,
        margin=margin,
        min_drop=min_drop,
        seed=seed,
        resamples=resamples,
        score=score_kind,
        correction=correction,
        plan=with_plan,
        effect=effect,
        power=power,
    )
    report = api.regress_paths(
        [base],
        [cand],
        list(suite_paths),
        options=options,
        base_run=base_run,
        cand_run=cand_run,
        run_filter=filters.build_run_filter(run_ids, filter_suites, since, until),
        allow_mixed=allow_mixed,
        allow_same_run=allow_same_run,
        resources=resources,
        argument_values=argument_values,
    )
    if as_json:
        printing.echo_json(report.report())
    elif not quiet:
        family = printing.family_line(report, alpha)
        if family is not None:
            click.echo(family)
        for comparison in report.comparisons:
            printing.print_comparison(comparison, alpha, report.plans.get(comparison.suite_id))
    if markdown_path is not None:
        from evalbatch.publish.regress_markdown import markdown_summary

        with write_aside(markdown_path, "no Markdown summary was written") as scratch:
            scratch.write_text(markdown_summary(report), encoding="utf-8")
    if junit_path is not None:
        from evalbatch.publish.regress_junit import junit_report

        with write_aside(junit_path, "no JUnit report was written") as scratch:
            scratch.write_bytes(junit_report(report))
    for side, suite in report.unpaired:
        # on stderr, loudly, in both modes: a gate that passed should still say what it skipped
        click.echo(
            f"warning: not compared (one side only): {side}: {printable(suite)}",
            err=True,
        )
    for comparison in report.comparisons:
        if comparison.nothing_compared:
            click.echo(
                f"evalbatch: suite {printable(comparison.suite_id)}: nothing was compared: "
                f"{printable(comparison.reason)}",
                err=True,
            )
    code = report.exit_code
    if code == 0 and fail_on == "inconclusive" and not report.shown_safe:
        code = EXIT_FAILED
    sys.exit(code)
