"""`evalbatch validate SUITES...`: check suite files against the schema and the suite rules.

Each file is read and judged by `evalbatch.inputs.suites`; this module prints each fault with its
JSON path and turns what it found into the exit code (E-85).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from evalbatch.commands import faults, printing
from evalbatch.commands.click_options import capabilities_option, one_capabilities, quiet_option
from evalbatch.commands.types import printable
from evalbatch.errors import EXIT_FAILED, EXIT_OK, EXIT_UNUSABLE
from evalbatch.inputs import capabilities, suites


@click.command(
    name="validate",
    cls=faults.Command,
    short_help="Check suite files, and whether a host would accept them.",
)
@click.argument("suite_paths", nargs=-1, required=True)
@capabilities_option
@quiet_option("Print only the errors: no line for a valid file, no warnings.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document (every file with its faults, the conflicts) instead.",
)
def validate(
    suite_paths: tuple[str, ...],
    capabilities_paths: tuple[str, ...],
    quiet: bool,
    as_json: bool,
) -> None:
    """Check suite files (or directories of them) against the schema and the suite rules, and,
    with --capabilities, whether a host would accept them (RFC 0244 §G).

    \b
    Examples:
      evalbatch validate data/samples/suites
      evalbatch validate data/samples/suites \\
        --capabilities data/samples/capabilities/full-host.json
      evalbatch validate data/samples/suites \\
        --capabilities data/samples/capabilities/rfc0081-host.json   # exit 1: refused

    Prints each fault with its JSON path; with --capabilities, each field the host would refuse
    the suite on (400 validation_error, or 501 capability_not_provided when it runs no eval
    suite). Exit codes: 0 valid (warnings allowed) and, with --capabilities, accepted; 1 some
    suite is invalid (a fault of the schema or the suite rules, no suiteId or version, two
    different copies of one suite, a key repeated in one object) or the host would refuse it; 2
    a file cannot be read as JSON, or a path holds no suite file (a directory is searched for
    *.json), or the capabilities document is not one.
    """
    facets = one_capabilities(capabilities_paths)
    checked: list[suites.SuiteFile] = []
    seen: set[Path] = set()
    unusable: list[dict[str, str]] = []

    def cannot_use(path: str, message: str) -> None:
        click.echo(f"evalbatch: {printable(message)}", err=True)
        unusable.append({"path": path, "message": message})

    for given in suite_paths:
        try:
            paths = suites.expand_suite_paths(given)
        except suites.SuiteFileError as exc:
            cannot_use(given, str(exc))
            continue
        if not paths:
            cannot_use(given, f"no suite file found in {given} (no *.json in it)")
        for path in paths:
            if path.resolve() in seen:
                continue
            seen.add(path.resolve())
            try:
                suite_file = suites.read_suite_file(path)
            except suites.SuiteFileError as exc:
                cannot_use(str(path), str(exc))
                continue
            checked.append(suite_file)
            if not as_json:
                _print_file(suite_file, quiet)
                if facets is not None:
                    _print_host(suite_file, facets, quiet)
    matchable = [
        f for f in checked if isinstance(f.doc, dict) and suites.suite_ids(f.doc) is not None
    ]
    conflicts = [
        choice
        for choice in suites.resolve_suites(matchable).values()
        if choice.problem == "suite-conflict"
    ]
    invalid = sum(bool(f.errors) for f in checked) + len(conflicts)
    if facets is not None:
        invalid += sum(bool(capabilities.refusals(f.doc, facets)) for f in checked)
    code = EXIT_UNUSABLE if unusable else EXIT_FAILED if invalid else EXIT_OK
    if as_json:
        document: dict[str, Any] = {
            "files": [_file_json(f, facets) for f in checked],
            "conflicts": [
                {
                    "suiteId": c.suite_id,
                    "version": c.version,
                    "paths": list(c.paths),
                    "message": c.message,
                }
                for c in conflicts
            ],
            "unusable": unusable,
            "exitCode": code,
        }
        if facets is not None:
            document = {
                "capabilities": {"path": facets.source, "advertised": facets.advertised()},
                **document,
            }
        printing.echo_json(document)
    else:
        for choice in conflicts:
            click.echo(printable(f"{', '.join(choice.paths)}: error: {choice.message}"))
    sys.exit(code)


def _print_file(suite_file: suites.SuiteFile, quiet: bool) -> None:
    """`PATH: ok`, or each fault with its JSON path; with `quiet` only the errors."""
    where = printable(suite_file.path)
    if not suite_file.faults and not quiet:
        click.echo(f"{where}: ok")
    for fault in suite_file.faults:
        if fault.severity == "error" or not quiet:
            click.echo(f"{where}: {printable(fault)}")


def _print_host(
    suite_file: suites.SuiteFile, facets: capabilities.EvalSuiteFacets, quiet: bool
) -> None:
    """Whether the host of `facets` would accept the suite, or each field it would refuse it on
    (RFC 0244 §G); with `quiet` only the refusals. An invalid suite is never said to be accepted
    (its faults are printed above it)."""
    where = printable(suite_file.path)
    refused = capabilities.refusals(suite_file.doc, facets)
    if not refused and not suite_file.errors and not quiet:
        click.echo(f"{where}: the host would accept it ({printable(facets.source)})")
    for refusal in refused:
        click.echo(f"{where}: refused: {printable(refusal)}")


def _file_json(
    suite_file: suites.SuiteFile, facets: capabilities.EvalSuiteFacets | None
) -> dict[str, Any]:
    """One file of `validate --json`: its suite, whether it is valid, its faults; with
    capabilities, whether the host would accept it and every field it would refuse."""
    ids = suites.suite_ids(suite_file.doc) if isinstance(suite_file.doc, dict) else None
    host: dict[str, Any] = {}
    if facets is not None:
        refused = capabilities.refusals(suite_file.doc, facets)
        host = {
            "host": {
                "accepted": not refused and not suite_file.errors,
                "refusals": [refusal.as_json() for refusal in refused],
            }
        }
    return {
        "path": suite_file.path,
        "suiteId": ids[0] if ids else None,
        "version": ids[1] if ids else None,
        "valid": not suite_file.errors,
        "faults": [
            {"severity": f.severity, "path": f.path, "message": f.message}
            for f in suite_file.faults
        ],
        **host,
    }
