"""The report's Runs section: every run as one row, from data embedded in the page, and the line
counting what grading recorded in problems.parquet.

A night can hold 10,000 runs, and a page that builds 10,000 table rows up front opens in minutes
(E-106). So the rows are embedded once as JSON (a `<script type="application/json">` block,
which is data, never run) and the page's one script draws a page of `PAGE_ROWS` rows at a time,
sorted and filtered over all of them. Without the script, the first `PAGE_ROWS` rows are in the
HTML and the rest are in `runs.parquet`. A run shown in detail links to its section; any other
run links to the command that writes it in full (`evalbatch report OUT_DIR --run-id RUN`). The
page's Content-Security-Policy lets run only this script, by its hash (E-95).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from evalbatch.outputs.outdir import RunOutputs
from evalbatch.publish.page_markup import (
    esc,
    fmt,
    num_cell,
    quantity,
    run_link,
    table,
    usd,
    verdict_cell,
)
from evalbatch.publish.report_views import RunView

#: rows of the runs table drawn at a time (and written into the HTML for a reader without script)
PAGE_ROWS = 100

#: the table's columns: heading, whether numeric
COLUMNS: tuple[tuple[str, bool], ...] = (
    ("suite@version", False),
    ("run", False),
    ("score", True),
    ("result", False),
    ("tasks passed", True),
    ("failed trials", True),
    ("k", True),
    ("pass@k", True),
    ("pass^k", True),
    ("stderr", True),
    ("cost", True),
    ("regression", False),
)


def _short(value: Any) -> Any:
    """A number to six significant digits (the table shows three decimals; sorting on six keeps
    the data about 100 bytes a run), null for one that is not finite (a hand-edited summary's
    NaN: JSON has none, and the script must still parse the data), anything else as it is."""
    if isinstance(value, float):
        return float(f"{value:.6g}") if math.isfinite(value) else None
    return value


def _record(view: RunView, suite_number: int) -> list[Any]:
    """One run as the script reads it: its suite (a number into the suites list), its cells'
    values (for sorting) and where its link leads (its section's anchor, or null for the command
    that writes it); last, for a run from an Inspect log, its task and model (E-146)."""
    s = view.summary
    st = s.get("trialStats") or {}
    reg = s.get("regression")
    names = [text] if (text := _under_id(view)) else []
    return [
        suite_number,
        view.run_id,
        view.anchor or None,
        _short(s["aggregateScore"]),
        bool(s["passed"]),
        _short(s["passedCount"]),
        _short(s["taskCount"]),
        view.failed_trials,
        _short(st.get("k")),
        _short(st.get("passAtK")),
        _short(st.get("passHatK")),
        _short(st.get("scoreStderr")),
        _short(s.get("totalCostUsd")),
        f"{reg['verdict']} ({float(reg['scoreDelta']):+.3f})" if reg else None,
        *names,
    ]


def runs_data(views: Sequence[RunView]) -> str:
    """Every run as the page's script reads it: `{"suites": [...], "runs": [[...], ...]}`, as
    JSON safe inside a `<script>` element (no `<` at all)."""
    suites: dict[str, int] = {}
    records = [_record(view, suites.setdefault(view.suite, len(suites))) for view in views]
    data = {"suites": list(suites), "runs": records}
    text = json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c")


def runs_section(views: Sequence[RunView], out: RunOutputs) -> str:
    """The Runs section: the runs table (its data, its first page), then what grading recorded
    as problems. A run with an anchor has a section of its own on the page."""
    data = runs_data(views)
    shown = min(len(views), PAGE_ROWS)
    note = (
        f'<p class="drawn" id="runs-static">The first {shown} of '
        f"{esc(quantity(len(views), 'run'))}; the page's script shows every run, a page at a "
        "time, to sort and filter; <code>runs.parquet</code> holds them all.</p>"
        if len(views) > PAGE_ROWS
        else ""
    )
    return (
        '<section id="runs" aria-labelledby="runs-h"><h2 id="runs-h">Runs</h2>'
        + runs_table(views[:PAGE_ROWS])
        + note
        + f'<script type="application/json" id="runs-data">{data}</script>'
        + problems_paragraph(out)
        + "</section>"
    )


def runs_table(views: Sequence[RunView]) -> str:
    """The first page of the table as HTML, in the views' order (what a reader without the
    script sees; the script redraws the body from the data)."""
    rows = []
    for view in views:
        s = view.summary
        st = s.get("trialStats") or {}
        reg = s.get("regression")
        regression_text = f"{reg['verdict']} ({float(reg['scoreDelta']):+.3f})" if reg else "–"
        rows.append(
            f'<tr data-passed="{"yes" if s["passed"] else "no"}">'
            f"<td>{esc(view.suite)}</td><td>{run_link(view)}{_names_cell(view)}</td>"
            + num_cell(s["aggregateScore"], fmt(float(s["aggregateScore"])))
            + verdict_cell(s["passed"], sortable=True)
            + num_cell(s["passedCount"], f"{s['passedCount']}/{s['taskCount']}")
            + num_cell(view.failed_trials, str(view.failed_trials))
            + num_cell(st.get("k"), fmt(st.get("k")))
            + num_cell(st.get("passAtK"), fmt(st.get("passAtK")))
            + num_cell(st.get("passHatK"), fmt(st.get("passHatK")))
            + num_cell(st.get("scoreStderr"), fmt(st.get("scoreStderr")))
            + num_cell(s.get("totalCostUsd"), usd(s.get("totalCostUsd")))
            + f"<td>{esc(regression_text)}</td></tr>"
        )
    numeric = [n for n, (_, number) in enumerate(COLUMNS) if number]
    return table([name for name, _ in COLUMNS], rows, numeric).replace(
        "<table>", '<table id="runs-table">', 1
    )


def _names_cell(view: RunView) -> str:
    """Under a run's id, the Inspect task and model it ran (E-146) and its errored samples
    (E-147); nothing for other runs."""
    text = _under_id(view)
    return f'<small class="names">{esc(text)}</small>' if text else ""


def _under_id(view: RunView) -> str:
    """The Inspect task and model (E-146) and the errored samples (E-147) of a run, in words."""
    return " · ".join(t for t in (view.names_text, view.errored_text) if t)


def problems_paragraph(out: RunOutputs) -> str:
    """How many problems grading recorded, by code; nothing when the table was not read."""
    problems = out.tables.get("problems")
    if problems is None:
        return ""
    if problems.height == 0:
        return "<p>No problems were recorded while grading.</p>"
    counts = Counter(problems["code"].to_list())
    listed = ", ".join(f"<code>{esc(c)}</code> × {n}" for c, n in sorted(counts.items()))
    recorded = "problem was" if problems.height == 1 else "problems were"
    return (
        f"<p>{problems.height} {recorded} recorded while grading ({listed}); "
        "see <code>problems.parquet</code>.</p>"
    )


#: draws the runs table from the embedded data a page at a time, sorted by a click on a column
#: heading and filtered by text and result over every run; fills the run id into the command
#: that writes a run in full when its link is followed
RUNS_SCRIPT = """
(() => {
  const table = document.getElementById("runs-table");
  const source = document.getElementById("runs-data");
  if (!table || !source) return;
  const parsed = JSON.parse(source.textContent);
  const data = parsed.runs.map(r => [parsed.suites[r[0]], ...r.slice(1)]);
  const PAGE = PAGE_ROWS;
  const body = table.tBodies[0];
  const fmt = (v, digits) => {
    if (v === null || v === undefined) return "\\u2013";
    if (typeof v === "boolean") return v ? "yes" : "no";
    if (Number.isInteger(v)) return String(v);
    return v === 0 ? "0" : v.toFixed(digits).replace(/0+$/, "").replace(/\\.$/, "");
  };
  const usd = v => v === null ? "\\u2013" : v === 0 ? "$0" :
    ("$" + v.toFixed(4)).replace(/0+$/, "").replace(/\\.$/, "");
  const text = r => (r[0] + " " + r[1] + " " + (r[4] ? "passed" : "failed") + " " +
    (r[13] || "") + " " + (r[14] || "")).toLowerCase();
  const texts = data.map(text);
  // the value each column sorts on: text columns by their text, numbers by their value
  const keys = [r => r[0].toLowerCase(), r => r[1].toLowerCase(), r => r[3], r => r[4] ? 1 : 0,
    r => r[5], r => r[7], r => r[8], r => r[9], r => r[10], r => r[11], r => r[12],
    r => r[13] === null ? null : r[13].toLowerCase()];
  let order = data.map((_, i) => i);
  let shown = order;
  let page = 0;
  const bar = document.createElement("div");
  bar.className = "filter";
  bar.innerHTML = '<label>Filter runs <input type="search" id="runs-filter" ' +
    'placeholder="run, suite, passed, failed, regressed"></label>' +
    '<label><input type="checkbox" id="runs-failed"> failed only</label>' +
    '<button type="button" id="runs-prev">previous</button>' +
    '<button type="button" id="runs-next">next</button>' +
    '<span id="runs-count" aria-live="polite"></span>';
  table.parentNode.before(bar);
  const note = document.getElementById("runs-static");
  if (note) note.hidden = true;
  const filter = bar.querySelector("#runs-filter");
  const failedOnly = bar.querySelector("#runs-failed");
  const count = bar.querySelector("#runs-count");
  const cell = (content, numeric, value) => {
    const td = document.createElement("td");
    if (numeric) { td.className = "num"; td.dataset.v = value === null ? "" : value; }
    td.append(content);
    return td;
  };
  const row = r => {
    const tr = document.createElement("tr");
    tr.dataset.passed = r[4] ? "yes" : "no";
    const link = document.createElement("a");
    const code = document.createElement("code");
    code.textContent = r[1];
    link.append(code);
    if (r[2] === null) { link.href = "#more-runs"; link.dataset.run = r[1]; }
    else link.href = "#" + r[2];
    const run = cell(link);
    if (r[14]) {  // an Inspect log's task and model (E-146)
      const names = document.createElement("small");
      names.className = "names";
      names.textContent = r[14];
      run.append(names);
    }
    const verdict = document.createElement("td");
    verdict.className = r[4] ? "pass" : "fail";
    verdict.dataset.v = r[4] ? 1 : 0;
    verdict.textContent = r[4] ? "passed" : "failed";
    tr.append(cell(r[0]), run, cell(fmt(r[3], 3), true, r[3]), verdict,
      cell(r[5] + "/" + r[6], true, r[5]), cell(String(r[7]), true, r[7]),
      cell(fmt(r[8], 3), true, r[8]), cell(fmt(r[9], 3), true, r[9]),
      cell(fmt(r[10], 3), true, r[10]), cell(fmt(r[11], 3), true, r[11]),
      cell(usd(r[12]), true, r[12]), cell(r[13] === null ? "\\u2013" : r[13]));
    return tr;
  };
  const draw = () => {
    const last = Math.max(0, Math.ceil(shown.length / PAGE) - 1);
    page = Math.min(page, last);
    const start = page * PAGE;
    body.replaceChildren(...shown.slice(start, start + PAGE).map(i => row(data[i])));
    count.textContent = (shown.length ? (start + 1) + "\\u2013" +
      Math.min(start + PAGE, shown.length) : "0") + " of " + shown.length +
      (shown.length === 1 ? " run" : " runs") +
      (shown.length < data.length ? " (filtered from " + data.length + ")" : "");
    bar.querySelector("#runs-prev").disabled = page === 0;
    bar.querySelector("#runs-next").disabled = page >= last;
  };
  const apply = () => {
    const words = filter.value.toLowerCase().split(/\\s+/).filter(Boolean);
    shown = order.filter(i => words.every(w => texts[i].includes(w)) &&
      (!failedOnly.checked || !data[i][4]));
    page = 0;
    draw();
  };
  const heads = [...table.tHead.rows[0].cells];
  heads.forEach((th, column) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = th.textContent;
    th.textContent = "";
    th.append(button);
    button.addEventListener("click", () => {
      const up = th.getAttribute("aria-sort") !== "ascending";
      heads.forEach(h => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      const key = keys[column];
      order = data.map((r, i) => [key(r), i]).sort((a, b) => {
        if (a[0] === null || b[0] === null) {
          return a[0] === b[0] ? a[1] - b[1] : a[0] === null ? 1 : -1;
        }
        const c = typeof a[0] === "number" ? a[0] - b[0] : a[0].localeCompare(b[0]);
        return (up ? c : -c) || a[1] - b[1];
      }).map(item => item[1]);
      apply();
    });
  });
  bar.querySelector("#runs-prev").addEventListener("click", () => { page -= 1; draw(); });
  bar.querySelector("#runs-next").addEventListener("click", () => { page += 1; draw(); });
  filter.addEventListener("input", apply);
  failedOnly.addEventListener("change", apply);
  // a run without a section of its own: its link fills its id into the command that writes it
  const command = document.getElementById("more-runs-command");
  // the run id as a shell word, as Python's shlex.quote writes it
  const quoted = s => /^[\\w@%+=:,.\\/-]+$/.test(s) ? s : "'" + s.replace(/'/g, `'"'"'`) + "'";
  document.addEventListener("click", event => {
    const link = event.target.closest ? event.target.closest("a[data-run]") : null;
    if (link && command) command.textContent = command.dataset.template.replace("RUN",
      () => quoted(link.dataset.run));
  });
  apply();
})();
""".replace("PAGE_ROWS", str(PAGE_ROWS))
