"""`evalbatch suite infer EVENTS... --out FILE`: a suite with trajectory expectations proposed
from the trials that passed (E-145).

`evalbatch.infer.suite_proposal` grades the logs, proposes and writes; this module parses the
options and prints what each task got. Faults are one line and their exit code, as
`faults.Command` reports every command's.
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from evalbatch.commands import faults, filters, printing, resources
from evalbatch.commands.click_options import (
    default_pass_score_option,
    on_miss_default_option,
    out_option,
    quiet_option,
    suites_option,
)
from evalbatch.options import (
    MATCH_MODES,
    PASS_RULES,
    GradeOptions,
    InferOptions,
    MatchMode,
    OnMissDefault,
    PassRule,
    Resources,
    StartingSuiteOptions,
)

if TYPE_CHECKING:
    from evalbatch.infer.suite_proposal import SuiteProposal


@click.group(
    name="suite",
    cls=faults.Group,
    short_help="Suite files from graded runs: infer expectations.",
)
def suite_group() -> None:
    """Make suite files from what graded eval runs did (`suite infer`)."""


@suite_group.command(
    name="infer", short_help="Propose trajectory expectations from the trials that passed."
)
@click.argument("events", nargs=-1, required=True)
@suites_option
@out_option(
    "out",
    required=True,
    type=click.Path(dir_okay=False),
    help="The suite file to write (an existing one only with --force; never a file read).",
)
@click.option(
    "--force", is_flag=True, help="Replace FILE when it exists (default: refuse, exit code 2)."
)
@click.option(
    "--mode",
    type=click.Choice(MATCH_MODES),  # the values InferOptions checks (E-130)
    default="in-order",
    show_default=True,
    help="The trajectory match mode written (§3.2). in-order requires the calls every passing "
    "trial made, in their order, and lets a later run add one.",
)
@click.option(
    "--pass-rule",
    type=click.Choice(PASS_RULES),  # the values StartingSuiteOptions checks (E-130)
    help="Without --suites: the trials.passRule of the suite made from the log (§3.5). mean: a "
    "task passes when its mean score over its trials reaches passScore; all: every trial "
    "passed; any: one did (default: mean, written where the runs had repeated trials; given, "
    "it is written for one trial per task too; E-149).",
)
@filters.run_filter_options
@default_pass_score_option
@on_miss_default_option
@resources.resource_options(batch_events=True)
@quiet_option(
    "Print nothing when the file is written; errors (runs or files skipped) still reach stderr."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document (every task, what it got or why not) instead of the table.",
)
def infer(
    events: tuple[str, ...],
    suite_paths: tuple[str, ...],
    out: str,
    force: bool,
    mode: MatchMode,
    pass_rule: PassRule | None,
    run_ids: tuple[str, ...],
    filter_suites: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
    default_pass_score: float,
    on_miss_default: OnMissDefault,
    resources: Resources,
    quiet: bool,
    as_json: bool,
) -> None:
    """Propose, per task, a trajectory expectation from the trials that passed in the eval runs
    of one suite in EVENTS, and write it as a suite file to FILE: the calls every passing
    trial made, in order, each with the argument values that never varied among them (compared
    as a subset). Trials are graded as `run` grades them: against --suites, or from the host's
    eval.scored passed when the suite is not given (D-4), a starting suite then made from the
    log, its passScore the bar graded with (--default-pass-score) and its passRule --pass-rule
    (E-149). With a suite, only each task's expected.trajectory is set; the rest is kept.

    It never guesses: a task with no passing trial, whose passing trials share no call, or whose
    passing trials disagree (some made calls another did not, or in another order) gets no
    expectation, and the table (or --json) says why, in counts.

    \b
    Examples:
      evalbatch suite infer data/samples/events --suites data/samples/suites \\
        --suite-id acme.support.evals.trials -o out/trials-inferred.json
      evalbatch suite infer data/samples/regress/baseline.parquet \\
        -o out/regression-inferred.json
      evalbatch validate out/trials-inferred.json out/regression-inferred.json

    Exit codes: 0 written; 3 written, but some run or event file was skipped (told on stderr);
    2 unusable input, no eval run selected, runs of several suites, FILE exists without
    --force or is an input, or a usage error (nothing written); 4 the file could not be
    written.
    """
    if pass_rule is not None and suite_paths:
        # a choice that would change nothing is refused, not ignored
        raise click.UsageError(
            "--pass-rule is the passRule of a suite made from the log: a suite given with "
            "--suites keeps its own (edit its trials.passRule); leave out one or the other"
        )
    from evalbatch.infer import suite_proposal  # the engine loads when run, not for --help

    suite_proposal.check_destination(out, force=force, events=events, suites=suite_paths)
    proposal = suite_proposal.infer_paths(
        list(events),
        list(suite_paths),
        options=InferOptions(mode=mode),
        grade_options=GradeOptions(
            default_pass_score=default_pass_score, on_miss_default=on_miss_default
        ),
        resources=resources,
        run_filter=filters.build_run_filter(run_ids, filter_suites, since, until),
        suite_options=StartingSuiteOptions(pass_rule) if not suite_paths else None,
    )
    written = suite_proposal.write_proposal(proposal, out, force=force)
    printing.print_skipped(proposal.problems)  # errors, told even with -q and --json
    if as_json:
        printing.echo_json(_document(proposal, str(written)))
    elif not quiet:
        printing.print_proposal(proposal, str(written))
    sys.exit(proposal.exit_code)


def _document(proposal: SuiteProposal, written: str) -> dict[str, Any]:
    """`suite infer --json`: where the file went, the suite, every task with what it got or
    why not (content-free: counts and reason codes), the problems and the exit code."""
    return {
        "out": written,
        "suiteId": proposal.suite_id,
        "version": proposal.version,
        "suiteFiles": list(proposal.suite_paths),
        "mode": proposal.mode,
        "runs": proposal.run_ids,
        "skippedRuns": proposal.skipped_runs,
        "tasks": [
            {
                "taskId": task.task_id,
                "trials": task.trials,
                "passingTrials": task.passing,
                "expectation": task.calls is not None,
                "calls": None if task.calls is None else len(task.calls),
                "reason": task.reason,
                "detail": task.detail,
            }
            for task in proposal.tasks
        ],
        "withExpectation": proposal.with_expectation,
        "withoutExpectation": len(proposal.tasks) - proposal.with_expectation,
        "problems": printing.problems_json(proposal.problems),
        "exitCode": proposal.exit_code,
    }
