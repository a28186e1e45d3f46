"""RFC 0244 §G: a host refuses a suite that uses a feature whose facet it does not advertise
(E-100), and `evalbatch validate --capabilities` says so before a run (one document: E-101).

Each §G feature is checked on its own, with the facet absent (refused, naming the field) and
present (accepted), so a rule that stopped refusing, or refused what it should accept, fails.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalbatch.commands.validate import validate
from evalbatch.inputs.capabilities import (
    CapabilitiesError,
    EvalSuiteFacets,
    facets_of,
    read_capabilities,
    refusals,
    run_refusals,
)
from tests.helpers import SAMPLE_SUITES, make_suite, write_json

#: a host advertising every facet of RFC 0244 §G and every mode
EVERYTHING: dict[str, Any] = {
    "supported": True,
    "modes": ["golden", "rubric", "adversarial", "regression", "live-shadow"],
    "trajectory": True,
    "trials": {"maxTrials": 10},
    "fixtureMatching": True,
    "regressionVerdict": True,
}


def host(**changes: Any) -> EvalSuiteFacets:
    """The facets of EVERYTHING with `changes` (a value of None removes the member)."""
    block = copy.deepcopy(EVERYTHING)
    for name, value in changes.items():
        if value is None:
            block.pop(name, None)
        else:
            block[name] = value
    return facets_of({"agents": {"evalSuite": block}}, "caps.json")


def plain_suite(**top: Any) -> dict[str, Any]:
    """A golden suite using none of the RFC 0244 features."""
    suite = make_suite(**top)
    for task in suite["tasks"]:
        del task["expected"]["trajectory"]
    return suite


def paths(found: list[Any]) -> list[tuple[str, str, str]]:
    return [(r.status, r.path, r.facet) for r in found]


# --- the refusal rule, feature by feature -------------------------------------------------------


def test_e100_a_suite_using_no_new_feature_is_accepted_by_a_host_advertising_none() -> None:
    bare = host(trajectory=None, trials=None, fixtureMatching=None, regressionVerdict=None)
    assert refusals(plain_suite(), bare) == []


def test_e100_everything_advertised_accepts_every_feature() -> None:
    suite = make_suite(trials={"count": 10, "k": 3})
    suite["tasks"][0]["expected"]["kind"] = "trajectory"
    del suite["tasks"][0]["expected"]["match"]
    suite["tasks"][1]["fixtures"] = {
        "onMiss": "fail",
        "toolResponses": [{"tool": "crm:lookup", "args": {"id": 1}, "argsMatch": "exact"}],
    }
    assert refusals(suite, host()) == []


def test_e100_expected_trajectory_needs_the_trajectory_facet() -> None:
    found = refusals(make_suite(), host(trajectory=None))
    assert paths(found) == [
        ("400 validation_error", "$.tasks[0].expected.trajectory", "trajectory"),
        ("400 validation_error", "$.tasks[1].expected.trajectory", "trajectory"),
    ]
    assert refusals(make_suite(), host(trajectory=False)) == found


def test_e100_kind_trajectory_is_refused_by_its_field_too() -> None:
    suite = make_suite(task_ids=("alpha",))
    expected = suite["tasks"][0]["expected"]
    expected["kind"] = "trajectory"
    del expected["match"]
    assert paths(refusals(suite, host(trajectory=None))) == [
        ("400 validation_error", "$.tasks[0].expected.kind", "trajectory"),
        ("400 validation_error", "$.tasks[0].expected.trajectory", "trajectory"),
    ]


@pytest.mark.parametrize(
    ("count", "facet", "expected"),
    [
        (1, None, []),  # one trial is RFC 0081's own run
        (2, None, [("400 validation_error", "$.trials.count", "trials")]),
        (5, {"maxTrials": 5}, []),  # at the limit
        (6, {"maxTrials": 5}, [("400 validation_error", "$.trials.count", "trials.maxTrials")]),
    ],
)
def test_e100_trials_count_above_one_needs_trials_and_stays_within_max_trials(
    count: int, facet: dict[str, int] | None, expected: list[tuple[str, str, str]]
) -> None:
    suite = plain_suite(trials={"count": count})
    assert paths(refusals(suite, host(trials=facet))) == expected


def test_e100_on_miss_and_fixture_args_need_fixture_matching() -> None:
    suite = plain_suite()
    suite["tasks"][0]["fixtures"] = {"onMiss": "live", "toolResponses": [{"tool": "a:b"}]}
    suite["tasks"][1]["fixtures"] = {
        "toolResponses": [{"tool": "a:b"}, {"tool": "a:c", "args": {"x": 1}}]
    }
    assert paths(refusals(suite, host(fixtureMatching=None))) == [
        ("400 validation_error", "$.tasks[0].fixtures.onMiss", "fixtureMatching"),
        ("400 validation_error", "$.tasks[1].fixtures.toolResponses[1].args", "fixtureMatching"),
    ]
    # fixtures without onMiss or args are RFC 0081's: no facet needed
    plain = plain_suite()
    plain["tasks"][0]["fixtures"] = {"toolResponses": [{"tool": "a:b", "response": {}}]}
    assert refusals(plain, host(fixtureMatching=None)) == []


def test_e100_a_mode_the_host_does_not_run_is_refused_by_name() -> None:
    suite = plain_suite(modes=["golden", "rubric"])
    found = refusals(suite, host(modes=["golden"]))
    assert paths(found) == [("400 validation_error", "$.modes[1]", "modes")]
    assert "'rubric'" in found[0].message


def test_e100_more_tasks_than_max_tasks_per_suite_are_refused() -> None:
    suite = plain_suite()
    assert paths(refusals(suite, host(maxTasksPerSuite=1))) == [
        ("400 validation_error", "$.tasks", "maxTasksPerSuite")
    ]
    assert refusals(suite, host(maxTasksPerSuite=2)) == []


def test_e100_a_host_without_eval_suite_refuses_every_suite_with_501() -> None:
    for document in ({"agents": {}}, {"agents": {"evalSuite": {**EVERYTHING, "supported": False}}}):
        found = refusals(plain_suite(), facets_of(document, "caps.json"))
        assert paths(found) == [("501 capability_not_provided", "$", "supported")]


def test_e100_every_refusal_names_the_field_and_the_rfc_and_no_content() -> None:
    suite = make_suite(trials={"count": 3})
    suite["tasks"][0]["fixtures"] = {"onMiss": "fail", "toolResponses": []}
    found = refusals(suite, host(trajectory=None, trials=None, fixtureMatching=None))
    assert len(found) == 4
    for refusal in found:
        assert "RFC 0244 §G" in refusal.message
        assert "SECRET" not in str(refusal) and "crm:" not in str(refusal)


# --- reading a capabilities document ------------------------------------------------------------


@pytest.mark.parametrize(
    "shape",
    ["served", "wrapped", "agents", "evalSuite"],
)
def test_e100_the_document_is_read_off_its_shape(shape: str) -> None:
    block = copy.deepcopy(EVERYTHING) | {"trials": {"maxTrials": 4}, "trajectory": False}
    document = {
        "served": {"protocolVersion": "2", "agents": {"evalSuite": block, "structured": True}},
        "wrapped": {"capabilities": {"agents": {"evalSuite": block}}},
        "agents": {"evalSuite": block},
        "evalSuite": block,
    }[shape]
    facets = facets_of(document, "caps.json")
    assert (facets.supported, facets.max_trials, facets.trajectory, facets.fixture_matching) == (
        True,
        4,
        False,
        True,
    )


def test_e100_an_eval_suite_block_without_supported_advertises_support() -> None:
    """The RFC's own §G example carries no `supported`."""
    facets = facets_of({"agents": {"evalSuite": {"modes": ["golden"], "trajectory": True}}}, "c")
    assert facets.supported and facets.trajectory and facets.max_trials is None


