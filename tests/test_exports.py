"""`evalbatch export otel` and `export eee`: the records validate against their targets' published
definitions and carry what the contract says about the samples.

- OpenTelemetry: each line is parsed as an OTLP `ExportLogsServiceRequest` and `LogsData` with
  the message definitions of the published `opentelemetry-proto` 1.45.2 package (its descriptors,
  `tests/data/otlp/`, loaded into a private pool) and must survive the round trip unchanged
  (camelCase keys, int64 as strings, enums as integers), and each record is a
  `gen_ai.evaluation.result` event as the GenAI semantic conventions define it.
- Every Eval Ever: each record validates against the EEE 0.3.0 aggregate schema as the
  `every-eval-ever` 0.3.0 package publishes it (`evalbatch/schemas/every-eval-ever/`, pinned by
  its hash here; its README says where it comes from).

Expected values come from data/samples/README.md, `expected.json` and `expected_runs.json`.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.json_format import MessageToDict, Parse, ParseError

from evalbatch import api, cli
from evalbatch.commands.export import export
from evalbatch.errors import InputError
from evalbatch.outputs import outdir
from evalbatch.publish import exports
from tests.helpers import (
    LEAK_MARKERS,
    ROOT,
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    SAMPLES,
    make_suite,
    run_main,
    standard_run,
    write_events,
    write_json,
)

EEE_SCHEMA = ROOT / "evalbatch" / "schemas" / "every-eval-ever" / "eval.schema.json"
#: sha256 of eval.schema.json in the published every-eval-ever 0.3.0 wheel
EEE_SCHEMA_SHA256 = "c9c6195aec8a9dfa0b2aba4924ac1aa8a184c9d8ca97cee778cb531088e39b48"
RETRIEVED = "1793620800"
OTLP_DESCRIPTORS = ROOT / "tests" / "data" / "otlp" / "logs-1.45.2.binpb"
OTLP_DESCRIPTORS_SHA256 = "4b68fc97a711b05f2fc2aba2c656259597a4a4aee2d188ab72e0a7b822d38845"

#: (run, task, trial index) -> (score, passed), from data/samples/README.md §1-§3
SAMPLE_TRIALS: dict[tuple[str, str, int], tuple[float, bool]] = {
    ("acme/run-fixture-miss-0001", "served-refund", 0): (1.0, True),
    ("acme/run-fixture-miss-0001", "missed-refund", 0): (0.0, False),
    ("acme/run-trajectory-0001", "in-order-match", 0): (1.0, True),
    ("acme/run-trajectory-0001", "wrong-order", 0): (1.0, False),
    ("acme/run-trajectory-0001", "forbidden-hit", 0): (1.0, False),
    ("acme/run-trajectory-0001", "subset-repeats", 0): (1.0, True),
    ("acme/run-trajectory-0001", "exact-args-mismatch", 0): (1.0, False),
    ("acme/run-trials-k2-0001", "order-status", 0): (1.0, True),
    ("acme/run-trials-k2-0001", "order-status", 1): (1.0, True),
    ("acme/run-trials-k2-0001", "order-status", 2): (1.0, True),
    ("acme/run-trials-k2-0001", "refund-approved", 0): (1.0, True),
    ("acme/run-trials-k2-0001", "refund-approved", 1): (1.0, False),
    ("acme/run-trials-k2-0001", "refund-approved", 2): (1.0, True),
    ("acme/run-trials-k2-0001", "apology-tone", 0): (0.5, False),
    ("acme/run-trials-k2-0001", "apology-tone", 1): (0.75, True),
    ("acme/run-trials-k2-0001", "apology-tone", 2): (0.25, False),
}
SUITES = {
    "acme/run-fixture-miss-0001": "acme.support.evals.fixture-miss",
    "acme/run-trajectory-0001": "acme.support.evals.trajectory",
    "acme/run-trials-k2-0001": "acme.support.evals.trials",
}


@pytest.fixture(scope="module")
def otlp() -> dict[str, Any]:
    """The OTLP message classes `ExportLogsServiceRequest` and `LogsData`, built from the
    descriptors of opentelemetry-proto 1.45.2 in a pool of their own."""
    raw = OTLP_DESCRIPTORS.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == OTLP_DESCRIPTORS_SHA256
    files = descriptor_pb2.FileDescriptorSet.FromString(raw)
    pool = descriptor_pool.DescriptorPool()
    for proto in files.file:
        pool.Add(proto)
    names = {
        "request": "opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest",
        "logs": "opentelemetry.proto.logs.v1.LogsData",
    }
    return {
        key: message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
        for key, name in names.items()
    }


@pytest.fixture(scope="module")
def samples_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`evalbatch run data/samples/events --suites data/samples/suites --out DIR` (`make run`)."""
    out = tmp_path_factory.mktemp("samples") / "out"
    api.write_outputs([SAMPLE_EVENTS], out, [SAMPLE_SUITES])
    return out


