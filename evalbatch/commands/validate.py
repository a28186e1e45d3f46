"""`evalbatch validate SUITES...`: check suite files against the schema and the suite rules.

Each file is read and judged by `evalbatch.inputs.suites`; this module prints each fault with its
JSON path and turns what it found into the exit code (E-85).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evalbatch.commands import faults
from evalbatch.commands.types import printable
from evalbatch.errors import EXIT_FAILED, EXIT_OK, EXIT_UNUSABLE
from evalbatch.inputs import suites


@click.command(name="validate", cls=faults.Command)
@click.argument("suite_paths", nargs=-1, required=True)
def validate(suite_paths: tuple[str, ...]) -> None:
    """Check suite files (or directories of them) against the schema and the suite rules.

    \b
    Example:
      evalbatch validate data/samples/suites

    Prints each fault with its JSON path. Exit codes: 0 valid (warnings allowed); 1 some suite is
    invalid (a fault of the schema or the suite rules, no suiteId or version, two different
    copies of one suite); 2 a file cannot be read as JSON, or a path holds no suite file (a
    directory is searched for *.json).
    """
    checked: list[suites.SuiteFile] = []
    seen: set[Path] = set()
    invalid = unusable = 0
    for given in suite_paths:
        try:
            paths = suites.expand_suite_paths(given)
        except suites.SuiteFileError as exc:
            click.echo(f"evalbatch: {printable(exc)}", err=True)
            unusable += 1
            continue
        if not paths:
            click.echo(
                f"evalbatch: no suite file found in {printable(given)} (no *.json in it)", err=True
            )
            unusable += 1
        for path in paths:
            if path.resolve() in seen:
                continue
            seen.add(path.resolve())
            try:
                suite_file = suites.read_suite_file(path)
            except suites.SuiteFileError as exc:
                click.echo(f"evalbatch: {printable(exc)}", err=True)
                unusable += 1
                continue
            where = printable(suite_file.path)
            if not suite_file.faults:
                click.echo(f"{where}: ok")
            for fault in suite_file.faults:
                click.echo(f"{where}: {printable(fault)}")
            invalid += bool(suite_file.errors)
            checked.append(suite_file)
    matchable = [
        f for f in checked if isinstance(f.doc, dict) and suites.suite_ids(f.doc) is not None
    ]
    for choice in suites.resolve_suites(matchable).values():
        if choice.problem == "suite-conflict":
            click.echo(printable(f"{', '.join(choice.paths)}: error: {choice.message}"))
            invalid += 1
    sys.exit(EXIT_UNUSABLE if unusable else EXIT_FAILED if invalid else EXIT_OK)
