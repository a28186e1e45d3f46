"""Suite loading and validation (CONTRACT §1.3) and the closed EvalSummary schema (CONTRACT §4).

Each test names the rule it checks; the RFC 0244 "Negative (schema)" examples are among them.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from evalbatch.errors import SuiteError
from evalbatch.inputs.suites import (
    Fault,
    SuiteChoice,
    SuiteFile,
    SuiteFileError,
    load_suite_files,
    resolve_suites,
    validate_suite,
    validate_summary,
)

DATA = Path(__file__).parent / "data" / "suites"
FULL_SUITE = DATA / "nested" / "trajectory-trials.json"
RFC0081_SUITE = DATA / "support-resolver.json"

BASE_SUITE: dict[str, Any] = {
    "suiteId": "core.example.evals.refunds",
    "version": "1.0.0",
    "modes": ["golden"],
    "tasks": [
        {
            "taskId": "refund-approved",
            "input": {"orderId": "A-1"},
            "expected": {
                "kind": "golden",
                "match": {"strategy": "contains", "value": "refund approved"},
                "trajectory": {
                    "match": "in-order",
                    "calls": [
                        {"tool": "crm:lookup-order"},
                        {
                            "tool": "billing:refund",
                            "args": {"amountMinor": 4200},
                            "argsMatch": "subset",
                        },
                    ],
                },
            },
        }
    ],
}


def suite(**top: Any) -> dict[str, Any]:
    """A fresh copy of the valid base suite, with top-level members replaced."""
    doc = copy.deepcopy(BASE_SUITE)
    doc.update(top)
    return doc


def errors(faults: list[Fault]) -> dict[str, str]:
    return {f.path: f.message for f in faults if f.severity == "error"}


def warnings(faults: list[Fault]) -> dict[str, str]:
    return {f.path: f.message for f in faults if f.severity == "warning"}


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# The shipped schemas


@pytest.mark.parametrize("name", ["agent-eval-suite.schema.json", "eval-summary.schema.json"])
def test_shipped_schemas_are_draft_2020_12_and_closed_everywhere(name: str) -> None:
    """CONTRACT §1.3/§4: the package ships closed JSON Schemas (additionalProperties false)."""
    from importlib.resources import files

    schema = json.loads((files("evalbatch") / "schemas" / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)

    def objects(node: Any) -> list[dict[str, Any]]:
        found = []
        if isinstance(node, dict):
            if node.get("type") == "object":
                found.append(node)
            for value in node.values():
                found.extend(objects(value))
        elif isinstance(node, list):
            for value in node:
                found.extend(objects(value))
        return found

    closable = [o for o in objects(schema) if "properties" in o]
    assert closable
    assert all(o.get("additionalProperties") is False for o in closable)


# ---------------------------------------------------------------------------------------------
# Valid suites


def test_valid_suites_pass_without_faults() -> None:
    """§1.3: the RFC 0081 sample suite and a suite using every RFC 0244 field both validate."""
    for path in (RFC0081_SUITE, FULL_SUITE):
        assert validate_suite(json.loads(path.read_text(encoding="utf-8"))) == []
    assert validate_suite(suite()) == []


def test_empty_calls_list_is_allowed() -> None:
    """Decision: `calls: []` is a valid "no calls expected" (exact/subset) expectation."""
    doc = suite()
    doc["tasks"][0]["expected"]["trajectory"] = {"match": "exact", "calls": []}
    assert validate_suite(doc) == []


# ---------------------------------------------------------------------------------------------
# Schema faults, named by JSON path


def test_superset_match_mode_is_refused_with_any_order_hint() -> None:
    """RFC 0244 Negative (schema) / §1.3: `trajectory.match: "superset"` fails; use `any-order`."""
    doc = suite()
    doc["tasks"][0]["expected"]["trajectory"]["match"] = "superset"
    found = errors(validate_suite(doc))
    assert list(found) == ["$.tasks[0].expected.trajectory.match"]
    assert "any-order" in found["$.tasks[0].expected.trajectory.match"]


def test_trials_count_zero_is_refused() -> None:
    """RFC 0244 §B / §1.3: `trials.count` is an integer >= 1."""
    assert list(errors(validate_suite(suite(trials={"count": 0})))) == ["$.trials.count"]


def test_trials_k_above_count_is_refused() -> None:
    """RFC 0244 Negative (schema): `trials.k: 6` with `count: 5` fails (1 <= k <= count)."""
    found = errors(validate_suite(suite(trials={"count": 5, "k": 6})))
    assert list(found) == ["$.trials.k"]
    assert "6" in found["$.trials.k"] and "5" in found["$.trials.k"]


def test_trials_k_equal_to_count_and_k_zero() -> None:
    """§1.3: k = count is fine; k = 0 is below the lower bound."""
    assert validate_suite(suite(trials={"count": 5, "k": 5, "passRule": "mean"})) == []
    assert list(errors(validate_suite(suite(trials={"count": 5, "k": 0})))) == ["$.trials.k"]


def test_unknown_trajectory_member_is_refused() -> None:
    """RFC 0244 server-free negative: an unknown trajectory member fails the closed object."""
    doc = suite()
    doc["tasks"][0]["expected"]["trajectory"]["weights"] = [1, 2]
    found = errors(validate_suite(doc))
    assert list(found) == ["$.tasks[0].expected.trajectory.weights"]


@pytest.mark.parametrize(
    ("where", "value", "path"),
    [
        (("expected", "trajectory", "calls", 1, "argsMatch"), "fuzzy", "calls[1].argsMatch"),
        (("fixtures",), {"onMiss": "skip"}, "fixtures.onMiss"),
        (("expected", "trajectory", "calls", 0, "tool"), "", "calls[0].tool"),
    ],
)
def test_enums_and_tool_names_are_checked(where: tuple[Any, ...], value: Any, path: str) -> None:
    """§1.3: `argsMatch` ∈ ignore|exact|subset, `onMiss` ∈ fail|live; a tool name is not empty."""
    doc = suite()
    node = doc["tasks"][0]
    for part in where[:-1]:
        node = node[part]
    node[where[-1]] = value
    found = errors(validate_suite(doc))
    assert len(found) == 1
    assert next(iter(found)).endswith(path)


def test_pass_rule_outside_enum_is_refused() -> None:
    """§1.3: `passRule` ∈ all|any|mean."""
    found = errors(validate_suite(suite(trials={"count": 2, "passRule": "most"})))
    assert list(found) == ["$.trials.passRule"]


def test_missing_required_member_is_named_by_its_path() -> None:
    """§1.3: faults name the JSON path; a missing member is reported at the member's own path."""
    doc = suite()
    del doc["tasks"][0]["expected"]["trajectory"]["calls"]
    assert list(errors(validate_suite(doc))) == ["$.tasks[0].expected.trajectory.calls"]


