"""E-93, one vocabulary: the same option name for the same thing on every command,
and help on every option.

- `--out/-o` is where files go, `--run-id` (`--base-run-id`, `--cand-run-id`) chooses runs,
  `--suites` names suite files and `--suite-id` is the suiteId filter, on every command;
- the spellings these replaced before 0.1.0 was released are gone, not kept as hidden aliases
  (no version was released under them): each is a usage error, and no doc lists them;
- every option has help; one that takes a value says its default.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from evalbatch.cli import cli
from tests.helpers import run_main

ROOT = Path(__file__).resolve().parent.parent

#: every command that reads data takes --temp-dir (E-64)
READERS = {"run", "ingest", "verify", "regress", "explain", "sql", "export otel", "export eee"}

#: old spelling: (new spelling, the commands that once took the old one; it is gone from all)
RENAMED: dict[str, tuple[str, set[str]]] = {
    "--output": ("--out", {"report", "export otel", "export eee", "sql"}),
    "--run": ("--run-id", {"explain"}),
    "--task": ("--task-id", {"explain"}),
    "--suite": ("--suite-id", {"run", "verify", "regress", "sql", "history"}),
    "--summary": ("--summaries", {"verify"}),
    "--base-run": ("--base-run-id", {"regress"}),
    "--cand-run": ("--cand-run-id", {"regress"}),
    "--spill-dir": ("--temp-dir", READERS),
}

#: options still spelled the old way while a rename is under way (none now)
CONVERTED_ELSEWHERE: dict[tuple[str, str], list[str]] = {}

#: concept: (the keywords commands bind it to, its one spelling, commands that must take it)
CONCEPTS: dict[str, tuple[set[str], list[str], set[str]]] = {
    "where files go": (
        {"out_dir", "output", "out"},
        ["--out", "-o"],
        {"run", "ingest", "report", "export otel", "export eee", "sql"},
    ),
    "choosing runs": (
        {"run_id", "run_ids"},
        ["--run-id"],
        {"run", "verify", "regress", "explain", "sql"},
    ),
    "suite files": ({"suite_paths"}, ["--suites"], {"run", "verify", "regress", "explain", "sql"}),
    "the suiteId filter": ({"filter_suites"}, ["--suite-id"], {"run", "verify", "regress", "sql"}),
}

#: what each command needs to parse, as (option or None for an argument, value) pairs
REQUIRED: dict[str, list[tuple[str | None, str]]] = {
    "run": [(None, "events")],
    "ingest": [(None, "export.jsonl"), ("--out", "events")],
    "validate": [(None, "suites")],
    "verify": [(None, "events")],
    "regress": [(None, "base"), (None, "cand")],
    "explain": [(None, "events"), ("--run-id", "acme/run-1")],
    "sql": [(None, "events"), ("-e", "SELECT 1")],
    "report": [(None, "out")],
    "history": [(None, "out")],
    "export otel": [(None, "out")],
    "export eee": [(None, "out"), ("--model-id", "acme/agent"), ("--org", "acme")],
    "suite infer": [(None, "events"), ("--out", "inferred.json")],
}

#: a value to give each renamed option (two for the repeatable ones)
VALUES: dict[str, list[str]] = {
    "--out": ["written.jsonl"],
    "--run-id": ["acme/run-2"],
    "--task-id": ["order-status"],
    "--suite-id": ["acme.support.evals.trials", "acme.other"],
    "--summaries": ["host.json", "summaries.jsonl"],
    "--base-run-id": ["acme/base-1"],
    "--cand-run-id": ["acme/cand-1"],
    "--temp-dir": ["spill"],
}


def _commands(group: click.Group = cli, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    """Every leaf command, by its path ("run", "export otel")."""
    for name, command in sorted(group.commands.items()):
        path = f"{prefix}{name}"
        if isinstance(command, click.Group):
            yield from _commands(command, f"{path} ")
        else:
            yield path, command


COMMANDS = dict(_commands())


def _options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option)]


def _cases() -> list[tuple[str, str]]:
    return [(path, old) for old, (_, paths) in RENAMED.items() for path in sorted(paths)]


def _args(path: str, given: dict[str, list[str]]) -> list[str]:
    """The command's required arguments and options, then `given` (which replaces a required
    option of the same spelling or of its old spelling)."""
    replaced = set(given) | {RENAMED[o][0] for o in given if o in RENAMED}
    args: list[str] = []
    for option, value in REQUIRED[path]:
        if option is None:
            args.append(value)
        elif option not in replaced:
            args += [option, value]
    for option, values in given.items():
        for value in values:
            args += [option, value]
    return args


def _parsed(path: str, args: list[str]) -> dict[str, Any]:
    """The keywords the command's body would be called with (parsing only, nothing runs)."""
    return COMMANDS[path].make_context(path, list(args)).params


def test_the_cli_holds_the_commands_this_test_knows() -> None:
    """Every command is checked below: a new one must be added to REQUIRED."""
    assert set(COMMANDS) == set(REQUIRED)


# --- help on every option ---------------------------------------------------------------------


