"""docs/rules.md defines every rule the repository cites, and points at code that exists.

The code, tests, README, docs/ and `--help` cite the contract as `§n`/`CONTRACT §n` and `D-n`,
RFC 0244 as `RFC 0244 §X`, and the project's own decisions as `E-n`. A citation a reader cannot
follow is a dead end, so each must resolve: contract sections and D-rules to a heading of
docs/rules.md, RFC sections to its table, E-decisions to docs/decisions.md. And since
docs/rules.md says where each rule lives, a restructuring that moves code must update it: every
path it names under "Where:" must exist, with the functions it names.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest

from evalbatch.cli import cli

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "docs" / "rules.md"
DECISIONS = ROOT / "docs" / "decisions.md"

#: Where rules are cited: these directories (text files only) and files: the README and every
#: page of docs/ (docs/rules.md, which defines them, included).
CITING_DIRS = ("evalbatch", "sql", "tests", "bench", "data", "examples")
CITING_FILES = ("README.md", *sorted(f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")))
TEXT_SUFFIXES = {".py", ".sql", ".md", ".json", ".ipynb", ".txt", ".toml"}
#: Top-level directories a "Where:" path may name.
REPO_DIRS = ("evalbatch", "sql", "tests", "bench", "docs", "data", "examples")

_SECTION = r"§(?:\d+(?:\.\d+)?|[A-Z])\b"
#: A run of section references ("§3.1-§3.4", "§B/§E", "§3.5 and §3.6"), with the word(s) before it
#: that may say which document it is in ("CONTRACT", "RFC 0244", "README.md", ...).
_SECTION_RUN = re.compile(
    rf"(?:(?P<doc>[\w./-]+(?: \d{{4}})?)\s+)?"
    rf"(?P<run>{_SECTION}(?:\s*(?:,|/|-|–|\.\.|and|or)\s*{_SECTION})*)"
)
_OTHER_DOCUMENT = re.compile(r"(?:RFC \d{4}|(?:[\w./-]*/)?(?:README|openwop-facts)(?:\.md)?)")
_ID_RANGE = r"\b{p}-(\d+)\s*(?:\.\.|–|—)\s*{p}-(\d+)\b"


@dataclass
class Citations:
    """Rule ids cited in some text, by the document they point into."""

    contract: set[str] = field(default_factory=set)  # "§3.2", "D-7"
    rfc: set[str] = field(default_factory=set)  # "§B" (RFC 0244)
    decisions: set[str] = field(default_factory=set)  # "E-12"

    def update(self, other: Citations) -> None:
        self.contract |= other.contract
        self.rfc |= other.rfc
        self.decisions |= other.decisions


def _ids(prefix: str, text: str) -> set[str]:
    """`D-n` or `E-n` ids in `text`, ranges (`E-3..E-5`) expanded."""
    found = {f"{prefix}-{n}" for n in re.findall(rf"\b{prefix}-(\d+)\b", text)}
    for low, high in re.findall(_ID_RANGE.format(p=prefix), text):
        found |= {f"{prefix}-{n}" for n in range(int(low), int(high) + 1)}
    return found


def citations(text: str) -> Citations:
    """What `text` cites. Sections of other documents (RFC 8259 §9, README §1) are not rules."""
    cited = Citations(contract=_ids("D", text), decisions=_ids("E", text))
    for match in _SECTION_RUN.finditer(text):
        doc = match["doc"] or ""
        if doc != "RFC 0244" and _OTHER_DOCUMENT.fullmatch(doc):
            continue
        # RFC 0244's sections are letters and the contract's numbers ("RFC 0244 §B / §1.3").
        for section in re.findall(_SECTION, match["run"]):
            (cited.rfc if section[1:].isalpha() else cited.contract).add(section)
    return cited


def _citing_files() -> Iterator[Path]:
    for name in CITING_DIRS:
        for path in sorted((ROOT / name).rglob("*")):
            if path.suffix in TEXT_SUFFIXES and path.is_file() and path != Path(__file__).resolve():
                yield path
    for name in CITING_FILES:
        yield ROOT / name


def _help_texts(command: click.Command) -> Iterator[str]:
    """Every help text a user of `evalbatch ... --help` reads."""
    yield from (command.help or "", command.short_help or "", command.epilog or "")
    for param in command.params:
        yield getattr(param, "help", None) or ""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            yield from _help_texts(sub)


@functools.cache  # one scan of the repository for the tests that read it; none changes it
def repository_citations() -> Citations:
    cited = Citations()
    for path in _citing_files():
        cited.update(citations(path.read_text(encoding="utf-8")))
    for text in _help_texts(cli):
        cited.update(citations(text))
    return cited


def rules_headings() -> list[str]:
    """The ids docs/rules.md defines: `## §n ...` and `### D-n ...` headings."""
    return re.findall(r"^#{2,3} (§\d+(?:\.\d+)?|D-\d+) ", RULES.read_text(), flags=re.M)


def rfc_table_sections() -> set[str]:
    return set(re.findall(r"^\| (§[A-Z]) \|", RULES.read_text(), flags=re.M))


def defined_decisions() -> set[str]:
    return set(re.findall(r"^- \*\*(E-\d+)\b", DECISIONS.read_text(), flags=re.M))


def where_paragraphs(text: str) -> list[str]:
    """Each "**Where:**" paragraph of docs/rules.md (up to the next blank line)."""
    return re.findall(r"^\*\*Where:\*\*(.*?)(?=\n\s*\n|\Z)", text, flags=re.M | re.S)


_NAMED = re.compile(r"`(?P<path>[^`]+)`(?:\s*\((?P<names>[^)]*)\))?")


def where_references(text: str) -> Iterator[tuple[str, list[str]]]:
    """(path, names given for it) for every backticked path in every "Where:" paragraph."""
    for paragraph in where_paragraphs(text):
        for match in _NAMED.finditer(paragraph):
            yield match["path"], re.findall(r"`([^`]+)`", match["names"] or "")


def _python_names(path: Path) -> set[str]:
    """Functions, classes, `Class.method`s and module-level assignments a Python file defines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {
                f"{node.name}.{member.name}"
                for member in node.body
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef)
            }
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names |= {target.id for target in targets if isinstance(target, ast.Name)}
    return names


