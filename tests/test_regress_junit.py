"""E-139: `regress --junit FILE`, read back by a maintained JUnit XML reader (junitparser): a
test suite per eval suite, a test case per paired task, a failure for each task that dropped
in a suite failing the gate, with a message that says what changed; red exactly when the gate
fails; never an argument value."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from click.testing import CliRunner
from junitparser import Error, Failure, JUnitXml

from evalbatch.cli import cli
from tests.helpers import SAMPLES, write_events, write_json
from tests.logbuilder import EPOCH, LogBuilder, golden, suite, traj

LOOKUP, REFUND = "crm:lookup", "billing:refund"
REGRESS = [
    str(SAMPLES / "regress" / "baseline.parquet"),
    str(SAMPLES / "regress" / "candidate.parquet"),
    "--suites",
    str(SAMPLES / "suites"),
]


def _report(tmp_path: Path, *argv: str) -> tuple[int, JUnitXml]:
    out = tmp_path / "report.xml"
    result = CliRunner().invoke(cli, ["regress", *argv, "--junit", str(out), "-q"])
    return result.exit_code, JUnitXml.fromfile(str(out))


def _failures(xml: JUnitXml) -> dict[str, str]:
    return {
        case.name: result.message
        for suite in xml
        for case in suite
        for result in case.result
        if isinstance(result, Failure)
    }


def test_e139_the_samples_report_reads_back(tmp_path: Path) -> None:
    code, xml = _report(tmp_path, *REGRESS)
    assert code == 1
    (suite,) = list(xml)
    assert suite.name == "acme.support.evals.regression@1.0.0"
    assert (suite.tests, suite.failures, suite.errors) == (10, 6, 0)
    assert (xml.tests, xml.failures) == (10, 6)
    properties = {p.name: p.value for p in suite.properties()}
    assert properties["verdict"] == "regressed" and properties["failsGate"] == "true"
    failures = _failures(xml)
    assert failures["address-change"] == (
        "dropped -1.0000: no longer calls crm:lookup-customer; fewer tool calls; higher latency"
    )
    assert set(failures) == {
        "address-change",
        "escalate-complaint",
        "invoice-copy",
        "loyalty-points",
        "order-status",
        "shipping-delay",
    }


@pytest.mark.slow
def test_e139_a_suite_below_min_drop_has_no_failure(tmp_path: Path) -> None:
    """One input, one answer: the gate passes (exit 0), so the report is green; the tasks
    that dropped say what changed in their output."""
    code, xml = _report(tmp_path, *REGRESS, "--min-drop", "0.5")
    assert code == 0
    assert xml.failures == 0 and _failures(xml) == {}
    (suite,) = list(xml)
    outs = [case.system_out for case in suite if case.system_out]
    assert len(outs) == 6 and all(out.startswith("dropped ") for out in outs)


def test_e139_a_failure_names_the_dropped_tool_never_an_argument_value(tmp_path: Path) -> None:
    logs = []
    for name, day in (("base", 0), ("cand", 1)):
        log = LogBuilder(f"acme/run-{name}", EPOCH + dt.timedelta(days=day))
        log.eval_started(task_count=8)
        for i in range(8):
            lookup = (LOOKUP, {"orderId": f"SECRET-{name}"})
            log.trial(f"t{i}", [lookup] if name == "cand" and i < 6 else [lookup, REFUND])
        log.eval_completed()
        logs.append(str(write_events(tmp_path / f"{name}.parquet", log.rows)))
    doc = suite(*(golden(f"t{i}", traj("in-order", [LOOKUP, REFUND])) for i in range(8)))
    write_json(tmp_path / "suites" / "s.json", doc)
    code, xml = _report(
        tmp_path, *logs, "--suites", str(tmp_path / "suites"), "--method", "paired-t"
    )
    failures = _failures(xml)
    text = (tmp_path / "report.xml").read_text(encoding="utf-8")
    assert "SECRET" not in text
    assert code == 1
    assert set(failures) == {f"t{i}" for i in range(6)}
    assert failures["t0"].startswith("dropped -1.0000: no longer calls billing:refund; ")


@pytest.mark.slow
def test_e139_nothing_compared_is_an_error_case(tmp_path: Path) -> None:
    """A run of the pair that was not graded: exit 2, and the report holds an error."""
    logs = []
    for name in ("base", "cand"):
        log = LogBuilder(f"acme/run-{name}")
        log.eval_started()
        log.trial("t0")
        log.eval_completed()
        logs.append(str(write_events(tmp_path / f"{name}.parquet", log.rows)))
    # a suite that fails validation: neither run is graded
    write_json(tmp_path / "suites" / "s.json", {**suite(golden("t0")), "tasks": "none"})
    code, xml = _report(tmp_path, *logs, "--suites", str(tmp_path / "suites"), "--allow-same-run")
    assert code == 2
    (suite_element,) = list(xml)
    (case,) = list(suite_element)
    assert case.name == "comparison" and isinstance(case.result[0], Error)
