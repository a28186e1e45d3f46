"""Graded results in two outside formats (RFC 0244 implementation notes, "Export").

- OpenTelemetry: one `gen_ai.evaluation.result` event per counted trial, as OTLP/JSON log
  records, one `LogsData` document per eval run and line (the OTLP file-exporter layout).
- Every Eval Ever (schema 0.3.x): one aggregate record per eval run, with the suite's aggregate
  score, pass@k and pass^k and each task's score, pass@k and pass^k.

Both describe evalbatch's own grade, read from an `evalbatch run` output directory, and both are
content-free (RFC 0244 §H): ids, enums, counts and scores, never tool names, arguments, outputs or
explanations.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalbatch.errors import EvalbatchError
from evalbatch.jsonvalue import reject_constant
from evalbatch.problems import EVALUATOR_TYPES, SCORE_LABEL
from evalbatch.version import package_version

if TYPE_CHECKING:
    import jsonschema

    from evalbatch.options import Resources
    from evalbatch.outputs.outdir import RunOutputs

EVENT_NAME = "gen_ai.evaluation.result"
#: OTLP SeverityNumber INFO: the event convention asks for a severity and names none
SEVERITY_INFO = 9
#: the labels `gen_ai.evaluation.score.label` takes here (the convention asks them documented)
LABELS = ("pass", "fail")

EEE_SCHEMA_VERSION = "0.3.0"
EEE_DEPLOYMENT_TYPES = ("self_deployed", "externally_managed", "unknown")
EEE_AVAILABILITY = ("open_weights", "closed_weights", "unknown")
EEE_RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")


# --------------------------------------------------------------------------------------------
# OpenTelemetry


@dataclass(frozen=True)
class ScoredFields:
    """What an `eval.scored` event adds to the trial table: its time and the host's §E fields
    (kept only when they have their pattern or enum, so no prose can pass through)."""

    task_id: str | None
    time_unix_nano: int | None
    score_label: str | None
    evaluator_type: str | None


def _strict_json(text: str) -> Any:
    return json.loads(text, parse_constant=reject_constant)


def scored_fields(
    paths: Sequence[str | Path], resources: Resources | None = None
) -> tuple[dict[tuple[str, int], ScoredFields], list[str]]:
    """The `eval.scored` events of the event files at `paths`, by (runId, sequence), and the
    messages of the files left out: as `run`, a file whose footer or data pages cannot be read
    is named and left out, and the others are read (E-22).

    Payloads are parsed strictly (D-7); one that is not a JSON object gives no host fields.

    Raises:
        InputError: no event file can be used at all.
    """
    # the event reader loads here, not with the module: `evalbatch export --help` needs none of it
    from evalbatch.extract import sql_files, trial_tables
    from evalbatch.inputs import event_files

    con = trial_tables.new_connection(resources)
    try:
        sources = event_files.scan(con, [str(p) for p in paths])

        def read() -> list[Any]:
            event_files.register(con, sources)
            return sql_files.relation(con, "export_scored_events").fetchall()

        rows = event_files.leaving_out_damaged(con, sources, read)
    finally:
        con.close()
    found: dict[tuple[str, int], ScoredFields] = {}
    for run_id, sequence, nanos, payload in rows:
        try:
            doc = _strict_json(payload) if payload is not None else None
        except ValueError:
            doc = None
        fields = doc if isinstance(doc, dict) else {}
        label = fields.get("scoreLabel")
        kind = fields.get("evaluatorType")
        task = fields.get("taskId")
        found[(run_id, int(sequence))] = ScoredFields(
            task_id=task if isinstance(task, str) else None,
            time_unix_nano=None if nanos is None else int(nanos),
            score_label=label if isinstance(label, str) and SCORE_LABEL.fullmatch(label) else None,
            evaluator_type=kind if isinstance(kind, str) and kind in EVALUATOR_TYPES else None,
        )
    return found, [problem.message for problem in sources.problems]


def _attr(key: str, value: str | float | int | bool) -> dict[str, Any]:
    """An OTLP KeyValue; int64 as a decimal string and every score a double (OTLP/JSON)."""
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def evaluator_type(kind: str | None, failed_closed: bool, host: str | None) -> str | None:
    """Who produced the exported score (E-43): evalbatch itself for a trajectory task or a trial
    failed closed; else the host's `evaluatorType`, else `deterministic` for a golden match.
    A rubric score without the host's word is left unsaid (a judge or a person)."""
    if kind == "trajectory" or failed_closed:
        return "deterministic"
    if host is not None:
        return host
    if kind == "golden":
        return "deterministic"
    return None


