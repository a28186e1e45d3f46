"""The docs cannot fall behind the CLI: every command of `evalbatch` has help text, every option
of it says what it does, and docs/ has a section for the command (a heading naming
`evalbatch <command>`)."""

from __future__ import annotations

import re

import click
import pytest

from evalbatch.cli import cli
from tests.conftest import ROOT

DOCS = ROOT / "docs"
HEADINGS = [
    line
    for page in sorted(DOCS.glob("*.md"))
    for line in page.read_text(encoding="utf-8").splitlines()
    if re.match(r"#{1,6} ", line)
]


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []
    for name, command in sorted(group.commands.items()):
        path = f"{prefix}{name}"
        if command.hidden:
            continue
        found.append((path, command))
        if isinstance(command, click.Group):
            found += _commands(command, f"{path} ")
    return found


COMMANDS = _commands(cli)


def test_every_command_is_walked() -> None:
    """A guard on the walk itself: the commands the docs name are found."""
    names = {path for path, _ in COMMANDS}
    assert {"run", "regress", "validate", "verify", "sql", "explain", "report"} <= names


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[p for p, _ in COMMANDS])
def test_command_has_help_and_every_option_says_what_it_does(
    path: str, command: click.Command
) -> None:
    assert (command.help or "").strip(), f"evalbatch {path} has no help text"
    undocumented = [
        param.opts[0]
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden and not (param.help or "").strip()
    ]
    assert not undocumented, f"evalbatch {path}: options without help: {undocumented}"


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[p for p, _ in COMMANDS])
def test_command_has_a_docs_section(path: str, command: click.Command) -> None:
    words = path.split()
    pattern = re.compile(r"`evalbatch " + re.escape(words[0]) + r"\b([^`]*)`")
    sections = [h for h in HEADINGS if pattern.search(h)]
    if len(words) > 1:  # a subcommand: its group's heading names it (`export otel|eee`)
        sections = [h for h in sections if re.search(r"\b" + re.escape(words[1]) + r"\b", h)]
    assert sections, f"docs/ has no `# ... evalbatch {path}` section"
