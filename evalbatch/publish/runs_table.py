"""The report's Runs section: the table of every run, the inline script that sorts and filters
it, and the line counting what grading recorded in problems.parquet.

The table is complete without the script (no row is hidden until the reader filters); numeric
cells carry their exact value in `data-v` for the script to sort on. The page's
Content-Security-Policy lets run only this script, by its hash (E-95).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from evalbatch.outputs.outdir import RunOutputs
from evalbatch.publish.page_markup import esc, fmt, num_cell, run_link, table, usd, verdict_cell
from evalbatch.publish.report_views import RunView


def runs_section(views: Sequence[RunView], out: RunOutputs) -> str:
    """The Runs section: the runs table, then what grading recorded as problems."""
    return (
        '<section id="runs" aria-labelledby="runs-h"><h2 id="runs-h">Runs</h2>'
        + runs_table(views)
        + problems_line(out)
        + "</section>"
    )


def runs_table(views: Sequence[RunView]) -> str:
    """One row per run, in the views' order, with `data-passed` for the failed-only filter."""
    head = (
        "suite@version",
        "run",
        "score",
        "result",
        "tasks passed",
        "failed trials",
        "k",
        "pass@k",
        "pass^k",
        "stderr",
        "cost",
        "regression",
    )
    rows = []
    for view in views:
        s = view.summary
        st = s.get("trialStats") or {}
        reg = s.get("regression")
        regression_text = f"{reg['verdict']} ({float(reg['scoreDelta']):+.3f})" if reg else "–"
        rows.append(
            f'<tr data-passed="{"yes" if s["passed"] else "no"}">'
            f"<td>{esc(view.suite)}</td><td>{run_link(view)}</td>"
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
    return table(head, rows, (2, 4, 5, 6, 7, 8, 9, 10)).replace(
        "<table>", '<table id="runs-table">', 1
    )


def problems_line(out: RunOutputs) -> str:
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


#: sorts the runs table by a click on a column heading and filters it by text and result; the
#: table is complete without it (no row is hidden until the reader filters)
RUNS_SCRIPT = """
(() => {
  const table = document.getElementById("runs-table");
  if (!table) return;
  const body = table.tBodies[0];
  const rows = [...body.rows];
  const texts = rows.map(r => r.textContent.toLowerCase());
  const bar = document.createElement("div");
  bar.className = "filter";
  bar.innerHTML = '<label>Filter runs <input type="search" id="runs-filter" ' +
    'placeholder="run, suite, passed, failed, regressed"></label>' +
    '<label><input type="checkbox" id="runs-failed"> failed only</label>' +
    '<span id="runs-count" aria-live="polite"></span>';
  table.parentNode.before(bar);
  const text = bar.querySelector("#runs-filter");
  const failedOnly = bar.querySelector("#runs-failed");
  const count = bar.querySelector("#runs-count");
  const apply = () => {
    const words = text.value.toLowerCase().split(/\\s+/).filter(Boolean);
    let shown = 0;
    rows.forEach((row, i) => {
      const keep = words.every(w => texts[i].includes(w)) &&
        (!failedOnly.checked || row.dataset.passed === "no");
      row.hidden = !keep;
      shown += keep ? 1 : 0;
    });
    count.textContent = shown + " of " + rows.length + " runs";
  };
  const key = (row, column) => {
    const cell = row.cells[column];
    const value = cell.dataset.v;
    if (value === undefined) return cell.textContent.trim().toLowerCase();
    return value === "" ? null : Number(value);
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
      const order = rows.map((row, i) => [key(row, column), i, row]);
      order.sort((a, b) => {
        if (a[0] === null || b[0] === null) {
          return a[0] === b[0] ? a[1] - b[1] : a[0] === null ? 1 : -1;
        }
        const c = typeof a[0] === "number" ? a[0] - b[0] : a[0].localeCompare(b[0]);
        return (up ? c : -c) || a[1] - b[1];
      });
      body.append(...order.map(item => item[2]));
    });
  });
  text.addEventListener("input", apply);
  failedOnly.addEventListener("change", apply);
  apply();
})();
"""