def _sample_events() -> list[dict[str, Any]]:
    rows = []
    for path in sorted(SAMPLE_EVENTS.glob("*.parquet")):
        rows += pq.read_table(path, columns=["runId", "type", "payload", "timestamp"]).to_pylist()
    return rows


def _nanos(timestamp: str) -> int:
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000


def _sample_secrets() -> set[str]:
    """Tool names and argument values of the sample logs: none may reach an export."""
    found: set[str] = set()
    for row in _sample_events():
        if row["type"] != "agent.tool-called":
            continue
        payload = json.loads(row["payload"])
        found.add(payload["toolName"])
        # string arguments (numbers such as 1500 also occur as latencies and token counts)
        found.update(v for v in (payload.get("inputs") or {}).values() if isinstance(v, str))
    return found


def _attributes(record: dict[str, Any]) -> dict[str, Any]:
    found = {}
    for item in record["attributes"]:
        assert item["key"] not in found, f"repeated attribute {item['key']}"
        ((kind, value),) = item["value"].items()
        found[item["key"]] = (kind, value)
    return found


def _otel_lines(out: Path, *extra: str) -> list[str]:
    target = out.parent / f"otel-{len(extra)}.jsonl"
    result = CliRunner().invoke(export, ["otel", str(out), "--out", str(target), *extra])
    assert result.exit_code == 0, result.output
    return target.read_text(encoding="utf-8").splitlines()


def _records(lines: list[str]) -> list[dict[str, Any]]:
    records = []
    for line in lines:
        (resource,) = json.loads(line)["resourceLogs"]
        (scope,) = resource["scopeLogs"]
        records += scope["logRecords"]
    return records


def _by_trial(records: list[dict[str, Any]]) -> dict[tuple[str, str, int], dict[str, Any]]:
    keyed = {}
    for record in records:
        attrs = _attributes(record)
        run = attrs["openwop.run.id"][1]
        task = attrs["gen_ai.evaluation.name"][1].split("/", 1)[1]
        keyed[(run, task, int(attrs["openwop.eval.trial_index"][1]))] = record
    return keyed


# --------------------------------------------------------------------------------------------
# OpenTelemetry


def test_otel_lines_are_otlp_logs_data_and_round_trip(
    samples_out: Path, otlp: dict[str, Any]
) -> None:
    """Each line is one OTLP/JSON LogsData (the file-exporter layout) that the OTLP protobuf
    definitions parse with unknown fields refused, and that prints back unchanged: lowerCamelCase
    keys, 64-bit integers as strings, severity as an integer."""
    lines = _otel_lines(samples_out, "--events", str(SAMPLE_EVENTS))
    assert len(lines) == 3  # one per eval run
    for line in lines:
        for message in (otlp["request"](), otlp["logs"]()):
            parsed = Parse(line, message, ignore_unknown_fields=False)
            assert MessageToDict(parsed, use_integers_for_enums=True) == json.loads(line)
        logs = otlp["logs"].FromString(Parse(line, otlp["logs"]()).SerializeToString())
        (records,) = [scope.log_records for scope in logs.resource_logs[0].scope_logs]
        assert {r.event_name for r in records} == {"gen_ai.evaluation.result"}