@pytest.mark.parametrize(
    ("document", "said"),
    [
        ([], "not a JSON object"),
        ({"hello": 1}, "no agents.evalSuite"),
        ({"agents": []}, "agents must be an object"),
        ({"agents": {"evalSuite": True}}, "agents.evalSuite must be an object"),
        ({"evalSuite": {"trajectory": True}}, "modes: required member is missing"),
        ({"evalSuite": {"modes": "golden"}}, "modes: must be an array"),
        ({"evalSuite": {"modes": ["superset"]}}, "must be one of"),
        ({"evalSuite": {"modes": [], "trials": {}}}, "trials.maxTrials: required"),
        ({"evalSuite": {"modes": [], "trials": {"maxTrials": 0}}}, "must be >= 1"),
        ({"evalSuite": {"modes": [], "trajectory": "yes"}}, "must be a boolean"),
        ({"evalSuite": {"modes": [], "trajectroy": True}}, "unknown member"),
    ],
)
def test_e100_a_malformed_document_is_an_error_never_a_reading(document: Any, said: str) -> None:
    with pytest.raises(CapabilitiesError, match=r"caps\.json") as raised:
        facets_of(document, "caps.json")
    assert said in str(raised.value)


def test_e100_a_file_that_is_not_json_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "caps.json"
    bad.write_text('{"agents": {"evalSuite": {"modes": [NaN]}}}')
    with pytest.raises(CapabilitiesError, match="not JSON"):
        read_capabilities(bad)
    with pytest.raises(CapabilitiesError, match="cannot be read"):
        read_capabilities(tmp_path / "missing.json")


