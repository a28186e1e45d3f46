"""E-141: `regress --with-argument-values` adds, to the Markdown and JUnit files only, the
argument values behind each changed argument path (`other-args`), for files read in private.

Distinctive values are planted in the logs. Without the option they are in no output (terminal,
`--json`, `--markdown`, `--junit`); with it they are in the two files, read back with the
maintained consumers the other tests use (markdown-it-py, junitparser), cut to a bounded length
and escaped for the format, while the terminal, `--json`, the verdict and the exit code stay
byte for byte what they were. A tasks table holds no calls: the option then adds nothing. Given
without a file to add them to, the option is a usage error.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from junitparser import Failure, JUnitXml
from markdown_it import MarkdownIt

from evalbatch import api
from evalbatch.cli import cli
from evalbatch.pairing.sides import RegressionReport
from evalbatch.publish.regress_markdown import markdown_summary
from evalbatch.reduce import behaviour_changes, paired_verdict
from tests.helpers import dropped_pair, write_events, write_json
from tests.logbuilder import EPOCH, LogBuilder, expect, golden, suite, traj
from tests.test_regress_markdown import headings, tables

LOOKUP, REFUND = "crm:lookup", "billing:refund"
TASKS = [f"t{i}" for i in range(8)]
#: what a secret looks like; no id, tool or path of these logs holds it
MARKER = "sk-live-SECRET"
OTHER_ORDER_ID = "calls crm:lookup with other orderId"


def _order_id(side: str, i: int) -> str:
    return f"{MARKER}-{side}-{i}"


def _logs(tmp_path: Path, order_id: Any = _order_id) -> list[str]:
    """A baseline and a candidate whose first six tasks send another order id, which the suite
    expects to be the baseline's: those six drop (their tool path breaks), the last two do not
    move. Returns the `regress` arguments."""
    paths = []
    for name, day in (("base", 0), ("cand", 1)):
        log = LogBuilder(f"acme/run-{name}", EPOCH + dt.timedelta(days=day))
        log.eval_started(task_count=len(TASKS))
        for i, task in enumerate(TASKS):
            sent = order_id(name if i < 6 else "base", i)
            log.trial(task, [(LOOKUP, {"orderId": sent, "locale": "en"}), REFUND])
        log.eval_completed()
        paths.append(str(write_events(tmp_path / f"{name}.parquet", log.rows)))
    expected = [
        golden(
            task,
            traj("in-order", [expect(LOOKUP, {"orderId": order_id("base", i)}, "subset"), REFUND]),
        )
        for i, task in enumerate(TASKS)
    ]
    write_json(tmp_path / "suites" / "s.json", suite(*expected))
    return [*paths, "--suites", str(tmp_path / "suites"), "--method", "paired-t"]


def _regress(tmp_path: Path, argv: list[str], *options: str) -> dict[str, Any]:
    """The terminal (with --markdown and --junit written beside it) and `--json` of one
    comparison: exit codes, stdout and both files' text."""
    out = tmp_path / ("with" if options else "without")
    out.mkdir()
    files = ["--markdown", str(out / "s.md"), "--junit", str(out / "r.xml")]
    shown = CliRunner().invoke(cli, ["regress", *argv, *files, *options])
    as_json = CliRunner().invoke(cli, ["regress", *argv, "--json", *files, *options])
    return {
        "code": shown.exit_code,
        "terminal": shown.output,
        "json_code": as_json.exit_code,
        "json": as_json.stdout,
        "markdown": (out / "s.md").read_text(encoding="utf-8"),
        "junit": (out / "r.xml").read_text(encoding="utf-8"),
        "xml": JUnitXml.fromfile(str(out / "r.xml")),
    }


def _failures(xml: JUnitXml) -> dict[str, Failure]:
    return {
        case.name: result
        for junit_suite in xml
        for case in junit_suite
        for result in case.result
        if isinstance(result, Failure)
    }