def _logs_of(record: dict[str, Any]) -> dict[str, Any]:
    return {"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}


def test_otlp_check_is_not_vacuous(otlp: dict[str, Any]) -> None:
    """The definitions refuse an unknown field and a misspelt value type, and the round trip
    catches a snake_case key and an int64 written as a number."""
    for bad in (
        {"eventNames": "x"},
        {"attributes": [{"key": "a", "value": {"floatValue": 1.0}}]},
    ):
        with pytest.raises(ParseError, match="no field named"):
            Parse(json.dumps(_logs_of(bad)), otlp["logs"](), ignore_unknown_fields=False)
    good = _logs_of({"timeUnixNano": "1"})
    parsed = Parse(json.dumps(good), otlp["logs"]())
    assert MessageToDict(parsed, use_integers_for_enums=True) == good
    for loose in (_logs_of({"time_unix_nano": "1"}), _logs_of({"timeUnixNano": 1})):
        parsed = Parse(json.dumps(loose), otlp["logs"]())
        assert MessageToDict(parsed, use_integers_for_enums=True) != loose


def test_otel_one_evaluation_result_per_trial_with_the_contract_values(samples_out: Path) -> None:
    """One `gen_ai.evaluation.result` per counted trial; name `<suiteId>/<taskId>`, score a
    double, label `pass`/`fail` from the graded trial (the tool path decides: `wrong-order` is
    a fail although its host wrote `pass`)."""
    records = _records(_otel_lines(samples_out, "--events", str(SAMPLE_EVENTS)))
    keyed = _by_trial(records)
    assert set(keyed) == set(SAMPLE_TRIALS)
    for key, (score, passed) in SAMPLE_TRIALS.items():
        record = keyed[key]
        assert record["eventName"] == "gen_ai.evaluation.result"
        assert record["severityNumber"] == 9
        assert "body" not in record
        attrs = _attributes(record)
        assert attrs["gen_ai.evaluation.name"] == ("stringValue", f"{SUITES[key[0]]}/{key[1]}")
        assert attrs["gen_ai.evaluation.score.value"][0] == "doubleValue"
        assert isinstance(attrs["gen_ai.evaluation.score.value"][1], float)
        assert attrs["gen_ai.evaluation.score.value"][1] == score
        assert attrs["gen_ai.evaluation.score.label"] == (
            "stringValue",
            "pass" if passed else "fail",
        )
        assert attrs["openwop.eval.trial_index"] == ("intValue", str(key[2]))
        assert "gen_ai.evaluation.explanation" not in attrs


def test_otel_time_and_host_fields_come_from_the_events(samples_out: Path) -> None:
    """With --events: the record time is its eval.scored timestamp; the evaluator type is the
    host's `evaluatorType` (RFC 0244 §E) or `deterministic` where evalbatch made the score (a
    trajectory task, a trial failed closed); the host's own label is kept beside evalbatch's."""
    expected_time = {}
    for row in _sample_events():
        if row["type"] == "eval.scored":
            payload = json.loads(row["payload"])
            key = (row["runId"], payload["taskId"], payload.get("trialIndex", 0))
            expected_time[key] = str(_nanos(row["timestamp"]))
    keyed = _by_trial(_records(_otel_lines(samples_out, "--events", str(SAMPLE_EVENTS))))
    for key, record in keyed.items():
        assert record["timeUnixNano"] == expected_time[key]
        assert record["observedTimeUnixNano"] == expected_time[key]
        attrs = _attributes(record)
        judge = key[1] == "apology-tone"
        assert attrs["gen_ai.evaluation.evaluator.type"] == (
            "stringValue",
            "llm_judge" if judge else "deterministic",
        )
    wrong = _attributes(keyed[("acme/run-trajectory-0001", "wrong-order", 0)])
    assert wrong["gen_ai.evaluation.score.label"] == ("stringValue", "fail")
    assert wrong["openwop.eval.host_score_label"] == ("stringValue", "pass")


def test_otel_without_events_infers_evaluator_type_and_has_no_time(samples_out: Path) -> None:
    """Without --events there is no time, golden and trajectory tasks are `deterministic` and a
    rubric task's evaluator is left unsaid (a judge or a person)."""
    keyed = _by_trial(_records(_otel_lines(samples_out)))
    assert set(keyed) == set(SAMPLE_TRIALS)
    for key, record in keyed.items():
        assert "timeUnixNano" not in record and "observedTimeUnixNano" not in record
        attrs = _attributes(record)
        assert "openwop.eval.host_score_label" not in attrs
        if key[1] == "apology-tone":
            assert "gen_ai.evaluation.evaluator.type" not in attrs
        else:
            assert attrs["gen_ai.evaluation.evaluator.type"] == ("stringValue", "deterministic")


def test_otel_exports_are_content_free(samples_out: Path) -> None:
    """RFC 0244 §H: no tool name or argument of the sample logs appears in any record."""
    text = "\n".join(_otel_lines(samples_out, "--events", str(SAMPLE_EVENTS)))
    secrets = _sample_secrets()
    assert "crm:lookup-order" in secrets and "A-1001" in secrets
    for secret in secrets:
        assert secret not in text, secret


def test_otel_drops_a_prose_score_label_and_unknown_evaluator_type(tmp_path: Path) -> None:
    """A host label outside §E's pattern may be prose, and an evaluator type outside the enum is
    not one: neither is exported. The log's tool names stay out too."""
    log = standard_run("acme/run-0001")
    for row in log.rows:
        if row["type"] == "eval.scored":
            row["payload"].update(scoreLabel="Looks good to me", evaluatorType="oracle")
    events = write_events(tmp_path / "events" / "run.parquet", log.rows)
    suites = tmp_path / "suites"
    write_json(suites / "basic.json", make_suite())
    out = tmp_path / "out"
    api.write_outputs([events], out, [suites])
    lines = _otel_lines(out, "--events", str(events))
    for record in _records(lines):
        attrs = _attributes(record)
        assert "openwop.eval.host_score_label" not in attrs
        assert attrs["gen_ai.evaluation.evaluator.type"] == ("stringValue", "deterministic")
    text = "\n".join(lines)
    assert "Looks good" not in text and "oracle" not in text
    for marker in LEAK_MARKERS:
        assert marker not in text


def test_otel_default_output_and_service_name(samples_out: Path, tmp_path: Path) -> None:
    """Default file OUT_DIR/otel-evaluations.jsonl; --service-name sets the resource."""
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in samples_out.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    result = CliRunner().invoke(export, ["otel", str(copy), "--service-name", "support-evals"])
    assert result.exit_code == 0, result.output
    target = copy / "otel-evaluations.jsonl"
    assert result.output == f"wrote 16 gen_ai.evaluation.result records of 3 runs to {target}\n"
    first = json.loads(target.read_text().splitlines()[0])
    assert first["resourceLogs"][0]["resource"]["attributes"] == [
        {"key": "service.name", "value": {"stringValue": "support-evals"}}
    ]
    assert first["resourceLogs"][0]["scopeLogs"][0]["scope"]["name"] == "evalbatch"


# --------------------------------------------------------------------------------------------
# Every Eval Ever


@pytest.fixture(scope="module")
def eee_validator() -> jsonschema.Draft7Validator:
    raw = EEE_SCHEMA.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == EEE_SCHEMA_SHA256
    schema = json.loads(raw)
    assert schema["version"] == "0.3.0"
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def _eee(out: Path, *extra: str) -> list[dict[str, Any]]:
    target = out.parent / "eee.jsonl"
    args = ["eee", str(out), "--model-id", "acme/support-agent", "--org", "acme"]
    result = CliRunner().invoke(
        export, [*args, "--retrieved-at", RETRIEVED, "--out", str(target), *extra]
    )
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]


