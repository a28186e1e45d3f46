"""`evalbatch report`'s page in a real browser: Debian's headless Chromium.

The tests need Chromium (`apt-get install -y chromium`, `make browser`); without it they fail and
say so, since CI installs it. Pages are loaded from files with the network off; a probe page
loads the report in a frame of a given size and writes what the browser laid out (and what its
script did) into its own DOM, which `--dump-dom` prints.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from PIL import Image

from evalbatch import api
from evalbatch.outputs import outdir
from evalbatch.publish import html_report as reporting
from evalbatch.publish import runs_table, svg_figures, worst_runs
from tests.helpers import SAMPLE_EVENTS, SAMPLE_SUITES, SAMPLES, generated_log
from tests.test_report import (
    NIGHT_RUNS,
    PLANTED_LINES,
    PLANTED_RUNS,
    SAMPLE_CHARTS,
    write_night,
    write_planted,
)

#: a slow family (headless Chromium):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

CHROMIUM_INSTALL = "apt-get install -y chromium"

#: the first screen the verdict must fit in (E-95)
SCREEN = (1280, 800)
#: the verdict's colours (the page's CSS: `.lead.fail` background, `--fail` ink)
LEAD_FAIL_BACKGROUND, FAIL_INK = "#fcefe6", "#b34700"


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
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


def _probe(page: Path, script: str, tmp_path: Path, width: int, height: int) -> dict[str, Any]:
    """Load `page` in a frame of width x height and return what `script` (the body of a function
    of `frame`, `win`, `doc` and `errors`, returning a JSON-able value) found once it loaded."""
    probe = tmp_path / f"probe-{page.stem}.html"
    probe.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>'
        '<pre id="out">pending</pre>'
        f'<iframe id="r" src="{html.escape(page.as_uri())}" '
        f'style="width:{width}px;height:{height}px;border:0"></iframe>'
        "<script>\nconst errors = [];\n"
        'window.addEventListener("error", e => errors.push(String(e.message)));\n'
        'document.getElementById("r").addEventListener("load", () => {\n'
        '  const frame = document.getElementById("r");\n'
        "  const win = frame.contentWindow, doc = frame.contentDocument;\n"
        '  win.addEventListener("error", e => errors.push(String(e.message)));\n'
        f"  const found = (() => {{\n{script}\n  }})();\n"
        '  document.getElementById("out").textContent = JSON.stringify(found);\n'
        "});\n</script></body></html>\n",
        encoding="utf-8",
    )
    dom = _run_chromium(
        _chromium(),
        tmp_path / f"profile-{page.stem}",
        "--allow-file-access-from-files",
        "--virtual-time-budget=20000",
        "--dump-dom",
        probe.as_uri(),
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    match = re.search(r'<pre id="out">(.*?)</pre>', dom.stdout, re.S)
    assert match is not None and match.group(1) != "pending", dom.stdout[:2000]
    found: dict[str, Any] = json.loads(html.unescape(match.group(1)))
    return found


def _screenshot(page: Path, tmp_path: Path, width: int, height: int) -> Image.Image:
    shot = tmp_path / f"{page.stem}-{width}x{height}.png"
    taken = _run_chromium(
        _chromium(),
        tmp_path / f"profile-shot-{page.stem}-{height}",
        f"--screenshot={shot}",
        f"--window-size={width},{height}",
        page.as_uri(),
    )
    assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
    with Image.open(shot) as image:
        rgb = image.convert("RGB")
    assert rgb.size == (width, height)
    return rgb


def _colour_pixels(image: Any, colour: str, tolerance: int = 18) -> int:
    want = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
    count = 0
    for n, pixel in image.getcolors(maxcolors=1 << 24):
        if all(abs(a - b) <= tolerance for a, b in zip(pixel[:3], want, strict=True)):
            count += n
    return count


# --------------------------------------------------------------------------------------------
# The samples

SAMPLE_LAYOUT = """
  const svgs = [...doc.querySelectorAll("figure svg")];
  return {
    title: doc.title,
    charts: svgs.map(s => {
      const box = s.getBoundingClientRect();
      return {label: s.getAttribute("aria-label"), width: Math.round(box.width),
              height: Math.round(box.height), shapes: s.querySelectorAll("path, use").length};
    }),
    height: doc.documentElement.scrollHeight,
    headings: [...doc.querySelectorAll("h2")].map(h => h.textContent),
    count: doc.getElementById("runs-count").textContent,
    filterBar: !!doc.getElementById("runs-filter"),
    errors: errors,
  };
