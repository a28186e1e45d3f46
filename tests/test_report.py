"""`evalbatch report OUT_DIR`: one self-contained HTML page of charts, opened in a real browser.

The browser test needs Debian's Chromium (`apt-get install -y chromium`); without it the test
fails and says so, since CI installs it. The page is loaded from a file with the network off;
the charts must lay out at a real size, the page must report no error, and the screenshot must
show the charts' colours.

Expected values come from data/samples/README.md.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from PIL import Image

from evalbatch import api, cli
from evalbatch.commands.report import report
from evalbatch.outputs import outdir
from evalbatch.publish import report as reporting
from tests.conftest import (
    LEAK_MARKERS,
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    SAMPLES,
    standard_run,
    write_events,
)

CHROMIUM_INSTALL = "apt-get install -y chromium"
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


def test_report_is_self_contained_and_accessible(all_page: Path) -> None:
    """No script, stylesheet link, image or frame; every link a fragment of the page; every
    chart an inline SVG with a role and alt text, under a heading with a caption; ids unique."""
    text = all_page.read_text(encoding="utf-8")
    page = _parse(text)
    tags = Counter(tag for tag, _ in page.elements)
    for tag in ("script", "link", "img", "iframe", "object", "embed"):
        assert tags[tag] == 0, tag
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
    assert sections == ["runs", *SAMPLE_CHARTS, "regression-1", "tasks"]


def test_report_is_deterministic_and_content_free(samples_out: Path) -> None:
    """The same outputs give the same bytes (no date, fixed SVG ids); no tool name appears."""
    first = reporting.build_report(outdir.load(samples_out, ("tasks", "trials"))).html
    second = reporting.build_report(outdir.load(samples_out, ("tasks", "trials"))).html
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
    curve = reporting.pass_curves(rows)
    assert [k for k, _, _ in curve] == [1, 2, 3]
    expected = [(2 / 3, 2 / 3), (8 / 9, 4 / 9), (1.0, 1 / 3)]
    for (_, at_k, hat_k), (want_at, want_hat) in zip(curve, expected, strict=True):
        assert at_k == pytest.approx(want_at, rel=1e-12)
        assert hat_k == pytest.approx(want_hat, rel=1e-12)
    single = tasks.filter(pl.col("run_id") == "acme/run-trajectory-0001").to_dicts()
    assert reporting.pass_curves(single) == [(1, 0.4, 0.4)]  # 2 of 5 tasks passed, n = 1


def test_failure_causes_of_the_samples(samples_out: Path) -> None:
    """README §1-§3: the trajectory sample fails on a wrong order, a forbidden call and an
    argument mismatch (an expected call missing); the trials sample on one forbidden call and
    two rubric scores; the fixture sample on one fail-closed miss."""
    out = outdir.load(samples_out, ("tasks", "trials"))
    causes = {v.run_id: dict(reporting.failure_causes(v)) for v in reporting.run_views(out)}
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
    out = outdir.load(all_out, ("tasks", "trials"))
    (item,) = reporting.regression_views(reporting.run_views(out), out.table("tasks"))
    assert item.block["verdict"] == "regressed"
    assert len(item.differences) == 10
    assert sum(d for _, d in item.differences) / 10 == pytest.approx(-0.4)
    assert item.comparison is not None and item.comparison.interval is not None
    assert item.comparison.interval[1] < 0
    chart = reporting.chart_regression(item, 1)
    assert "regressed" in chart.alt and "10 paired tasks" in chart.alt
    assert "95% interval" in chart.alt


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
        ([str(no_tables)], "no tasks.parquet"),
    ):
        monkeypatch.setattr(sys, "argv", ["evalbatch", "report", *args])
        with pytest.raises(SystemExit) as exit_info:
            cli.main()
        err = capsys.readouterr().err
        assert exit_info.value.code == 2
        assert message in err and len(err.strip().splitlines()) == 1, err


# --------------------------------------------------------------------------------------------
# In a real browser

#: a test page that loads the report in a frame and writes what the browser laid out
PROBE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<pre id="out">pending</pre>
<iframe id="r" src="{src}" style="width:1280px;height:900px;border:0"></iframe>
<script>
const errors = [];
window.addEventListener("error", e => errors.push(String(e.message)));
document.getElementById("r").addEventListener("load", () => {{
  const frame = document.getElementById("r");
  frame.contentWindow.addEventListener("error", e => errors.push(String(e.message)));
  const doc = frame.contentDocument;
  const svgs = [...doc.querySelectorAll("figure svg")];
  const result = {{
    title: doc.title,
    charts: svgs.map(s => {{
      const box = s.getBoundingClientRect();
      return {{label: s.getAttribute("aria-label"), width: Math.round(box.width),
               height: Math.round(box.height), shapes: s.querySelectorAll("path, use").length}};
    }}),
    height: doc.documentElement.scrollHeight,
    headings: [...doc.querySelectorAll("h2")].map(h => h.textContent),
    errors: errors,
  }};
  document.getElementById("out").textContent = JSON.stringify(result);
}});
</script></body></html>
"""


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and Path("/usr/bin/chromium").exists():
        found = "/usr/bin/chromium"
    if found is None:
        pytest.fail(
            f"headless Chromium is needed to render the report: install it with "
            f"`{CHROMIUM_INSTALL}` (Debian's chromium package)"
        )
    return found