def test_version_must_be_plain_semver() -> None:
    """Decision: suite `version` is MAJOR.MINOR.PATCH, as the summary's `suiteVersion` pattern."""
    assert list(errors(validate_suite(suite(version="1.0.0-rc.1")))) == ["$.version"]
    assert list(errors(validate_suite(suite(version="1.0.0\n")))) == ["$.version"]


# ---------------------------------------------------------------------------------------------
# Cross-field suite rules


@pytest.mark.parametrize("member", ["match", "rubric"])
def test_trajectory_kind_carries_no_match_or_rubric(member: str) -> None:
    """RFC 0244 §A / §1.3: for `kind: "trajectory"`, `match` and `rubric` MUST be absent."""
    doc = suite()
    expected = doc["tasks"][0]["expected"]
    expected["kind"] = "trajectory"
    expected.pop("match")
    if member == "match":
        expected["match"] = {"strategy": "exact", "value": "x"}
    else:
        expected["rubric"] = [{"criterion": "polite", "weight": 1}]
    assert list(errors(validate_suite(doc))) == [f"$.tasks[0].expected.{member}"]


def test_trajectory_kind_without_trajectory_is_refused() -> None:
    """Decision: a task graded on the path alone must say what path it expects."""
    doc = suite()
    doc["tasks"][0]["expected"] = {"kind": "trajectory"}
    assert list(errors(validate_suite(doc))) == ["$.tasks[0].expected.trajectory"]