"""


@pytest.fixture(scope="module")
def all_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every sample log, the regression pair included, graded together and reported."""
    out = tmp_path_factory.mktemp("browser") / "all"
    api.write_outputs([SAMPLE_EVENTS, SAMPLES / "regress"], out, [SAMPLE_SUITES])
    return reporting.write_report(out)[0]


def test_report_renders_in_headless_chromium(all_page: Path, tmp_path: Path) -> None:
    """The samples' report in Chromium: every chart lays out at a real size with its shapes
    drawn, no error is raised, the runs table's script ran (E-95), the verdict comes
    first, and a screenshot of the page shows the charts' colours."""
    laid_out = _probe(all_page, SAMPLE_LAYOUT, tmp_path, 1280, 900)
    assert laid_out["errors"] == []
    assert laid_out["title"] == "Eval report: all"
    assert laid_out["headings"][:2] == ["Verdict", "Runs"]
    assert laid_out["headings"][2].startswith("Regression: ")
    assert laid_out["headings"][3] == "Suite results"
    assert laid_out["count"] == "1–5 of 5 runs" and laid_out["filterBar"]
    assert len(laid_out["charts"]) == len(SAMPLE_CHARTS) + 1
    for chart in laid_out["charts"]:
        assert chart["width"] >= 800, chart
        assert chart["height"] >= 120, chart
        assert chart["shapes"] >= 20, chart

    height = min(int(laid_out["height"]) + 40, 16000)
    rgb = _screenshot(all_page, tmp_path, 1280, height)
    colours: Any = rgb.getcolors(maxcolors=1 << 24)
    assert colours is not None and len(colours) > 200  # not blank
    white = sum(n for n, pixel in colours if min(pixel) >= 250)
    assert white < 0.92 * rgb.size[0] * rgb.size[1]
    for colour in (
        svg_figures.PASS,
        svg_figures.FAIL,
        svg_figures.BLUE,
        svg_figures.ORANGE,
        svg_figures.PURPLE,
    ):
        assert _colour_pixels(rgb, colour) > 150, colour
    saved = os.environ.get("EVALBATCH_REPORT_SCREENSHOT")
    if saved:
        rgb.save(saved)


# --------------------------------------------------------------------------------------------
# A night of 500 runs (E-95)

#: what each regression's changes look like laid out (E-142): their lines as shown, whether
#: every line and command is drawn inside its cell, the cell between the Regressions heading
#: and the next one, and whether anything makes the table scroll sideways
CHANGES_PROBE = """
  const CHANGES = () => {
    const rect = e => e.getBoundingClientRect();
    const within = (inner, outer) => inner.left >= outer.left - 1 && inner.right <= outer.right + 1
      && inner.top >= outer.top - 1 && inner.bottom <= outer.bottom + 1;
    const part = rect(doc.getElementById("regressions"));
    const next = rect(doc.getElementById("failing-suites"));
    return [...doc.querySelectorAll("#verdict tr.changes")].map(row => {
      const cell = row.cells[0];
      const parts = [...cell.querySelectorAll("p, li, code")];
      const scroller = row.closest(".table-scroll");
      return {
        run: row.previousElementSibling.cells[0].textContent,
        lines: [...cell.querySelectorAll("p, li")].map(e => e.innerText),
        top: rect(cell).top, firstLine: rect(parts[0]).bottom,
        inCell: parts.every(e => within(rect(e), rect(cell))),
        inPart: rect(cell).top >= part.bottom && rect(cell).bottom <= next.top
          && within(rect(cell), rect(doc.getElementById("verdict"))),
        sideways: scroller.scrollWidth > scroller.clientWidth
          || parts.some(e => e.scrollWidth > e.clientWidth + 1),
        shown: parts.every(e => {
          const style = win.getComputedStyle(e);
          return style.visibility === "visible" && style.display !== "none"
            && rect(e).width > 0 && rect(e).height > 0 && style.color !== style.backgroundColor;
        }),
      };
    });
  };
"""