def test_every_option_of_every_command_has_help_that_states_its_default() -> None:
    """E-93: help text on every option (`--method`, `--resamples`, ... included), the
    hidden old spellings too; an option that takes a value and may be left out says its default
    (shown by click, or in the text)."""
    every: list[tuple[str, click.Option]] = []
    for path, command in [("evalbatch", cli), *COMMANDS.items()]:
        params = command.get_params(click.Context(command))  # --help and --version included
        every += [(path, p) for p in params if isinstance(p, click.Option)]
    assert len(every) > 60
    lacking = [f"{path} {'/'.join(p.opts)}" for path, p in every if not (p.help or "").strip()]
    assert lacking == []
    silent = [
        f"{path} {'/'.join(p.opts)}"
        for path, p in every
        if not (p.is_flag or p.count or p.multiple or p.required or p.hidden)
        and (path, p.name) not in CONVERTED_ELSEWHERE
        and not p.show_default
        and "default" not in (p.help or "")
    ]
    assert silent == []


def test_the_regress_test_options_say_what_they_do() -> None:
    """E-93: `--method` and `--resamples`, the options of the paired test, have help that says
    what they do, with the default (and `--margin` its unit)."""
    regress = {p.name: p for p in _options(COMMANDS["regress"])}
    assert "paired test" in (regress["method"].help or "")
    assert regress["method"].show_default
    assert "resamples" in (regress["resamples"].help or "")
    assert regress["resamples"].show_default
    assert "score points" in (regress["margin"].help or "")  # the unit of the margin


# --- one name per concept ---------------------------------------------------------------------


@pytest.mark.parametrize("concept", sorted(CONCEPTS))
def test_one_name_per_concept_on_every_command(concept: str) -> None:
    """E-93: `--out/-o`, `--run-id`, `--suites`, `--suite-id` spelled alike on every
    command that takes them (a command binding the concept under another spelling fails)."""
    keywords, spelling, expected = CONCEPTS[concept]
    found: dict[str, list[str]] = {}
    for path, command in COMMANDS.items():
        for option in _options(command):
            if option.name in keywords and not option.hidden:
                if (path, option.name) in CONVERTED_ELSEWHERE:
                    continue
                found[path] = sorted(option.opts + option.secondary_opts)
    assert expected <= set(found), f"{concept}: some command lost its option"
    assert {path: opts for path, opts in found.items() if opts != sorted(spelling)} == {}


def test_a_keyword_is_spelled_alike_on_every_command() -> None:
    """E-93: no near-synonyms: two commands whose option binds the same keyword
    (`output`, `as_json`, `quiet`, ...) give it the same spellings."""
    spellings: dict[str, dict[str, list[str]]] = {}
    for path, command in COMMANDS.items():
        for option in _options(command):
            if option.hidden or (path, option.name) in CONVERTED_ELSEWHERE:
                continue
            assert option.name is not None
            spellings.setdefault(option.name, {})[path] = sorted(option.opts)
    differing = {
        name: by_command
        for name, by_command in spellings.items()
        if len({tuple(opts) for opts in by_command.values()}) > 1
    }
    assert differing == {}


@pytest.mark.parametrize("path", sorted(REQUIRED))
def test_help_lists_the_new_names_and_not_the_old(
    path: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-93: `--help` shows the new spellings; no old spelling is listed."""
    code, out, err = run_main(monkeypatch, capsys, *path.split(), "--help")
    assert (code, err) == (0, "")
    listed = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", out))
    new = {new for new, paths in RENAMED.values() if path in paths}
    new |= {s for _, spelling, paths in CONCEPTS.values() if path in paths for s in spelling}
    assert new <= listed
    # an option another item converts keeps its old long spelling (the last one listed) for now
    still_old = {opts[-1] for (p, _), opts in CONVERTED_ELSEWHERE.items() if p == path}
    assert set(RENAMED) & listed == still_old


def test_no_command_keeps_a_hidden_alias() -> None:
    """The old spellings are removed, not hidden: no command has a hidden option."""
    hidden = [
        f"{path} {'/'.join(option.opts)}"
        for path, command in COMMANDS.items()
        for option in _options(command)
        if option.hidden
    ]
    assert hidden == []


@pytest.mark.parametrize(("path", "old"), _cases())
def test_an_old_spelling_is_a_usage_error(
    path: str, old: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An old spelling is no option at all: exit 2, nothing runs, no note about a rename."""
    new = RENAMED[old][0]
    args = [*path.split(), *_args(path, {new: []}), old, VALUES[new][0]]
    code, out, err = run_main(monkeypatch, capsys, *args)
    assert code == 2, err
    assert out == ""
    assert f"No such option '{old}'" in err
    assert "renamed" not in err


def test_the_docs_list_no_renamed_options() -> None:
    """docs/commands.md has no "Renamed options" table any more, and no doc offers an old
    spelling or `suite_paths=`."""
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in docs:
        if page.name == "decisions.md":  # the record of what was decided, old names included
            continue
        text = page.read_text(encoding="utf-8")
        assert "Renamed options" not in text, page
        assert "suite_paths=" not in text, page