def test_duplicate_task_ids_are_refused() -> None:
    """§1.3: taskIds are unique within the suite; the later one is named."""
    doc = suite()
    doc["tasks"].append(copy.deepcopy(doc["tasks"][0]))
    found = errors(validate_suite(doc))
    assert list(found) == ["$.tasks[1].taskId"]
    assert "$.tasks[0]" in found["$.tasks[1].taskId"]


def test_args_without_args_match_and_args_match_without_args_warn() -> None:
    """§3.2: `args` without `argsMatch` is compared under `ignore`, and `argsMatch` exact/subset
    without `args` matches on the tool name alone: `validate` warns about both (not errors)."""
    doc = suite()
    task = doc["tasks"][0]
    task["expected"]["trajectory"]["calls"] = [
        {"tool": "crm:lookup-order", "args": {"orderId": "A-1"}},
        {"tool": "billing:refund", "argsMatch": "exact"},
    ]
    task["fixtures"] = {"toolResponses": [{"tool": "crm:lookup-order", "args": {}, "response": 1}]}
    faults = validate_suite(doc)
    assert errors(faults) == {}
    found = warnings(faults)
    assert set(found) == {
        "$.tasks[0].expected.trajectory.calls[0].args",
        "$.tasks[0].expected.trajectory.calls[1].argsMatch",
        "$.tasks[0].fixtures.toolResponses[0].args",
    }
    assert "ignore" in found["$.tasks[0].expected.trajectory.calls[0].args"]
    assert "tool name alone" in found["$.tasks[0].expected.trajectory.calls[1].argsMatch"]


def test_faults_are_sorted_by_path_with_numeric_indexes() -> None:
    """§1.3: output is deterministic; `$.tasks[2]` sorts before `$.tasks[10]`."""
    doc = suite()
    doc["tasks"] = [
        {"taskId": f"t{i}", "input": None, "expected": {"kind": "golden"}} for i in range(11)
    ]
    doc["tasks"][10]["expected"]["kind"] = "bogus"
    doc["tasks"][2]["expected"]["kind"] = "bogus"
    paths = [f.path for f in validate_suite(doc)]
    assert paths == ["$.tasks[2].expected.kind", "$.tasks[10].expected.kind"]


def test_fault_messages_do_not_echo_suite_values() -> None:
    """§4/§6: problem messages are content-free, so a fault never repeats the offending value."""
    secret = "Sk-LIVE-Value-123"
    doc = suite(targetAgentId=secret + " !", thresholds={"passScore": 7})
    doc["tasks"][0]["taskId"] = secret
    doc["tasks"][0]["expected"]["match"]["strategy"] = secret
    faults = validate_suite(doc)
    assert len(errors(faults)) == 4
    assert all(secret not in f.message and secret not in f.path for f in faults)


# ---------------------------------------------------------------------------------------------
# Loading files


def test_load_directories_recursively_in_sorted_order(tmp_path: Path) -> None:
    """§1.3: suites come as files or directories; directories give every *.json below, sorted."""
    write(tmp_path / "b" / "z.json", suite(suiteId="core.x.evals.z"))
    write(tmp_path / "a.json", suite(suiteId="core.x.evals.a"))
    (tmp_path / "notes.txt").write_text("not a suite", encoding="utf-8")
    loaded = load_suite_files([tmp_path, tmp_path / "a.json"])
    assert [Path(f.path).relative_to(tmp_path).as_posix() for f in loaded] == ["a.json", "b/z.json"]
    assert all(isinstance(f, SuiteFile) and f.faults == () for f in loaded)


def test_non_json_suite_file_stops_the_command(tmp_path: Path) -> None:
    """§1.3: a suite file that is not JSON raises SuiteFileError (exit code 2), naming the file."""
    bad = tmp_path / "broken.json"
    bad.write_text('{"suiteId": "core.x.evals.a", ', encoding="utf-8")
    with pytest.raises(SuiteFileError) as info:
        load_suite_files([tmp_path])
    assert info.value.path == str(bad)
    assert "not JSON" in info.value.message
    assert isinstance(info.value, SuiteError)  # the CLI maps SuiteError to exit code 2