NIGHT_PROBE = (
    CHANGES_PROBE
    + """
  const box = element => {
    const b = element.getBoundingClientRect();
    return {top: b.top, bottom: b.bottom, left: b.left, right: b.right};
  };
  const lead = doc.getElementById("verdict-lead");
  const firstRegression = doc.querySelector("#verdict tbody tr");
  const table = doc.getElementById("runs-table");
  const heads = [...table.tHead.rows[0].cells];
  const shown = () => [...table.tBodies[0].rows].filter(r => !r.hidden)
    .map(r => r.cells[1].textContent);
  const count = () => doc.getElementById("runs-count").textContent;
  const sortBy = column => heads[column].querySelector("button").click();
  const found = {
    screen: [win.innerWidth, win.innerHeight],
    lead: {box: box(lead), text: lead.textContent},
    firstRegression: {box: box(firstRegression), run: firstRegression.cells[0].textContent},
    before: {count: count(), first: shown().slice(0, 2)},
  };
  sortBy(2);
  found.scoreUp = {first: shown().slice(0, 3), sort: heads[2].getAttribute("aria-sort")};
  sortBy(2);
  found.scoreDown = {first: shown().slice(0, 3), sort: heads[2].getAttribute("aria-sort")};
  sortBy(1);
  found.byRun = shown().slice(0, 3);
  const filter = doc.getElementById("runs-filter");
  filter.value = "regressed";
  filter.dispatchEvent(new win.Event("input"));
  found.regressed = {runs: shown(), count: count()};
  filter.value = "";
  filter.dispatchEvent(new win.Event("input"));
  doc.getElementById("runs-failed").click();
  found.failed = {runs: shown().length, count: count()};
  found.changes = CHANGES();
  found.errors = errors;
  return found;
"""
)


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """500 graded runs, their report, and what Chromium laid out and did with it."""
    root = tmp_path_factory.mktemp("night-browser")
    out = write_night(root)
    page = reporting.write_report(out)[0]
    return out, page, _probe(page, NIGHT_PROBE, root, *SCREEN)


