"""The docs cannot fall behind the CLI, and cannot lead nowhere.

- every command of `evalbatch` has help text, and every option of it says what it does;
- every command has its page in docs/ (a heading naming `evalbatch <command>`), and every option
  its `--help` lists is named on that page;
- every relative link of README.md and docs/*.md leads to a file of the repository, and every
  `#anchor` to a heading of its target (GitHub's slugs);
- the README stays a front door (under 400 lines) and links every page of docs/, as the index
  docs/README.md does;
- the README's tour runs on the samples and prints what the README shows under each command;
- `evalbatch --help` lists each command by a whole phrase, never one cut short; help texts cite
  the rules as docs/rules.md names them (§n, D-n, E-n), not as a "CONTRACT";
- every `Example:` line of every command's `--help` runs on the samples, after `make run` and
  the tour's commands that make what it reads, and exits as it says (`# exit N`; else 0).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from evalbatch.cli import cli
from tests.helpers import EVALBATCH_BIN, ROOT

README_PATH = ROOT / "README.md"
README = README_PATH.read_text(encoding="utf-8")
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
#: the pages a command's reference may live on: the contract and the decisions are not one
REFERENCE_PAGES = [page for page in PAGES if page.name not in ("rules.md", "decisions.md")]
MARKDOWN = [README_PATH, *PAGES]
README_MAX_LINES = 400


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


def _prose(text: str) -> list[str]:
    """The lines of a markdown text outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def _headings(text: str) -> list[str]:
    return [line for line in _prose(text) if re.match(r"#{1,6} ", line)]


def _code_spans(text: str) -> list[str]:
    return [span for line in _prose(text) for span in re.findall(r"`([^`]+)`", line)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lowercased, without punctuation (letters, digits,
    `_`, `-` and spaces are kept), spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.lstrip("#").strip())
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor; a repeated slug takes `-1`, `-2`, ... as on GitHub."""
    seen: Counter[str] = Counter()
    found = set()
    for heading in _headings(text):
        base = slug(heading)
        found.add(f"{base}-{seen[base]}" if seen[base] else base)
        seen[base] += 1
    return found


_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def links(text: str) -> list[str]:
    """The targets of the inline links of a markdown text (not in code), in order."""
    found = []
    for line in _prose(text):
        # a code span inside the link text (`[`evalbatch history`](...)`) is part of the link
        found += _LINK.findall(re.sub(r"`[^`]*`", "", line))
    return found


def link_faults(page: Path, root: Path = ROOT) -> list[str]:
    """The relative links of `page` that lead to no file of the repository at `root`, or to no
    heading of their target."""
    faults = []
    name = page.relative_to(root)
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        path = (page.parent / path_part).resolve() if path_part else page
        if not path.is_relative_to(root) or not path.exists():
            faults.append(f"{name}: {target}: no such file")
        elif (
            anchor
            and path.suffix == ".md"
            and anchor not in anchors(path.read_text(encoding="utf-8"))
        ):
            faults.append(f"{name}: {target}: no such heading")
    return faults


def linked_pages(page: Path) -> set[Path]:
    """The files of the repository that `page` links to."""
    targets = (t.partition("#")[0] for t in links(page.read_text(encoding="utf-8")))
    return {(page.parent / t).resolve() for t in targets if t and not re.match(r"[a-z]+:", t)}


# --- the commands ---------------------------------------------------------------------------


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


def command_pages(path: str) -> list[Path]:
    """The reference pages with a heading naming `evalbatch <path>` (a subcommand: its group's
    heading naming it, as `evalbatch export otel|eee`)."""
    words = path.split()
    pattern = re.compile(r"`evalbatch " + re.escape(words[0]) + r"\b([^`]*)`")
    found = []
    for page in REFERENCE_PAGES:
        sections = [h for h in _headings(page.read_text(encoding="utf-8")) if pattern.search(h)]
        if len(words) > 1:
            sections = [h for h in sections if re.search(r"\b" + re.escape(words[1]) + r"\b", h)]
        if sections:
            found.append(page)
    return found


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[p for p, _ in COMMANDS])
def test_command_has_a_docs_page(path: str, command: click.Command) -> None:
    pages = command_pages(path)
    assert len(pages) == 1, f"docs/ pages with a `# ... evalbatch {path}` heading: {pages}"


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[p for p, _ in COMMANDS])
def test_every_option_is_on_the_command_page(path: str, command: click.Command) -> None:
    """Each spelling `--help` lists (`-o` and `--out`) is named in code on the command's page."""
    (page,) = command_pages(path)
    named = {
        name
        for span in _code_spans(page.read_text(encoding="utf-8"))
        for name in re.findall(r"(?<![\w-])(--?\w[\w-]*)", span)
    }
    missing = [
        opt
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden
        for opt in param.opts
        if opt not in named
    ]
    assert not missing, f"docs/{page.name} does not name evalbatch {path} {missing}"


