"""Shared helpers of the tests, imported as a module (`from tests.helpers import ...`): the sample
paths, small suites, the standard run (THE log builder, tests/logbuilder.py, in this module's
vocabulary), event files in every layout, ways to run evalbatch, and writes that fail or are
killed with what they leave. Fixtures live in tests/conftest.py and are used as fixtures; no test
imports conftest.

The logs follow CONTRACT §1.1 (one row per run event) and are written with pyarrow in several
layouts (column aliases, JSON text / struct / map payloads, ISO or Parquet timestamps) so the tests
can check that every layout grades the same.

Tool names and argument values carry the marker `SECRET` so a test can check that no problem
message or output table leaks them (CONTRACT §4, docs/decisions.md "Problems").
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from evalbatch.inputs import parquet_layout
from evalbatch.options import Bounds
from tests.logbuilder import LogBuilder

ROOT = Path(__file__).resolve().parents[1]

SAMPLES = ROOT / "data" / "samples"
SAMPLE_EVENTS = SAMPLES / "events"
SAMPLE_SUITES = SAMPLES / "suites"
EVALBATCH_BIN = ROOT / ".venv" / "bin" / "evalbatch"

SUITE_ID = "acme.test.evals.basic"
OTHER_SUITE_ID = "acme.test.evals.other"
VERSION = "1.0.0"
AGENT = "acme.agents.tester"
TOOL = "crm:lookup-order-SECRET"
T0 = datetime(2026, 11, 2, 10, 0, 0, tzinfo=UTC)
STEP = timedelta(milliseconds=100)

#: strings that must never reach a problem message or an output table (tool names, arguments)
LEAK_MARKERS = ("SECRET", "crm:", "lookup-order")

OUTPUT_FILES = (
    "summaries.jsonl",
    "runs.parquet",
    "tasks.parquet",
    "trials.parquet",
    "problems.parquet",
)
#: every file a run writes into --out: the outputs and the record of what it was given (E-118);
#: an incremental run adds manifest.json
WRITTEN_FILES = (*OUTPUT_FILES, "run-inputs.json")

#: D-1: v2 name -> v1 spelling
V1_NAMES = {
    "agent.invocation-started": "agent.invocation.started",
    "agent.invocation-completed": "agent.invocation.completed",
    "agent.tool-called": "agent.toolCalled",
    "agent.tool-returned": "agent.toolReturned",
}


# --------------------------------------------------------------------------------------------
# Suites


def make_suite(
    suite_id: str = SUITE_ID,
    version: str = VERSION,
    task_ids: Sequence[str] = ("alpha", "beta"),
    **top: Any,
) -> dict[str, Any]:
    """A valid AgentEvalSuite whose tasks expect exactly one lookup with exact arguments.

    `alpha` expects inputs `{"orderId": "ORD-SECRET-alpha"}`; `beta` expects
    `{"orderId": "ORD-SECRET-beta", "fields": ["status"]}` (what `standard_run` calls).
    """
    tasks = []
    for task_id in task_ids:
        args: dict[str, Any] = {"orderId": f"ORD-SECRET-{task_id}"}
        if task_id == "beta":
            args["fields"] = ["status"]
        tasks.append(
            {
                "taskId": task_id,
                "input": {"case": task_id},
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "contains", "value": "ok"},
                    "trajectory": {
                        "match": "exact",
                        "calls": [{"tool": TOOL, "args": args, "argsMatch": "exact"}],
                    },
                },
            }
        )
    doc: dict[str, Any] = {
        "suiteId": suite_id,
        "version": version,
        "targetAgentId": AGENT,
        "modes": ["golden"],
        "tasks": tasks,
    }
    doc.update(copy.deepcopy(top))
    return doc


def write_json(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------
# Event logs


class RunLog(LogBuilder):
    """THE log builder (tests/logbuilder.py) in this module's vocabulary: the suite `make_suite()`
    describes, its lookup tool and arguments carrying `SECRET`, events `STEP` apart from `start`.

    Rows keep their payload objects and datetimes (`encoded=False`), so `write_events` can write
    them in every layout; `trial` is the standard run's one-lookup trial."""

    def __init__(self, run_id: str, start: datetime = T0) -> None:
        super().__init__(run_id, start, step_ms=STEP / timedelta(milliseconds=1), encoded=False)

    def emit(self, type_: str, payload: Any) -> int:
        """Append one event with this payload object, numbered by the rows the log holds (a test
        may cut `rows` and go on); its sequence."""
        self.next_sequence = len(self.rows)
        return self.add(type_, payload)

    @property
    def now(self) -> datetime:
        """The stamp of the last event; set it to go on from another moment."""
        return self.start + timedelta(milliseconds=self.clock_ms - self.step_ms)

    @now.setter
    def now(self, moment: datetime) -> None:
        self.clock_ms = (moment - self.start) / timedelta(milliseconds=1) + self.step_ms

    def eval_started(  # type: ignore[override]
        self, suite_id: str = SUITE_ID, version: str = VERSION, **extra: Any
    ) -> int:
        payload = {
            "suiteId": suite_id,
            "suiteVersion": version,
            "taskCount": 2,
            "modes": ["golden"],
        }
        return self.emit("eval.started", {**payload, **extra})

    def trial(  # type: ignore[override]  # the standard run's trial, not LogBuilder's
        self,
        task_id: str,
        *,
        score: Any = 1.0,
        passed: Any = True,
        inputs: Mapping[str, Any] | None = None,
        usages: Sequence[Mapping[str, Any]] = ({"inputTokens": 100, "outputTokens": 10},),
        close: bool = True,
        scored_extra: Mapping[str, Any] | None = None,
    ) -> None:
        """A bracket with one lookup call, then the host's eval.scored."""
        invocation = f"inv-{task_id}-{len(self.rows)}"
        self.emit(
            "agent.invocation-started",
            {"invocationId": invocation, "agentId": AGENT, "modelClass": "general"},
        )
        for usage in usages:
            self.emit("provider.usage", dict(usage))
        call = f"call-{task_id}-{len(self.rows)}"
        self.emit(
            "agent.tool-called",
            {
                "agentId": AGENT,
                "toolName": TOOL,
                "callId": call,
                "inputs": dict(inputs or {"orderId": f"ORD-SECRET-{task_id}"}),
            },
        )
        self.emit(
            "agent.tool-returned",
            {"agentId": AGENT, "toolName": TOOL, "callId": call, "status": "ok"},
        )
        if close:
            self.emit(
                "agent.invocation-completed",
                {"invocationId": invocation, "agentId": AGENT, "outcome": "completed"},
            )
        self.emit(
            "eval.scored",
            {"taskId": task_id, "score": score, "passed": passed, **(scored_extra or {})},
        )

    def eval_completed(self) -> int:  # type: ignore[override]
        return self.emit(
            "eval.completed",
            {"aggregateScore": 0.75, "passed": False, "taskCount": 2, "passedCount": 1},
        )


