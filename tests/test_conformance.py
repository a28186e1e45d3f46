"""E-104: `verify --conformance`, one row per RFC 0244 requirement a log and a host's summaries
can witness (its falsifiability table), each `executed-pass`, `executed-fail`, `inapplicable` or
`unwitnessable`, with the runs and counts behind it; a run that cannot be recomputed never counts
as a pass. Also the §F checks of a summary's regression block it reads (E-105).
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from evalbatch import api
from evalbatch.commands.verify import verify_command
from evalbatch.inputs import in_memory
from evalbatch.inputs.capabilities import facets_of
from evalbatch.verify.audit_report import Finding
from evalbatch.verify.conformance import OWN_REQUIREMENTS, REQUIREMENTS, rows_broken
from evalbatch.version import package_version
from tests.helpers import SAMPLES, assert_content_free, slow_except
from tests.logbuilder import (
    RUN,
    RUN2,
    LogBuilder,
    golden,
    suite,
    traj,
    write_raw_events,
)

TOOL = "crm:lookup-SECRET"


def verdicts(report: api.VerifyReport) -> dict[str, str]:
    """requirement id (without the RFC's prefix) -> verdict."""
    return {row.requirement.id.rsplit(".", 1)[1]: row.verdict for row in report.conformance.rows}


def row_of(report: api.VerifyReport, name: str) -> Any:
    return next(r for r in report.conformance.rows if r.requirement.id.endswith(f".{name}"))


def clean_run(run_id: str = RUN, *, trials: int = 2, fixtures: bool = False) -> LogBuilder:
    """A run of `clean_suite()` whose host records agree with the recomputation: every trial
    calls the expected tool and passes."""
    log = LogBuilder(run_id)
    log.eval_started(task_count=2, trialCount=trials)
    for task in ("alpha", "beta"):
        for index in range(trials):
            log.trial(
                task,
                calls=[(TOOL, {"id": 1})],
                usage=[{"inputTokens": 10, "outputTokens": 2, "costEstimateUsd": 0.001}],
                score=1,
                passed=True,
                trial_index=index,
                scoreLabel="pass",
                evaluatorType="deterministic",
            )
    log.eval_completed(aggregateScore=1, passed=True, taskCount=2, passedCount=2)
    return log


def clean_suite(trials: int = 2, **extra: Any) -> dict[str, Any]:
    return suite(
        golden("alpha", traj("in-order", [TOOL])),
        golden("beta", traj("in-order", [TOOL])),
        trials={"count": trials},
        **extra,
    )


def summaries_of(rows: list[dict[str, Any]], docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The summaries evalbatch itself writes for these events: what a conforming host serves."""
    return api.grade_events(rows, docs).summaries


def conformance(
    rows: list[dict[str, Any]],
    docs: list[dict[str, Any]],
    summaries: dict[str, Any] | None = None,
    **kwargs: Any,
) -> api.VerifyReport:
    with in_memory.events_file(rows) as path:
        given = [api.HostSummary(run, doc, f"<{run}>") for run, doc in (summaries or {}).items()]
        return api.verify_paths(path, suite_docs=docs, summaries=given, conformance=True, **kwargs)


# --- the rows, one by one -----------------------------------------------------------------------


@pytest.mark.slow
def test_e104_a_host_that_agrees_passes_what_it_exercised() -> None:
    rows, docs = clean_run().rows, [clean_suite()]
    report = conformance(rows, docs, summaries_of(rows, docs))
    found = verdicts(report)
    for name in (
        "trajectory-graded",
        "trials-per-task",
        "trial-stats-formula",
        "content-free",
        "wire-shape",
        "cost-counts-every-trial",
        "efficiency-counts",
        "efficiency-never-gates",
    ):
        assert found[name] == "executed-pass", name
    # nothing exercised these: no miss, no regression pair, no capabilities
    for name in (
        "fixture-miss-fails",
        "live-miss-reported",
        "paired-task-count",
        "identical-runs-unchanged",
        "unadvertised-feature-refused",
    ):
        assert found[name] == "inapplicable", name
        assert row_of(report, name).note.startswith("no recomputed run exercised it: ")
    assert report.conformance.exit_code == 0
    trajectory = row_of(report, "trajectory-graded")
    assert (trajectory.runs, trajectory.units, trajectory.findings) == ((RUN,), 4, 0)


@pytest.mark.slow
def test_e104_every_row_of_the_table_is_reported_unwitnessable_with_its_reason() -> None:
    rows, docs = clean_run().rows, [clean_suite()]
    report = conformance(rows, docs)
    unwitnessable = {
        r.requirement.id: r.note for r in report.conformance.rows if r.verdict == "unwitnessable"
    }
    assert set(unwitnessable) == {
        "evalbatch.0244.trial-isolation",
        "evalbatch.0244.first-unconsumed-selection",
        "evalbatch.0244.miss-blocks-live-tool",
        "evalbatch.0244.inconclusive-when-indistinguishable",
        "evalbatch.0244.fixtures-untrusted",
    }
    assert all(note for note in unwitnessable.values())
    ids = [r.id for r in REQUIREMENTS]
    assert ids[:7] == [
        f"openwop.requirement.0244.{name}"
        for name in (
            "trajectory-graded",
            "trials-per-task",
            "trial-stats-formula",
            "fixture-miss-fails",
            "content-free",
            "wire-shape",
            "unadvertised-feature-refused",
        )
    ]


def test_e104_without_summaries_the_summary_rows_say_what_would_exercise_them() -> None:
    rows, docs = clean_run().rows, [clean_suite()]
    report = conformance(rows, docs)
    assert verdicts(report)["trial-stats-formula"] == "inapplicable"
    assert "--summaries" in row_of(report, "trial-stats-formula").note


def test_e104_a_host_passing_an_unmatched_path_fails_trajectory_graded() -> None:
    log = clean_run()
    first_call = next(r for r in log.rows if r["type"] == "agent.tool-called")
    first_call["payload"] = first_call["payload"].replace(TOOL, "crm:other")
    report = conformance(log.rows, [clean_suite()])
    row = row_of(report, "trajectory-graded")
    assert (row.verdict, row.findings, row.runs) == ("executed-fail", 1, (RUN,))
    assert report.conformance.exit_code == 1


@pytest.mark.slow
def test_e104_a_trial_that_failed_closed_must_report_score_0() -> None:
    doc = clean_suite(trials=1)
    doc["tasks"][0]["fixtures"] = {"onMiss": "fail", "toolResponses": [{"tool": "crm:none"}]}
    log = clean_run(trials=1)
    bad = conformance(log.rows, [doc])  # the host scored the missed trial 1, passed
    assert verdicts(bad)["fixture-miss-fails"] == "executed-fail"
    for row in log.rows:  # the host that fails it closed
        if row["type"] == "eval.scored" and '"alpha"' in row["payload"]:
            payload = json.loads(row["payload"])
            row["payload"] = json.dumps(payload | {"score": 0, "passed": False})
    good = conformance(log.rows, [doc])
    assert verdicts(good)["fixture-miss-fails"] == "executed-pass"
    assert row_of(good, "fixture-miss-fails").units == 1


@pytest.mark.slow
def test_e104_a_summary_naming_tools_fails_content_free() -> None:
    rows, docs = clean_run().rows, [clean_suite()]
    summaries = copy.deepcopy(summaries_of(rows, docs))
    summaries[RUN]["tasks"][0]["trajectory"]["tools"] = [TOOL]
    report = conformance(rows, docs, summaries)
    assert verdicts(report)["content-free"] == "executed-fail"
    assert verdicts(report)["wire-shape"] == "executed-fail"
    document = json.dumps(report.conformance.to_json())
    assert_content_free(document)


@pytest.mark.slow
def test_e104_a_host_failing_a_task_on_efficiency_fails_never_gates() -> None:
    rows, docs = clean_run().rows, [clean_suite()]
    summaries = copy.deepcopy(summaries_of(rows, docs))
    summaries[RUN]["tasks"][1]["passed"] = False  # beta passes every gated input
    report = conformance(rows, docs, summaries)
    assert verdicts(report)["efficiency-never-gates"] == "executed-fail"


@pytest.mark.slow
def test_e104_capabilities_a_graded_run_the_host_had_to_refuse_fails() -> None:
    rows, docs = clean_run().rows, [clean_suite()]
    block = {"modes": ["golden"], "trajectory": True, "fixtureMatching": True}
    refused = conformance(rows, docs, capabilities=facets_of({"evalSuite": block}, "c"))
    assert verdicts(refused)["unadvertised-feature-refused"] == "executed-fail"
    within = conformance(
        rows,
        docs,
        capabilities=facets_of({"evalSuite": {**block, "trials": {"maxTrials": 5}}}, "c"),
    )
    row = row_of(within, "unadvertised-feature-refused")
    assert (row.verdict, row.runs) == ("inapplicable", (RUN,))
    assert "only by its absence" in row.note


def _regression_pair(
    candidate_scores: tuple[float, float],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A baseline (RUN) and a candidate (RUN2) of a one-trial suite; the candidate's tasks score
    `candidate_scores`, the baseline's 1 and 0.5."""
    doc = suite(golden("alpha"), golden("beta"), modes=("golden", "regression"))
    rows = []
    for run_id, scores, extra in (
        (RUN, (1, 0.5), {}),
        (RUN2, candidate_scores, {"baselineRunId": RUN}),
    ):
        log = LogBuilder(run_id)
        log.eval_started(task_count=2, modes=("golden", "regression"), **extra)
        for task, score in zip(("alpha", "beta"), scores, strict=True):
            log.trial(task, score=score, passed=score == 1)
        log.eval_completed()
        rows += log.rows
    return rows, doc


def test_e105_paired_task_count_and_identical_runs_in_a_regression_block() -> None:
    rows, doc = _regression_pair((1, 0.5))  # identical to the baseline
    summaries = copy.deepcopy(summaries_of(rows, [doc]))
    block = summaries[RUN2]["regression"]
    assert block["pairedTaskCount"] == 2 and block["verdict"] == "unchanged"
    report = conformance(rows, [doc], summaries)
    assert verdicts(report)["paired-task-count"] == "executed-pass"
    assert verdicts(report)["identical-runs-unchanged"] == "executed-pass"
    block["verdict"], block["pairedTaskCount"] = "improved", 3
    broken = conformance(rows, [doc], summaries)
    assert verdicts(broken)["identical-runs-unchanged"] == "executed-fail"
    assert verdicts(broken)["paired-task-count"] == "executed-fail"
    fields = {f.field: (f.host, f.recomputed, f.rule) for f in broken.findings}
    assert fields["summary.regression.verdict"] == ("improved", "unchanged", "RFC 0244 §F")
    assert fields["summary.regression.pairedTaskCount"] == (3, 2, "RFC 0244 §F")


def test_e105_a_pair_that_differs_is_not_identical() -> None:
    rows, doc = _regression_pair((0, 0))
    report = conformance(rows, [doc], summaries_of(rows, [doc]))
    assert verdicts(report)["identical-runs-unchanged"] == "inapplicable"
    assert verdicts(report)["paired-task-count"] == "executed-pass"


# --- runs that cannot be recomputed, the bundle, the command --------------------------------------


@pytest.mark.slow
def test_e104_a_run_that_cannot_be_recomputed_never_counts_as_a_pass() -> None:
    broken = clean_run(RUN2)
    broken.rows.append({**broken.rows[3], "payload": json.dumps({"toolName": "x"})})  # conflict
    report = conformance(broken.rows, [clean_suite()])
    assert report.conformance.not_recomputed == [RUN2]
    assert all(row.verdict != "executed-pass" for row in report.conformance.rows)
    assert report.conformance.verdict == "incomplete" and report.conformance.exit_code == 3
    both = conformance(clean_run().rows + broken.rows, [clean_suite()])
    assert RUN2 not in row_of(both, "trajectory-graded").runs
    assert both.conformance.exit_code == 3


def test_e104_the_json_bundle_names_the_version_and_fingerprints_the_inputs(
    tmp_path: Path,
) -> None:
    log = clean_run()
    events = write_raw_events(tmp_path / "events" / "run.parquet", log.rows)
    suite_file = tmp_path / "suite.json"
    suite_file.write_text(json.dumps(clean_suite()))
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps({"evalSuite": {"modes": ["golden"], "trajectory": True}}))
    result = CliRunner().invoke(
        verify_command,
        [
            str(tmp_path / "events"),
            "--suites",
            str(suite_file),
            "--capabilities",
            str(caps),
            "--conformance",
            "--json",
        ],
    )
    bundle = json.loads(result.output)
    assert result.exit_code == 1  # trials graded without the trials facet
    assert bundle["conformanceVersion"] == 1 and bundle["evalbatch"] == package_version()
    digest = hashlib.sha256(events.read_bytes()).hexdigest()
    assert bundle["inputs"]["events"] == [{"path": str(events), "sha256": digest}]
    assert (
        bundle["inputs"]["suites"][0]["sha256"]
        == hashlib.sha256(suite_file.read_bytes()).hexdigest()
    )
    assert bundle["inputs"]["capabilities"]["path"] == str(caps)
    first = bundle["requirements"][0]
    assert first["id"] == "openwop.requirement.0244.trajectory-graded"
    assert first["evidence"] == {"runs": [RUN], "unit": "trial", "count": 4, "findings": 0}
    assert_content_free(result.output)


@pytest.mark.slow
def test_e104_the_table_and_its_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    table = runner.invoke(
        verify_command,
        [str(SAMPLES / "events"), "--suites", str(SAMPLES / "suites"), "--conformance"],
    )
    assert table.exit_code == 1  # the samples' host passed paths that do not match
    lines = table.output.splitlines()
    assert lines[0].split() == ["requirement", "rfc", "verdict", "evidence"]
    assert lines[1].split()[:3] == [
        "openwop.requirement.0244.trajectory-graded",
        "§A",
        "executed-fail",
    ]
    assert lines[-1].startswith("conformance: executed-fail (")
    empty = write_raw_events(tmp_path / "none.parquet", LogBuilder().rows or [_row()])
    nothing = runner.invoke(verify_command, [str(empty), "--conformance"])
    assert nothing.exit_code == 2


def _row() -> dict[str, Any]:
    log = LogBuilder()
    log.add("run.started", {"workflowId": "w"})
    return log.rows[0]


@pytest.mark.parametrize("requirement", REQUIREMENTS, ids=lambda r: r.id)
def test_e104_each_requirement_names_its_section_and_how_it_is_witnessed(requirement: Any) -> None:
    assert requirement.section in {"§A", "§B", "§C", "§D", "§E", "§F", "§G", "§H"}
    if requirement.evidence is None:
        assert requirement.unwitnessable
    else:
        assert requirement.would and requirement.unit


@pytest.mark.slow
def test_e104_the_docs_show_what_conformance_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/verify.md's conformance table is the real output on the samples."""
    from tests.helpers import ROOT

    monkeypatch.chdir(ROOT)
    page = (ROOT / "docs" / "verify.md").read_text(encoding="utf-8")
    block = page.split("--capabilities data/samples/capabilities/full-host.json --conformance\n")[1]
    shown = block.split("```\n")[2].splitlines()  # the block after the command's
    dirs = [str(SAMPLES / name) for name in ("events", "regress", "delegates")]
    api.write_outputs(dirs, tmp_path / "all", str(SAMPLES / "suites"))
    result = CliRunner().invoke(
        verify_command,
        [
            *(f"data/samples/{name}" for name in ("events", "regress", "delegates")),
            "--suites",
            "data/samples/suites",
            "--summaries",
            str(tmp_path / "all" / "summaries.jsonl"),
            "--capabilities",
            "data/samples/capabilities/full-host.json",
            "--conformance",
        ],
        env={"COLUMNS": "100"},
    )
    assert result.exit_code == 1
    assert result.output.splitlines() == shown


@pytest.mark.slow
def test_e104_a_skipped_event_file_makes_the_report_incomplete(tmp_path: Path) -> None:
    """An event file that cannot be read hides its runs: the conformance verdict is incomplete
    (exit 3), never executed-pass, and the bundle names the file (E-104)."""
    events = tmp_path / "events"
    events.mkdir()
    with in_memory.events_file(clean_run().rows) as path:
        (events / "good.parquet").write_bytes(Path(path).read_bytes())
    (events / "damaged.parquet").write_bytes(b"PAR1 not a parquet file")
    suites = tmp_path / "suite.json"
    suites.write_text(json.dumps(clean_suite()))
    report = api.verify_paths(events, suites=suites, conformance=True)
    assert report.conformance.verdict == "incomplete" and report.conformance.exit_code == 3
    bundle = report.conformance.to_json()
    assert [f["path"] for f in bundle["skippedFiles"]] == [str(events / "damaged.parquet")]


# --- one witness, one answer (E-112, E-113) -------------------------------------------------------


def _edited(rows: list[dict[str, Any]], type_: str, change: Any) -> list[dict[str, Any]]:
    """The rows with each `type_` event's payload changed by `change` (a dict -> dict)."""
    edited = copy.deepcopy(rows)
    for row in edited:
        if row["type"] == type_:
            row["payload"] = json.dumps(change(json.loads(row["payload"])))
    return edited


def _completed_again(rows: list[dict[str, Any]], **payload: Any) -> list[dict[str, Any]]:
    """A second eval.completed after the first (OpenWOP emits it once)."""
    log = LogBuilder(RUN)
    log.rows = copy.deepcopy(rows)
    log.next_sequence = max(row["sequence"] for row in rows) + 1
    log.clock_ms = 3_600_000  # an hour on: after every event of `rows`
    log.eval_completed(**payload)
    return log.rows


#: one thing wrong in the records of a host that otherwise agrees
HOSTILE: dict[str, Any] = {
    "passed-written-as-1-or-0": lambda rows: _edited(
        rows, "eval.scored", lambda p: p | {"passed": int(p["passed"])}
    ),
    "score-written-as-a-string": lambda rows: _edited(
        rows, "eval.scored", lambda p: p | {"score": str(p["score"])}
    ),
    "aggregate-written-as-a-string": lambda rows: _edited(
        rows, "eval.completed", lambda p: p | {"aggregateScore": "1"}
    ),
    "aggregate-wrong-and-passed-flipped": lambda rows: _edited(
        rows, "eval.completed", lambda p: p | {"aggregateScore": 0.25, "passed": False}
    ),
    "suite-id-not-a-suite-id": lambda rows: _edited(
        rows, "eval.started", lambda p: p | {"suiteId": "Acme Support!"}
    ),
    "a-second-eval-completed-contradicts": lambda rows: _completed_again(
        rows, aggregateScore=0, passed=False, taskCount=2, passedCount=0
    ),
    "a-second-eval-completed-repeats": lambda rows: _completed_again(
        rows, aggregateScore=1, passed=True, taskCount=2, passedCount=2
    ),
    "latency-negative": lambda rows: _edited(rows, "eval.scored", lambda p: p | {"latencyMs": -5}),
    "latency-written-as-text": lambda rows: _edited(
        rows, "eval.scored", lambda p: p | {"latencyMs": "fast"}
    ),
    "cost-negative": lambda rows: _edited(rows, "eval.scored", lambda p: p | {"costUsd": -1}),
    "cost-past-its-range": lambda rows: _edited(
        rows, "eval.scored", lambda p: p | {"costUsd": 1e300}
    ),
    "cost-written-as-text": lambda rows: _edited(
        rows, "eval.scored", lambda p: p | {"costUsd": "cheap"}
    ),
    "task-count-wrong": lambda rows: _edited(rows, "eval.started", lambda p: p | {"taskCount": 3}),
}


@pytest.mark.parametrize(
    "name",
    # one fault of each kind in the fast set (a type, a suite id, a repeated event, a text number)
    slow_except(
        sorted(HOSTILE),
        fast=[
            "passed-written-as-1-or-0",
            "suite-id-not-a-suite-id",
            "a-second-eval-completed-contradicts",
            "cost-written-as-text",
        ],
    ),
)
def test_e112_conformance_passes_only_what_plain_verify_passes(name: str) -> None:
    """Each planted fault is found by plain `verify`, and `--conformance` fails a row for every
    finding: the two exit codes are one answer."""
    rows, docs = HOSTILE[name](clean_run().rows), [clean_suite()]
    with in_memory.events_file(rows) as path:
        plain = api.verify_paths(path, suite_docs=docs)
    report = conformance(rows, docs)
    assert plain.exit_code == 1 and plain.findings, name
    assert report.conformance.verdict == "executed-fail"
    assert report.conformance.exit_code == plain.exit_code
    assert sum(row.findings for row in report.conformance.rows) >= len(plain.findings)


def test_e112_the_clean_host_passes_both_ways() -> None:
    rows, docs = clean_run().rows, [clean_suite()]
    with in_memory.events_file(rows) as path:
        plain = api.verify_paths(path, suite_docs=docs)
    report = conformance(rows, docs)
    assert plain.exit_code == 0 and report.conformance.exit_code == 0
    assert verdicts(report)["host-record-agrees"] == "executed-pass"
    assert verdicts(report)["event-wire-shape"] == "executed-pass"


def test_e112_a_finding_no_rfc_row_claims_breaks_a_row_of_the_project() -> None:
    wrong_type = Finding(RUN, "eval.scored.passed", 1, False, "D-11", reason="passed-invalid")
    wrong_value = Finding(RUN, "eval.completed.aggregateScore", 0.25, 1.0, "§3.6")
    path = Finding(RUN, "eval.scored.passed", True, False, "§3.2", reason="forbidden")
    assert [r.id for r in rows_broken(wrong_type)] == ["evalbatch.0244.event-wire-shape"]
    assert [r.id for r in rows_broken(wrong_value)] == ["evalbatch.0244.host-record-agrees"]
    assert [r.id for r in rows_broken(path)] == ["openwop.requirement.0244.trajectory-graded"]


@pytest.mark.parametrize("requirement", OWN_REQUIREMENTS, ids=lambda r: r.id)
def test_e112_the_project_rows_are_named_as_its_own(requirement: Any) -> None:
    assert requirement.id.startswith("evalbatch.0244.")
    assert requirement.section == "§Conformance" and requirement.would and requirement.unit


def test_e112_a_log_with_no_eval_run_is_never_a_pass(tmp_path: Path) -> None:
    """Nothing executed: exit 2, and the bundle says `not-executed`, never `executed-pass`."""
    empty = write_raw_events(tmp_path / "none.parquet", [_row()])
    result = CliRunner().invoke(verify_command, [str(empty), "--conformance", "--json"])
    bundle = json.loads(result.stdout)
    assert result.exit_code == 2
    assert bundle["verdict"] == "not-executed" and bundle["evalRuns"] == 0
    assert all(r["verdict"] != "executed-pass" for r in bundle["requirements"])


def test_e113_a_second_eval_completed_is_a_warning_of_run_and_a_finding_of_verify() -> None:
    """The first eval.completed ends the span and stands: the grade is the one-completion
    grade; `run` warns and `verify` names the repeat at its sequence."""
    once = clean_run().rows
    twice = HOSTILE["a-second-eval-completed-contradicts"](once)
    graded_once, graded_twice = (
        api.grade_events(once, [clean_suite()]),
        api.grade_events(twice, [clean_suite()]),
    )
    assert graded_twice.summaries == graded_once.summaries
    problems = graded_twice.problems.filter(pl.col("code") == "completed-repeated")
    assert problems["severity"].to_list() == ["warning"]
    assert problems["sequence"].to_list() == [len(once)]
    with in_memory.events_file(twice) as path:
        found = api.verify_paths(path, suite_docs=[clean_suite()]).findings
    assert [(f.field, f.host, f.recomputed, f.reason, f.sequence) for f in found] == [
        ("eval.completed", 2, 1, "completed-repeated", len(once))
    ]


@pytest.mark.slow
def test_s4_a_summary_run_would_refuse_is_a_finding_of_verify() -> None:
    """`run` leaves out a run whose suiteId fails the EvalSummary schema (`summary-invalid`);
    `verify` names the host field, never its value."""
    rows = HOSTILE["suite-id-not-a-suite-id"](clean_run().rows)
    graded = api.grade_events(rows, [clean_suite()])
    assert "summary-invalid" in graded.problems["code"].to_list() and not graded.summaries
    with in_memory.events_file(rows) as path:
        report = api.verify_paths(path, suite_docs=[clean_suite()])
    assert [(f.field, f.host, f.rule, f.reason) for f in report.findings] == [
        ("eval.started.suiteId", "<invalid>", "§4", "summary-invalid")
    ]
    assert "Acme" not in json.dumps(report.to_json())


@pytest.mark.slow
def test_e104_quiet_conformance_prints_the_verdict_line_alone() -> None:
    args = [str(SAMPLES / "events"), "--suites", str(SAMPLES / "suites"), "--conformance"]
    quiet = CliRunner().invoke(verify_command, [*args, "-q"])
    assert quiet.exit_code == 1
    assert quiet.stdout.splitlines() == [
        "conformance: executed-fail (1 executed-fail, 7 executed-pass, 7 inapplicable, "
        "5 unwitnessable)"
    ]
