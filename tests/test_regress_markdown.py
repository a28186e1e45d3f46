"""E-138: `regress --markdown FILE`, read back by a maintained CommonMark parser (markdown-it-py,
with GitHub's tables): the headline, one row per suite, the changes in a table, the rest
folded; cells that stay cells whatever the ids hold; bounded; never an argument value."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from markdown_it import MarkdownIt
from markdown_it.token import Token

from evalbatch.cli import cli
from evalbatch.commands import printing
from evalbatch.pairing.sides import RegressionReport
from evalbatch.publish.regress_markdown import markdown_summary
from evalbatch.reduce import behaviour_changes, paired_verdict
from tests.helpers import SAMPLES, dropped_pair, write_events, write_json
from tests.logbuilder import EPOCH, LogBuilder, golden, suite, traj

LOOKUP, REFUND = "crm:lookup", "billing:refund"


def tables(text: str) -> list[list[list[str]]]:
    """Every table of the rendered Markdown, as rows of cell texts (the header row first)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    found: list[list[list[str]]] = []
    row: list[str] | None = None
    for token in tokens:
        if token.type == "table_open":
            found.append([])
        elif token.type == "tr_open":
            row = []
        elif token.type == "tr_close" and row is not None:
            found[-1].append(row)
        elif token.type == "table_close":
            row = None  # the text after a table is no cell of it
        elif token.type == "inline" and row is not None and token.children is not None:
            row.append(_text(token.children))
        elif token.type in ("th_close", "td_close") and row is not None and len(row) == 0:
            row.append("")
    return found


def _text(children: list[Token]) -> str:
    return "".join(child.content for child in children if child.type in ("text", "code_inline"))


def headings(text: str) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(text)
    return [tokens[i + 1].content for i, token in enumerate(tokens) if token.type == "heading_open"]


def _regress(tmp_path: Path, *argv: str) -> tuple[int, str]:
    out = tmp_path / "summary.md"
    result = CliRunner().invoke(cli, ["regress", *argv, "--markdown", str(out), "-q"])
    return result.exit_code, out.read_text(encoding="utf-8")


def test_e138_the_samples_summary_reads_back(tmp_path: Path) -> None:
    code, text = _regress(
        tmp_path,
        str(SAMPLES / "regress" / "baseline.parquet"),
        str(SAMPLES / "regress" / "candidate.parquet"),
        "--suites",
        str(SAMPLES / "suites"),
    )
    assert code == 1
    assert headings(text) == [
        "evalbatch regress: REGRESSED",
        "acme.support.evals.regression: what changed",
    ]
    suites, changes = tables(text)
    assert suites[0][:2] == ["suite", "verdict"]
    assert suites[1][:3] == ["acme.support.evals.regression@1.0.0", "REGRESSED", "10"]
    assert suites[1][4:7] == ["-0.4000", "[-0.6333, -0.1667]", "0.0002"]
    assert changes == [
        ["change", "tasks that dropped", "tasks that did not move"],
        ["no longer calls crm:lookup-customer", "6 of 6", "0 of 4"],
        ["fewer tool calls", "6 of 6", "0 of 4"],
        ["higher latency", "6 of 6", "4 of 4"],
    ]


def _pair(tmp_path: Path, tasks: int, dropped: str = REFUND) -> list[str]:
    """A baseline and a candidate of `tasks` tasks: the candidate drops the `dropped` tool in
    every task and sends a new request id each, an argument value that must never be written."""
    logs = []
    for name, day in (("base", 0), ("cand", 1)):
        log = LogBuilder(f"acme/run-{name}", EPOCH + dt.timedelta(days=day))
        log.eval_started(task_count=tasks)
        for i in range(tasks):
            lookup = (LOOKUP, {"requestId": f"SECRET-{name}-{i}", f"k{i}": day})
            log.trial(f"t{i:05d}", [lookup] if name == "cand" else [lookup, dropped])
        log.eval_completed()
        logs.append(str(write_events(tmp_path / f"{name}.parquet", log.rows)))
    tasks_doc = [golden(f"t{i:05d}", traj("in-order", [LOOKUP, dropped])) for i in range(tasks)]
    write_json(tmp_path / "suites" / "s.json", suite(*tasks_doc))
    return [*logs, "--suites", str(tmp_path / "suites")]