def standard_run(run_id: str, suite_id: str = SUITE_ID, start: datetime = T0) -> RunLog:
    """A complete, clean two-task run (`alpha` passes, `beta` scores 0.5 and fails).

    The payloads differ in their fields on purpose, so a struct payload column holds nulls that
    must read as absent (E-7): only alpha's eval.scored has `trialIndex`, only beta's has
    `latencyMs`, one usage has no `costEstimateUsd`, and the two calls' inputs differ in keys.
    Graded against `make_suite()`: alpha score 1.0 passed, latency 400 (bracket span); beta score
    0.5 not passed, latency 250 (host record); total cost 0.003; aggregate 0.75; suite not passed.
    """
    log = RunLog(run_id, start)
    log.emit("run.started", {"runId": run_id})
    log.eval_started(suite_id)
    log.trial(
        "alpha",
        usages=[{"inputTokens": 100, "outputTokens": 10, "costEstimateUsd": 0.001}],
        scored_extra={"trialIndex": 0},
    )
    log.trial(
        "beta",
        score=0.5,
        passed=False,
        inputs={"orderId": "ORD-SECRET-beta", "fields": ["status"]},
        usages=[
            {"inputTokens": 200, "outputTokens": 20},
            {"inputTokens": 50, "outputTokens": 5, "costEstimateUsd": 0.002},
        ],
        scored_extra={"latencyMs": 250},
    )
    log.eval_completed()
    log.emit("run.completed", {"outcome": "completed"})
    return log


