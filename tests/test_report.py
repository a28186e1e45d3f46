"""`evalbatch report OUT_DIR`: one self-contained HTML page, checked as HTML (the browser tests
are in test_report_browser.py).

Expected values come from data/samples/README.md, and for a night of 500 generated runs
(E-95, E-106) from the Parquet tables the page was made from.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import shlex
import shutil
import sys
from collections import Counter
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from evalbatch import api, cli
from evalbatch.commands.report import report
from evalbatch.explain import run_explanation
from evalbatch.options import GradeOptions
from evalbatch.outputs import outdir
from evalbatch.publish import (
    comparison_charts,
    report_views,
    runs_table,
    svg_figures,
    verdict_section,
    worst_runs,
)
from evalbatch.publish import html_report as reporting
from tests.helpers import (
    LEAK_MARKERS,
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    SAMPLES,
    T0,
    RunLog,
    generated_log,
    make_suite,
    planted_calls,
    standard_run,
    write_events,
    write_json,
)
from tests.logbuilder import EPOCH, LogBuilder, golden, traj
from tests.logbuilder import suite as suite_doc

#: a slow family (the HTML report of a 500-run night, charts drawn):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

SAMPLE_CHARTS = ["suites", "pass-k", "task-scores", "failures", "efficiency", "cost"]


@pytest.fixture(scope="module")
def samples_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make run`: the samples' event logs graded into one directory."""
    out = tmp_path_factory.mktemp("report") / "samples"
    api.write_outputs([SAMPLE_EVENTS], out, [SAMPLE_SUITES])
    return out


@pytest.fixture(scope="module")
def all_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every sample log, the regression pair included, graded together: the candidate's summary
    carries a `regression` block."""
    out = tmp_path_factory.mktemp("report") / "all"
    api.write_outputs([SAMPLE_EVENTS, SAMPLES / "regress"], out, [SAMPLE_SUITES])
    return out


@pytest.fixture(scope="module")
def all_page(all_out: Path) -> Path:
    result = CliRunner().invoke(report, [str(all_out)])
    assert result.exit_code == 0, result.output
    return all_out / "report.html"


class _Page(HTMLParser):
    """Every element's tag and attributes, and the page's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