# --- what the log shows (for verify) ------------------------------------------------------------


def test_e100_run_refusals_read_the_run_and_its_suite() -> None:
    """For verify: the modes the run asked for (eval.started.modes) and, without a suite, its
    trialCount; with a suite, the suite's count and features."""
    started = {"modes": ["golden"], "trialCount": 3}
    assert paths(run_refusals(None, started, host(trials=None))) == [
        ("400 validation_error", "eval.started.trialCount", "trials")
    ]
    assert paths(run_refusals(None, {"modes": ["golden"], "trialCount": 11}, host())) == [
        ("400 validation_error", "eval.started.trialCount", "trials.maxTrials")
    ]
    assert paths(run_refusals(None, {"modes": ["golden", "rubric"]}, host(modes=["golden"]))) == [
        ("400 validation_error", "eval.started.modes[1]", "modes")
    ]
    assert run_refusals(None, {"modes": ["golden"], "trialCount": 10}, host()) == []
    # the suite's trials.count decides over the log's; its features are read too
    suite = make_suite(trials={"count": 4})
    assert paths(run_refusals(suite, started, host(trials={"maxTrials": 3}, trajectory=None))) == [
        ("400 validation_error", "$.trials.count", "trials.maxTrials"),
        ("400 validation_error", "$.tasks[0].expected.trajectory", "trajectory"),
        ("400 validation_error", "$.tasks[1].expected.trajectory", "trajectory"),
    ]
    assert paths(run_refusals(suite, started, facets_of({"agents": {}}, "c"))) == [
        ("501 capability_not_provided", "eval.started", "supported")
    ]


# --- `evalbatch validate --capabilities` --------------------------------------------------------


def _caps(tmp_path: Path, **changes: Any) -> Path:
    block = copy.deepcopy(EVERYTHING) | changes
    return write_json(tmp_path / "caps.json", {"agents": {"evalSuite": block}})


def test_e100_validate_accepts_and_refuses_with_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    everything = _caps(tmp_path)
    accepted = runner.invoke(validate, [str(SAMPLE_SUITES), "--capabilities", str(everything)])
    assert accepted.exit_code == 0, accepted.output
    suite_files = len(list(SAMPLE_SUITES.glob("*.json")))
    assert accepted.output.count("the host would accept it") == suite_files

    no_trials = write_json(
        tmp_path / "no-trials.json",
        {"agents": {"evalSuite": {k: v for k, v in EVERYTHING.items() if k != "trials"}}},
    )
    refused = runner.invoke(
        validate, [str(SAMPLE_SUITES / "trials.json"), "--capabilities", str(no_trials)]
    )
    assert refused.exit_code == 1
    assert (
        "trials.json: refused: 400 validation_error on $.trials.count: trials.count 3 > 1, "
        "and the host does not advertise trials (RFC 0244 §G)"
    ) in refused.output

    quiet = runner.invoke(validate, [str(SAMPLE_SUITES), "--capabilities", str(no_trials), "-q"])
    assert quiet.exit_code == 1
    assert "accept" not in quiet.output and "ok" not in quiet.output.split()
    assert quiet.output.count("refused:") == 2  # trials.json and regression.json (count 3)


def test_e100_validate_json_says_per_file_whether_the_host_accepts(tmp_path: Path) -> None:
    caps = _caps(tmp_path, fixtureMatching=False)
    result = CliRunner().invoke(
        validate, [str(SAMPLE_SUITES), "--capabilities", str(caps), "--json"]
    )
    document = json.loads(result.output)
    assert result.exit_code == document["exitCode"] == 1
    assert document["capabilities"]["advertised"]["fixtureMatching"] is False
    hosts = {Path(f["path"]).name: f["host"] for f in document["files"]}
    assert hosts["trajectory.json"] == {"accepted": True, "refusals": []}
    assert not hosts["fixture-miss.json"]["accepted"]
    assert {r["facet"] for r in hosts["fixture-miss.json"]["refusals"]} == {"fixtureMatching"}
    assert all(
        r["status"] == "400 validation_error" for r in hosts["fixture-miss.json"]["refusals"]
    )


def test_e100_validate_without_capabilities_prints_what_it_printed_before() -> None:
    result = CliRunner().invoke(validate, [str(SAMPLE_SUITES), "--json"])
    document = json.loads(result.output)
    assert "capabilities" not in document
    assert all("host" not in f for f in document["files"])


