"""`evalbatch report OUT_DIR`: one self-contained HTML page of an `evalbatch run` output directory:
the verdict first, then the runs, the charts and each run's failing trials.

Unusable input raises the library's errors, which `faults.Command` turns into one line and exit
code 2; a page that cannot be written (a full disk, an unwritable directory) is exit code 4. The
page appears only when complete.
"""

from __future__ import annotations

import click

from evalbatch.commands import faults
from evalbatch.commands.click_options import out_option, quiet_option, suites_option
from evalbatch.commands.types import printable
from evalbatch.publish.worst_runs import DETAIL_RUNS


@click.command(
    name="report", cls=faults.Command, short_help="A self-contained HTML report with charts."
)
@click.argument("out_dir", type=click.Path())
@out_option(
    "output",
    type=click.Path(dir_okay=False),
    default=None,
    help="The HTML file to write (default: OUT_DIR/report.html; report.html here when OUT_DIR "
    "is event logs).",
)
@click.option("--title", default=None, help="Page title (default: 'Eval report: <OUT_DIR name>').")
@click.option(
    "--history",
    "history_dirs",
    multiple=True,
    type=click.Path(),
    help="An output directory of another night, or its event logs (repeatable): adds a trend "
    "chart per series over its runs and OUT_DIR's, as `evalbatch history` reads them (default: "
    "none, no trend chart).",
)
@suites_option
@click.option(
    "--run-id",
    "run_ids",
    multiple=True,
    metavar="ID",
    help="A run to show in full, its failing trials and tasks with their `explain` commands "
    "(repeatable; its runId exactly). Default: the --detail-runs lowest-scoring runs.",
)
@click.option(
    "--detail-runs",
    type=click.IntRange(min=0),
    metavar="N",
    default=DETAIL_RUNS,
    show_default=True,
    help="How many runs, the lowest-scoring, the page shows in full when no --run-id is given; "
    "every other run is one row of the runs table.",
)
@quiet_option("Print nothing when the page is written.")
def report(
    out_dir: str,
    output: str | None,
    title: str | None,
    history_dirs: tuple[str, ...],
    suite_paths: tuple[str, ...],
    run_ids: tuple[str, ...],
    detail_runs: int,
    quiet: bool,
) -> None:
    """Write an HTML report of the runs graded into OUT_DIR. It opens with the verdict:
    regressions, failing suites and failing tasks with their reason codes, worst first. Then a
    runs table to sort and filter; charts (paired differences of regressions, suite pass rates,
    pass^k by k, task scores, why trials failed, efficiency, cost) that draw the worst runs when
    there are more than they hold; and each run's failing trials with the `evalbatch explain`
    command that shows why, for the lowest-scoring runs (--detail-runs) or the runs named
    (--run-id); every other run is one row of the table, its detail one command away. With
    --history, a trend chart per series (suite, agent, model) across the nights given. The
    page loads nothing; without its script the runs table shows its first rows. OUT_DIR (and a
    --history night) may be event logs instead, Parquet or Inspect logs or an eval set: they
    are graded first, as `evalbatch run` grades them (--suites, else the host record).

    \b
    Examples:
      evalbatch report out/samples
      evalbatch report out/samples --history out/regress   # another night's outputs
      evalbatch report out/samples --run-id acme/run-trajectory-0001 -o run.html
      evalbatch report data/samples/inspect-regress/base.eval -o base.html   # an Inspect log

    Exit codes: 0 written; 2 OUT_DIR is unusable; 4 the page could not be written.
    """
    from evalbatch.publish import (
        html_report as reporting,  # matplotlib loads only when a report is made
    )

    path, page = reporting.write_report(
        out_dir,
        output,
        title,
        history_dirs,
        detail_runs=detail_runs,
        run_ids=run_ids,
        suites=suite_paths,
    )
    if not quiet:
        click.echo(f"wrote a report of {len(page.charts)} charts to {printable(path)}")