def test_e141_values_are_in_no_output_without_the_option_and_in_the_two_files_with_it(
    tmp_path: Path,
) -> None:
    argv = _logs(tmp_path)
    without = _regress(tmp_path, argv)
    assert without["code"] == without["json_code"] == 1
    for name in ("terminal", "json", "markdown", "junit"):
        assert MARKER not in without[name], name
    # the path is named everywhere: the change is there, only its values are not
    for name in ("terminal", "markdown", "junit"):
        assert OTHER_ORDER_ID in without[name], name
    assert "other-args:crm:lookup:orderId" in without["json"]
    assert "argument values" not in without["markdown"].lower()
    got = _regress(tmp_path, argv, "--with-argument-values")
    # the verdict, the exit code, the terminal and --json: byte for byte unchanged (§H)
    for name in ("code", "terminal", "json_code", "json"):
        assert got[name] == without[name], name
    assert MARKER not in got["terminal"] and MARKER not in got["json"]
    # Markdown: the headline and the suite table as they were, a line saying what the file
    # holds, then the values of the first three tasks of the change
    text = got["markdown"]
    assert headings(text) == headings(without["markdown"])
    assert tables(text)[:2] == tables(without["markdown"])[:2]
    assert "**This summary holds argument values from the logs**" in text
    values = tables(text)[2]
    assert values == [
        ["change", "task", "baseline", "candidate"],
        *(
            [OTHER_ORDER_ID, f"t{i}", f'"{_order_id("base", i)}"', f'"{_order_id("cand", i)}"']
            for i in range(3)
        ),
    ]
    # JUnit: the same cases, properties and failure messages; each failing task's text adds
    # its own values, a line under the message
    failures, before = _failures(got["xml"]), _failures(without["xml"])
    assert {k: f.message for k, f in failures.items()} == {k: f.message for k, f in before.items()}
    assert set(failures) == set(TASKS[:6])
    for i, task in enumerate(TASKS[:6]):
        assert failures[task].text.splitlines() == [
            failures[task].message,
            f'{OTHER_ORDER_ID}: baseline "{_order_id("base", i)}" '
            f'→ candidate "{_order_id("cand", i)}"',
        ]
    (junit_suite,) = list(got["xml"])
    (before_suite,) = list(without["xml"])
    assert [(p.name, p.value) for p in junit_suite.properties()] == [
        (p.name, p.value) for p in before_suite.properties()
    ]
    assert (got["xml"].tests, got["xml"].failures) == (without["xml"].tests, 6)


def test_e141_the_option_without_a_file_is_a_usage_error(tmp_path: Path) -> None:
    """The terminal and --json never show values: asked for with nowhere to put them, the
    option is refused before anything is read, not ignored (exit 2)."""
    argv = _logs(tmp_path)
    for extra in ([], ["--json"], ["-q"]):
        result = CliRunner().invoke(cli, ["regress", *argv, "--with-argument-values", *extra])
        assert result.exit_code == 2, result.output
        assert "give --markdown FILE or --junit FILE" in result.output
        assert result.stdout == "" and MARKER not in result.output
    for one in (["--markdown", str(tmp_path / "s.md")], ["--junit", str(tmp_path / "r.xml")]):
        result = CliRunner().invoke(cli, ["regress", *argv, "--with-argument-values", *one])
        assert result.exit_code == 1
        assert MARKER in Path(one[1]).read_text(encoding="utf-8")


@pytest.mark.slow
def test_e141_a_tasks_table_side_adds_nothing(tmp_path: Path) -> None:
    """A tasks table holds no calls: with the option, the files are byte for byte those without
    it, and they say the calls need the event logs."""
    argv = _logs(tmp_path)
    tables_at = []
    for name, log in (("base", argv[0]), ("cand", argv[1])):
        out = tmp_path / f"out-{name}"
        api.write_outputs(log, out, [argv[3]])
        tables_at.append(str(out / "tasks.parquet"))
    without = _regress(tmp_path, tables_at)
    got = _regress(tmp_path, tables_at, "--with-argument-values")
    assert got["code"] == without["code"] == 1
    for name in ("terminal", "json", "markdown", "junit"):
        assert got[name] == without[name], name
        assert MARKER not in got[name], name
    assert "Calls not compared: a side is a tasks table" in got["markdown"]


@pytest.mark.slow
def test_e141_values_are_cut_and_escaped_for_each_format(tmp_path: Path) -> None:
    """A value that is markup, a control character and a long tail: in the Markdown one cell of
    plain text, in the XML text that parses; each cut to VALUE_CHARS with `…` (the tail,
    past the cut, is in neither file)."""
    hostile = '|<b>x</b> `c` *e* [l](http://e) & \x1b[31m \\ "q" ' + "A" * 80 + "TAIL-SECRET"

    def order_id(side: str, i: int) -> str:
        return f"{side}-{i}-{hostile}"

    got = _regress(tmp_path, _logs(tmp_path, order_id), "--with-argument-values")
    assert got["code"] == 1
    for name in ("markdown", "junit"):
        assert "TAIL-SECRET" not in got[name] and "\x1b" not in got[name], name
    shown = json.dumps(order_id("base", 0))[: behaviour_changes.VALUE_CHARS - 1] + "…"
    values = tables(got["markdown"])[2]
    assert all(len(row) == 4 for row in values)
    assert values[1][:3] == [OTHER_ORDER_ID, "t0", shown]
    tokens = MarkdownIt("commonmark").enable("table").parse(got["markdown"])
    kinds = {child.type for token in tokens for child in (token.children or [])}
    assert not kinds & {"link_open", "html_inline", "image", "em_open"}
    text = _failures(got["xml"])["t0"].text
    assert f"baseline {shown} → candidate " in text