def iso(ts: datetime | str) -> str:
    if isinstance(ts, str):
        return ts
    return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def _json_map(payloads: Sequence[Mapping[str, Any]]) -> pa.MapArray:
    """A map<string, arrow.json> column: one entry per top-level payload field."""
    offsets, keys, values = [0], [], []
    for payload in payloads:
        for key, value in payload.items():
            keys.append(key)
            values.append(json.dumps(value))
        offsets.append(len(keys))
    items = pa.ExtensionArray.from_storage(pa.json_(), pa.array(values, pa.string()))
    return pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()), pa.array(keys, pa.string()), items
    )


def write_events(
    path: Path,
    rows: Iterable[Mapping[str, Any]],
    *,
    names: Mapping[str, str] | None = None,
    payload: str = "json",
    timestamp: str | None = "iso",
    extra: Mapping[str, pa.Array] | None = None,
) -> Path:
    """Write event rows to one Parquet file.

    names: canonical column -> column name in the file (aliases, §1.1).
    payload: "json" (JSON text), "struct" (pyarrow-inferred struct, the union of every event's
        fields), "map" (map<string, json>: each top-level field's value as JSON), "binary"
        (JSON text as bytes).
    timestamp: "iso" (string), "parquet" (timestamp[ms, UTC]), "naive" (timestamp[ms]), None.
    """
    rows = list(rows)
    names = {"runId": "runId", "sequence": "sequence", "type": "type", "payload": "payload"} | dict(
        names or {}
    )
    columns: dict[str, pa.Array] = {
        names["runId"]: pa.array([r["runId"] for r in rows], pa.string()),
        names["sequence"]: pa.array([r["sequence"] for r in rows], pa.int64()),
        names["type"]: pa.array([r["type"] for r in rows], pa.string()),
    }
    payloads = [r["payload"] for r in rows]
    if payload == "json":
        columns[names["payload"]] = pa.array(
            [p if isinstance(p, str) else json.dumps(p) for p in payloads], pa.string()
        )
    elif payload == "binary":
        columns[names["payload"]] = pa.array(
            [json.dumps(p).encode("utf-8") for p in payloads], pa.binary()
        )
    elif payload == "struct":
        columns[names["payload"]] = pa.array(payloads)
    elif payload == "map":
        columns[names["payload"]] = _json_map(payloads)
    else:
        raise ValueError(payload)
    if timestamp == "iso":
        columns["timestamp"] = pa.array([iso(r["timestamp"]) for r in rows], pa.string())
    elif timestamp == "parquet":
        columns["timestamp"] = pa.array(
            [r["timestamp"] for r in rows], pa.timestamp("ms", tz="UTC")
        )
    elif timestamp == "naive":
        columns["timestamp"] = pa.array(
            [r["timestamp"].replace(tzinfo=None) for r in rows], pa.timestamp("ms")
        )
    for name, values in (extra or {}).items():
        columns[name] = values
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return path


def shuffled(rows: Sequence[Mapping[str, Any]], seed: int) -> list[Mapping[str, Any]]:
    out = list(rows)
    random.Random(seed).shuffle(out)
    return out


def read_outputs(out_dir: Path) -> dict[str, bytes]:
    """The bytes of the five output files (§4)."""
    return {name: (out_dir / name).read_bytes() for name in OUTPUT_FILES}