def _close(actual: float, expected: float) -> bool:
    return math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-12)


def test_eee_records_validate_against_the_published_schema(
    samples_out: Path, eee_validator: jsonschema.Draft7Validator
) -> None:
    """One aggregate record per eval run, each valid under EEE 0.3.0."""
    records = _eee(samples_out)
    assert [r["evaluation_id"].rsplit("/", 2)[-2:] for r in records] == [
        run.split("/") for run in SUITES
    ]
    for record in records:
        errors = sorted(eee_validator.iter_errors(record), key=str)
        assert not errors, [e.message for e in errors]
        assert record["schema_version"] == "0.3.0"
        assert record["retrieved_timestamp"] == RETRIEVED
        assert record["model_info"]["id"] == "acme/support-agent"
        assert record["source_metadata"]["source_type"] == "evaluation_run"


def test_eee_schema_check_is_not_vacuous(
    samples_out: Path, eee_validator: jsonschema.Draft7Validator
) -> None:
    """The schema refuses a record without the 0.3.0 model metadata, and a string detail that
    is a number."""
    record = _eee(samples_out)[0]
    del record["model_info"]["additional_details"]["deployment_type"]
    assert any("deployment_type" in e.message for e in eee_validator.iter_errors(record))
    record = _eee(samples_out)[0]
    record["evaluation_results"][0]["score_details"]["details"]["task_count"] = 2
    assert list(eee_validator.iter_errors(record))


