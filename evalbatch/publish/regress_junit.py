"""`regress --junit FILE`: the comparison as a JUnit XML test report, which CI test-report views
read (E-139).

One `<testsuite>` per eval suite compared, one `<testcase>` per paired task. A task that dropped
in a suite that fails the gate is a `<failure>` whose message says by how much and what changed
(the changes most shared first); every other task passes, a moved one saying what changed in
its `<system-out>`, so the report is red exactly when the exit code is 1 for a regression (one
input, one answer). A suite that compared nothing is one `<error>` test case. The suite's
verdict and statistics are its `<properties>`. Names tools and argument paths, never argument
values (the changes hold none, §H), unless the report was made with them
(`--with-argument-values`, E-141): then a moved task's failure text or output adds, under its
one-line message, the values behind each changed argument path it lists. Built with the
standard library's ElementTree.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from evalbatch.pairing.sides import RegressionReport
from evalbatch.reduce import behaviour_changes, paired_verdict
from evalbatch.text import printable

#: the changes a failure message lists before counting the rest
LISTED = 5


def _text(value: object) -> str:
    """Text from the logs as XML allows it: control characters escaped (E-83; XML 1.0 cannot
    hold most of them at all)."""
    return printable(str(value))


def _what_changed(task: dict[str, Any]) -> str:
    keys: list[str] = task["changes"]
    words = [behaviour_changes.describe_change(key) for key in keys[:LISTED]]
    if len(keys) > LISTED:
        words.append(f"and {len(keys) - LISTED} more")
    return "; ".join(words)


def _value_lines(changes: behaviour_changes.Changes, task: dict[str, Any]) -> list[str]:
    """E-141: the values behind each changed argument path among the task's listed changes,
    a line each; none when the report holds no values."""
    lines = []
    for key in task["changes"][:LISTED]:
        values = changes.argument_values.get((task["taskId"], key))
        if values is not None:
            lines.append(
                f"{behaviour_changes.describe_change(key)}: baseline {values.baseline} "
                f"→ candidate {values.candidate}"
            )
    return lines


def _properties(c: paired_verdict.Comparison) -> dict[str, str]:
    shown: dict[str, object] = {
        "verdict": c.verdict,
        "failsGate": str(c.fails_gate).lower(),
        "method": c.method,
        "alpha": c.alpha,
        "compares": "gatingScore" if c.score == "gating" else "score",
        "meanDifference": c.mean_difference,
        "pValue": c.p_value,
        "baselineRunId": c.baseline_run_id,
        "candidateRunId": c.candidate_run_id,
    }
    return {name: _text(value) for name, value in shown.items() if value is not None}


def _suite(root: ET.Element, c: paired_verdict.Comparison) -> None:
    name = _text(f"{c.suite_id}@{c.suite_version}")
    suite = ET.SubElement(root, "testsuite", name=name)
    properties = ET.SubElement(suite, "properties")
    for key, value in _properties(c).items():
        ET.SubElement(properties, "property", name=key, value=value)
    if c.nothing_compared:
        case = ET.SubElement(suite, "testcase", classname=name, name="comparison")
        ET.SubElement(case, "error", message=_text(c.reason or "nothing was compared"))
        suite.set("tests", "1")
        suite.set("errors", "1")
        suite.set("failures", "0")
        return
    moved = {t["taskId"]: t for t in c.changes.tasks} if c.changes is not None else {}
    unknown = f"changes not known: {c.changes_unknown}" if c.changes is None else ""
    failures = 0
    for task_id, difference in c.task_differences:
        case = ET.SubElement(suite, "testcase", classname=name, name=_text(task_id))
        task = moved.get(task_id)
        values: list[str] = []
        if task is not None:
            direction, why = task["direction"], _what_changed(task)
            values = _value_lines(c.changes, task) if c.changes is not None else []
        elif c.changes is None and difference != 0:
            direction, why = ("dropped" if difference < 0 else "rose"), unknown
        else:
            continue
        line = f"{direction} {difference:+.4f}: {why}"
        body = "\n".join(_text(text) for text in [line, *values])  # each escaped, E-83
        if direction == "dropped" and c.fails_gate:
            failures += 1
            ET.SubElement(case, "failure", message=_text(line), type="regressed").text = body
        else:
            ET.SubElement(case, "system-out").text = body
    suite.set("tests", str(len(c.task_differences)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")


def junit_report(report: RegressionReport) -> bytes:
    """The whole report, as UTF-8 XML with its declaration."""
    root = ET.Element("testsuites", name="evalbatch regress")
    for comparison in report.comparisons:
        _suite(root, comparison)
    for total in ("tests", "failures", "errors"):
        root.set(total, str(sum(int(s.get(total, "0")) for s in root.iter("testsuite"))))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