def manifest_as_graded(out_dir: Path) -> dict[str, Any]:
    """An incremental run's manifest less each output file's identity in place (E-156: its
    times, which differ between two directories holding the same files)."""
    doc = json.loads((out_dir / "manifest.json").read_text(encoding="utf-8"))
    for record in doc["files"].values():
        record.pop("mtime_ns", None)
        record.pop("ctime_ns", None)
    return dict(doc)


def night_run_id(night: int, number: int) -> str:
    """Run `number` of night `night` in a store of nights (E-152, E-156)."""
    return f"acme/night-{night:02d}-run-{number:02d}"


def write_night(events: Path, night: int, runs: int) -> Path:
    """One night's event file in `events`: its own standard runs."""
    rows = [row for n in range(runs) for row in standard_run(night_run_id(night, n)).rows]
    return write_events(events / f"night-{night:02d}.parquet", rows)


def write_store(root: Path, nights: int, runs: int) -> dict[str, Path]:
    """A store of nights' event files kept side by side (`events`), the suite their runs claim
    (`suites`), and `root`."""
    for night in range(nights):
        write_night(root / "events", night, runs)
    write_json(root / "suites" / "basic.json", make_suite())
    return {"events": root / "events", "suites": root / "suites", "root": root}


def incremental_night(store: dict[str, Path], out: Path, events: Any = None) -> Any:
    """`run --incremental` of the store's events (or `events`) into `out`, as the API runs it."""
    from evalbatch import api

    given = [store["events"]] if events is None else events
    return api.write_outputs(given, out, [store["suites"]], incremental_run=True)


def assert_as_a_full_regrade(store: dict[str, Path], out: Path, name: str) -> None:
    """The outputs in `out` equal a plain run's over the store, and its manifest a first
    incremental run's."""
    from evalbatch import api

    fresh = store["root"] / f"full-{name}"
    api.write_outputs([store["events"]], fresh, [store["suites"]])
    assert read_outputs(out) == read_outputs(fresh)
    again = store["root"] / f"first-{name}"
    incremental_night(store, again)
    assert manifest_as_graded(out) == manifest_as_graded(again)


def summaries_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def problem_rows(result: Any, code: str | None = None) -> list[dict[str, Any]]:
    """Rows of a GradeResult's problems table, optionally of one code."""
    rows = result.problems.to_dicts()
    return [r for r in rows if code is None or r["code"] == code]


def assert_content_free(text: str) -> None:
    for marker in LEAK_MARKERS:
        assert marker not in text, f"{marker!r} leaked into {text!r}"


def assert_problem_message(row: Mapping[str, Any]) -> None:
    """docs/decisions.md "Problems": the message names the run, the event's sequence and the rule,
    and carries no tool name or argument."""
    message = row["message"]
    assert f"[{row['code']}]" in message, message
    if row["run_id"] is not None:
        assert f"run {row['run_id']}" in message, message
    if row["sequence"] is not None:
        assert f"event {row['sequence']}" in message, message
    assert_content_free(message)


# --------------------------------------------------------------------------------------------
# Running evalbatch