def test_eee_values_are_the_summaries(samples_out: Path) -> None:
    """Suite: aggregateScore with scoreStderr (clustered by task, num_samples = taskCount) where
    the run has trials, pass@k (canonical `pass_at_k`, k and n as parameters) and pass^k; each
    task: score, pass@k and pass^k (expected_runs.json, expected.json)."""
    expected_runs = json.loads((SAMPLES / "expected_runs.json").read_text())
    expected_tasks = json.loads((SAMPLES / "expected.json").read_text())
    for record in _eee(samples_out):
        run_id = record["evaluation_results"][0]["source_data"]["additional_details"]["run_id"]
        want = expected_runs[run_id]
        suite = SUITES[run_id]
        results = {r["evaluation_result_id"]: r for r in record["evaluation_results"]}
        aggregate = results[f"{suite}/aggregate_score"]
        assert aggregate["evaluation_name"] == suite
        assert _close(aggregate["score_details"]["score"], want["aggregateScore"])
        assert aggregate["score_details"]["details"]["passed"] == json.dumps(want["passed"])
        assert aggregate["score_details"]["details"]["task_count"] == str(want["taskCount"])
        stats = want.get("trialStats")
        if stats is None:
            assert "uncertainty" not in aggregate["score_details"]
            assert f"{suite}/pass_at_k" not in results
        else:
            uncertainty = aggregate["score_details"]["uncertainty"]
            assert _close(uncertainty["standard_error"]["value"], stats["scoreStderr"])
            assert uncertainty["num_samples"] == want["taskCount"]
            at_k, hat_k = results[f"{suite}/pass_at_k"], results[f"{suite}/pass_hat_k"]
            assert at_k["metric_config"]["metric_id"] == "pass_at_k"
            assert at_k["metric_config"]["metric_name"] == f"pass@{stats['k']}"
            assert at_k["metric_config"]["metric_parameters"] == {"k": stats["k"], "n": 3}
            assert _close(at_k["score_details"]["score"], stats["passAtK"])
            assert hat_k["metric_config"]["metric_name"] == f"pass^{stats['k']}"
            assert _close(hat_k["score_details"]["score"], stats["passHatK"])
        for task_id, entry in expected_tasks[run_id].items():
            name = f"{suite}/{task_id}"
            score = results[f"{name}/score"]
            assert score["evaluation_name"] == name
            assert _close(score["score_details"]["score"], entry["score"])
            assert score["score_details"]["details"]["passed"] == json.dumps(entry["passed"])
            if "trials" in entry:
                trials = entry["trials"]
                assert _close(
                    results[f"{name}/pass_at_k"]["score_details"]["score"], trials["passAtK"]
                )
                assert _close(
                    results[f"{name}/pass_hat_k"]["score_details"]["score"], trials["passHatK"]
                )
                assert score["score_details"]["details"]["passed_count"] == str(
                    trials["passedCount"]
                )
            else:
                assert f"{name}/pass_at_k" not in results