@dataclass
class OtelTally:
    """What an export wrote so far: documents (eval runs), records (counted trials) and records
    whose eval.scored the given events lack."""

    documents: int = 0
    records: int = 0
    without_event: int = 0


def otel_line(document: Mapping[str, Any]) -> str:
    """One OTLP/JSON document as one line of a JSON Lines file."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"


def _otel_record(
    suite_id: str, row: Mapping[str, Any], host: ScoredFields | None, closed: bool
) -> dict[str, Any]:
    kind = evaluator_type(row["kind"], closed, host.evaluator_type if host else None)
    attributes = [
        _attr("gen_ai.evaluation.name", f"{suite_id}/{row['task_id']}"),
        _attr("gen_ai.evaluation.score.value", float(row["score"] or 0.0)),
        _attr("gen_ai.evaluation.score.label", LABELS[0] if row["passed"] else LABELS[1]),
    ]
    if kind is not None:
        attributes.append(_attr("gen_ai.evaluation.evaluator.type", kind))
    attributes += [
        _attr("openwop.run.id", str(row["run_id"])),
        _attr("openwop.eval.trial_index", int(row["trial_index"])),
    ]
    if host is not None and host.score_label is not None:
        attributes.append(_attr("openwop.eval.host_score_label", host.score_label))
    record: dict[str, Any] = {}
    if host is not None and host.time_unix_nano is not None:
        record["timeUnixNano"] = str(host.time_unix_nano)
        record["observedTimeUnixNano"] = str(host.time_unix_nano)
    record["severityNumber"] = SEVERITY_INFO
    record["attributes"] = attributes
    record["eventName"] = EVENT_NAME
    return record


def otel_documents(
    out: RunOutputs,
    scored: Mapping[tuple[str, int], ScoredFields] | None = None,
    *,
    service_name: str = "evalbatch",
    tally: OtelTally | None = None,
) -> Iterator[dict[str, Any]]:
    """One OTLP/JSON LogsData document per graded run, in runId order, holding one
    `gen_ai.evaluation.result` log record per counted trial in log order. Documents come one at
    a time, so an export of many runs never holds them all.

    `scored` (from `scored_fields`) adds each record's time and the host's `scoreLabel` and
    `evaluatorType`; without it the records carry no time and the evaluator type is inferred
    from the task kind (E-43). `tally`, when given, counts what was produced.
    """
    import polars as pl  # loaded when a document is made, not for `evalbatch --help`

    tally = tally if tally is not None else OtelTally()
    suites = {run_id: summary["suiteId"] for run_id, summary in out.summaries}
    trials = (
        out.table("trials")
        .filter(pl.col("counted") & pl.col("run_id").is_in(list(suites)))
        .sort("run_id", "sequence")
    )
    has_closed = "failed_closed" in trials.columns
    scope = {"name": "evalbatch", "version": package_version()}
    resource = {"attributes": [_attr("service.name", service_name)]}
    for (run_id,), rows in trials.partition_by("run_id", as_dict=True, maintain_order=True).items():
        records = []
        for row in rows.iter_rows(named=True):
            host = None
            if scored is not None:
                host = scored.get((str(run_id), row["sequence"]))
                if host is not None and host.task_id != row["task_id"]:
                    host = None  # another log under the same run id: not this trial's event
                tally.without_event += host is None
            closed = bool(has_closed and row["failed_closed"])
            records.append(_otel_record(suites[str(run_id)], row, host, closed))
        tally.documents += 1
        tally.records += len(records)
        yield {
            "resourceLogs": [
                {
                    "resource": resource,
                    "scopeLogs": [{"scope": scope, "logRecords": records}],
                }
            ]
        }


# --------------------------------------------------------------------------------------------
# Every Eval Ever


@dataclass(frozen=True)
class EeeSource:
    """Who publishes the records and what was evaluated: facts the event log does not hold."""

    model_id: str
    organization: str
    model_name: str | None = None
    developer: str | None = None
    deployment_type: str = "unknown"
    model_availability: str = "unknown"
    relationship: str = "other"
    retrieved_timestamp: str = "0"


def _number(value: Any) -> str:
    """A value for an EEE `details` map (strings only): JSON spelling, shortest float repr."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return repr(value) if isinstance(value, float) else str(value)