def run_python(
    script: str,
    *args: str | Path,
    cwd: Path = ROOT,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`python -c SCRIPT ARGS...` in a new interpreter with this checkout first on PYTHONPATH
    (what a fresh process imports), its output captured as text."""
    return subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def run_evalbatch(
    *args: str | Path,
    cwd: Path = ROOT,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """The installed `evalbatch` script in a new process (as a user or a cron job runs it), its
    output captured as text."""
    return subprocess.run(
        [str(EVALBATCH_BIN), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def run_output_bytes(out: Path, *args: str) -> bytes:
    """`evalbatch run ARGS --out OUT --quiet` in process (exit 0 or 3), then the five output
    files' bytes joined: one definition for the tests that ask two ways of grading (the local
    and Ray engines, one pass and batches: §7) for the same bytes."""
    from evalbatch.cli import cli

    result = CliRunner().invoke(cli, ["run", *args, "--out", str(out), "--quiet"])
    assert result.exit_code in (0, 3), result.output
    return b"".join((out / name).read_bytes() for name in OUTPUT_FILES)


def run_main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str | Path
) -> tuple[int, str, str]:
    """Call the console-script entry point in process: (exit code, stdout, stderr)."""
    from evalbatch.cli import main

    monkeypatch.setattr("sys.argv", ["evalbatch", *map(str, args)])
    code: Any = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return (0 if code is None else int(code)), captured.out, captured.err


def written_by_inspect(script: Path, cache_dir: Path) -> Path:
    """What `script OUT_DIR` has Inspect write (its mock model, its log writer: logs as Inspect
    writes them, never made by hand), kept in pytest's cache under a key of the example scripts'
    bytes and Inspect's version: a warm tree does not run the evals again (seconds per test
    run), a changed script or Inspect writes them anew. A directory is cached only whole."""
    import importlib.metadata

    scripts = sorted(script.parent.glob("*.py"))  # a script may import its neighbours
    key = hashlib.sha256(
        b"".join(path.read_bytes() for path in scripts)
        + script.name.encode()
        + importlib.metadata.version("inspect_ai").encode()
    ).hexdigest()[:16]
    kept = cache_dir / key
    if not kept.is_dir():
        writing = Path(tempfile.mkdtemp(dir=kept.parent))
        subprocess.run([sys.executable, str(script), str(writing)], check=True, capture_output=True)
        try:
            writing.rename(kept)
        except OSError:  # another run cached them first
            shutil.rmtree(writing)
    return kept


def generated_log(
    target: Path, runs: int, tasks: int, trials: int, seed: int = 3
) -> tuple[Path, Path]:
    """A log from the benchmark's generator (`bench/generate_events.sql`): `runs` runs of
    `tasks` tasks × `trials` trials, written to target/events.parquet, and the suite the runs
    claim (the benchmark's) in target/suites. Returns (events file, suites directory)."""
    import duckdb

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import run as bench  # the benchmark script's suite builder
    finally:
        sys.path.pop(0)
    suites = target / "suites"
    suites.mkdir(parents=True, exist_ok=True)
    (suites / "bench.json").write_text(json.dumps(bench.suite(tasks, trials)))
    query = "\n".join(
        line
        for line in (ROOT / "bench" / "generate_events.sql").read_text().splitlines()
        if not line.startswith("--")
    )
    events = target / "events.parquet"
    params = {"first_run": 0, "runs": runs, "tasks": tasks, "trials": trials, "seed": seed}
    with duckdb.connect() as con:
        con.execute(f"COPY ({query}) TO '{events}' (FORMAT parquet)", params)
    return events, suites


# --------------------------------------------------------------------------------------------
# Object storage (E-153): the S3-compatible server of the `store` fixture (tests/conftest.py)

#: the bucket the samples are uploaded into
S3_BUCKET = "evalbatch-events"
#: the credentials the server is set up with (moto takes any until its auth is turned on)
S3_KEY_ID, S3_SECRET = "AKIAEVALBATCHTEST", "evalbatch-test-secret"


@dataclass(frozen=True)
class Store:
    """The running server: its endpoint, a boto3 client on the test bucket, and the variables
    (credentials, endpoint) that reach it, set in the test process's environment."""

    endpoint: str
    port: int
    client: Any
    environment: Mapping[str, str]

    def upload(self, local: Path, prefix: str) -> str:
        """Every file below `local` (or `local` itself) under `prefix`; the prefix's URI."""
        files = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
        for path in files:
            key = prefix if local.is_file() else f"{prefix}/{path.relative_to(local).as_posix()}"
            self.client.upload_file(str(path), S3_BUCKET, key)
        return f"s3://{S3_BUCKET}/{prefix}"


# --------------------------------------------------------------------------------------------
# Writes that fail or are killed (E-72, E-119, E-122): what the crash-safety tests share


def night_inputs(root: Path, tonight: Iterable[int]) -> dict[str, Path]:
    """Two nights' inputs under `root`: the suite `make_suite()` ("suites"), yesterday's log of
    standard runs 0 to 2 ("yesterday") and tonight's of the standard runs numbered in `tonight`
    ("tonight"), each one Parquet file.

    The tests of a nightly run that is killed, fails or is refused while it writes (E-51, E-70,
    E-72, E-119) start from yesterday's outputs and compare with tonight's; one definition for
    them all."""
    suites = root / "suites"
    write_json(suites / "basic.json", make_suite())

    def night(name: str, numbers: Iterable[int]) -> Path:
        rows = [r for n in numbers for r in standard_run(f"acme/run-{n:04d}").rows]
        return write_events(root / name / "e.parquet", rows)

    return {
        "root": root,
        "suites": suites,
        "yesterday": night("yesterday", range(3)),
        "tonight": night("tonight", tonight),
    }


def interleaved_sample_lines(directory: Path) -> Path:
    """The sample events as NDJSON files of 20 lines in `directory`, sequence by sequence across
    runs: ingested with `flush_rows=20`, each file is its own flush, so every run is written as
    several parts. An ingest stopped between two of its links (E-122: interrupted in
    test_ingest, killed in test_fail_closed_outputs) then leaves a run's first parts without
    the rest."""
    rows = [
        r for p in sorted(SAMPLE_EVENTS.glob("*.parquet")) for r in pq.read_table(p).to_pylist()
    ]
    rows.sort(key=lambda r: (r["sequence"], r["runId"]))
    directory.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(rows), 20):
        lines = "".join(json.dumps(r) + "\n" for r in rows[start : start + 20])
        (directory / f"events-{start:04d}.ndjson").write_text(lines, encoding="utf-8")
    return directory