def _run_chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        *args,
    ]
    env = {**os.environ, "HOME": str(profile)}
    return subprocess.run(command, capture_output=True, text=True, timeout=90, env=env)


def _colour_pixels(image: Any, colour: str, tolerance: int = 18) -> int:
    want = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
    count = 0
    for n, pixel in image.getcolors(maxcolors=1 << 24):
        if all(abs(a - b) <= tolerance for a, b in zip(pixel[:3], want, strict=True)):
            count += n
    return count


def test_report_renders_in_headless_chromium(all_page: Path, tmp_path: Path) -> None:
    """The samples' report in Chromium: every chart lays out at a real size with its shapes
    drawn, no error is raised, and a screenshot of the page shows the charts' colours."""
    binary = _chromium()
    probe = tmp_path / "probe.html"
    probe.write_text(PROBE.format(src=html.escape(all_page.as_uri())), encoding="utf-8")
    dom = _run_chromium(
        binary,
        tmp_path / "profile-dom",
        "--allow-file-access-from-files",
        "--virtual-time-budget=10000",
        "--dump-dom",
        probe.as_uri(),
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    match = re.search(r'<pre id="out">(.*?)</pre>', dom.stdout, re.S)
    assert match is not None, dom.stdout[:2000]
    laid_out = json.loads(html.unescape(match.group(1)))
    assert laid_out["errors"] == []
    assert laid_out["title"] == "Eval report: all"
    assert laid_out["headings"][:2] == ["Runs", "Suite results"]
    assert len(laid_out["charts"]) == len(SAMPLE_CHARTS) + 1
    for chart in laid_out["charts"]:
        assert chart["width"] >= 800, chart
        assert chart["height"] >= 120, chart
        assert chart["shapes"] >= 20, chart

    shot = tmp_path / "report.png"
    height = min(int(laid_out["height"]) + 40, 16000)
    taken = _run_chromium(
        binary,
        tmp_path / "profile-shot",
        f"--screenshot={shot}",
        f"--window-size=1280,{height}",
        all_page.as_uri(),
    )
    assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
    with Image.open(shot) as image:
        rgb = image.convert("RGB")
        assert rgb.size == (1280, height)
        colours = rgb.getcolors(maxcolors=1 << 24)
        assert colours is not None and len(colours) > 200  # not blank
        white = sum(n for n, pixel in colours if min(pixel) >= 250)
        assert white < 0.92 * rgb.size[0] * rgb.size[1]
        for colour in (
            reporting.PASS,
            reporting.FAIL,
            reporting.BLUE,
            reporting.ORANGE,
            reporting.PURPLE,
        ):
            assert _colour_pixels(rgb, colour) > 150, colour
    saved = os.environ.get("EVALBATCH_REPORT_SCREENSHOT")
    if saved:
        shutil.copy(shot, saved)


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