def test_e138_many_tasks_keep_the_summary_bounded_and_the_rest_folded(tmp_path: Path) -> None:
    """Each task sends its own argument key: hundreds of changes, five shown, fifty folded in a
    `<details>`, the rest counted; no argument value anywhere."""
    code, text = _regress(tmp_path, *_pair(tmp_path, 300))
    assert code == 1
    shown, folded = tables(text)[1:]
    assert len(shown) == 1 + 5 and len(folded) == 1 + 50
    assert shown[1][0] == "no longer calls billing:refund" and shown[1][1] == "300 of 300"
    assert "<details><summary>50 other change(s) of the tasks that dropped</summary>" in text
    assert "more (`--json` lists them all)." in text
    assert "SECRET" not in text
    assert len(text) < 20_000


@pytest.mark.slow
@pytest.mark.parametrize("hostile", ["t:a|b", "t:[x](http://e)", "t:<b>x</b>", "t:`x`*y*"])
def test_e138_a_tool_name_stays_one_cell_of_text(tmp_path: Path, hostile: str) -> None:
    """A tool name comes from the log: it is one cell of its own text, never a link or HTML."""
    code, text = _regress(tmp_path, *_pair(tmp_path, 3, hostile))
    assert code == 1
    changes = tables(text)[1]
    assert all(len(row) == 3 for row in changes)
    assert ["no longer calls " + hostile, "3 of 3", "–"] in changes
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    kinds = {child.type for token in tokens for child in (token.children or [])}
    assert not kinds & {"link_open", "html_inline", "image"}


def test_e138_markdown_never_replaces_an_input(tmp_path: Path) -> None:
    """E-120: --markdown naming an input stops before anything is read or written."""
    base = SAMPLES / "regress" / "baseline.parquet"
    target = tmp_path / "copy.parquet"
    target.write_bytes(base.read_bytes())
    argv: list[Any] = ["regress", str(target), str(SAMPLES / "regress" / "candidate.parquet")]
    result = CliRunner().invoke(cli, [*argv, "--markdown", str(target)])
    assert result.exit_code == 2
    assert target.read_bytes() == base.read_bytes()
    assert "--markdown" in result.output and "replace an input" in result.output


@pytest.mark.slow
def test_e138_ten_thousand_tasks_keep_the_terminal_and_the_summary_bounded(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """10,000 paired tasks that all dropped, each with a change of its own (an argument key no
    other task sends): the terminal prints a handful of lines and the Markdown stays small."""
    n = 10_000
    ids = [f"t{i:05d}" for i in range(n)]
    base, cand, trials = dropped_pair(ids)
    calls = pl.DataFrame(
        {
            "run_id": ["acme/base"] * n + ["acme/cand"] * n,
            "task_id": ids * 2,
            "trial": list(range(n)) * 2,
            "call_pos": [0] * (2 * n),
            "tool_name": [LOOKUP] * (2 * n),
            "inputs": [f'{{"k{i}": 1}}' for i in range(n)] + [f'{{"k{i}": 2}}' for i in range(n)],
        }
    )
    options = paired_verdict.RegressOptions(method="paired-t")
    comparison = paired_verdict.compare(
        base,
        cand,
        options,
        suite_id="acme.team.evals.support",
        base_run="acme/base",
        cand_run="acme/cand",
    )
    comparison.changes = behaviour_changes.behaviour_changes(
        paired_verdict.paired_tasks(base, cand),
        "gating_score",
        trials,
        "acme/base",
        trials,
        "acme/cand",
        (calls, calls),
    )
    assert comparison.changes.dropped_count == n and len(comparison.changes.dropped) == n
    printing.print_comparison(comparison, 0.05)
    assert len(capsys.readouterr().out.splitlines()) < 15
    text = markdown_summary(RegressionReport(comparisons=[comparison], unpaired=[]))
    assert len(text) < 20_000 and "9945 more" in text