def fail_at_call(
    monkeypatch: pytest.MonkeyPatch,
    owner: Any,
    attr: str,
    nth: int,
    error: BaseException | type[BaseException],
) -> None:
    """Patch `owner.attr` so that its `nth` call raises `error` instead; the others go through.

    The one way the tests put a fault at a write point: a full disk (an OSError, which the code
    must undo and report: E-34, E-72, E-75) or the process stopping there (a BaseException that
    nothing catches, as a kill would: E-119, E-122)."""
    real = getattr(owner, attr)
    calls = 0

    def failing(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == nth:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, attr, failing)


def run_killed(
    script: str, *args: str | Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`run_python` of a script that sends itself SIGKILL while it writes, asserting it died so.

    A kill no `finally`, handler or undo sees can only be taken in a child process; the tests of
    crash safety (E-51, E-75, E-119, E-122) then compare what it left in its output directory,
    so a child that finished or failed instead would make that comparison meaningless."""
    killed = run_python(script, *args, timeout=timeout)
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-2000:])
    return killed


def directory_state(root: Path) -> dict[str, bytes]:
    """Every entry below `root`, by its path from `root`: a regular file by its bytes, anything
    else (a directory, a link) by a placeholder, so a leftover working directory or link shows.

    One definition for every test that compares a directory before and after a run, ingest or
    report that must leave it as it was (refused, failed or killed: E-70, E-72, E-119, E-120)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        if p.is_file() and not p.is_symlink()
        else b"<not a file>"
        for p in sorted(root.rglob("*"))
    }


def ingested_parts(out: Path) -> set[tuple[str, bytes]]:
    """Each part an ingest put in place below `out`, by run directory and recorded digest (what a
    reader would read): how the directory of a stopped ingest, undone and done again, is compared
    with a clean ingest's (E-122)."""
    return {
        (part.parent.name, pq.read_metadata(part).metadata[parquet_layout.DIGEST_KEY.encode()])
        for part in out.glob("*/part-*.parquet")
    }