def test_nan_literal_is_not_json(tmp_path: Path) -> None:
    """D-7: NaN and Infinity are not JSON, even though Python's parser accepts them."""
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(suite(thresholds={"passScore": float("nan")})), encoding="utf-8")
    with pytest.raises(SuiteFileError, match="not JSON"):
        load_suite_files([path])


@pytest.mark.parametrize(
    "doc",
    [
        {k: v for k, v in BASE_SUITE.items() if k != "suiteId"},
        {**BASE_SUITE, "version": 1},
        [BASE_SUITE],
    ],
    ids=["no-suiteId", "version-not-string", "not-an-object"],
)
def test_suite_without_string_id_and_version_stops_the_command(tmp_path: Path, doc: Any) -> None:
    """§1.3: no string suiteId and version means no run can match it: SuiteFileError."""
    path = write(tmp_path / "s.json", doc)
    with pytest.raises(SuiteFileError) as info:
        load_suite_files([path])
    assert info.value.path == str(path)


def test_missing_path_stops_the_command(tmp_path: Path) -> None:
    """§1.3: a --suites path that does not exist is a configuration error."""
    with pytest.raises(SuiteFileError, match="no such file"):
        load_suite_files([tmp_path / "absent.json"])


def test_invalid_but_matchable_suite_loads_with_faults(tmp_path: Path) -> None:
    """§1.3: a schema-invalid suite with a string id and version is loaded (its runs get
    suite-invalid) instead of stopping the command."""
    doc = suite(trials={"count": 0})
    loaded = load_suite_files([write(tmp_path / "s.json", doc)])
    assert [f.path for f in loaded[0].errors] == ["$.trials.count"]


# ---------------------------------------------------------------------------------------------
# Resolving (suiteId, version)


def test_identical_copies_are_one_suite(tmp_path: Path) -> None:
    """§1.3: identical copies are one suite (key order and 1 vs 1.0 do not matter)."""
    a = write(tmp_path / "a.json", suite(thresholds={"passScore": 1}))
    reordered = dict(reversed(list(suite(thresholds={"passScore": 1.0}).items())))
    b = write(tmp_path / "b.json", reordered)
    choices = resolve_suites(load_suite_files([b, a]))
    assert list(choices) == [("core.example.evals.refunds", "1.0.0")]
    choice = choices[("core.example.evals.refunds", "1.0.0")]
    assert choice.problem is None and choice.message is None
    assert choice.doc == suite(thresholds={"passScore": 1})
    assert choice.paths == (str(a), str(b))


def test_different_content_for_one_id_and_version_is_a_conflict(tmp_path: Path) -> None:
    """§1.3: two files claiming one (suiteId, version) with different content: suite-conflict."""
    a = write(tmp_path / "a.json", suite(thresholds={"passScore": 1}))
    b = write(tmp_path / "b.json", suite(thresholds={"passScore": True}))
    other = write(tmp_path / "c.json", suite(version="1.0.1"))
    choices = resolve_suites(load_suite_files([tmp_path]))
    conflict = choices[("core.example.evals.refunds", "1.0.0")]
    assert conflict == SuiteChoice(
        "core.example.evals.refunds",
        "1.0.0",
        None,
        "suite-conflict",
        conflict.message,
        (str(a), str(b)),
    )
    assert str(a) in conflict.message and str(b) in conflict.message
    fine = choices[("core.example.evals.refunds", "1.0.1")]
    assert fine.problem is None and fine.paths == (str(other),)


def test_suite_with_an_error_is_invalid_and_names_the_fault(tmp_path: Path) -> None:
    """§1.3: a run whose suite is invalid is not graded; the problem names the fault."""
    doc = suite()
    doc["tasks"][0]["expected"]["trajectory"]["match"] = "superset"
    path = write(tmp_path / "s.json", doc)
    choice = resolve_suites(load_suite_files([path]))[("core.example.evals.refunds", "1.0.0")]
    assert choice.problem == "suite-invalid"
    assert choice.doc is None
    assert "$.tasks[0].expected.trajectory.match" in choice.message
    assert str(path) in choice.message