def test_eee_is_deterministic_and_content_free(samples_out: Path) -> None:
    """The same OUT_DIR and --retrieved-at give the same bytes; no tool name or argument."""
    first = json.dumps(_eee(samples_out))
    assert json.dumps(_eee(samples_out)) == first
    for secret in _sample_secrets():
        assert secret not in first, secret


def test_eee_model_options(samples_out: Path, eee_validator: jsonschema.Draft7Validator) -> None:
    record = _eee(
        samples_out,
        "--model-name",
        "Support agent",
        "--deployment-type",
        "self_deployed",
        "--model-availability",
        "closed_weights",
        "--relationship",
        "first_party",
    )[0]
    assert not list(eee_validator.iter_errors(record))
    assert record["model_info"]["name"] == "Support agent"
    assert record["model_info"]["developer"] == "acme"
    assert record["model_info"]["additional_details"] == {
        "deployment_type": "self_deployed",
        "model_availability": "closed_weights",
        "evaluated_model_class": "general",
    }
    assert record["source_metadata"]["evaluator_relationship"] == "first_party"


# --------------------------------------------------------------------------------------------
# Errors: one line, exit code 2, no traceback


def _main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    monkeypatch.setitem(cli.cli.commands, "export", export)
    return run_main(monkeypatch, capsys, *args)


def test_export_errors_exit_2_with_one_line(
    samples_out: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    missing = tmp_path / "nowhere"
    cases = [
        (["export", "otel", str(missing)], "no such directory"),
        (["export", "eee", str(tmp_path), "--model-id", "a/b", "--org", "a"], "no summaries.jsonl"),
        (["export", "otel", str(samples_out), "--events", str(missing)], "no event file"),
    ]
    other = write_events(tmp_path / "other" / "run.parquet", standard_run("acme/other-0001").rows)
    cases.append(
        (["export", "otel", str(samples_out), "--events", str(other)], "none of the graded trials")
    )
    for args, message in cases:
        code, out, err = _main(monkeypatch, capsys, *args)
        assert code == 2, (args, out, err)
        assert message in err, (args, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    code, _, err = _main(monkeypatch, capsys, "export", "eee", str(samples_out))
    assert code == 2 and "--model-id" in err
    # nothing half-written is left behind
    assert sorted(p.name for p in samples_out.iterdir()) == [
        "problems.parquet",
        "run-inputs.json",
        "runs.parquet",
        "summaries.jsonl",
        "tasks.parquet",
        "trials.parquet",
    ]


def test_load_refuses_a_damaged_summaries_line(tmp_path: Path) -> None:
    (tmp_path / "summaries.jsonl").write_text('{"runId": "a", "summary": {}}\nnot json\n')
    with pytest.raises(InputError) as err:
        outdir.load(tmp_path)
    assert "line 2: not JSON" in str(err.value)


def test_eee_invalid_record_is_not_written(
    samples_out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record that breaks the schema stops the export with the run and field named, and no
    file is written."""
    original = exports.eee_record

    def broken(*args: Any, **kwargs: Any) -> dict[str, Any]:
        record = original(*args, **kwargs)
        record["source_metadata"]["evaluator_relationship"] = "friends"
        return record

    monkeypatch.setattr(exports, "eee_record", broken)
    target = tmp_path / "eee.jsonl"
    args = ["eee", str(samples_out), "--model-id", "a/b", "--org", "a", "--out", str(target)]
    result = CliRunner().invoke(export, args)
    assert result.exit_code == 2
    assert result.stderr.startswith("evalbatch: ") and len(result.stderr.splitlines()) == 1
    assert "acme/run-fixture-miss-0001" in result.stderr
    assert "source_metadata/evaluator_relationship" in result.stderr
    assert not target.exists()