def _details(pairs: Iterable[tuple[str, Any]]) -> dict[str, str]:
    return {key: _number(value) for key, value in pairs if value is not None}


def _proportion(
    metric_id: str,
    metric_name: str,
    description: str,
    kind: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "evaluation_description": description,
        "metric_id": metric_id,
        "metric_name": metric_name,
    }
    if kind is not None:
        config["metric_kind"] = kind
    config["metric_unit"] = "proportion"
    if parameters:
        config["metric_parameters"] = dict(parameters)
    config.update(lower_is_better=False, score_type="continuous", min_score=0, max_score=1)
    return config


def _result(
    name: str,
    result_id: str,
    source: dict[str, Any],
    config: dict[str, Any],
    score: float,
    details: dict[str, str] | None = None,
    uncertainty: dict[str, Any] | None = None,
) -> dict[str, Any]:
    score_details: dict[str, Any] = {"score": score}
    if details:
        score_details["details"] = details
    if uncertainty:
        score_details["uncertainty"] = uncertainty
    return {
        "evaluation_result_id": result_id,
        "evaluation_name": name,
        "source_data": source,
        "metric_config": config,
        "score_details": score_details,
    }


def _pass_results(
    name: str, source: dict[str, Any], k: int, n: int | None, at_k: float, hat_k: float, what: str
) -> list[dict[str, Any]]:
    """pass@k under the canonical `pass_at_k` id, pass^k under a namespaced one (it has none)."""
    parameters: dict[str, Any] = {"k": k}
    if n is not None:
        parameters["n"] = n
    return [
        _result(
            name,
            f"{name}/pass_at_k",
            source,
            _proportion(
                "pass_at_k",
                f"pass@{k}",
                f"{what}: unbiased pass@k, 1 - C(n-c,k)/C(n,k) (RFC 0244 §B)",
                "pass_rate",
                parameters,
            ),
            at_k,
        ),
        _result(
            name,
            f"{name}/pass_hat_k",
            source,
            _proportion(
                "openwop.pass_hat_k",
                f"pass^{k}",
                f"{what}: pass^k, C(c,k)/C(n,k), all k trials pass (RFC 0244 §B)",
                "pass_rate",
                parameters,
            ),
            hat_k,
        ),
    ]


def _task_results(
    suite_id: str, source: dict[str, Any], task: Mapping[str, Any], k: int | None
) -> list[dict[str, Any]]:
    name = f"{suite_id}/{task['taskId']}"
    trials = task.get("trials") or {}
    efficiency = task.get("efficiency") or {}
    trajectory = task.get("trajectory") or {}
    details = _details(
        [
            ("passed", task["passed"]),
            ("n", trials.get("n")),
            ("passed_count", trials.get("passedCount")),
            ("cost_usd", task.get("costUsd")),
            ("latency_ms", task.get("latencyMs")),
            ("fixture_miss_count", task.get("fixtureMissCount")),
            ("trajectory_matched", trajectory.get("matched")),
            ("tool_call_count_mean", efficiency.get("toolCallCount")),
            ("model_call_count_mean", efficiency.get("modelCallCount")),
            ("input_tokens_mean", efficiency.get("inputTokens")),
            ("output_tokens_mean", efficiency.get("outputTokens")),
        ]
    )
    results = [
        _result(
            name,
            f"{name}/score",
            source,
            _proportion(
                "openwop.task_score",
                "score",
                "Task score: the mean of its trial scores (RFC 0244 §B)",
            ),
            float(task["score"]),
            details,
        )
    ]
    if trials and k is not None:
        results += _pass_results(
            name,
            source,
            k,
            trials.get("n"),
            float(trials["passAtK"]),
            float(trials["passHatK"]),
            "Task",
        )
    return results