@pytest.mark.parametrize(
    "content", ["not json", "[1]", '{"agents": {"evalSuite": {"modes": "golden"}}}']
)
def test_e100_a_malformed_capabilities_document_exits_2_never_accepted(
    tmp_path: Path, content: str
) -> None:
    caps = tmp_path / "caps.json"
    caps.write_text(content)
    result = CliRunner().invoke(validate, [str(SAMPLE_SUITES), "--capabilities", str(caps)])
    assert result.exit_code == 2
    assert "accept" not in result.output
    assert "caps.json" in result.output


def test_e101_two_capabilities_documents_are_a_usage_error(tmp_path: Path) -> None:
    caps = _caps(tmp_path)
    result = CliRunner().invoke(
        validate, [str(SAMPLE_SUITES), "--capabilities", str(caps), "--capabilities", str(caps)]
    )
    assert result.exit_code == 2
    assert "one document for the whole input" in result.output


def test_e100_the_docs_example_is_what_validate_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/validate.md shows `validate --capabilities` on the samples as it really prints."""
    from tests.helpers import ROOT

    monkeypatch.chdir(ROOT)
    page = (ROOT / "docs" / "validate.md").read_text(encoding="utf-8")
    block = page.split("$ evalbatch validate data/samples/suites/trials.json", 1)[1]
    shown = block.split("\n$ ", 1)[0].splitlines()[1:]
    result = CliRunner().invoke(
        validate,
        [
            "data/samples/suites/trials.json",
            "--capabilities",
            "data/samples/capabilities/rfc0081-host.json",
        ],
    )
    assert result.exit_code == 1
    assert result.output.splitlines() == shown
    quiet = CliRunner().invoke(
        validate,
        [
            "data/samples/suites",
            "--capabilities",
            "data/samples/capabilities/full-host.json",
            "-q",
        ],
    )
    assert (quiet.exit_code, quiet.output) == (0, "")


# --- `evalbatch verify --capabilities` (E-103) ----------------------------------------------------


def _trials_run() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A clean two-task run of a suite with 3 trials per task and trajectories, host records
    agreeing with the recomputation."""
    from tests.logbuilder import LogBuilder, golden, suite, traj

    doc = suite(
        golden("alpha", traj("in-order", ["crm:lookup"])),
        golden("beta", traj("in-order", ["crm:lookup"])),
        trials={"count": 3},
    )
    log = LogBuilder()
    log.eval_started(task_count=2, trialCount=3)
    for task in ("alpha", "beta"):
        for index in range(3):
            log.trial(task, calls=[("crm:lookup", {})], score=1, passed=True, trial_index=index)
    log.eval_completed(aggregateScore=1, passed=True, taskCount=2, passedCount=2)
    return log.rows, doc


def _capability_findings(report: Any) -> list[tuple[str, str | None]]:
    return [
        (f.field, f.task_id)
        for f in report.findings
        if f.rule == "RFC 0244 §G" and f.reason == "unadvertised-feature-graded"
    ]


@pytest.mark.slow
def test_e103_a_run_graded_within_the_facets_agrees() -> None:
    from evalbatch.api import verify_events

    rows, doc = _trials_run()
    report = verify_events(rows, [doc], capabilities=host())
    assert report.verdict == "agrees", report.findings
    assert report.compared["capabilities.trials"] == 1  # the run was checked against it
    plain = verify_events(rows, [doc])  # without capabilities nothing of §G is compared
    assert not [name for name in plain.compared if name.startswith("capabilities.")]


def test_e103_a_run_the_host_had_to_refuse_is_a_finding_per_facet_and_task() -> None:
    from evalbatch.api import verify_events

    rows, doc = _trials_run()
    report = verify_events(rows, [doc], capabilities=host(trials=None, trajectory=None))
    assert report.verdict == "disagrees" and report.exit_code == 1
    assert _capability_findings(report) == [
        ("capabilities.trials", None),
        ("capabilities.trajectory", "alpha"),
        ("capabilities.trajectory", "beta"),
    ]
    finding = report.findings[-1]
    assert (finding.host, finding.recomputed) == ("graded", "refused")


@pytest.mark.slow
def test_e103_trial_count_above_max_trials_is_a_finding_without_a_suite() -> None:
    """From the log alone (D-4: no suite given), eval.started.trialCount above maxTrials."""
    from evalbatch.api import verify_events

    rows, _ = _trials_run()
    report = verify_events(rows, [], capabilities=host(trials={"maxTrials": 2}))
    assert _capability_findings(report) == [("capabilities.trials.maxTrials", None)]