def _frames(n: int, values: dict[str, list[str]]) -> tuple[pl.DataFrame, ...]:
    """Tasks, trials and calls of two runs of `n` tasks that all drop, each task calling one tool
    with the `values` (JSON texts of `inputs`, or text that is not JSON) its side sends."""
    ids = [f"t{i:04d}" for i in range(n)]
    base, cand, trials = dropped_pair(ids)
    calls = pl.DataFrame(
        [
            {"run_id": f"acme/{side}", "task_id": task, "trial": t, "call_pos": 0}
            | {"tool_name": LOOKUP, "inputs": inputs}
            for side, sent in values.items()
            for task in ids
            for t, inputs in enumerate(sent)
        ]
    )
    return base, cand, trials, calls


def _changes(n: int, values: dict[str, list[str]], kept: bool) -> behaviour_changes.Changes:
    base, cand, trials, calls = _frames(n, values)
    return behaviour_changes.behaviour_changes(
        paired_verdict.paired_tasks(base, cand),
        "gating_score",
        trials,
        "acme/base",
        trials,
        "acme/cand",
        (calls, calls),
        argument_values=kept,
    )


def test_e141_each_side_shows_a_few_values_each_cut_and_counts_the_rest() -> None:
    long = json.dumps({"orderId": "x" * 200})
    sent = {
        "base": [json.dumps({"orderId": f"o{i}", "note": "n"}) for i in range(5)],
        "cand": [json.dumps({"orderId": "o9"}), long, "not json {"],
    }
    changes = _changes(4, sent, kept=True)
    assert changes.report() == _changes(4, sent, kept=False).report()  # --json: no value
    assert _changes(4, sent, kept=False).argument_values == {}
    by_key = {c.key: c for c in changes.dropped}
    order = changes.examples(by_key["other-args:crm:lookup:orderId"])
    assert [task for task, _ in order] == ["t0000", "t0001", "t0002"]  # VALUE_TASKS of them
    values = order[0][1]
    assert values.baseline == '"o0", "o1", "o2" and 2 more'
    cut = '"' + "x" * (behaviour_changes.VALUE_CHARS - 2) + "…"
    assert values.candidate == f'"o9", {cut}'
    # the note only the baseline sends; the input that is not JSON, quoted as a JSON string
    (_, note), *_ = changes.examples(by_key["other-args:crm:lookup:note"])
    assert (note.baseline, note.candidate) == ('"n"', "not sent")
    (_, whole), *_ = changes.examples(by_key["other-args:crm:lookup:"])
    assert (whole.baseline, whole.candidate) == ("not sent", '"not json {"')


def test_e141_many_tasks_keep_the_markdown_bounded() -> None:
    """1,000 dropped tasks, each sending long values of its own: three tasks per open change
    row, every value cut; the summary stays the size of a pull-request comment."""
    sent = {
        side: [json.dumps({"orderId": f"{side}-{MARKER}-" + "v" * 500, f"k-{side}": 1})]
        for side in ("base", "cand")
    }
    changes = _changes(1_000, sent, kept=True)
    assert len(changes.argument_values) == 3_000
    comparison = paired_verdict.Comparison(
        suite_id="acme.team.evals.support",
        suite_version="1.0.0",
        baseline_run_id="acme/base",
        candidate_run_id="acme/cand",
        paired_task_count=1_000,
        score_delta=-1.0,
        verdict="regressed",
        method="paired-t",
        alpha=0.05,
        changes=changes,
    )
    text = markdown_summary(RegressionReport(comparisons=[comparison], unpaired=[]))
    values = tables(text)[2]
    assert len(values) == 1 + 3 * 3  # three changes open, three tasks each
    assert len(text) < 5_000


def test_e141_the_help_says_what_it_adds_where_and_its_default() -> None:
    shown = " ".join(CliRunner().invoke(cli, ["regress", "--help"]).output.split())
    at = shown.index("--with-argument-values")
    assert "--markdown and --junit files" in shown[at:] and "(E-141; default: off" in shown[at:]
    assert f"cut to {behaviour_changes.VALUE_CHARS} characters" in shown[at:]