def test_warnings_alone_do_not_invalidate_a_suite(tmp_path: Path) -> None:
    """§3.2: the args/argsMatch notes are warnings; the suite is still graded."""
    doc = suite()
    doc["tasks"][0]["expected"]["trajectory"]["calls"][0]["args"] = {"orderId": "A-1"}
    choice = resolve_suites(load_suite_files([write(tmp_path / "s.json", doc)]))
    only = choice[("core.example.evals.refunds", "1.0.0")]
    assert only.problem is None and only.doc == doc


# ---------------------------------------------------------------------------------------------
# The closed EvalSummary schema (CONTRACT §4)

FULL_SUMMARY: dict[str, Any] = {
    "suiteId": "core.example.evals.refund-path",
    "suiteVersion": "2.1.0",
    "aggregateScore": 0.75,
    "passed": False,
    "taskCount": 2,
    "passedCount": 1,
    "totalCostUsd": 0.0123,
    "evaluatedModelClass": "reasoning",
    "trialStats": {"k": 3, "passAtK": 1.0, "passHatK": 0.4, "scoreStderr": 0.05},
    "regression": {
        "baselineRunId": "acme/run-0000000000000001",
        "scoreDelta": -0.125,
        "verdict": "inconclusive",
        "method": "paired-bootstrap",
        "alpha": 0.05,
        "pairedTaskCount": 2,
    },
    "tasks": [
        {
            "taskId": "refund-approved",
            "score": 0.8,
            "passed": False,
            "costUsd": 0.01,
            "latencyMs": 1200,
            "trajectory": {
                "mode": "in-order",
                "matched": False,
                "expectedCount": 2,
                "observedCount": 3,
                "matchedCount": 1,
                "forbiddenCount": 1,
            },
            "trials": {"n": 5, "passedCount": 4, "meanScore": 0.8, "passAtK": 1.0, "passHatK": 0.4},
            "efficiency": {
                "toolCallCount": 2.6,
                "modelCallCount": 3,
                "inputTokens": 812.4,
                "outputTokens": 96,
            },
            "fixtureMissCount": 0,
        },
        {"taskId": "tone-check", "score": 0.7, "passed": True},
    ],
}


def summary() -> dict[str, Any]:
    return copy.deepcopy(FULL_SUMMARY)


def test_summary_with_every_optional_block_is_accepted() -> None:
    """§4: the full field list (suite and task, RFC 0081 + RFC 0244) validates."""
    assert validate_summary(summary()) == []


def test_summary_trajectory_block_naming_tools_is_refused() -> None:
    """RFC 0244 Negative (schema) / §H: a trajectory block with `"tools": [...]` fails."""
    doc = summary()
    doc["tasks"][0]["trajectory"]["tools"] = ["billing:refund"]
    assert list(errors(validate_summary(doc))) == ["$.tasks[0].trajectory.tools"]


def test_summary_aggregate_score_above_one_is_refused() -> None:
    """OpenWOP shape negative: `aggregateScore: 1.4` fails."""
    doc = summary()
    doc["aggregateScore"] = 1.4
    assert list(errors(validate_summary(doc))) == ["$.aggregateScore"]


def test_summary_task_output_key_is_refused() -> None:
    """OpenWOP shape negative / content-free: a `taskOutput` key on a task fails."""
    doc = summary()
    doc["tasks"][1]["taskOutput"] = "the refund was approved"
    assert list(errors(validate_summary(doc))) == ["$.tasks[1].taskOutput"]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d["regression"].update(method="Paired Bootstrap"), "$.regression.method"),
        (lambda d: d["regression"].pop("pairedTaskCount"), "$.regression.pairedTaskCount"),
        (lambda d: d["regression"].update(diffRef="x"), "$.regression.diffRef"),
        (lambda d: d.update(schemaValid=True), "$.schemaValid"),
        (lambda d: d["tasks"][0].update(latencyMs=1.5), "$.tasks[0].latencyMs"),
        (lambda d: d["tasks"][0]["trials"].update(n=0), "$.tasks[0].trials.n"),
        (
            lambda d: d["tasks"][0]["efficiency"].update(inputTokens=-1),
            "$.tasks[0].efficiency.inputTokens",
        ),
        (lambda d: d.update(aggregateScore=float("nan")), "$.aggregateScore"),
        (lambda d: d.update(passedCount=3), "$.passedCount"),
        (lambda d: d["tasks"].pop(), "$.tasks"),
    ],
    ids=[
        "method-pattern",
        "regression-required",
        "no-diffRef",
        "no-schemaValid",
        "latency-integer",
        "trials-n",
        "efficiency-nonneg",
        "nan",
        "passed-over-count",
        "task-count",
    ],
)
def test_summary_shape_faults(change: Any, path: str) -> None:
    """§4: exactly the listed fields, with their bounds; counts agree (passedCount <= taskCount)."""
    doc = summary()
    change(doc)
    assert path in errors(validate_summary(doc))


