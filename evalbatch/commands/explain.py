"""`evalbatch explain EVENTS... --run-id RUN`: why each trial of one eval run graded as it did.

The explanation comes from `evalbatch.explain.run_explanation`, which grades with the grader's
own code, so it agrees with `evalbatch run`; `text_rendering` and `json_shape` print it. It is a
`faults.Command`: errors meant for users are one line on stderr and their exit code however the
command is invoked, handled where every command's are.
"""

from __future__ import annotations

import sys

import click

from evalbatch.commands import faults, printing, resources
from evalbatch.commands.click_options import (
    default_pass_score_option,
    on_miss_default_option,
    suites_option,
)
from evalbatch.commands.types import printable
from evalbatch.errors import EXIT_OK, EXIT_SKIPPED
from evalbatch.options import GradeOptions, OnMissDefault, Resources


@click.command(
    name="explain",
    cls=faults.Command,
    short_help="Expected vs observed calls and the grade, per trial.",
)
@click.argument("events", nargs=-1, required=True)
@resources.resource_options()
@suites_option
@click.option(
    "--run-id",
    "run_id",
    required=True,
    help="The eval run to explain: its runId, exactly (not a glob).",
)
@click.option(
    "--task-id",
    "task_id",
    default=None,
    help="Only the trials of this taskId, or of this Inspect sample id for a run ingested from "
    "an Inspect log (default: every task).",
)
@click.option(
    "--trial",
    "trial_index",
    type=click.IntRange(0),
    default=None,
    help="Only the trial of this index, from 0 (default: every trial).",
)
@click.option(
    "--epoch",
    type=click.IntRange(1),
    default=None,
    help="Only the trials of this Inspect epoch, from 1 (a run ingested from an Inspect log: its "
    "trial index is epoch - 1); not with --trial (default: every epoch).",
)
@click.option(
    "--sample-text",
    is_flag=True,
    help="Also show under each trial of an Inspect log what its sample said: the answer, the "
    "target, the scorer's explanation and the error, read from the log (each cut to 500 "
    "characters). For reading only: no output file ever holds them (§H, E-150).",
)
@click.option(
    "--inspect-log",
    type=click.Path(),
    default=None,
    help="With --sample-text: the run's Inspect log, or a directory holding it under its file "
    "name, for EVENTS that are an ingested directory (default: the log among EVENTS).",
)
@click.option(
    "--inspect-scorer",
    default=None,
    help="With --sample-text: the scorer whose answer and explanation are shown, NAME or "
    "NAME/KEY, as the log was ingested with (default: the log's first scorer, as ingest's).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the explanation as JSON (explainVersion 1)."
)
@default_pass_score_option
@on_miss_default_option
def explain(
    events: tuple[str, ...],
    suite_paths: tuple[str, ...],
    run_id: str,
    task_id: str | None,
    trial_index: int | None,
    epoch: int | None,
    sample_text: bool,
    inspect_log: str | None,
    inspect_scorer: str | None,
    as_json: bool,
    default_pass_score: float,
    on_miss_default: OnMissDefault,
    resources: Resources,
) -> None:
    """Explain how each trial of eval run RUN in EVENTS graded: expected and observed calls side
    by side, which expected call each observed call was paired with (the grader's maximum
    matching), the first check that failed and why (a forbidden tool, a missing call, an extra
    call, the order, the argument path that differed), fixture entries served or missed, judge
    calls, and the numbers the grade was made of. The grade is `evalbatch run`'s, made by the
    same code with the same options. Unlike the EvalSummary, this shows tool names and
    arguments: it is for reading, not for publishing. EVENTS may be Inspect eval logs (E-144);
    with --sample-text, each trial of one also shows its sample's answer, target, scorer
    explanation and error, read from the log when asked (E-150).

    \b
    Example:
      evalbatch explain data/samples/events --suites data/samples/suites \\
        --run-id acme/run-trajectory-0001 --task-id wrong-order

    Exit codes: 0 explained; 3 the run was not graded (the reasons are printed); 2 unusable
    input, a run, task or trial that is not in the events, a sample text that cannot be read
    (no log, another run's log), or a usage error.
    """
    # the engine loads when the command runs, not for --help
    from evalbatch.explain.json_shape import to_json
    from evalbatch.explain.run_explanation import explain_paths
    from evalbatch.explain.text_rendering import render_text

    if trial_index is not None and epoch is not None:
        raise click.UsageError("give --trial or --epoch, not both")
    if not sample_text and (inspect_log is not None or inspect_scorer is not None):
        raise click.UsageError("--inspect-log and --inspect-scorer are read with --sample-text")
    options = GradeOptions(
        default_pass_score=default_pass_score,
        on_miss_default=on_miss_default,
    )
    explanation = explain_paths(
        list(events),
        list(suite_paths),
        run_id,
        task_id=task_id,
        trial_index=trial_index,
        options=options,
        resources=resources,
        epoch=epoch,
        sample_text=sample_text,
        inspect_log=inspect_log,
        inspect_scorer=inspect_scorer,
    )
    if as_json:
        printing.echo_json(to_json(explanation))
    else:
        # text from the log is shown escaped: the run id whole (a newline in it stays on its
        # line), then everything else line by line
        text = render_text(explanation).replace(run_id, printable(run_id))
        click.echo("\n".join(printable(line) for line in text.split("\n")), nl=False)
    sys.exit(EXIT_OK if explanation.graded else EXIT_SKIPPED)
