"""`evalbatch export otel|eee OUT_DIR`: graded results as OpenTelemetry events or Every Eval Ever
records, read from an `evalbatch run` output directory.

Unusable input raises the library's errors, which `faults.Command` turns into one line and exit
code 2; a file that cannot be written is exit code 4. The output file appears only when complete.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import click

from evalbatch import files
from evalbatch.commands import faults, resources
from evalbatch.commands.click_options import out_option, quiet_option
from evalbatch.commands.types import EpochSeconds, printable
from evalbatch.errors import InputError
from evalbatch.options import Resources
from evalbatch.publish import exports


@click.group(
    name="export",
    cls=faults.Group,
    short_help="Graded results as OpenTelemetry or Every Eval Ever.",
)
def export() -> None:
    """Export the graded results in OUT_DIR to other formats (RFC 0244 "Export")."""


@export.command(name="otel", short_help="OpenTelemetry gen_ai.evaluation.result events.")
@click.argument("out_dir", type=click.Path())
@resources.resource_options()
@click.option(
    "--events",
    "event_paths",
    multiple=True,
    type=click.Path(),
    help="The event logs OUT_DIR was graded from (repeatable): adds each record's time and the "
    "host's scoreLabel and evaluatorType.",
)
@out_option(
    "output",
    type=click.Path(dir_okay=False),
    default=None,
    help="The JSON lines file to write (default: OUT_DIR/otel-evaluations.jsonl).",
)
@click.option(
    "--service-name",
    default="evalbatch",
    show_default=True,
    help="The resource's service.name.",
)
@quiet_option("Print nothing when the file is written (warnings still on stderr).")
def otel(
    out_dir: str,
    event_paths: tuple[str, ...],
    output: str | None,
    service_name: str,
    quiet: bool,
    resources: Resources,
) -> None:
    """One OpenTelemetry `gen_ai.evaluation.result` event per counted trial, as OTLP/JSON log
    records: one LogsData document per eval run and line (the OTLP file-exporter layout).

    \b
    Example:
      evalbatch export otel out/samples --events data/samples/events

    Exit codes: 0 written (an event file that cannot be read is named on stderr and left out,
    as `run` does); 2 OUT_DIR or the events are unusable, or --out is one of the files read; 4
    the file could not be written.
    """
    from evalbatch.outputs import outdir, output_format  # loaded when run, not for --help
    from evalbatch.outputs.destinations import Inputs, refuse_overwrite

    target = Path(output) if output else Path(out_dir) / output_format.OTEL_FILE
    refuse_overwrite("--out", target, Inputs(events=event_paths, out_dirs=[out_dir]))
    out = outdir.load(out_dir)
    if not out.summaries:
        raise InputError(f"{out.path}: no graded run in summaries.jsonl; nothing to export")
    scored = None
    if event_paths:
        scored, left_out = exports.scored_fields(list(event_paths), resources)
        for message in left_out:  # as `run` skips them (E-22): named, the rest still read
            click.echo(f"evalbatch: left out: {printable(message)}", err=True)
    tally = exports.OtelTally()

    def lines() -> Iterator[str]:
        documents = exports.otel_documents(out, scored, service_name=service_name, tally=tally)
        for document in documents:
            yield exports.otel_line(document)
        if scored is not None and tally.records and tally.without_event == tally.records:
            raise InputError(
                "the events given hold none of the graded trials' eval.scored events "
                f"(were they graded into {out.path}?)"
            )

    files.write_atomic(target, lines())
    if tally.without_event:
        click.echo(
            f"  warning: {tally.without_event} trial(s) have no eval.scored in --events: "
            "written without time and host fields",
            err=True,
        )
    if not quiet:
        click.echo(
            f"wrote {tally.records} {exports.EVENT_NAME} records of {tally.documents} runs "
            f"to {printable(target)}"
        )


@export.command(name="eee", short_help="Every Eval Ever aggregate records (schema 0.3.0).")
@click.argument("out_dir", type=click.Path())
@resources.resource_options()
@click.option(
    "--model-id",
    required=True,
    help="The evaluated agent or model, as developer/name (EEE model_info.id).",
)
@click.option(
    "--org",
    "organization",
    required=True,
    help="The organization publishing the records (EEE source_organization_name).",
)
@click.option("--model-name", default=None, help="Display name (default: the part after '/').")
@click.option("--developer", default=None, help="Model developer (default: the part before '/').")
@click.option(
    "--deployment-type",
    type=click.Choice(exports.EEE_DEPLOYMENT_TYPES),
    default="unknown",
    show_default=True,
    help="How the evaluated model is deployed (the record's model deployment type).",
)
@click.option(
    "--model-availability",
    type=click.Choice(exports.EEE_AVAILABILITY),
    default="unknown",
    show_default=True,
    help="Whether the evaluated model's weights are open (the record's model availability).",
)
@click.option(
    "--relationship",
    type=click.Choice(exports.EEE_RELATIONSHIPS),
    default="other",
    show_default=True,
    help="Who ran the evaluation, relative to the model's developer.",
)
@click.option(
    "--retrieved-at",
    type=EpochSeconds(),
    default=None,
    help="Record creation time as Unix epoch seconds (default: now); fix it for "
    "reproducible files.",
)
@out_option(
    "output",
    type=click.Path(dir_okay=False),
    default=None,
    help="The JSON lines file to write (default: OUT_DIR/eee.jsonl).",
)
@quiet_option("Print nothing when the file is written.")
def eee(
    out_dir: str,
    model_id: str,
    organization: str,
    model_name: str | None,
    developer: str | None,
    deployment_type: str,
    model_availability: str,
    relationship: str,
    retrieved_at: str | None,
    output: str | None,
    quiet: bool,
    resources: Resources,  # accepted as on every command; eee reads no events, so no DuckDB
) -> None:
    """One Every Eval Ever aggregate record (schema 0.3.0) per eval run, one per line: the suite
    score with its clustered standard error, pass@k and pass^k, and each task's.

    \b
    Example:
      evalbatch export eee out/samples --model-id acme/support-agent --org acme

    Exit codes: 0 written; 2 OUT_DIR is unusable, or --out is one of its files; 4 the file could
    not be written.
    """
    from evalbatch.outputs import outdir, output_format  # loaded when run, not for --help
    from evalbatch.outputs.destinations import Inputs, refuse_overwrite

    if retrieved_at is None:
        retrieved_at = repr(time.time())
    source = exports.EeeSource(
        model_id=model_id,
        organization=organization,
        model_name=model_name,
        developer=developer,
        deployment_type=deployment_type,
        model_availability=model_availability,
        relationship=relationship,
        retrieved_timestamp=retrieved_at,
    )
    target = Path(output) if output else Path(out_dir) / output_format.EEE_FILE
    refuse_overwrite("--out", target, Inputs(out_dirs=[out_dir]))
    out = outdir.load(out_dir)
    if not out.summaries:
        raise InputError(f"{out.path}: no graded run in summaries.jsonl; nothing to export")
    records = exports.eee_records(out, source)
    files.write_atomic(target, exports.eee_jsonl(records))
    results = sum(len(r["evaluation_results"]) for r in records)
    if not quiet:
        click.echo(f"wrote {len(records)} records ({results} results) to {printable(target)}")