# ---------------------------------------------------------------------------------------------
# E-123: a key repeated in one object


def _repeating(text: str, key: str, first: str) -> str:
    """`text` with `"key": first` written before the first `"key"` member: one object then
    names `key` twice, the original value last (the one Python's parser keeps)."""
    assert f'"{key}"' in text
    return text.replace(f'"{key}"', f'"{key}": {first}, "{key}"', 1)


def test_e121_a_key_repeated_in_a_suite_is_a_fault_naming_its_path(tmp_path: Path) -> None:
    """E-123: a suite with two `suiteId` members (or any key twice in one object) passed
    `validate` and graded with the last one; it is now an error fault at each repeated key's
    JSON path, so `validate` exits 1 and the suite is `suite-invalid`, never read in silence."""
    from click.testing import CliRunner

    from evalbatch.commands.validate import validate

    text = json.dumps(suite(), indent=2)
    text = _repeating(text, "suiteId", '"core.example.evals.other"')
    text = _repeating(text, "argsMatch", '"exact"')
    path = tmp_path / "s.json"
    path.write_text(text)
    (loaded,) = load_suite_files([path])
    repeated = [f.path for f in loaded.errors if "key repeated" in f.message]
    assert repeated == ["$.suiteId", "$.tasks[0].expected.trajectory.calls[1].argsMatch"]
    choice = resolve_suites([loaded])[("core.example.evals.refunds", "1.0.0")]
    assert choice.problem == "suite-invalid" and choice.doc is None
    assert "$.suiteId" in (choice.message or "") and "key repeated" in (choice.message or "")

    result = CliRunner().invoke(validate, [str(path)])
    assert result.exit_code == 1, result.output
    assert f"{path}: error: $.suiteId: key repeated in one object" in result.output
    assert "other" not in result.output  # the values are never shown


def test_e121_a_copy_that_repeats_a_key_invalidates_its_equal_twin(tmp_path: Path) -> None:
    """E-123: two files JSON-equal once parsed, one repeating a key: the suite is invalid
    whichever file sorts first (the faults are the file's, not only its parsed document's)."""
    plain = write(tmp_path / "a.json", suite())
    twin = tmp_path / "b.json"
    twin.write_text(_repeating(json.dumps(suite()), "version", '"9.9.9"'))
    choice = resolve_suites(load_suite_files([plain, twin]))[
        ("core.example.evals.refunds", "1.0.0")
    ]
    assert choice.problem == "suite-invalid"
    assert f"$.version in {twin}: key repeated" in (choice.message or "")


def test_e121_run_leaves_the_runs_of_a_suite_repeating_a_key_ungraded(tmp_path: Path) -> None:
    """E-123: `run` refuses a suite file repeating a key as it refuses an invalid one: the
    runs claiming it are `suite-invalid`, the other suites still grade."""
    import evalbatch
    from tests.helpers import SAMPLE_EVENTS, SAMPLE_SUITES

    suites = tmp_path / "suites"
    suites.mkdir()
    for source in SAMPLE_SUITES.glob("*.json"):
        (suites / source.name).write_text(source.read_text())
    trials = suites / "trials.json"
    trials.write_text(_repeating(trials.read_text(), "suiteId", '"acme.other.evals.x"'))
    result = evalbatch.grade_paths(SAMPLE_EVENTS, suites)
    invalid = result.problems.filter(result.problems["code"] == "suite-invalid")
    assert invalid["run_id"].to_list() == ["acme/run-trials-k2-0001"]
    assert "$.suiteId" in invalid["message"][0] and "key repeated" in invalid["message"][0]
    assert "acme/run-trajectory-0001" in result.summaries
    assert "acme/run-trials-k2-0001" not in result.summaries