# --- links ----------------------------------------------------------------------------------


@pytest.mark.parametrize("page", MARKDOWN, ids=[str(p.relative_to(ROOT)) for p in MARKDOWN])
def test_every_relative_link_resolves(page: Path) -> None:
    assert link_faults(page) == []


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    """The check above can fail: a missing file, a missing heading and a file outside the
    repository are caught; links in code are not links; a heading's anchor drops punctuation and
    numbers repeats as GitHub's does."""
    root = tmp_path.resolve() / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "run.md").write_text("# `evalbatch run EVENTS...`\n", encoding="utf-8")
    (tmp_path / "outside.md").write_text("# Outside\n", encoding="utf-8")
    page = root / "docs" / "probe.md"
    page.write_text(
        "# History: `evalbatch history OUT_DIR... [--json]`\n\n## Twice\n\n## Twice\n\n"
        "[a](run.md) [b](nowhere.md) [c](run.md#no-such-heading) [d](#twice-1) [e](#twice-2)\n"
        "[f](#history-evalbatch-history-out_dir---json) [g](https://example.com/x#y)\n"
        "[`h`](run.md#evalbatch-run-events) [i](../../outside.md) `[j](in-code.md)`\n"
        "```\n[k](in-a-block.md)\n```\n",
        encoding="utf-8",
    )
    assert link_faults(page, root) == [
        "docs/probe.md: nowhere.md: no such file",
        "docs/probe.md: run.md#no-such-heading: no such heading",
        "docs/probe.md: #twice-2: no such heading",
        "docs/probe.md: ../../outside.md: no such file",
    ]


# --- the README, a front door -----------------------------------------------------------------


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) < README_MAX_LINES


def test_the_readme_links_every_page_of_docs() -> None:
    """Every page that left the README is reachable from it, and from the docs' own index."""
    pages = {page.resolve() for page in PAGES}
    assert sorted(p.name for p in pages - linked_pages(README_PATH)) == []
    index = (DOCS / "README.md").resolve()
    assert sorted(p.name for p in pages - {index} - linked_pages(index)) == []


def test_the_readme_names_the_two_commands() -> None:
    quickstart = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    assert "make run" in quickstart and "make test" in quickstart


# --- the tour runs ----------------------------------------------------------------------------

#: what `make run` runs (the Makefile's recipe), and the README's tour starts from
MAKE_RUN = "evalbatch run data/samples/events --suites data/samples/suites --out out/samples"


def _shell_env() -> dict[str, str]:
    """The environment the README's commands run in: the installed `evalbatch` on the path,
    the terminal's size and colours left out (the printed tables do not depend on the test's)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PATH"] = f"{EVALBATCH_BIN.parent}{os.pathsep}{env.get('PATH', '')}"
    env["NO_COLOR"] = "1"
    return env


def _run_in(where: Path, code: str, language: str = "sh") -> subprocess.CompletedProcess[str]:
    """`code` run as a user runs it, in `where`: a shell's commands, or a Python program."""
    argv = ["bash", "-c", code] if language == "sh" else [sys.executable, "-c", code]
    return subprocess.run(
        argv, cwd=where, env=_shell_env(), capture_output=True, text=True, timeout=600
    )