class _Texts(HTMLParser):
    """The text of every element with an id, and of every `<code>` element, as a browser shows
    it (character references resolved, tags dropped)."""

    VOID = frozenset({"br", "hr", "img", "input", "link", "meta", "wbr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.by_id: dict[str, str] = {}
        self.codes: list[str] = []
        self._open: list[tuple[str, str | None, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            self._open.append((tag, dict(attrs).get("id"), []))

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            name, element_id, parts = self._open.pop()
            text = "".join(parts)
            if self._open:
                self._open[-1][2].append(text)
            if element_id is not None:
                self.by_id[element_id] = text
            if name == "code":
                self.codes.append(text)
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._open:
            self._open[-1][2].append(data)


def _texts(page: str) -> _Texts:
    """`page` read back by the standard library's HTML parser."""
    texts = _Texts()
    texts.feed(page)
    texts.close()
    return texts


def _compared_pair(root: Path, *, regressed: bool) -> Path:
    """Two runs of one suite of four tasks graded into root/out, the second naming the first as
    its baseline (eval.started baselineRunId), so the second carries a regression block (§5):
    every trial passes in both, or (`regressed`) fails in the second."""
    tasks = ("t0", "t1", "t2", "t3")
    rows: list[dict[str, Any]] = []
    for number, run_id in enumerate(("acme/pair-base", "acme/pair-cand")):
        log = RunLog(run_id, T0 + timedelta(hours=number))
        log.emit("run.started", {"runId": run_id})
        extra = {"baselineRunId": "acme/pair-base"} if number else {}
        log.eval_started(taskCount=len(tasks), **extra)
        for task in tasks:
            fails = regressed and number == 1
            log.trial(task, score=0.0 if fails else 1.0, passed=not fails)
        log.eval_completed()
        log.emit("run.completed", {"outcome": "completed"})
        rows += log.rows
    events = write_events(root / "events" / "pair.parquet", rows)
    suites = write_json(root / "suites" / "pair.json", make_suite(task_ids=tasks))
    out = root / "out"
    api.write_outputs([events], out, [suites])
    return out


def _sample_tool_names() -> set[str]:
    import pyarrow.parquet as pq

    names = set()
    for path in SAMPLE_EVENTS.glob("*.parquet"):
        for row in pq.read_table(path, columns=["type", "payload"]).to_pylist():
            if row["type"] == "agent.tool-called":
                names.add(json.loads(row["payload"])["toolName"])
    return names


# --------------------------------------------------------------------------------------------
# The page, without a browser


def test_report_is_self_contained_and_accessible(all_page: Path, all_out: Path) -> None:
    """No stylesheet link, image or frame; one inline script (E-95: it sorts and
    filters the runs table), the only one a Content-Security-Policy that loads nothing lets
    run, beside the runs as JSON data (E-106); every link a fragment of the page; every
    chart an inline SVG with a role and alt text, under a heading with a caption; ids unique;
    the verdict first, regression charts before the other charts (E-95)."""
    text = all_page.read_text(encoding="utf-8")
    page = _parse(text)
    tags = Counter(tag for tag, _ in page.elements)
    for tag in ("link", "img", "iframe", "object", "embed"):
        assert tags[tag] == 0, tag
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", text, re.S)
    assert tags["script"] == len(scripts) == 2
    # E-106: the runs table's rows are data (never run), the one script draws them
    (data,) = [body for attrs, body in scripts if attrs]
    assert re.findall(r"<script([^>]*)>", text)[0] == ' type="application/json" id="runs-data"'
    summaries = (all_out / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    assert sorted(row[1] for row in json.loads(data)["runs"]) == sorted(
        json.loads(line)["runId"] for line in summaries
    )
    (script,) = [("", body) for attrs, body in scripts if not attrs]  # no src, no type: inline
    (policy,) = [
        a["content"] for t, a in page.elements if a.get("http-equiv") == "Content-Security-Policy"
    ]
    digest = base64.b64encode(hashlib.sha256(script[1].encode("utf-8")).digest()).decode()
    assert policy is not None and "default-src 'none'" in policy
    assert f"script-src 'sha256-{digest}'" in policy
    assert "http" not in script[1] and "fetch" not in script[1] and "import" not in script[1]
    for tag, attrs in page.elements:
        for name in ("src", "href", "xlink:href"):
            value = attrs.get(name)
            if value is not None:
                assert value.startswith("#"), (tag, name, value)
        style = attrs.get("style") or ""
        assert "url(http" not in style
    assert "@import" not in text and "url(http" not in text
    svgs = [attrs for tag, attrs in page.elements if tag == "svg"]
    assert len(svgs) == len(SAMPLE_CHARTS) + 1
    for attrs in svgs:
        assert attrs.get("role") == "img"
        assert len(attrs.get("aria-label") or "") > 40
    ids = [attrs["id"] for _, attrs in page.elements if attrs.get("id")]
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    assert tags["figure"] == tags["figcaption"] == len(svgs)
    sections = [attrs["id"] for tag, attrs in page.elements if tag == "section"]
    assert sections == ["verdict", "runs", "regression-1", *SAMPLE_CHARTS, "by-run", "tasks"]


def test_report_is_deterministic_and_content_free(samples_out: Path) -> None:
    """The same outputs give the same bytes (no date, fixed SVG ids); no tool name appears."""
    first = reporting.build_report(outdir.load(samples_out)).html
    second = reporting.build_report(outdir.load(samples_out)).html
    assert first == second
    assert re.search(r"20\d\d-\d\d-\d\d", first) is None
    names = _sample_tool_names()
    assert "billing:refund-all" in names
    for name in names:
        assert name not in first, name


def test_pass_k_curve_is_exact(samples_out: Path) -> None:
    """pass^k and pass@k by k for the trials sample (n = 3; c = 3, 2, 1): pass^1 = 2/3,
    pass^2 = 4/9 (the suite's trialStats.passHatK), pass^3 = 1/3; pass@2 = 8/9, pass@3 = 1."""
    tasks = pl.read_parquet(samples_out / "tasks.parquet")
    rows = tasks.filter(pl.col("run_id") == "acme/run-trials-k2-0001").to_dicts()
    curve = report_views.pass_curves(rows)
    assert [k for k, _, _ in curve] == [1, 2, 3]
    expected = [(2 / 3, 2 / 3), (8 / 9, 4 / 9), (1.0, 1 / 3)]
    for (_, at_k, hat_k), (want_at, want_hat) in zip(curve, expected, strict=True):
        assert at_k == pytest.approx(want_at, rel=1e-12)
        assert hat_k == pytest.approx(want_hat, rel=1e-12)
    single = tasks.filter(pl.col("run_id") == "acme/run-trajectory-0001").to_dicts()
    assert report_views.pass_curves(single) == [(1, 0.4, 0.4)]  # 2 of 5 tasks passed, n = 1


def test_failure_causes_of_the_samples(samples_out: Path) -> None:
    """README §1-§3: the trajectory sample fails on a wrong order, a forbidden call and an
    argument mismatch (an expected call missing); the trials sample on one forbidden call and
    two rubric scores; the fixture sample on one fail-closed miss."""
    out = outdir.load(samples_out)
    causes = {v.run_id: dict(report_views.failure_causes(v)) for v in report_views.run_views(out)}
    assert causes == {
        "acme/run-fixture-miss-0001": {"fixture miss (failed closed)": 1},
        "acme/run-trajectory-0001": {
            "trajectory: order": 1,
            "trajectory: forbidden": 1,
            "trajectory: missing": 1,
        },
        "acme/run-trials-k2-0001": {"trajectory: forbidden": 1, "graded fail on output": 2},
    }


def test_regression_chart_shows_the_interval(all_out: Path) -> None:
    """README §4: 10 paired tasks, mean difference −0.4, regressed; the 95% bootstrap interval
    lies below 0."""
    out = outdir.load(all_out)
    (item,) = report_views.regression_views(report_views.run_views(out), out.table("tasks"))
    assert item.block["verdict"] == "regressed"
    assert len(item.differences) == 10
    assert sum(d for _, d in item.differences) / 10 == pytest.approx(-0.4)
    assert item.comparison is not None and item.comparison.interval is not None
    assert item.comparison.interval[1] < 0
    chart = comparison_charts.chart_regression(item, 1)
    assert "regressed" in chart.alt and "10 paired tasks" in chart.alt
    assert "95% interval" in chart.alt


def test_the_verdict_line_says_no_regression_only_where_runs_were_compared(
    samples_out: Path, all_page: Path, tmp_path: Path
) -> None:
    """The page's first line says "no regression" only where a run was compared with its
    baseline (§5) and none regressed; where no run was compared (the three samples: none names
    a baseline) it says so, and a regression is counted where one was found."""

    def lead(page: str) -> str:
        return _texts(page).by_id["verdict-lead"]

    samples = reporting.write_report(samples_out, tmp_path / "samples.html")[0]
    assert lead(samples.read_text(encoding="utf-8")) == (
        "Not compared with a baseline · 2 of 3 suite runs failed · 6 failing tasks"
    )
    assert lead(all_page.read_text(encoding="utf-8")).startswith("1 regression · ")
    for regressed, first in ((False, "No regression"), (True, "1 regression")):
        out = _compared_pair(tmp_path / f"pair-{regressed}", regressed=regressed)
        page = reporting.write_report(out)[0].read_text(encoding="utf-8")
        (block,) = [s["regression"] for _, s in outdir.load(out).summaries if "regression" in s]
        assert (block["verdict"] == "regressed") is regressed
        assert lead(page).startswith(f"{first} · ")


def test_report_command_output_option_and_errors(
    samples_out: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = tmp_path / "pages" / "samples.html"
    result = CliRunner().invoke(report, [str(samples_out), "--out", str(target), "--title", "T"])
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote a report of 6 charts to {target}\n"
    assert "<title>T</title>" in target.read_text(encoding="utf-8")

    monkeypatch.setitem(cli.cli.commands, "report", report)
    no_tables = tmp_path / "only-summaries"
    no_tables.mkdir()
    shutil.copy(samples_out / "summaries.jsonl", no_tables)
    for args, message in (
        ([str(tmp_path / "nowhere")], "no such directory"),
        ([str(no_tables)], "no runs.parquet"),
    ):
        monkeypatch.setattr(sys, "argv", ["evalbatch", "report", *args])
        with pytest.raises(SystemExit) as exit_info:
            cli.main()
        err = capsys.readouterr().err
        assert exit_info.value.code == 2
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_report_of_a_run_without_suite_trials_or_cost(tmp_path: Path) -> None:
    """A run graded from the host record (no suite, D-4), once per task, with no cost: the page
    still has every chart that applies and says why there is no cost chart."""
    log = standard_run("acme/run-0001")
    for row in log.rows:
        if row["type"] == "provider.usage":
            row["payload"].pop("costEstimateUsd", None)
    events = write_events(tmp_path / "events" / "run.parquet", log.rows)
    out = tmp_path / "out"
    api.write_outputs([events], out, [])
    path, page = reporting.write_report(out)
    assert [c.anchor for c in page.charts] == SAMPLE_CHARTS[:-1]
    text = path.read_text(encoding="utf-8")
    assert "No run here has a cost" in text
    for marker in LEAK_MARKERS:
        assert marker not in text


# --------------------------------------------------------------------------------------------
# A night of 500 runs (E-95, E-106)

NIGHT_RUNS = 500
NIGHT_SUITES = tuple(f"acme.night.evals.s{n}" for n in range(5))
NIGHT_TASKS = ("t0", "t1", "t2", "t3")


def night_run_id(number: int) -> str:
    return f"acme/night-{number:03d}"


def write_night(root: Path) -> Path:
    """500 runs of five suites of four tasks, graded into root/out with the library API.

    Run i grades suite s(i % 5); s0 runs two trials per task (k 2), the others one. Every 7th
    run calls t1's tool with other arguments (trajectory `missing`); every 11th fails t2's first
    trial on the output grade; every 13th lacks t3 (D-12, D-13). Runs 450-499 name run i - 50
    (the same suite) as baseline; 450-459 score 0 on every trial, so they regress (§5).
    """
    rows: list[dict[str, Any]] = []
    for number in range(NIGHT_RUNS):
        suite = NIGHT_SUITES[number % len(NIGHT_SUITES)]
        log = RunLog(night_run_id(number), T0 + timedelta(minutes=number))
        log.emit("run.started", {"runId": log.run_id})
        trials = 2 if suite == NIGHT_SUITES[0] else 1
        started: dict[str, Any] = {"taskCount": len(NIGHT_TASKS)}
        if number >= 450:
            started["baselineRunId"] = night_run_id(number - 50)
        log.eval_started(suite, **started)
        for task in NIGHT_TASKS:
            if task == "t3" and number % 13 == 0:
                continue
            for index in range(trials):
                score, passed = (0.0, False) if 450 <= number < 460 else (1.0, True)
                if task == "t2" and number % 11 == 0 and index == 0:
                    score, passed = 0.2, False
                other_args = task == "t1" and number % 7 == 0
                log.trial(
                    task,
                    score=score,
                    passed=passed,
                    inputs={"orderId": "ORD-SECRET-other"} if other_args else None,
                    usages=[
                        {
                            "inputTokens": 100 + number,
                            "outputTokens": 10,
                            "costEstimateUsd": 0.001 * (1 + number % 9),
                        }
                    ],
                    scored_extra={"trialIndex": index},
                )
        log.eval_completed()
        log.emit("run.completed", {"outcome": "completed"})
        rows += log.rows
    events = write_events(root / "events" / "night.parquet", rows)
    for suite in NIGHT_SUITES:
        top: dict[str, Any] = {}
        if suite == NIGHT_SUITES[0]:
            top["trials"] = {"count": 2, "k": 2, "passRule": "all"}
        doc = make_suite(suite, task_ids=NIGHT_TASKS, **top)
        write_json(root / "suites" / f"{suite}.json", doc)
    out = root / "out"
    api.write_outputs([events], out, [root / "suites"])
    return out


@pytest.fixture(scope="module")
def night_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_night(tmp_path_factory.mktemp("night"))


@pytest.fixture(scope="module")
def night_page(night_out: Path) -> str:
    path, _ = reporting.write_report(night_out)
    return path.read_text(encoding="utf-8")


def _element(page: str, anchor: str) -> str:
    """The HTML of the element with id `anchor` (a section, an article or an h3 and what follows
    it up to the next h3 or the end of its section)."""
    start = page.index(f'id="{anchor}"')
    start = page.rindex("<", 0, start)
    tag = re.match(r"<(\w+)", page[start:])
    assert tag is not None
    if tag.group(1) == "h3":
        ends = [page.find(mark, start + 1) for mark in ("<h3", "</section>")]
        return page[start : min(e for e in ends if e >= 0)]
    return page[start : page.index(f"</{tag.group(1)}>", start)]


def _rows(fragment: str) -> list[list[str]]:
    """Every body row of the tables in `fragment`, as cell texts; the row under a regression
    saying what changed behind it is read by `_changes_rows` (E-142)."""
    rows = []
    for row in re.findall(r'<tr(?! class="changes")[^>]*>(.*?)</tr>', fragment, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        if cells:
            rows.append([html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells])
    return rows


def _links(fragment: str) -> list[str]:
    return re.findall(r'<a href="#([^"]+)"', fragment)


def _reason_expr() -> pl.Expr:
    """E-47's order, restated: failed closed, else the trajectory's reason code, else output."""
    return (
        pl.when(pl.col("failed_closed"))
        .then(pl.lit("failed-closed"))
        .when(pl.col("trajectory_matched").not_())
        .then(pl.col("trajectory_reason"))
        .otherwise(pl.lit("output"))
    )


def _expected_failures(out_dir: Path) -> pl.DataFrame:
    """Failed trials and missing ones from the Parquet tables: run, suite, task, trial (null:
    missing), reason, count."""
    trials = pl.read_parquet(out_dir / "trials.parquet").filter(
        pl.col("counted") & pl.col("passed").not_()
    )
    tasks = pl.read_parquet(out_dir / "tasks.parquet").with_columns(
        suite=pl.col("suite_id") + "@" + pl.col("suite_version")
    )
    failed = trials.join(tasks.select("run_id", "task_id", "suite"), on=["run_id", "task_id"])
    missing = tasks.filter(pl.col("n") > pl.col("observed_trials"))
    return pl.concat(
        [
            failed.select(
                "run_id",
                "suite",
                "task_id",
                "trial_index",
                reason=_reason_expr(),
                count=pl.lit(1, pl.Int64),
            ),
            missing.select(
                "run_id",
                "suite",
                "task_id",
                trial_index=pl.lit(None, pl.Int64),
                reason=pl.lit("trial-missing"),
                count=(pl.col("n") - pl.col("observed_trials")),
            ),
        ]
    )


def _anchors(page: str) -> dict[str, str]:
    """run id -> the id of its section on the page."""
    return {
        html.unescape(run_id): anchor
        for anchor, run_id in re.findall(
            r'<article class="run" id="([^"]+)"><h3><code>([^<]*)</code>', page
        )
    }


def test_e95_night_verdict_opens_the_page(night_out: Path, night_page: str) -> None:
    """E-95 on 500 runs: the page opens with the verdict (before the runs table and
    every chart): a line counting regressions, failed suite runs and failing tasks, then the
    regressions worst first with delta and interval, the failing suites, and the failing tasks
    with their reason codes and counts; ten rows open, the rest folded, none lost."""
    page = night_page
    runs = pl.read_parquet(night_out / "runs.parquet")
    blocks = [(run_id, s.get("regression")) for run_id, s in outdir.load(night_out).summaries]
    regressed = sorted(
        (b["scoreDelta"], run_id, b)
        for run_id, b in blocks
        if b is not None and b["verdict"] == "regressed"
    )
    assert len(regressed) == 10 and runs.height == NIGHT_RUNS
    failures = _expected_failures(night_out)
    tasks = pl.read_parquet(night_out / "tasks.parquet").with_columns(
        suite=pl.col("suite_id") + "@" + pl.col("suite_version")
    )
    failing_tasks = tasks.filter(pl.col("passed").not_())
    failed_runs = runs.filter(pl.col("passed").not_()).height
    task_groups = failing_tasks.select("suite", "task_id").unique().height

    main = page[page.index("<main") :]
    order = [main.index(f'id="{anchor}"') for anchor in ("verdict", "runs", "regression-1")]
    assert order == sorted(order)
    verdict = _element(page, "verdict")
    heads = re.findall(r"<h3 id=\"([^\"]+)\"", verdict)
    assert heads == ["regressions", "failing-suites", "failing-tasks"]
    lead = re.search(r'<p id="verdict-lead" class="lead fail">([^<]*)</p>', verdict)
    assert lead is not None
    assert html.unescape(lead.group(1)) == (
        f"10 regressions · {failed_runs} of {NIGHT_RUNS} suite runs failed · "
        f"{task_groups} failing tasks"
    )

    part = _element(page, "regressions")
    assert "50 runs compared with their baseline: 20 inconclusive, 10 regressed, 20 unchanged" in (
        html.unescape(part)
    )
    rows = _rows(part)
    assert [r[0] for r in rows] == [run_id for _, run_id, _ in regressed]
    for row, (delta, _, block) in zip(rows, regressed, strict=True):
        assert row[2] == block["baselineRunId"]
        assert row[3] == f"{delta:+.3f}"
        low, high = (float(x) for x in row[4].split(" (")[0].split(" to "))
        assert low <= delta <= high < 0 and row[4].endswith("(95%)")
        assert row[6] == str(block["pairedTaskCount"])
    assert part.count("<details>") == 0  # exactly VERDICT_ROWS regressions: nothing folded

    part = _element(page, "failing-suites")
    by_suite = (
        runs.with_columns(suite=pl.col("suite_id") + "@" + pl.col("suite_version"))
        .group_by("suite")
        .agg(runs=pl.len(), failed=pl.col("passed").not_().sum())
        .filter(pl.col("failed") > 0)
    )
    rows = _rows(part)
    assert {r[0]: r[1] for r in rows} == {
        s: f"{f} of {n} runs" for s, n, f in by_suite.select("suite", "runs", "failed").iter_rows()
    }

    part = _element(page, "failing-tasks")
    rows = _rows(part)
    assert len(rows) == task_groups > verdict_section.VERDICT_ROWS
    assert part.count("<details>") == 1
    assert f"{task_groups - verdict_section.VERDICT_ROWS} more failing tasks" in part
    runs_of_suite = Counter(runs["suite_id"] + "@" + runs["suite_version"])
    for task, suite, failed_in, reasons, _ in rows:
        mine = failing_tasks.filter((pl.col("suite") == suite) & (pl.col("task_id") == task))
        assert failed_in == f"{mine.height} of {runs_of_suite[suite]} runs"
        counted = (
            failures.filter((pl.col("suite") == suite) & (pl.col("task_id") == task))
            .group_by("reason")
            .agg(pl.col("count").sum())
        )
        want = {reason: n for reason, n in counted.iter_rows()}
        assert {r: int(n) for r, n in re.findall(r"([\w-]+) × (\d+)", reasons)} == want
    counts = [int(r[2].split(" of ")[0]) for r in rows]
    assert counts == sorted(counts, reverse=True)


def test_e95_night_charts_draw_the_worst_runs(night_out: Path, night_page: str) -> None:
    """E-95: over 500 runs each chart draws the worst runs, not the first ones, says
    which in its caption ("the 30 lowest-scoring of 500 runs") and links to them and to the
    runs table; at most MAX_REGRESSION_CHARTS regression charts, the largest drops first."""
    page = night_page
    anchors = _anchors(page)
    ids = set(re.findall(r'id="([^"]+)"', page))
    runs = pl.read_parquet(night_out / "runs.parquet")
    lowest = (
        runs.sort("passed", "aggregate_score", "run_id")
        .head(worst_runs.MAX_RUNS)["run_id"]
        .to_list()
    )
    failed = (
        _expected_failures(night_out)
        .group_by("run_id")
        .agg(failed=pl.col("count").sum())
        .join(runs.select("run_id"), on="run_id", how="right")
        .with_columns(pl.col("failed").fill_null(0))
        .sort(pl.col("failed"), "run_id", descending=[True, False])
    )
    costliest = runs.sort(pl.col("total_cost_usd"), "run_id", descending=[True, False])[
        "run_id"
    ].to_list()
    expected = {
        "suites": ("the 30 lowest-scoring of 500 runs", lowest),
        "pass-k": ("the 30 lowest-scoring of 500 runs", lowest),
        "task-scores": ("the 12 lowest-scoring of 500 runs", lowest[: worst_runs.MAX_TASK_RUNS]),
        "efficiency": ("the 12 lowest-scoring of 500 runs", lowest[: worst_runs.MAX_TASK_RUNS]),
        "failures": (
            "the 30 with the most failed trials of 500 runs",
            failed["run_id"].head(worst_runs.MAX_RUNS).to_list(),
        ),
        "cost": ("the 12 costliest of 500 runs with a cost", costliest[: worst_runs.MAX_TASK_RUNS]),
    }
    for anchor, (described, drawn) in expected.items():
        section = _element(page, anchor)
        caption_match = re.search(r"<figcaption>(.*?)</figcaption>", section, re.S)
        assert caption_match is not None
        caption = html.unescape(caption_match.group(1))
        assert f"Drawn: {described}, worst first" in caption, (anchor, caption)
        links = _links(section)
        assert links[-1] == "runs"
        # E-106: a run shown in full links to its section, any other to the command for it
        assert links[:-1] == [anchors.get(run_id, "more-runs") for run_id in drawn], anchor
        assert set(links) <= ids

    charts = re.findall(r'<section id="(regression-\d+)"', page)
    assert charts == [f"regression-{n}" for n in range(1, worst_runs.MAX_REGRESSION_CHARTS + 1)]
    blocks = sorted(
        (s["regression"]["scoreDelta"], run_id, s["regression"]["baselineRunId"])
        for run_id, s in outdir.load(night_out).summaries
        if s.get("regression", {}).get("verdict") == "regressed"
    )
    for chart, (_, run_id, baseline) in zip(charts, blocks, strict=False):
        section = _element(page, chart)
        assert _links(section) == [anchors.get(r, "more-runs") for r in (run_id, baseline)]
        assert "Drawn for 6 of 50 compared runs" in html.unescape(section)
    assert page.count('href="#regression-') == 1  # one contents entry for all of them


def _runs_data(page: str) -> list[list[Any]]:
    """The runs table's rows as the page embeds them (E-106)."""
    data = re.search(r'<script type="application/json" id="runs-data">(.*?)</script>', page, re.S)
    assert data is not None
    parsed = json.loads(data.group(1))
    return [[parsed["suites"][row[0]], *row[1:]] for row in parsed["runs"]]


def _assert_failing_trials_listed(page: str, night_out: Path, run_ids: set[str]) -> None:
    """The section of each run in `run_ids` lists its failing trials (failed and missing, D-12)
    with the reason code and the `evalbatch explain --run-id` command for each: ids, and the
    paths `write_night` gave the run (E-118)."""
    anchors = _anchors(page)
    failures = _expected_failures(night_out).sort("run_id", "task_id", "trial_index")
    for (run_id,), expected in failures.group_by("run_id"):
        if run_id not in run_ids:
            continue
        article = _element(page, anchors[str(run_id)])
        got = sorted((r[0], r[1], r[2], shlex.split(r[5])) for r in _rows(article))
        want = []
        for task, index, reason, count in expected.select(
            "task_id", "trial_index", "reason", "count"
        ).iter_rows():
            trial = ["--trial", str(index)] if index is not None else []
            command = ["evalbatch", "explain", str(night_out.parent / "events" / "night.parquet")]
            command += ["--suites", str(night_out.parent / "suites")]
            command += ["--run-id", str(run_id), "--task-id", task, *trial]
            want.append(
                (task, str(index) if index is not None else f"{count} missing", reason, command)
            )
        assert got == sorted(want), run_id


def test_e106_night_runs_table_and_run_sections(night_out: Path, night_page: str) -> None:
    """E-106: the runs table's data holds all 500 runs, its first PAGE_ROWS rows are in the
    HTML (a plain table without the script, nothing hidden, no control); the DETAIL_RUNS
    lowest-scoring runs have a section listing their failing trials with the `explain` command
    for each (E-95); every other run links to `#more-runs`, which gives the command
    that writes it in full. Ids only (RFC 0244 §H)."""
    page = night_page
    runs = pl.read_parquet(night_out / "runs.parquet").sort("run_id")
    data = _runs_data(page)
    assert [row[1] for row in data] == runs["run_id"].to_list()
    table = re.search(r'<table id="runs-table">(.*?)</table>', page, re.S)
    assert table is not None
    rows = re.findall(r'<tr data-passed="(yes|no)">', table.group(1))
    assert rows == ["yes" if p else "no" for p in runs["passed"]][: runs_table.PAGE_ROWS]
    static = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    assert " hidden" not in static and "<input" not in static and "<button" not in static
    assert f"The first {runs_table.PAGE_ROWS} of 500 runs" in static

    lowest = runs.sort("passed", "aggregate_score", "run_id")["run_id"].to_list()
    in_full = set(lowest[: worst_runs.DETAIL_RUNS])
    anchors = _anchors(page)
    assert set(anchors) == in_full
    assert {row[1]: row[2] for row in data} == {r: anchors.get(r) for r in runs["run_id"]}
    linked = {html.unescape(r) for r in re.findall(r'href="#more-runs" data-run="([^"]+)"', page)}
    assert linked and linked <= set(runs["run_id"]) - in_full
    more = _element(page, "more-runs")
    assert "450 runs have no section here" in html.unescape(more)
    assert "evalbatch report OUT_DIR --run-id RUN --out run.html" in html.unescape(more)
    _assert_failing_trials_listed(page, night_out, in_full)
    for marker in LEAK_MARKERS:
        assert marker not in page


def test_e106_run_id_shows_the_runs_named(night_out: Path, tmp_path: Path) -> None:
    """E-106: `report --run-id` (repeatable) shows the runs named in full and no other, a
    passing one with no failing-trial table; `--detail-runs 0` shows none; a run id that is
    not graded there is exit 2, naming it."""
    runs = pl.read_parquet(night_out / "runs.parquet").sort("run_id")
    passing = runs.filter(pl.col("passed"))["run_id"][-1]
    failing = runs.filter(~pl.col("passed"))["run_id"][-1]
    target = tmp_path / "two.html"
    result = CliRunner().invoke(
        report,
        [str(night_out), "--run-id", passing, "--run-id", failing, "--out", str(target), "-q"],
    )
    assert result.exit_code == 0 and result.output == "", result.output
    page = target.read_text(encoding="utf-8")
    anchors = _anchors(page)
    assert set(anchors) == {passing, failing}
    assert "<table" not in _element(page, anchors[passing])
    assert _rows(_element(page, anchors[failing]))
    _assert_failing_trials_listed(page, night_out, {failing})
    assert "498 runs have no section here" in html.unescape(_element(page, "more-runs"))

    none = tmp_path / "none.html"
    result = CliRunner().invoke(report, [str(night_out), "--detail-runs", "0", "-o", str(none)])
    assert result.exit_code == 0, result.output
    page = none.read_text(encoding="utf-8")
    assert _anchors(page) == {} and all(row[2] is None for row in _runs_data(page))
    assert "500 runs have no section here" in html.unescape(_element(page, "more-runs"))

    result = CliRunner().invoke(report, [str(night_out), "--run-id", "acme/nowhere"])
    assert result.exit_code == 2
    assert "acme/nowhere" in result.output and "--run-id" in result.output


def _failing_rows(page: str) -> list[tuple[str, list[str], list[str]]]:
    """(run id, cells, command words) of every failing-trial row of the run sections."""
    return [
        (run_id, row, shlex.split(row[5]))
        for run_id, anchor in _anchors(page).items()
        for row in _rows(_element(page, anchor))
    ]


def test_e95_explain_commands_show_the_failing_trials(all_out: Path, all_page: Path) -> None:
    """E-95: the command a run's section gives for each failing trial of the samples,
    naming the event and suite paths the run was given (E-118), runs as it stands, explains
    exactly that trial, and `explain` finds it failed for the reason code the page shows.
    data/samples/README.md for the three sample runs; every failed trial of the regression pair
    too."""
    found = _failing_rows(all_page.read_text(encoding="utf-8"))
    listed = {(run_id, row[0], row[1], row[2]) for run_id, row, _ in found}
    assert len(listed) == len(found) == _expected_failures(all_out).height
    assert {r for r in listed if "regress" not in r[0]} == {
        ("acme/run-fixture-miss-0001", "missed-refund", "0", "failed-closed"),
        ("acme/run-trajectory-0001", "wrong-order", "0", "order"),
        ("acme/run-trajectory-0001", "forbidden-hit", "0", "forbidden"),
        ("acme/run-trajectory-0001", "exact-args-mismatch", "0", "missing"),
        ("acme/run-trials-k2-0001", "refund-approved", "1", "forbidden"),
        ("acme/run-trials-k2-0001", "apology-tone", "0", "output"),
        ("acme/run-trials-k2-0001", "apology-tone", "2", "output"),
    }
    events = [str(SAMPLE_EVENTS), str(SAMPLES / "regress")]
    for run_id, (task, trial, reason, *_), words in found:
        head = ["evalbatch", "explain", *events, "--suites", str(SAMPLE_SUITES), "--run-id", run_id]
        assert words[:8] == head
        options = dict(zip(words[8::2], words[9::2], strict=True))
        assert options.get("--trial") == trial and options["--task-id"] == task
        # the command as printed runs, with no renamed-option note
        ran = CliRunner().invoke(cli.cli, [*words[1:], "--json"])
        assert ran.exit_code == 0 and "note:" not in ran.stderr, ran.output
        explanation = run_explanation.explain_paths(
            [SAMPLE_EVENTS, SAMPLES / "regress"], [SAMPLE_SUITES], run_id, task, int(trial)
        )
        ((explained,),) = [t.trials for t in explanation.tasks]
        assert explained.grade is not None and explained.grade.row["passed"] is False
        assert report_views.trial_reason(explained.grade.row) == reason


def test_e95_explain_command_carries_the_runs_options(tmp_path: Path) -> None:
    """E-95 / E-55: a run graded with other options than the defaults gets them in
    its explain command (from runs.parquet), so the explanation grades as `run` did; ids that
    need it are shell-quoted and HTML-escaped, and two runs whose ids would give one section id
    get two."""
    odd = "acme/run <b>&'q' 1"
    rows = standard_run(odd).rows + standard_run("acme/run-b-q-1").rows
    rows += standard_run("acme/run b q 1").rows
    events = write_events(tmp_path / "events" / "runs.parquet", rows)
    suites = write_json(tmp_path / "suites" / "basic.json", make_suite())
    out = tmp_path / "out"
    api.write_outputs([events], out, [suites], options=GradeOptions(default_pass_score=0.5))
    page = reporting.write_report(out)[0].read_text(encoding="utf-8")
    anchors = _anchors(page)
    assert anchors == {
        "acme/run <b>&'q' 1": "run-acme-run-b-q-1",
        "acme/run b q 1": "run-acme-run-b-q-1-2",
        "acme/run-b-q-1": "run-acme-run-b-q-1-3",
    }
    assert "<b>" not in page
    found = _failing_rows(page)
    assert {run_id for run_id, _, _ in found} == set(anchors)
    for run_id, _, words in found:
        assert words[5:9] == ["--run-id", run_id, "--default-pass-score", "0.5"]


def _explain_commands(page: str) -> list[list[str]]:
    """The words of every `evalbatch explain` command the page shows."""
    return [
        shlex.split(code) for code in _texts(page).codes if code.startswith("evalbatch explain ")
    ]


def test_e118_explain_commands_name_the_paths_run_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E-118: `evalbatch run` records the event and suite paths as it was given them, and the
    page's `explain` commands name them (quoted for the shell), so a command runs as it stands
    from where `run` ran; EVENTS and SUITES stand where the directory holds no record (an older
    directory), where its record belongs to other summaries (an older evalbatch ran into it
    since), for suites given as documents, and for a path that cannot be shown on one line."""
    monkeypatch.chdir(tmp_path)
    write_events(tmp_path / "logs" / "night.parquet", standard_run("acme/run-e118").rows)
    write_json(tmp_path / "suites a" / "basic.json", make_suite())
    ran = CliRunner().invoke(cli.cli, ["run", "logs", "--suites", "suites a", "--out", "out"])
    assert ran.exit_code == 0, ran.output
    given = ["evalbatch", "explain", "logs", "--suites", "suites a", "--run-id", "acme/run-e118"]

    def page() -> str:
        return reporting.write_report("out")[0].read_text(encoding="utf-8")

    text = page()
    commands = _explain_commands(text)
    assert commands and all(words[:7] == given for words in commands)
    assert "'suites a'" in html.unescape(text)  # shell-quoted as printed
    told = _texts(text).by_id["by-run"]
    assert "as they were given to evalbatch run" in told and "EVENTS" not in told
    for words in commands:  # each runs as it stands, here, where `run` ran
        explained = CliRunner().invoke(cli.cli, [*words[1:], "--json"])
        assert explained.exit_code == 0, explained.output

    record = Path("out", "run-inputs.json")
    kept = record.read_text(encoding="utf-8")
    placeholders = ["evalbatch", "explain", "EVENTS", "--suites", "SUITES", "--run-id"]
    record.unlink()
    text = page()
    assert all(words[:6] == placeholders for words in _explain_commands(text))
    assert "holds no record of them" in _texts(text).by_id["by-run"]
    other = json.loads(kept) | {"summariesSha256": "0" * 64}
    record.write_text(json.dumps(other), encoding="utf-8")
    assert all(words[:6] == placeholders for words in _explain_commands(page()))

    api.write_outputs(["logs"], "documents", suite_docs=[make_suite()])
    text = reporting.write_report("documents")[0].read_text(encoding="utf-8")
    assert all(words[2:5] == ["logs", "--suites", "SUITES"] for words in _explain_commands(text))
    assert "given as documents" in _texts(text).by_id["by-run"]

    odd = write_events(tmp_path / "two\nlines" / "night.parquet", standard_run("acme/run-x").rows)
    api.write_outputs([odd], "odd", ["suites a"])
    text = reporting.write_report("odd")[0].read_text(encoding="utf-8")
    assert all(
        words[2:5] == ["EVENTS", "--suites", "suites a"] for words in _explain_commands(text)
    )
    assert "cannot be shown on one line" in _texts(text).by_id["by-run"]


def test_e106_runs_of_many_tasks_draw_and_list_their_worst(tmp_path: Path) -> None:
    """E-106: a run of 250 tasks draws its 20 lowest-scoring (task scores) and 20
    costliest (cost) in the per-task charts, in the suite's order, and its heading says which;
    the Tasks table lists its 100 lowest-scoring and says so; the verdict's failing tasks list
    10 rows open and 200 folded, and count the rest."""
    events, suites = generated_log(tmp_path, runs=2, tasks=250, trials=2)
    out = tmp_path / "out"
    api.write_outputs([events], out, [suites])
    page = reporting.write_report(out)[0].read_text(encoding="utf-8")
    tasks = pl.read_parquet(out / "tasks.parquet")
    ranks = {
        "task-scores": ("lowest-scoring", ["passed", "score", "task_pos"], [False, False, False]),
        "cost": ("costliest", ["cost_usd", "task_pos"], [True, False]),
    }
    for anchor, (which, keys, descending) in ranks.items():
        svg = _element(page, anchor)
        drawn: set[str] = set()
        for (run_id,), of_run in tasks.group_by("run_id"):
            picked = of_run.sort(keys, descending=descending).head(worst_runs.MAX_TASKS_DRAWN)
            drawn |= set(picked["task_id"])
            title = f"{run_id} ("
            assert title in svg and f"the 20 {which} of 250 tasks" in svg, anchor
        assert set(re.findall(r">(task-\d{3})</text>", svg)) == drawn, anchor
    listed = html.unescape(_element(page, "tasks"))
    assert listed.count(f"the {worst_runs.MAX_TASKS_LISTED} lowest-scoring of 250 tasks") == 2
    assert "at most 100 a run" in listed
    assert len(re.findall(r"<tr><td>", _element(page, "tasks"))) == 2 * worst_runs.MAX_TASKS_LISTED
    # a run named by --run-id is shown whole: every one of its 250 tasks
    named = str(tasks["run_id"][0])
    whole = reporting.write_report(out, tmp_path / "named.html", run_ids=[named])[1].html
    assert len(re.findall(r"<tr><td>", _element(whole, "tasks"))) == 250
    assert "at most" not in _element(whole, "tasks")
    failing = tasks.filter(~pl.col("passed"))["task_id"].n_unique()
    assert failing > verdict_section.VERDICT_ROWS + verdict_section.FOLDED_ROWS
    part = _element(page, "failing-tasks")
    rest = failing - verdict_section.VERDICT_ROWS - verdict_section.FOLDED_ROWS
    assert f"The next {verdict_section.FOLDED_ROWS} are listed; {rest} more are in" in part
    assert part.count("<tr><td>") == verdict_section.VERDICT_ROWS + verdict_section.FOLDED_ROWS


def test_e106_a_regression_of_many_tasks_draws_those_that_changed_most(
    samples_out: Path,
) -> None:
    """E-106: a regression block over 400 paired tasks draws the MAX_PAIRED_DRAWN that
    changed most (its mean over all of them), and says so; not 400 rows."""
    out = outdir.load(samples_out)
    (view, *_) = report_views.run_views(out)
    differences = [(f"task-{n:03d}", (n % 21 - 10) / 10) for n in range(400)]
    block = {
        "verdict": "regressed",
        "method": "paired-bootstrap",
        "alpha": 0.05,
        "pairedTaskCount": 400,
        "scoreDelta": -0.05,
        "baselineRunId": "acme/base",
    }
    item = report_views.RegressionView(view, block, differences, None, "")
    with svg_figures.chart_style():
        chart = comparison_charts.chart_regression(item, 1)
    limit = comparison_charts.MAX_PAIRED_DRAWN
    assert f"Drawn: the {limit} tasks that changed most of 400 paired tasks" in chart.caption
    labels = set(re.findall(r">(task-\d{3})</text>", chart.svg))
    assert len(labels) == limit
    assert all(abs((int(t[5:]) % 21 - 10) / 10) == 1.0 for t in labels)  # the largest |change|
    mean = sum(d for _, d in differences) / len(differences)
    assert f"mean difference {mean:+.3f}" in chart.svg


def test_e106_a_trend_of_many_runs_draws_the_latest(tmp_path: Path) -> None:
    """E-106, E-151: a series of 250 nights draws its last MAX_TREND_RUNS nights in its
    trend chart, and says so."""
    runs = 250
    series = pl.DataFrame(
        {
            "suite_id": ["acme.suite"] * runs,
            "agent_id": ["acme.agent"] * runs,
            "model": [None] * runs,
            "night_label": [f"night-{n:04d}" for n in range(runs)],
            "run_id": [f"acme/run-{n:04d}" for n in range(runs)],
            "started_at": [T0 + timedelta(hours=n) for n in range(runs)],
            "score": [0.5] * runs,
            "passed_trials": [1] * runs,
            "trials": [2] * runs,
        }
    )
    with svg_figures.chart_style():
        (chart,) = comparison_charts.chart_trends(series)
    latest = comparison_charts.MAX_TREND_RUNS
    assert f"Drawn: its last {latest} of 250 nights" in chart.caption
    assert f"over {latest} nights from {T0 + timedelta(hours=runs - latest):%Y-%m-%d}" in chart.alt


def test_e106_runs_data_holds_no_nan(tmp_path: Path) -> None:
    """E-106, E-84: a hand-edited summary's NaN cost is null in the runs table's data, which
    stays strict JSON the page's script can parse."""
    out = tmp_path / "out"
    api.write_outputs([SAMPLE_EVENTS], out, [SAMPLE_SUITES])
    lines = (out / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["summary"]["totalCostUsd"] = float("nan")
    lines[0] = json.dumps(first)
    (out / "summaries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    page = reporting.write_report(out)[0].read_text(encoding="utf-8")
    data = re.search(r'id="runs-data">(.*?)</script>', page, re.S)
    assert data is not None

    def reject(name: str) -> None:
        raise AssertionError(f"{name} in the runs data")

    parsed = json.loads(data.group(1), parse_constant=reject)
    costs = {row[1]: row[12] for row in parsed["runs"]}
    assert costs[first["runId"]] is None


# --------------------------------------------------------------------------------------------
# What changed behind a regression (E-142)

LOOKUP, REFUND, REFUND_ALL = (
    "crm:lookup-SECRET",
    "billing:refund-SECRET",
    "billing:refund-all-SECRET",
)
PLANTED_TASKS = [f"task-{i:02d}" for i in range(12)]
#: the candidate's id holds a space and glob characters: its commands must quote and escape it
PLANTED_RUNS = {"base": "acme/run-base", "cand": "acme/run cand[2]*", "alike": "acme/run-alike"}
#: how each run behaves, by task (any other task calls LOOKUP then REFUND, for $0.01): the
#: candidate drops the refund on five tasks (and costs more there), calls a forbidden tool on
#: two, costs more on one it still passes, and mends the order the baseline got wrong on one;
#: the alike run behaves as the baseline
PLANTED_BEHAVIOUR = {
    "base": {PLANTED_TASKS[8]: "reordered"},
    "cand": {
        **dict.fromkeys(PLANTED_TASKS[0:5], "dropped-refund"),
        **dict.fromkeys(PLANTED_TASKS[5:7], "forbidden"),
        PLANTED_TASKS[7]: "costlier",
    },
    "alike": {PLANTED_TASKS[8]: "reordered"},
}
#: what the page says changed behind the candidate's regression: 7 tasks dropped, 1 rose, 4
#: did not move (one of them costlier), in the terminal's words and bound (3 a direction)
PLANTED_LINES = [
    "changes in the 7 task(s) that dropped:",
    "tool path no longer matches (missing): 5 of 7",
    "fewer tool calls: 5 of 7",
    "higher cost: 5 of 7 (and 1 of 4 that did not move)",
    "and 3 other change(s) (the command below lists them with --json)",
    "changes in the 1 task(s) that rose:",
    "tool path matches where it did not: 1 of 1",
]


def write_planted(root: Path) -> Path:
    """The baseline, the planted candidate and the alike run (both naming the baseline, so both
    carry a regression block) in one event file, graded into root/out with the library API,
    which records the paths it was given (E-118)."""
    rows: list[dict[str, Any]] = []
    for day, (name, run_id) in enumerate(PLANTED_RUNS.items()):
        log = LogBuilder(run_id, EPOCH + timedelta(days=day))
        extra = {} if name == "base" else {"baselineRunId": PLANTED_RUNS["base"]}
        log.eval_started(task_count=len(PLANTED_TASKS), **extra)
        for task in PLANTED_TASKS:
            behaviour = PLANTED_BEHAVIOUR[name].get(task)
            cost = 0.05 if behaviour in ("dropped-refund", "costlier") else 0.01
            log.trial(
                task,
                planted_calls(behaviour, LOOKUP, REFUND, REFUND_ALL),
                [{"costEstimateUsd": cost}],
                duration_ms=1000,
            )
        log.eval_completed()
        rows += log.rows
    events = write_events(root / "events" / "planted.parquet", rows)
    path = traj("in-order", [LOOKUP, REFUND], forbidden=[REFUND_ALL])
    doc = suite_doc(*(golden(task, path) for task in PLANTED_TASKS))
    suites = write_json(root / "suites" / "planted.json", doc)
    out = root / "out"
    api.write_outputs([events], out, [suites])
    return out


@pytest.fixture(scope="module")
def planted_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_planted(tmp_path_factory.mktemp("planted"))


class _Lines(HTMLParser):
    """The text of every `<p>` and `<li>` in a fragment, in order, as a browser shows it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("p", "li"):
            self.lines.append("")
            self._depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("p", "li"):
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._depth:
            self.lines[-1] += data


def _changes_rows(page: str) -> list[tuple[str, list[str]]]:
    """Each regression row of the verdict with what changed behind it: (candidate run id, the
    lines of the row under it)."""
    part = _element(page, "regressions")
    found = []
    for run_id, row in re.findall(
        r'<tr class="changed"><td><a [^>]*><code>([^<]*)</code>.*?</tr>'
        r'(<tr class="changes">.*?</tr>)',
        part,
        re.S,
    ):
        lines = _Lines()
        lines.feed(row)
        lines.close()
        found.append((html.unescape(run_id), lines.lines))
    assert len(found) == part.count('<tr class="changes">')
    return found


def _terminal_changes(output: str) -> list[str]:
    """The change lines `regress` prints (E-136), stripped of their indent."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  changes in the "))
    return [
        line.strip() for line in lines[start:] if line.startswith("    ") or "changes in" in line
    ]


def test_e142_a_regression_says_what_changed_behind_it(planted_out: Path) -> None:
    """E-142: under the candidate's regression the verdict says what changed, from the tables:
    per direction the changes its tasks share most, with exact counts and their background, at
    most three, the rest counted, in the words `regress` prints for the same tables; then that
    the calls need the event logs. The run that behaves as its baseline (unchanged) shows none,
    and no tool name reaches the page (§H)."""
    page = reporting.write_report(planted_out)[0].read_text(encoding="utf-8")
    ((run_id, lines),) = _changes_rows(page)
    assert run_id == PLANTED_RUNS["cand"]
    assert lines[:-1] == PLANTED_LINES
    assert lines[-1].startswith(
        "(calls not compared: a side is a tasks table; the calls need its event logs) From the "
        "event logs, calls included: evalbatch regress "
    )
    listed = [row[0] for row in _rows(_element(page, "regressions"))]
    assert listed == [PLANTED_RUNS["cand"]]  # the alike run is unchanged: no row, no changes
    for marker in LEAK_MARKERS:
        assert marker not in page

    # the terminal's words and counts, from `regress` over the same tables (E-136)
    tasks = planted_out / "tasks.parquet"
    argv = ["regress", str(tasks), str(tasks)]
    argv += ["--base-run-id", PLANTED_RUNS["base"], "--cand-run-id", PLANTED_RUNS["cand"]]
    shown = CliRunner().invoke(cli.cli, argv)
    assert shown.exit_code == 1, shown.output
    terminal = _terminal_changes(shown.output)
    assert terminal[:4] == PLANTED_LINES[:4]
    assert terminal[4] == "and 3 other change(s) (--json lists them)"
    assert terminal[5:7] == PLANTED_LINES[5:7]
    assert (
        terminal[7]
        == "(calls not compared: a side is a tasks table; the calls need its event logs)"
    )
    # and every change, not only those shown: the one function behind both (E-142)
    out = outdir.load(planted_out)
    items = report_views.regression_views(
        report_views.run_views(out), out.table("tasks"), trials=out.table("trials")
    )
    (item,) = [i for i in items if i.block["verdict"] == "regressed"]
    report = api.regress_paths(
        tasks, tasks, base_run=PLANTED_RUNS["base"], cand_run=PLANTED_RUNS["cand"]
    )
    (comparison,) = report.comparisons
    assert item.changes is not None and comparison.changes is not None
    assert item.changes.report() == comparison.changes.report()
    assert [i.changes for i in items if i.block["verdict"] != "regressed"] == [None]


def test_e142_the_regress_command_compares_the_calls(planted_out: Path) -> None:
    """E-142: the command under a regression names the event and suite paths `run` was given
    (E-118), reads only the two runs (their ids escaped as globs, quoted for the shell), runs as
    it stands and gives the same changes and the calls behind them."""
    page = reporting.write_report(planted_out)[0].read_text(encoding="utf-8")
    (command,) = [code for code in _texts(page).codes if code.startswith("evalbatch regress ")]
    words = shlex.split(command)
    events = str(planted_out.parent / "events" / "planted.parquet")
    base, cand = PLANTED_RUNS["base"], PLANTED_RUNS["cand"]
    assert words == [
        "evalbatch",
        "regress",
        events,
        events,
        "--suites",
        str(planted_out.parent / "suites" / "planted.json"),
        "--run-id",
        base,
        "--run-id",
        "acme/run cand[[]2][*]",
        "--base-run-id",
        base,
        "--cand-run-id",
        cand,
    ]
    ran = CliRunner().invoke(cli.cli, [*words[1:], "--json"])
    assert ran.exit_code == 1, ran.output
    (comparison,) = json.loads(ran.output)["comparisons"]
    changes = comparison["changes"]
    assert (changes["tasksDropped"], changes["tasksRose"], changes["callLevel"]) == (7, 1, True)
    counted = {c["change"]: c["tasks"] for c in changes["dropped"]}
    assert counted["no-longer-calls:billing:refund-SECRET"] == 5
    assert counted["newly-calls:billing:refund-all-SECRET"] == 2
    assert {key: counted[key] for key in ("path-broke:missing", "tool-calls:fewer")} == {
        "path-broke:missing": 5,
        "tool-calls:fewer": 5,
    }
    assert len(counted) == 8  # the page's six, and the two calls only the logs hold


def test_e142_a_pair_that_behaves_alike_shows_no_change(tmp_path: Path) -> None:
    """E-142: a regression whose runs behave alike (only the host's score fell) says no change
    in tool path or efficiency, and a pair that did not regress shows no changes at all."""
    out = _compared_pair(tmp_path / "regressed", regressed=True)
    page = reporting.write_report(out)[0].read_text(encoding="utf-8")
    ((run_id, lines),) = _changes_rows(page)
    assert run_id == "acme/pair-cand"
    assert lines[:-1] == [
        "changes in the 4 task(s) that dropped:",
        "no change in tool path or efficiency (the host's score moved): 4 of 4",
    ]
    # the baseline's task rows gone: the changes are not known, and the row says why
    loaded = outdir.load(out)
    views = report_views.run_views(loaded)
    tasks = loaded.table("tasks").filter(pl.col("run_id") != "acme/pair-base")
    items = report_views.regression_views(views, tasks, trials=loaded.table("trials"))
    verdict = verdict_section.verdict_section(views, items, [], loaded.inputs)
    ((_, lines),) = _changes_rows(verdict)
    assert lines == ["changes: not known: the baseline's task rows are not in this directory."]

    out = _compared_pair(tmp_path / "unchanged", regressed=False)
    page = reporting.write_report(out)[0].read_text(encoding="utf-8")
    assert _changes_rows(page) == []
    assert "changes in the" not in page and "calls not compared" not in page