def truncate_half(name: str) -> Callable[[Path], None]:
    """A damage to an output directory: its file `name` cut to the first half of its bytes, as a
    torn write leaves it. The damage tables of E-71 (a full regrade) and E-121 (every reader
    refuses alike) share it."""

    def damage(out: Path) -> None:
        data = (out / name).read_bytes()
        (out / name).write_bytes(data[: len(data) // 2])

    return damage


# --------------------------------------------------------------------------------------------
# Options that check themselves (E-130)


def cli_param(command: click.Command, name: str) -> click.Parameter:
    """The parameter of `command` whose keyword is `name`."""
    return next(param for param in command.params if param.name == name)


def cli_accepts(command: click.Command, name: str, text: str) -> bool:
    """Whether `command`'s option `name` takes `text` as a user would type it."""
    param = cli_param(command, name)
    try:
        param.type.convert(text, param, None)
    except click.BadParameter:
        return False
    return True


def bound_probes(bounds: Bounds) -> list[float]:
    """Numbers at, just inside and just outside each end of a range, and the non-finite ones."""
    values = [math.nan, math.inf, -math.inf]
    for end in (bounds.low, bounds.high):
        if end is None:
            continue
        if bounds.integer:
            values += [int(end) - 1, int(end), int(end) + 1]
        else:
            values += [float(end), math.nextafter(end, -math.inf), math.nextafter(end, math.inf)]
    return values


def slow_param(*values: Any, id: str | None = None) -> Any:
    """A row of a parametrized table that runs only under --run-slow (`make test`): the table's
    other rows keep its rule exercised in the fast set."""
    return pytest.param(*values, id=id, marks=pytest.mark.slow)


def slow_except(cases: Iterable[Any], fast: Iterable[Any]) -> list[Any]:
    """A parametrized table whose rows all run under --run-slow, the rows in `fast` in the fast
    set too: a few rows keep the rule exercised by default, the whole table runs in `make test`.
    A row that is a tuple is one row of several arguments."""
    keep = list(fast)
    rows = list(cases)
    assert all(row in rows for row in keep), keep  # a fast row must be a row of the table

    def param(row: Any, *marks: pytest.MarkDecorator) -> Any:
        values = row if isinstance(row, tuple) else (row,)
        return pytest.param(*values, marks=marks)

    return [param(row) if row in keep else param(row, pytest.mark.slow) for row in rows]


def dropped_pair(task_ids: list[str]) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """A baseline and a candidate run of one suite as `regress` reads them from tasks tables
    (the baseline passes every task, the candidate none), and one plain counted trial of each
    task on each side: what the changes behind a drop of every task are computed from."""
    n = len(task_ids)
    base, cand = (
        pl.DataFrame(
            {
                "run_id": run,
                "suite_id": "acme.team.evals.support",
                "suite_version": "1.0.0",
                "task_id": task_ids,
                "score": [score] * n,
                "gating_score": [score] * n,
                "passed": [score == 1.0] * n,
            }
        )
        for run, score in (("acme/base", 1.0), ("acme/cand", 0.0))
    )
    trials = pl.concat(
        [
            side.select("run_id", "task_id").with_columns(
                counted=True,
                trajectory_matched=pl.lit(None, pl.Boolean),
                trajectory_reason=pl.lit(None, pl.String),
                forbidden_count=0,
                fixture_misses=0,
                failed_closed=False,
                tool_call_count=1,
                model_call_count=1,
                input_tokens=10,
                output_tokens=5,
                usage_cost_usd=0.0,
                latency_ms=1000.0,
            )
            for side in (base, cand)
        ]
    )
    return base, cand, trials


def planted_calls(behaviour: str | None, lookup: str, refund: str, refund_all: str) -> list[str]:
    """A task's calls under a planted behaviour (None: as the baseline calls them), for the
    tests that plant changes behind a drop and look for them (E-136, E-142)."""
    return {
        None: [lookup, refund],
        "dropped-refund": [lookup],
        "forbidden": [lookup, refund, refund_all],
        "reordered": [refund, lookup],
        "costlier": [lookup, refund],
    }[behaviour]