def _fenced_blocks(text: str) -> list[tuple[str, str, str | None]]:
    """(language, code, output shown) for every fenced sh or python block, in order: the output
    is the plain fenced block that follows it at once, None where none does."""
    pattern = r"^```(sh|python)\n(.*?)^```\n(?:```\n(.*?)^```\n)?"
    return [m.groups() for m in re.finditer(pattern, text, flags=re.S | re.M)]


def make_targets(code: str) -> list[str] | None:
    """The targets of a block that only runs make (`make inspect   # once`), else None."""
    lines = [line for line in code.splitlines() if line.strip()]
    found = [re.fullmatch(r"make ([\w-]+)(?:\s+#.*)?", line.strip()) for line in lines]
    if not lines or not all(found):
        return None
    return [match.group(1) for match in found if match]


def installs_after_make_run(target: str, where: Path) -> list[str]:
    """The extras `make TARGET` installs into a .venv that `make run` set up, as make itself
    says it would (`make -n`, so nothing is installed here): only `pip install` lines with
    `-c requirements.lock` (pinned) and extras may run; `make run`'s setup, up to date, does not
    run again."""
    venv = where / "venv-of-make-run"
    (venv / "bin").mkdir(parents=True)
    (venv / ".installed").touch()  # `make run`'s stamp, newer than pyproject.toml and the lock
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "-C", str(ROOT), f"VENV={venv}", target],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    extras = []
    for line in done.stdout.splitlines():
        if line.startswith("touch "):
            continue
        installed = re.fullmatch(
            rf"{re.escape(str(venv))}/bin/python -m pip install --quiet "
            r"-c requirements\.lock -e '\.\[([\w,]+)\]'",
            line,
        )
        assert installed is not None, f"make {target} would run: {line}"
        extras += installed.group(1).split(",")
    return extras


def _shows(shown: str, printed: str) -> bool:
    """`printed` is `shown`, where a line `...` in `shown` stands for lines left out."""
    have = [line.rstrip() for line in printed.strip("\n").splitlines()]
    want = [line.rstrip() for line in shown.strip("\n").splitlines()]
    if "..." not in want:
        return have == want
    chunks: list[list[str]] = [[]]
    for line in want:
        if line == "...":
            chunks.append([])
        else:
            chunks[-1].append(line)
    at = 0
    for i, chunk in enumerate(chunks):
        if i == 0:
            if have[: len(chunk)] != chunk:
                return False
            at = len(chunk)
            continue
        if i == len(chunks) - 1 and chunk:
            return len(have) - len(chunk) >= at and have[len(have) - len(chunk) :] == chunk
        found = next(
            (j for j in range(at, len(have) - len(chunk) + 1) if have[j : j + len(chunk)] == chunk),
            None,
        )
        if found is None:
            return False
        at = found + len(chunk)
    return True


def test_shown_output_with_lines_left_out() -> None:
    """A guard on the comparison: `...` stands for lines left out, nothing else does."""
    assert _shows("a\n...\nc\n", "a\nb\nc\n")
    assert _shows("a\n...\nc\n...\ne\n", "a\nb\nc\nd\ne\n")
    assert not _shows("a\n...\nc\n", "a\nb\nc\nd\n")
    assert not _shows("a\nc\n", "a\nb\nc\n")
    assert not _shows("a\n...\nd\n...\nc\n", "a\nb\nc\nd\n")