def test_e95_first_screen_holds_the_verdict(
    night: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    """E-95 on 500 runs: in a 1280x800 window the verdict line and the worst
    regression are on the first screen, and a screenshot of that screen shows the verdict box
    in the failure colours."""
    out, page, found = night
    assert found["errors"] == []
    assert found["screen"] == list(SCREEN)
    lead = found["lead"]["box"]
    assert 0 <= lead["top"] < lead["bottom"] <= SCREEN[1]
    assert found["lead"]["text"].startswith("10 regressions · ")
    row = found["firstRegression"]
    assert 0 <= row["box"]["top"] < row["box"]["bottom"] <= SCREEN[1]
    worst = min(
        (s["regression"]["scoreDelta"], run_id)
        for run_id, s in outdir.load(out).summaries
        if s.get("regression")
    )
    assert row["run"] == worst[1]

    rgb = _screenshot(page, tmp_path, *SCREEN)
    crop = rgb.crop((int(lead["left"]), int(lead["top"]), int(lead["right"]), int(lead["bottom"])))
    area = crop.size[0] * crop.size[1]
    assert _colour_pixels(crop, LEAD_FAIL_BACKGROUND, 6) > 0.6 * area
    assert _colour_pixels(crop, FAIL_INK, 30) > 0.02 * area


def test_e142_night_changes_stay_in_their_box(
    night: tuple[Path, Path, dict[str, Any]],
) -> None:
    """E-142 on 500 runs at 1280x800: each of the ten regressions says what changed under its
    row, inside the verdict's Regressions part, drawn whole in its cell, nothing scrolling
    sideways."""
    out, _, found = night
    regressed = sorted(
        (s["regression"]["scoreDelta"], run_id)
        for run_id, s in outdir.load(out).summaries
        if s.get("regression", {}).get("verdict") == "regressed"
    )
    changes = found["changes"]
    assert [c["run"] for c in changes] == [run_id for _, run_id in regressed]
    for shown in changes:
        assert shown["lines"][0].startswith("changes in the "), shown
        assert shown["inCell"] and shown["inPart"] and shown["shown"], shown
        assert not shown["sideways"], shown


PLANTED_PROBE = (
    CHANGES_PROBE
    + """
  return {screen: [win.innerWidth, win.innerHeight], changes: CHANGES(), errors: errors};
"""
)


@pytest.mark.parametrize("screen", [SCREEN, (1280, 900)], ids=["1280x800", "1280x900"])
def test_e142_what_changed_renders_under_the_regression(
    screen: tuple[int, int], tmp_path: Path
) -> None:
    """E-142 in Chromium, at the sizes the page is checked at: the planted candidate's changes
    render under its regression, in the verdict's Regressions part, every line as the HTML
    holds it (tests/test_report.py), drawn inside its cell with nothing scrolling sideways, and
    their first line on the first screen."""
    page = reporting.write_report(write_planted(tmp_path))[0]
    found = _probe(page, PLANTED_PROBE, tmp_path, *screen)
    assert found["errors"] == [] and found["screen"] == list(screen)
    (shown,) = found["changes"]
    assert shown["run"] == PLANTED_RUNS["cand"]
    assert shown["lines"][:-1] == PLANTED_LINES
    assert shown["lines"][-1].startswith("(calls not compared: a side is a tasks table; the ")
    assert "evalbatch regress " in shown["lines"][-1]
    assert shown["inCell"] and shown["inPart"] and shown["shown"], shown
    assert not shown["sideways"], shown
    assert 0 <= shown["top"] < shown["firstLine"] <= screen[1]


def test_e95_runs_table_sorts_and_filters_in_chromium(
    night: tuple[Path, Path, dict[str, Any]],
) -> None:
    """E-95: the inline script sorts the runs table by a heading (ascending, then
    descending, ties in runId order) and filters it by text and by result, counting what is
    shown."""
    out, _, found = night
    runs = pl.read_parquet(out / "runs.parquet")
    assert found["errors"] == []
    ids = sorted(runs["run_id"].to_list())
    page = runs_table.PAGE_ROWS
    assert found["before"] == {"count": f"1–{page} of {NIGHT_RUNS} runs", "first": ids[:2]}
    up = runs.sort("aggregate_score", "run_id")["run_id"].to_list()
    down = runs.sort(pl.col("aggregate_score"), "run_id", descending=[True, False])[
        "run_id"
    ].to_list()
    assert found["scoreUp"] == {"first": up[:3], "sort": "ascending"}
    assert found["scoreDown"] == {"first": down[:3], "sort": "descending"}
    assert found["byRun"] == ids[:3]
    regressed = sorted(
        run_id
        for run_id, s in outdir.load(out).summaries
        if s.get("regression", {}).get("verdict") == "regressed"
    )
    assert sorted(found["regressed"]["runs"]) == regressed
    assert found["regressed"]["count"] == (
        f"1–{len(regressed)} of {len(regressed)} runs (filtered from {NIGHT_RUNS})"
    )
    failed = runs.filter(pl.col("passed").not_()).height
    assert found["failed"] == {
        "runs": min(failed, page),
        "count": f"1–{min(failed, page)} of {failed} runs (filtered from {NIGHT_RUNS})",
    }


# --------------------------------------------------------------------------------------------
# A night of 10,000 runs (E-106)

#: runs in the night, of the benchmark's shape A (20 tasks × 3 trials a run, graded here on
#: scores alone); the times are measured by bench/report_scale.py, never by a test
LARGE_NIGHT_RUNS = 10_000
#: the page's size at that night (E-106)
LARGE_NIGHT_PAGE_BYTES = 5_000_000

LARGE_NIGHT_PROBE = """
  const table = doc.getElementById("runs-table");
  const rows = () => [...table.tBodies[0].rows];
  const runs = () => rows().map(r => r.cells[1].textContent);
  const count = () => doc.getElementById("runs-count").textContent;
  const lead = doc.getElementById("verdict-lead").getBoundingClientRect();
  const found = {
    screen: [win.innerWidth, win.innerHeight],
    lead: {top: lead.top, bottom: lead.bottom},
    leadText: doc.getElementById("verdict-lead").textContent,
    before: {count: count(), first: runs().slice(0, 2), rows: rows().length},
  };
  // every run's link, page by page: to its section, or to the command that writes it
  const next = doc.getElementById("runs-next");
  const links = {detail: 0, command: 0, broken: [], runs: new Set()};
  for (;;) {
    for (const tr of rows()) {
      const a = tr.cells[1].querySelector("a");
      const run = a.textContent;
      links.runs.add(run);
      const target = doc.getElementById(a.getAttribute("href").slice(1));
      if (a.dataset.run !== undefined) {
        if (target && target.id === "more-runs" && a.dataset.run === run) links.command += 1;
        else links.broken.push(run);
      } else if (target && target.tagName === "ARTICLE" &&
                 target.querySelector("h3 code").textContent === run) {
        links.detail += 1;
      } else {
        links.broken.push(run);
      }
    }
    if (next.disabled) break;
    next.click();
  }
  found.links = {detail: links.detail, command: links.command, broken: links.broken,
                 runs: links.runs.size};
  found.lastPage = count();
  // every link on the page leads somewhere on it
  found.dangling = [...doc.querySelectorAll("a[href]")].map(a => a.getAttribute("href"))
    .filter(h => !h.startsWith("#") || !doc.getElementById(h.slice(1)));
  // following a run without a section fills its id into the command
  doc.getElementById("runs-prev").click();
  const other = doc.querySelector("#runs-table a[data-run]");
  other.click();
  found.command = {run: other.dataset.run,
                   text: doc.getElementById("more-runs-command").textContent};
  const heads = [...table.tHead.rows[0].cells];
  heads[2].querySelector("button").click();
  found.scoreUp = runs().slice(0, 3);
  heads[2].querySelector("button").click();
  found.scoreDown = runs().slice(0, 3);
  const filter = doc.getElementById("runs-filter");
  filter.value = found.command.run;
  filter.dispatchEvent(new win.Event("input"));
  found.oneRun = {runs: runs(), count: count()};
  filter.value = "";
  filter.dispatchEvent(new win.Event("input"));
  doc.getElementById("runs-failed").click();
  found.failed = {rows: rows().length, count: count(),
                  allFailed: rows().every(r => r.dataset.passed === "no")};
  found.errors = errors;
  return found;
"""


@pytest.fixture(scope="module")
def large_night(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """10,000 generated runs graded, their report, and what Chromium did with it."""
    root = tmp_path_factory.mktemp("large-night")
    events, suites = generated_log(root, runs=LARGE_NIGHT_RUNS, tasks=20, trials=3)
    # graded on scores alone, so some runs pass and some fail (most fail on their tool path)
    suite = json.loads((suites / "bench.json").read_text())
    for task in suite["tasks"]:
        task["expected"].pop("trajectory", None)
        task["expected"]["kind"] = "golden"
        task["expected"].setdefault("match", {"strategy": "contains", "value": "resolved"})
        task.pop("fixtures", None)
    suite["thresholds"]["passScore"] = 0.8  # aggregates of about 0.86 ± 0.03: a few fail
    (suites / "bench.json").write_text(json.dumps(suite))
    out = root / "out"
    api.write_outputs([events], out, [suites])
    page = reporting.write_report(out)[0]
    return out, page, _probe(page, LARGE_NIGHT_PROBE, root, *SCREEN)


def test_e106_a_night_of_10000_runs_in_chromium(
    large_night: tuple[Path, Path, dict[str, Any]],
) -> None:
    """E-106 at 10,000 runs × 20 tasks × 3 trials: the page is at most 5 MB; the verdict is on
    the first screen; the runs table draws a page
    of rows from the embedded data, sorts and filters over all 10,000; every run's link leads to
    its section (the DETAIL_RUNS lowest-scoring) or to the command that writes it in full, which
    following the link fills in; no link on the page dangles."""
    out, page_file, found = large_night
    assert page_file.stat().st_size <= LARGE_NIGHT_PAGE_BYTES
    assert found["errors"] == []
    assert found["screen"] == list(SCREEN)
    assert 0 <= found["lead"]["top"] < found["lead"]["bottom"] <= SCREEN[1]
    runs = pl.read_parquet(out / "runs.parquet")
    failed = runs.filter(pl.col("passed").not_()).height
    assert 0 < failed < LARGE_NIGHT_RUNS - runs_table.PAGE_ROWS
    # no generated run names a baseline: nothing was compared, and the verdict says so
    assert found["leadText"].startswith(
        f"Not compared with a baseline · {failed} of 10000 suite runs failed"
    )

    page = runs_table.PAGE_ROWS
    ids = sorted(runs["run_id"].to_list())
    assert found["before"] == {
        "count": f"1–{page} of {LARGE_NIGHT_RUNS} runs",
        "first": ids[:2],
        "rows": page,
    }
    detail = worst_runs.DETAIL_RUNS
    assert found["links"] == {
        "detail": detail,
        "command": LARGE_NIGHT_RUNS - detail,
        "broken": [],
        "runs": LARGE_NIGHT_RUNS,
    }
    last = LARGE_NIGHT_RUNS - page + 1
    assert found["lastPage"] == f"{last}–{LARGE_NIGHT_RUNS} of {LARGE_NIGHT_RUNS} runs"
    assert found["dangling"] == []
    run = found["command"]["run"]
    assert found["command"]["text"] == f"evalbatch report OUT_DIR --run-id {run} --out run.html"

    up = runs.sort("aggregate_score", "run_id")["run_id"].to_list()
    down = runs.sort("aggregate_score", "run_id", descending=[True, False])["run_id"].to_list()
    assert found["scoreUp"] == up[:3]
    assert found["scoreDown"] == down[:3]
    assert found["oneRun"] == {
        "runs": [run],
        "count": f"1–1 of 1 run (filtered from {LARGE_NIGHT_RUNS})",
    }
    assert found["failed"] == {
        "rows": min(failed, page),
        "count": f"1–{min(failed, page)} of {failed} runs (filtered from {LARGE_NIGHT_RUNS})",
        "allFailed": True,
    }