@pytest.mark.slow
def test_e103_verify_capabilities_on_the_command_line(tmp_path: Path) -> None:
    from evalbatch.commands.verify import verify_command
    from tests.logbuilder import write_raw_events

    rows, doc = _trials_run()
    events = write_raw_events(tmp_path / "events.parquet", rows)
    suites = write_json(tmp_path / "suite.json", doc)
    no_trials = write_json(
        tmp_path / "caps.json",
        {"agents": {"evalSuite": {k: v for k, v in EVERYTHING.items() if k != "trials"}}},
    )
    runner = CliRunner()
    base = [str(events), "--suites", str(suites)]
    result = runner.invoke(verify_command, [*base, "--capabilities", str(no_trials), "--json"])
    document = json.loads(result.output)
    assert result.exit_code == 1
    assert [f["reason"] for f in document["findings"]] == ["unadvertised-feature-graded"]
    assert document["findings"][0]["field"] == "capabilities.trials"
    bad = tmp_path / "bad.json"
    bad.write_text('{"evalSuite": {"modes": 1}}')
    broken = runner.invoke(verify_command, [*base, "--capabilities", str(bad)])
    assert broken.exit_code == 2 and "bad.json" in broken.output
    twice = runner.invoke(
        verify_command, [*base, "--capabilities", str(no_trials), "--capabilities", str(bad)]
    )
    assert twice.exit_code == 2 and "one document for the whole input" in twice.output


def test_e103_trial_count_above_max_trials_is_a_finding_with_the_suite_too() -> None:
    """The run's own eval.started.trialCount is checked beside its suite's trials.count: a run
    that says 12 trials against maxTrials 5 was graded on what the host had to refuse, even
    when its suite asks for 3."""
    from evalbatch.api import verify_events

    rows, doc = _trials_run()
    for row in rows:
        if row["type"] == "eval.started":
            payload = json.loads(row["payload"])
            row["payload"] = json.dumps({**payload, "trialCount": 12})
    report = verify_events(rows, [doc], capabilities=host(trials={"maxTrials": 5}))
    assert ("capabilities.trials.maxTrials", None) in _capability_findings(report)


@pytest.mark.parametrize(
    "document",
    [{"protocolVersion": "2", "limits": {}}, {"supported": False}, {"agents": {}}],
    ids=["served-without-agents", "not-supported", "agents-without-eval-suite"],
)
def test_e100_a_host_that_runs_no_eval_suite_is_read_as_one(document: Any) -> None:
    """RFC 0081: a host without agents.evalSuite.supported answers mode "eval" with 501; a served
    document without agents, or a block saying supported false, is such a host, not an error."""
    facets = facets_of(document, "caps.json")
    assert facets.supported is False
    found = refusals(plain_suite(), facets)
    assert [(r.status, r.facet) for r in found] == [("501 capability_not_provided", "supported")]


def test_e100_a_capabilities_file_with_a_bom_is_read(tmp_path: Path) -> None:
    """A byte-order mark is read as suite files read it, not called 'not JSON'."""
    path = tmp_path / "caps.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"agents": {"evalSuite": EVERYTHING}}).encode())
    assert read_capabilities(path).trajectory is True


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (
            '{"agents": {"evalSuite": {"supported": true, "supported": false}}}',
            "$.agents.evalSuite.supported",
        ),
        (
            '{"agents": {"evalSuite": {"modes": ["golden"], "trials": {"maxTrials": 1, '
            '"maxTrials": 10}}}}',
            "$.agents.evalSuite.trials.maxTrials",
        ),
        ('{"protocolVersion": "2", "agents": {}, "agents": {"evalSuite": {}}}', "$.agents"),
    ],
    ids=["supported", "max-trials", "agents"],
)
def test_e121_a_key_repeated_in_a_capabilities_document_is_refused(
    tmp_path: Path, text: str, path: str
) -> None:
    """E-123: a capabilities document naming a key twice in one object was read with the last
    value (a host that says `supported` both ways was read as one answer); it is now not a
    capabilities document (exit code 2), naming the key's JSON path, never its values."""
    caps = tmp_path / "caps.json"
    caps.write_text(text)
    with pytest.raises(CapabilitiesError, match="key repeated") as raised:
        read_capabilities(caps)
    assert f"{path}" in str(raised.value)
    result = CliRunner().invoke(validate, [str(SAMPLE_SUITES), "--capabilities", str(caps)])
    assert result.exit_code == 2, result.output
    assert "accept" not in result.output
    assert f"caps.json: not a valid capabilities document: {path}" in result.output