@pytest.mark.slow  # every command of the tour, run in new processes
def test_the_tour_prints_what_the_readme_shows(tmp_path: Path) -> None:
    """The README's examples run. In a directory holding the samples, `make run`'s
    command prints the Quickstart's table; then each command of the tour, in order, exits 0 and
    prints the output shown under it, with nothing on stderr."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert f"$(BIN)/{MAKE_RUN}" in makefile
    assert f"`make run` ran `{MAKE_RUN}`" in " ".join(README.split())
    (tmp_path / "data").symlink_to(ROOT / "data", target_is_directory=True)

    def run(language: str, code: str) -> subprocess.CompletedProcess[str]:
        return _run_in(tmp_path, code, language)

    quickstart = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    shown = quickstart.split("`make run` prints", 1)[1].split("```\n", 2)[1]
    made = run("sh", MAKE_RUN)
    assert (made.returncode, made.stderr) == (0, "")
    assert _shows(shown, made.stdout), made.stdout

    tour = README.split("## A 5-minute tour", 1)[1].split("\n## ", 1)[0]
    blocks = _fenced_blocks(tour)
    assert len(blocks) == len(re.findall(r"^```(?:sh|python)$", tour, flags=re.M))
    assert [lang for lang, _, shown in blocks if shown is not None].count("sh") >= 5
    for language, code, shown in blocks:
        targets = make_targets(code)
        if targets is not None:  # a step that installs what the next ones need, after `make run`
            assert shown is None and targets, code
            for target in targets:
                assert installs_after_make_run(target, tmp_path / target), code
            continue
        assert shown is not None, f"the tour shows no output under {code}"
        done = run(language, code)
        assert (done.returncode, done.stderr) == (0, ""), code
        assert _shows(shown, done.stdout), f"{code}\nprinted:\n{done.stdout}"


def test_the_tour_installs_what_it_uses_after_make_run(tmp_path: Path) -> None:
    """A reader who ran only `make run` has the default engine: where the tour needs more
    (step 7, Inspect's log reader), it says the one command that adds it, before the commands
    that need it; that command installs that extra, pinned, and nothing `make run` did again."""
    tour = README.split("## A 5-minute tour", 1)[1].split("\n## ", 1)[0]
    steps = [make_targets(code) for _, code, _ in _fenced_blocks(tour)]
    assert [targets for targets in steps if targets is not None] == [["inspect"]]
    ingest = next(i for i, (_, code, _) in enumerate(_fenced_blocks(tour)) if "ingest" in code)
    assert steps.index(["inspect"]) == ingest - 1
    assert installs_after_make_run("inspect", tmp_path) == ["inspect"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (reader,) = project["optional-dependencies"]["inspect"]
    assert reader.startswith("inspect_ai")  # the extra `ingest` names when it is missing


def test_make_steps_are_read_from_the_tour() -> None:
    """A guard on the reading: a block of make lines is a step; a block with anything else, or
    one shown with output, is not; blocks pair with the output shown right under them."""
    assert make_targets("make inspect   # once\n") == ["inspect"]
    assert make_targets("make inspect\nevalbatch run x\n") is None
    text = "```sh\nmake a\n```\n\ntext\n\n```sh\nrun b\n```\n```\nout\n```\n"
    assert _fenced_blocks(text) == [("sh", "make a\n", None), ("sh", "run b\n", "out\n")]


# --- --help ------------------------------------------------------------------------------------


def _help_output(path: str) -> str:
    """What `evalbatch PATH --help` prints on an 80-column terminal."""
    result = CliRunner().invoke(cli, [*path.split(), "--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


def _groups() -> list[tuple[str, click.Group]]:
    return [("", cli), *((p, c) for p, c in COMMANDS if isinstance(c, click.Group))]


@pytest.mark.parametrize(("path", "group"), _groups(), ids=[p or "evalbatch" for p, _ in _groups()])
def test_the_command_list_shows_each_command_by_a_whole_phrase(
    path: str, group: click.Group
) -> None:
    """`evalbatch --help` (and a group's) lists each command by its short help, whole: a
    phrase of its own, never its first sentence cut off with "..." to fit the line."""
    listing = _help_output(path).split("\nCommands:\n", 1)[1]
    lines = [line.split(None, 1) for line in listing.splitlines() if line.strip()]
    shown = {name: text for name, text in lines}
    assert "..." not in listing, listing
    assert shown == {
        name: command.short_help for name, command in group.commands.items() if not command.hidden
    }


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[path for path, _ in COMMANDS])
def test_help_cites_the_rules_as_the_docs_name_them(path: str, command: click.Command) -> None:
    """The README and docs/ call the contract docs/rules.md and cite it by its ids (§n, D-n;
    the decisions E-n): a help text names no "CONTRACT" a reader cannot find."""
    texts = [command.help or "", command.short_help or ""]
    texts += [getattr(param, "help", None) or "" for param in command.params]
    assert [text for text in texts if "CONTRACT" in text] == []


def help_examples(text: str) -> list[str]:
    """The commands under the `Example:` (or `Examples:`) heading of a help text, each on one
    line (a line ending in `\\` goes on), up to the next blank line."""
    found = re.search(r"^ *Examples?:\n((?: +\S.*\n?)+)", text, flags=re.M)
    if found is None:
        return []
    joined = re.sub(r"\\\n\s*", " ", found.group(1))
    return [" ".join(line.split()) for line in joined.splitlines() if line.strip()]


def expected_exit(example: str) -> int:
    """The exit code an example says it ends with (`# exit 1: ...`), else 0."""
    said = re.search(r"#\s*exit (\d+)", example)
    return int(said.group(1)) if said else 0


def test_help_examples_are_read_whole() -> None:
    """A guard on the reading: continued lines joined, comments kept, the block's end found."""
    text = (
        "Intro.\n\n  Examples:\n    evalbatch a x \\\n      --b y   # exit 1: no\n"
        "    evalbatch c\n\n  Exit codes: 0.\n"
    )
    assert help_examples(text) == ["evalbatch a x --b y # exit 1: no", "evalbatch c"]
    assert [expected_exit(e) for e in help_examples(text)] == [1, 0]
    assert help_examples("No example here.\n") == []


#: what `make run` and the README's tour (step 4) make before a help example may read it
TOUR_SETUP = (
    MAKE_RUN,
    "evalbatch run data/samples/regress --suites data/samples/suites --out out/regress --quiet",
)

EXAMPLE_COMMANDS = [
    (path, command) for path, command in COMMANDS if not isinstance(command, click.Group)
]


@pytest.fixture(scope="module")
def toured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the samples and what `make run` and the tour's step 4 wrote."""
    root = tmp_path_factory.mktemp("toured")
    (root / "data").symlink_to(ROOT / "data", target_is_directory=True)
    for command in TOUR_SETUP:
        done = _run_in(root, command)
        assert (done.returncode, done.stderr) == (0, ""), command
    return root


def test_the_examples_setup_is_the_tours() -> None:
    """The help examples read what a reader of the README has: `make run`'s outputs and the
    tour's, made by the very commands the README gives."""
    tour = " ".join(README.split("## A 5-minute tour", 1)[1].split("\n## ", 1)[0].split())
    assert f"`make run` ran `{MAKE_RUN}`" in " ".join(README.split())
    assert TOUR_SETUP[1] in tour


@pytest.mark.slow  # every help example, run in new processes
@pytest.mark.parametrize("path", [path for path, _ in EXAMPLE_COMMANDS])
def test_every_help_example_runs_on_the_samples(path: str, toured: Path, tmp_path: Path) -> None:
    """Each `Example:` line of `evalbatch PATH --help`, in order, in a copy of a directory that
    holds the samples, `make run`'s outputs and the tour's: it exits as the example says (0
    unless it ends with `# exit N`), with nothing on stderr when it exits 0 and never a
    traceback."""
    examples = help_examples(_help_output(path))
    assert examples, f"evalbatch {path} --help shows no example"
    (tmp_path / "data").symlink_to(ROOT / "data", target_is_directory=True)
    shutil.copytree(toured / "out", tmp_path / "out")
    ran = []
    for example in examples:
        done = _run_in(tmp_path, example)
        ran.append((example, done.returncode, done.stderr if done.returncode == 0 else ""))
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr, example
    assert ran == [(example, expected_exit(example), "") for example in examples]