def reference_faults(text: str) -> list[str]:
    """What "Where:" names that is not in the repository: a path, or a name in a file."""
    faults = []
    for ref, names in where_references(text):
        path = ROOT / ref
        if not ref.startswith(tuple(f"{d}/" for d in REPO_DIRS)) or not path.exists():
            faults.append(f"{ref}: no such repository path")
            continue
        if path.suffix == ".py":
            defined = _python_names(path)
            faults += [
                f"{ref}: defines nothing named {name}"
                for name in names
                if not fnmatch.filter(defined, name)
            ]
        elif path.suffix == ".sql":
            source = path.read_text(encoding="utf-8")
            faults += [f"{ref}: has no {name}" for name in names if name not in source]
    return faults


# ---------------------------------------------------------------------------------------------


def test_citations_are_read_per_document() -> None:
    """The scanner tells contract, RFC 0244 and other documents apart."""
    text = (
        "RFC 8259 §9 allows limits; data/samples/README.md §1-§3 and openwop-facts §8 are other "
        "documents. CONTRACT §8, (§3.1-§3.4), the §2.2 rule, RFC 0244 §B/§E, the §H pattern, "
        "RFC 0244 §A / §1.3, "
        "D-1..D-3 and D-18; decisions E-8..E-10, E-12."
    )
    cited = citations(text)
    assert cited.contract == {"§8", "§3.1", "§3.4", "§2.2", "§1.3", "D-1", "D-2", "D-3", "D-18"}
    assert cited.rfc == {"§A", "§B", "§E", "§H"}
    assert cited.decisions == {"E-8", "E-9", "E-10", "E-12"}


def test_the_scan_sees_the_repository_and_the_help_text() -> None:
    """The scan is not vacuous: every D-rule is cited somewhere, and `--help` cites rules too."""
    cited = repository_citations()
    assert {f"D-{n}" for n in range(1, 20)} <= cited.contract
    assert {"§1.1", "§2.1", "§3.2", "§4", "§8"} <= cited.contract
    help_cited = Citations()
    for text in _help_texts(cli):
        help_cited.update(citations(text))
    assert {"D-4", "D-9", "D-15", "D-19", "§1.2", "§8"} <= help_cited.contract


def test_every_cited_contract_rule_is_a_heading_of_rules_md() -> None:
    """Each §n and D-n cited in code, tests, README, bench, the pages of docs/
    or `--help` is defined by a heading of docs/rules.md."""
    headings = rules_headings()
    assert len(headings) == len(set(headings)), "a rule is defined twice"
    undefined = repository_citations().contract - set(headings)
    assert not undefined, f"cited but not defined in docs/rules.md: {sorted(undefined)}"


def test_every_contract_rule_has_its_heading() -> None:
    """All of D-1..D-19 are defined, whether cited today or not."""
    assert {f"D-{n}" for n in range(1, 20)} <= set(rules_headings())


def test_every_cited_rfc_section_is_in_the_rfc_table() -> None:
    """Each `RFC 0244 §X` cited has a row saying what it is about."""
    table = rfc_table_sections()
    assert table == {f"§{letter}" for letter in "ABCDEFGH"}
    assert repository_citations().rfc <= table


def test_every_rule_heading_says_where_it_lives() -> None:
    """Each section and rule of docs/rules.md names its code under "Where:"."""
    text = RULES.read_text()
    blocks = re.split(r"^(?=#{2,3} )", text, flags=re.M)
    missing = [
        block.splitlines()[0]
        for block in blocks
        if re.match(r"#{2,3} (§\d|D-\d)", block) and "**Where:**" not in block
    ]
    assert not missing


@pytest.mark.slow  # parses every module the rules name
def test_every_path_named_under_where_exists() -> None:
    """A restructuring that moves code must update docs/rules.md."""
    text = RULES.read_text()
    assert len(list(where_references(text))) > 100
    assert reference_faults(text) == []


def test_a_missing_path_or_name_under_where_is_found() -> None:
    """The check above can fail: a moved module, a renamed function and an empty glob are caught."""
    text = (
        "**Where:** `evalbatch/no_such_module.py` (`f`); `evalbatch/grade/trial_grading.py`"
        " (`no_such_function`, `grade_trials`, `test_*`); `sql/macros.sql` (`no_such_macro`);"
        " `tests/nowhere/`.\n"
    )
    assert reference_faults(text) == [
        "evalbatch/no_such_module.py: no such repository path",
        "evalbatch/grade/trial_grading.py: defines nothing named no_such_function",
        "evalbatch/grade/trial_grading.py: defines nothing named test_*",
        "sql/macros.sql: has no no_such_macro",
        "tests/nowhere/: no such repository path",
    ]


def test_every_cited_decision_is_defined_in_decisions_md() -> None:
    """Each E-n cited in code, tests, README or the pages of docs/ is defined
    in docs/decisions.md."""
    cited = repository_citations().decisions | citations(RULES.read_text()).decisions
    assert "E-1" in cited
    undefined = cited - defined_decisions()
    assert not undefined, f"cited but not defined in docs/decisions.md: {sorted(undefined)}"