def eee_record(run_id: str, summary: Mapping[str, Any], source: EeeSource) -> dict[str, Any]:
    """One Every Eval Ever aggregate record for one graded eval run."""
    suite_id = summary["suiteId"]
    stats = summary.get("trialStats") or {}
    k = stats.get("k")
    data = {
        "dataset_name": suite_id,
        "source_type": "other",
        "additional_details": {"suite_version": summary["suiteVersion"], "run_id": run_id},
    }
    uncertainty = None
    if "scoreStderr" in stats:
        uncertainty = {
            "standard_error": {"value": stats["scoreStderr"], "method": "clustered_by_task"},
            "num_samples": summary["taskCount"],
        }
    ns = {(t.get("trials") or {}).get("n") for t in summary["tasks"]}
    results = [
        _result(
            suite_id,
            f"{suite_id}/aggregate_score",
            data,
            _proportion(
                "openwop.aggregate_score",
                "aggregateScore",
                "Suite score: the mean of the task scores (RFC 0244 §B)",
            ),
            float(summary["aggregateScore"]),
            _details(
                [
                    ("passed", summary["passed"]),
                    ("task_count", summary["taskCount"]),
                    ("passed_count", summary["passedCount"]),
                    ("total_cost_usd", summary.get("totalCostUsd")),
                ]
            ),
            uncertainty,
        )
    ]
    if k is not None:
        n = next(iter(ns)) if len(ns) == 1 else None
        results += _pass_results(
            suite_id,
            data,
            k,
            n,
            float(stats["passAtK"]),
            float(stats["passHatK"]),
            "Suite mean over tasks",
        )
    for task in summary["tasks"]:
        results += _task_results(suite_id, data, task, k)
    model_details = {
        "deployment_type": source.deployment_type,
        "model_availability": source.model_availability,
    }
    if summary.get("evaluatedModelClass"):
        model_details["evaluated_model_class"] = summary["evaluatedModelClass"]
    developer = source.developer or (
        source.model_id.split("/", 1)[0] if "/" in source.model_id else None
    )
    model: dict[str, Any] = {
        "name": source.model_name or source.model_id.rsplit("/", 1)[-1],
        "id": source.model_id,
    }
    if developer:
        model["developer"] = developer
    model["additional_details"] = model_details
    return {
        "schema_version": EEE_SCHEMA_VERSION,
        "evaluation_id": f"{suite_id}/{source.model_id}/{run_id}",
        "retrieved_timestamp": source.retrieved_timestamp,
        "source_metadata": {
            "source_name": "evalbatch",
            "source_type": "evaluation_run",
            "source_organization_name": source.organization,
            "evaluator_relationship": source.relationship,
        },
        "eval_library": {
            "name": "evalbatch",
            "version": package_version(),
            "additional_details": {"specification": "OpenWOP RFC 0244"},
        },
        "model_info": model,
        "evaluation_results": results,
    }


@cache
def eee_validator() -> jsonschema.Draft7Validator:
    """The published EEE 0.3.0 aggregate schema, shipped in the package (its README says from
    where)."""
    import jsonschema  # loaded when a record is checked, not for `evalbatch --help`

    path = resources.files("evalbatch") / "schemas" / "every-eval-ever" / "eval.schema.json"
    return jsonschema.Draft7Validator(json.loads(path.read_text(encoding="utf-8")))


def eee_faults(record: Mapping[str, Any]) -> list[str]:
    """Where `record` breaks the EEE schema, as `path: message` lines (empty when valid)."""
    errors = sorted(eee_validator().iter_errors(record), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(map(str, e.absolute_path)) or '(record)'}: {e.message}" for e in errors]


def eee_records(out: RunOutputs, source: EeeSource) -> list[dict[str, Any]]:
    """One aggregate record per graded eval run, in runId order, each checked against the EEE
    schema: nothing is returned unless every record is valid.

    Raises:
        EvalbatchError: a record does not validate (the message names the run and the field).
    """
    records = [eee_record(run_id, summary, source) for run_id, summary in out.summaries]
    for (run_id, _), record in zip(out.summaries, records, strict=True):
        faults = eee_faults(record)
        if faults:
            raise EvalbatchError(
                f"the Every Eval Ever record of run {run_id} does not validate against schema "
                f"{EEE_SCHEMA_VERSION}: {'; '.join(faults[:3])}"
            )
    return records


def eee_jsonl(records: Iterable[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
