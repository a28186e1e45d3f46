"""Fault injection: hostile inputs through every command, and fail closed.

Each test plants one fault — a hostile value in an event (sequence extremes, huge, infinite or
negative costs and latencies, huge trial counts, null or unknown types, invalid UTF-8, payloads
that are not JSON), a damaged event file (truncated, bytes overwritten, a column missing or
renamed), a damaged suite, a damaged previous output directory before `run --incremental`, a
hand-edited `tasks.parquet` regress side, a meaningless option value — and runs the real entry
point (`evalbatch.cli.main`, `sys.argv` patched, stdout and stderr captured) for the commands the
fault reaches: `run`, `verify`, `sql`, `explain`, `regress`, `validate`, `ingest`. Every command
must then hold what the fail-closed decisions (E-65..E-86) and the working rules ask:

- no traceback and no "internal error" ever reaches the user;
- the exit code is one docs/ documents for that command, and never 0 when nothing was
  graded or compared;
- bad data never passes: a mutated run never passes a task (or its suite) that the same run
  without the mutation fails; a fault the contract names is reported (a problem row);
- good runs beside the fault are still graded, byte for byte as without it;
- messages and outputs are content-free (RFC 0244 §H): `test_content_markers_*` plants
  helpers.py's LEAK_MARKERS in tool names, arguments, outputs, prompts and invalid-UTF-8 payloads
  and greps every output file, export, the report and every message for them.

tests/test_fuzz.py mutates events through the library and `run`; this file adds the values and
files that once ended a command in an internal error, every other command, suites, previous
outputs, regress sides and options. Examples are derandomized with no shrinking and no example
database, so CI sees the same cases every run; each example is a few in-process commands on a
tiny log.

The cases with huge trial counts run the same entry point in a child interpreter with a memory
cap and a time limit: today they grade for ever while memory grows by ~100 MB/s, and a hang must
fail the test instead of the machine. The limit is a guard against a hang, not a speed test.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import note as hypothesis_note
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from evalbatch.cli import main
from tests.helpers import (
    LEAK_MARKERS,
    OUTPUT_FILES,
    ROOT,
    SUITE_ID,
    TOOL,
    VERSION,
    make_suite,
    standard_run,
    write_json,
)
from tests.logbuilder import write_raw_events
from tests.strategies import (
    BAD_COUNTS,
    BAD_FLOATS,
    BAD_SIZES,
    EVENT_FAULT_VALUES,
    break_json,
    event_faults,
    output_damage,
    suite_faults,
    task_side_faults,
)

#: a slow family (every fault through every command):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

#: derandomized, no example database, no shrinking (each example runs whole commands)
FAULTS = settings(
    deadline=None,
    derandomize=True,
    database=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

VICTIM = "acme/run-a-victim"  # the run a fault is planted in (sorted first: `explain`'s run)
GOOD = "acme/run-b-good"  # a clean run beside it, which must grade as without the fault
OTHER_RUN = "acme/run-c-other"  # a clean run of another suite (suite faults)
UNSUPPLIED = "acme.test.evals.unsupplied"  # a suite no --suites holds: graded from the host (D-4)
OTHER_SUITE = "acme.test.evals.other"

#: exit codes each command documents (its page in docs/, `--help`)
DOCUMENTED = {
    "run": {0, 2, 3, 4, 5},
    "verify": {0, 1, 2, 3},
    "sql": {0, 2},
    "explain": {0, 2, 3},
    "regress": {0, 1, 2},
    "validate": {0, 1, 2},
    "ingest": {0, 2, 3},
    "export": {0, 2},
    "report": {0, 2},
}

#: the hang guard of the huge-trial-count cases: seconds and bytes of address space
HANG_GUARD_SECONDS = 30
HANG_GUARD_BYTES = 4 * 2**30


# --------------------------------------------------------------------------------------------
# Running the entry point


@dataclass
class Ran:
    """What one command gave: its arguments, exit code (None: stopped by the hang guard),
    stdout and stderr."""

    args: tuple[str, ...]
    code: int | None
    out: str
    err: str

    @property
    def command(self) -> str:
        return self.args[0]

    def __repr__(self) -> str:
        return (
            f"evalbatch {' '.join(self.args)} -> {self.code}\n{self.out[-1500:]}{self.err[-1500:]}"
        )


@contextlib.contextmanager
def _argv(args: Sequence[str]) -> Iterator[None]:
    saved = sys.argv
    sys.argv = ["evalbatch", *args]
    try:
        yield
    finally:
        sys.argv = saved


def _exit_code(code: Any) -> int:
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def cli(*args: str | Path) -> Ran:
    """`evalbatch ARGS` through `evalbatch.cli.main` in this process."""
    argv = tuple(map(str, args))
    with CliRunner().isolation() as (stdout, stderr, _), _argv(argv):
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = _exit_code(exc.code)
        out = stdout.getvalue().decode("utf-8", "replace")
        err = stderr.getvalue().decode("utf-8", "replace")
    return Ran(argv, code, out, err)


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (HANG_GUARD_BYTES, HANG_GUARD_BYTES))


def cli_guarded(*args: str | Path) -> Ran:
    """`evalbatch ARGS` through `evalbatch.cli.main` in a child interpreter with a memory cap and
    a time limit (see the module docstring): code None when the limit stopped it."""
    argv = tuple(map(str, args))
    script = "import sys; from evalbatch.cli import main; sys.argv[0] = 'evalbatch'; main()"
    try:
        done = subprocess.run(
            [sys.executable, "-c", script, *argv],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            errors="replace",
            timeout=HANG_GUARD_SECONDS,
            preexec_fn=_cap_memory,
        )
    except subprocess.TimeoutExpired:
        return Ran(argv, None, "", f"(still running after {HANG_GUARD_SECONDS} s: a hang)")
    return Ran(argv, done.returncode, done.stdout, done.stderr)


def note(text: str) -> None:
    """Hypothesis' note inside a test; stderr when a check is called on its own (a reproducer:
    `python -c "from tests.test_fault_injection import check_event_fault as c; c(...)"`)."""
    try:
        hypothesis_note(text)
    except InvalidArgument:
        print(text, file=sys.stderr)


def assert_contained(ran: Ran, allowed: set[int] | None = None) -> None:
    """§6: no traceback, no internal error, a documented exit code (or one of `allowed`)."""
    assert ran.code is not None, ran
    for text in (ran.out, ran.err):
        assert "Traceback" not in text, ran
        assert "internal error" not in text, ran
    assert ran.code in (allowed if allowed is not None else DOCUMENTED[ran.command]), ran


def assert_no_markers(where: str, text: str) -> None:
    """RFC 0244 §H: no tool name, argument, output or prompt (helpers.py's LEAK_MARKERS)."""
    for marker in LEAK_MARKERS:
        assert marker not in text, f"{marker!r} leaked into {where}: ...{_around(text, marker)}..."


def _around(text: str, marker: str) -> str:
    at = text.index(marker)
    return text[max(0, at - 120) : at + 120]


def assert_messages_content_free(ran: Ran, *, data_output: bool = False) -> None:
    """stdout and stderr carry no marker; `data_output` commands (explain, sql) show content to
    the person debugging on stdout, so only their stderr is checked."""
    if not data_output:
        assert_no_markers(f"stdout of {ran.args}", ran.out)
    assert_no_markers(f"stderr of {ran.args}", ran.err)


# --------------------------------------------------------------------------------------------
# Logs and suites


def fault_suite(suite_id: str = SUITE_ID) -> dict[str, Any]:
    """make_suite() with bars the clean VICTIM fails on cost (0.003 > 0.002) and p95 latency
    (400 > 300) while its scores pass (0.75 >= 0.7): a mutated cost or latency that reads as
    small, zero or NaN would pass a suite the clean run fails."""
    return make_suite(
        suite_id,
        thresholds={"passScore": 0.7, "maxCostUsd": 0.002, "maxP95LatencyMs": 300},
    )


def run_rows(run_id: str, variant: str = "plain") -> list[dict[str, Any]]:
    """tests/helpers.py's standard_run (tool names and arguments carry SECRET) in a variant:
    `plain`; `unsupplied` (its suite is not given: graded from the host record, D-4, where
    eval.started.trialCount is the trial count); `scored-cost` (no provider.usage cost, so the
    cost comes from eval.scored.costUsd, D-14: 0.001 + 0.002)."""
    suite_id = UNSUPPLIED if variant == "unsupplied" else SUITE_ID
    rows = copy.deepcopy(standard_run(run_id, suite_id).rows)
    if variant == "scored-cost":
        costs = iter((0.001, 0.002))
        for row in rows:
            if row["type"] == "provider.usage":
                row["payload"].pop("costEstimateUsd", None)
            if row["type"] == "eval.scored":
                row["payload"]["costUsd"] = next(costs)
    return rows


def variant_of(kind: str) -> str:
    return {"trial-count": "unsupplied", "cost-scored": "scored-cost"}.get(kind, "plain")


def write_suites(directory: Path, *docs: Mapping[str, Any]) -> Path:
    for number, doc in enumerate(docs):
        write_json(directory / f"suite-{number}.json", doc)
    return directory


def summaries(out: Path) -> dict[str, dict[str, Any]]:
    """run id -> summary, from OUT/summaries.jsonl (empty when there is none)."""
    path = out / "summaries.jsonl"
    if not path.exists():
        return {}
    docs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {doc["runId"]: doc["summary"] for doc in docs}


def summary_lines(out: Path) -> dict[str, str]:
    path = out / "summaries.jsonl"
    if not path.exists():
        return {}
    lines = path.read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["runId"]: line for line in lines}


def problems(out: Path) -> pl.DataFrame:
    return pl.read_parquet(out / "problems.parquet")


@cache
def clean_grade(variant: str) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """The clean VICTIM (in `variant`) and GOOD graded by `run`: (summary lines, summaries)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_raw_events(root / "events" / "a.parquet", run_rows(VICTIM, variant))
        write_raw_events(root / "events" / "b.parquet", run_rows(GOOD))
        suites = write_suites(root / "suites", fault_suite())
        ran = cli("run", root / "events", "--suites", suites, "--out", root / "out", "--quiet")
        assert ran.code == 0, ran
        return summary_lines(root / "out"), summaries(root / "out")


def assert_never_passes_more(got: Mapping[str, Any], clean: Mapping[str, Any]) -> None:
    """Bad data never passes a task, nor the suite, that the clean run fails."""
    if got.get("passed") is True:
        assert clean["passed"] is True, ("the suite passes only with the fault", got)
    clean_tasks = {t["taskId"]: t for t in clean["tasks"]}
    for task in got.get("tasks", []):
        if task.get("passed") is True and task.get("taskId") in clean_tasks:
            assert clean_tasks[task["taskId"]]["passed"] is True, ("passes with the fault", task)


def regress_compared(ran: Ran) -> int:
    """The most tasks any comparison of `regress --json` paired (0: nothing compared)."""
    try:
        doc = json.loads(ran.out)
    except ValueError:
        return 0
    counts: list[int] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "pairedTaskCount" and isinstance(value, int):
                    counts.append(value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(doc)
    return max(counts, default=0)


# --------------------------------------------------------------------------------------------
# 1a. Event values and event files


def _pick(rows: list[dict[str, Any]], where: int, type_: str | None = None) -> dict[str, Any]:
    chosen = [r for r in rows if type_ is None or r["type"] == type_]
    return chosen[where % len(chosen)]


def _raw_number(row: dict[str, Any], field: str, text: str) -> None:
    """Set payload `field` to the number `text` written verbatim (JSON has no range)."""
    payload = dict(row["payload"], **{field: "\x00RAW\x00"})
    row["payload"] = json.dumps(payload).replace('"\\u0000RAW\\u0000"', text)


def _damage_bytes(path: Path, fraction: float, where: int) -> None:
    data = bytearray(path.read_bytes())
    start = min(int(len(data) * fraction), len(data) - 48)
    for offset in range(48):
        data[start + offset] = (where + 37 * offset) % 256
    path.write_bytes(bytes(data))


#: renamed columns that are aliases (§1.1): the file grades as before
ALIASES = {"run_id": "runId", "seq": "sequence", "data": "payload"}
RENAMED_FROM = {"run": "runId", "body": "payload", "Sequence": "sequence", **ALIASES}


def plant(root: Path, kind: str, value: Any, where: int) -> list[Path]:
    """Write VICTIM with the fault and GOOD beside it under ROOT/events; returns the files."""
    rows = run_rows(VICTIM, variant_of(kind))
    types: dict[str, pa.DataType] = {}
    if kind == "sequence-int64":
        _pick(rows, where)["sequence"] = value
    elif kind == "sequence-uint64":
        types["sequence"] = pa.uint64()
        _pick(rows, where)["sequence"] = value
    elif kind == "sequence-float":
        types["sequence"] = pa.float64()
        for row in rows:
            row["sequence"] = float(row["sequence"])
        _pick(rows, where)["sequence"] = value
    elif kind == "cost-usage":
        usages = [
            r for r in rows if r["type"] == "provider.usage" and "costEstimateUsd" in r["payload"]
        ]
        _raw_number(usages[where % len(usages)], "costEstimateUsd", value)
    elif kind == "cost-scored":
        _raw_number(_pick(rows, where, "eval.scored"), "costUsd", value)
    elif kind == "latency":
        _raw_number(_pick(rows, where, "eval.scored"), "latencyMs", value)
    elif kind == "score":
        beta = next(
            r for r in rows if r["type"] == "eval.scored" and r["payload"]["taskId"] == "beta"
        )
        beta["payload"]["passed"] = True  # the host says beta passed; its score is hostile
        _raw_number(beta, "score", value)
    elif kind in ("type-null", "type-unknown"):
        _pick(rows, where)["type"] = value
    elif kind == "runid-utf8":
        types["runId"] = pa.binary()
        for row in rows:
            row["runId"] = value
    elif kind == "payload-utf8":
        types["payload"] = pa.binary()
        call = _pick(rows, where, "agent.tool-called")
        text = json.dumps(call["payload"]).encode("utf-8")
        call["payload"] = text.replace(b"SECRET", b"SECRET" + value, 1)
    elif kind == "payload-not-json":
        row = _pick(rows, where)
        row["payload"] = break_json(json.dumps(row["payload"]), value)
    elif kind == "trial-count":
        _pick(rows, 0, "eval.started")["payload"]["trialCount"] = value
    victim = write_raw_events(root / "events" / "a-victim.parquet", rows, types)
    if kind == "file-truncated":
        data = victim.read_bytes()
        victim.write_bytes(data[: int(len(data) * value)])
    elif kind == "file-damaged":
        _damage_bytes(victim, value, where)
    elif kind == "columns-missing":
        pq.write_table(pq.read_table(victim).drop_columns([value]), victim)
    elif kind == "columns-renamed":
        table = pq.read_table(victim)
        names = [value if n == RENAMED_FROM[value] else n for n in table.column_names]
        pq.write_table(table.rename_columns(names), victim)
    good = write_raw_events(root / "events" / "b-good.parquet", run_rows(GOOD))
    return [victim, good]


def must_report(kind: str, value: Any) -> bool:
    """Faults the contract or the decisions name, which must give a problem row: sequences that are
    not integers (E-3), infinite or negative costs (D-14), invalid host scores (D-11), a null
    type (E-80) and trial counts beyond the cap (E-78), invalid UTF-8, payloads that are not JSON
    (D-3), cut files and missing columns (§1.1, §6)."""
    if kind == "sequence-float":
        return True
    if kind in ("cost-usage", "cost-scored"):
        return value in ("1e400", "-1e400", "-0.5")
    if kind == "columns-renamed":
        return value not in ALIASES
    return kind in {
        "score",
        "type-null",
        "runid-utf8",
        "payload-utf8",
        "payload-not-json",
        "file-truncated",
        "columns-missing",
        "trial-count",
    }


def check_event_fault(kind: str, value: Any, where: int, runner: Any = cli) -> None:
    """Plant one fault in VICTIM and hold run, verify, sql, explain and regress to §6 and E-65."""
    clean_lines, clean = clean_grade(variant_of(kind))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        plant(root, kind, value, where)
        suites = write_suites(root / "suites", fault_suite())
        clean_dir = root / "clean"
        write_raw_events(clean_dir / "a.parquet", run_rows(VICTIM, variant_of(kind)))
        write_raw_events(clean_dir / "b.parquet", run_rows(GOOD))
        events, out = root / "events", root / "out"

        ran = runner("run", events, "--suites", suites, "--out", out, "--quiet")
        note(repr(ran))
        # a good run is in the input: it is graded, so the command is never "unusable" (2)
        assert_contained(ran, {0, 3})
        assert_messages_content_free(ran)
        lines, graded = summary_lines(out), summaries(out)
        assert lines.get(GOOD) == clean_lines[GOOD], (
            "the good run is not graded as without the fault"
        )
        for run_id, summary in graded.items():
            if run_id != GOOD:
                assert_never_passes_more(summary, clean[VICTIM])
        found = problems(out)
        note(str(found.select("run_id", "sequence", "code", "severity").to_dicts()))
        for message in found["message"].to_list():
            assert_no_markers("problems.parquet", message)
        errors = found.filter(pl.col("severity") == "error")
        assert ran.code == (3 if errors.height else 0), (ran, errors)
        victim_graded = VICTIM in graded
        # E-1, D-1, E-80: an eval.started renamed to a type no one knows, or whose type is null,
        # leaves a log that is no eval run (no summary, no problem), as one that never started
        not_an_eval_run = (
            kind in ("type-unknown", "type-null")
            and _pick(run_rows(VICTIM, variant_of(kind)), where)["type"] == "eval.started"
        )
        if not victim_graded and not not_an_eval_run:
            # nothing is lost silently: an ungraded run or its file has an error problem
            lost = errors.filter(pl.col("run_id").ne_missing(GOOD)).height == 0
            assert not lost, ("the run is not graded and no error problem says why", found)
        if must_report(kind, value) and not not_an_eval_run:
            assert found.filter(pl.col("run_id").ne_missing(GOOD)).height, (
                f"{kind} {value!r} is not reported",
                found,
            )
        if kind == "sequence-float" and not float(value).is_integer():
            codes = errors["code"].to_list()
            assert "sequence-invalid" in codes, (
                "a fractional sequence is not sequence-invalid",
                codes,
            )

        verified = runner("verify", events, "--suites", suites)
        note(repr(verified))
        assert_contained(verified, {0, 1, 3})  # an eval run is there: never "no eval run" (2)
        assert_messages_content_free(verified)
        if ran.code == 3:
            assert verified.code != 0, "verify says every run agrees where run skipped one"

        queried = runner("sql", events, "--suites", suites, "-e", "SELECT count(*) AS n FROM runs")
        note(repr(queried))
        assert_contained(queried, {0})
        assert_messages_content_free(queried, data_output=True)

        explained = runner("explain", events, "--suites", suites, "--run-id", VICTIM)
        note(repr(explained))
        assert_contained(explained)
        assert_messages_content_free(explained, data_output=True)
        assert (explained.code == 0) == victim_graded, "explain and run disagree on the grade"

        compared = runner(
            "regress",
            clean_dir,
            events,
            "--suites",
            suites,
            "--base-run-id",
            VICTIM,
            "--cand-run-id",
            VICTIM,
            "--json",
        )
        note(repr(compared))
        assert_contained(compared)
        assert_no_markers("stderr of regress", compared.err)
        if compared.code == 0:
            assert regress_compared(compared) > 0, "regress exits 0 having compared nothing"
        if not victim_graded:
            assert compared.code == 2, "regress against a run that was not graded exits 0/1"


EVENT_KINDS = sorted(set(EVENT_FAULT_VALUES) - {"trial-count"})


@pytest.mark.parametrize("kind", EVENT_KINDS)
@settings(FAULTS, max_examples=3)
@given(data=st.data())
def test_s6_event_fault_is_contained_in_every_command(kind: str, data: st.DataObject) -> None:
    """§6 (one bad value costs its own run and nothing else): one hostile value or damaged file
    in one run; run, verify, sql, explain and regress never crash, exit as documented, grade the
    good run as before, never pass what the clean run fails, and report the fault."""
    _, value, where = data.draw(event_faults(kind), label="fault")
    check_event_fault(kind, value, where)


@pytest.mark.parametrize("source", ["eval.started.trialCount", "suite trials.count"])
@settings(FAULTS, max_examples=2)
@given(data=st.data())
def test_e78_huge_trial_counts_are_capped_not_hung(source: str, data: st.DataObject) -> None:
    """E-78: a trial count of 10^6..2^63 (the host's eval.started.trialCount for a run
    without its suite, D-4, or a suite's trials.count) is capped by a documented limit with a
    problem row; no command hangs or exhausts memory (each runs under the hang guard)."""
    value = data.draw(st.sampled_from(EVENT_FAULT_VALUES["trial-count"]), label="count")
    if source == "eval.started.trialCount":
        check_event_fault("trial-count", value, 0, runner=cli_guarded)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_raw_events(root / "events" / "a.parquet", run_rows(VICTIM))
        suite = make_suite(trials={"count": value})
        suites = write_suites(root / "suites", suite)
        validated = cli_guarded("validate", suites)
        assert_contained(validated)
        ran = cli_guarded("run", root / "events", "--suites", suites, "--out", root / "out")
        note(repr(ran))
        assert_contained(ran)
        if ran.code != 2:
            assert problems(root / "out").filter(pl.col("run_id") == VICTIM).height, (
                "a capped trial count is not reported"
            )
        for command in (
            ("verify", root / "events", "--suites", suites),
            ("explain", root / "events", "--suites", suites, "--run-id", VICTIM),
        ):
            assert_contained(cli_guarded(*command))


# --------------------------------------------------------------------------------------------
# 1b. Suites


@settings(FAULTS, max_examples=24)
@given(data=st.data())
def test_s1_3_suite_fault_is_contained(data: st.DataObject) -> None:
    """§1.3 and E-85: one suite file has a field replaced by a hostile value or removed, no
    suiteId or version, or text that is not JSON. validate and run agree on it: a suite
    validate accepts grades its runs; one it refuses is never passed over with exit 0 (run exits
    2, or 3 with the other suite's run graded and no run graded with the refused suite); a suite
    without suiteId or version is invalid (validate 1, E-85). verify, explain and regress never
    crash, and regress never exits 0 having compared nothing."""
    label, text = data.draw(suite_faults(fault_suite()), label="suite fault")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suites = root / "suites"
        suites.mkdir()
        (suites / "a-mutated.json").write_text(text, encoding="utf-8")
        write_json(suites / "b-other.json", make_suite(OTHER_SUITE))
        events = root / "events"
        write_raw_events(events / "a.parquet", run_rows(VICTIM))
        other_rows = copy.deepcopy(standard_run(OTHER_RUN, OTHER_SUITE).rows)
        write_raw_events(events / "c.parquet", other_rows)
        out = root / "out"

        validated = cli("validate", suites)
        note(repr(validated))
        assert_contained(validated)
        assert_messages_content_free(validated)
        if label.startswith("no "):
            assert validated.code == 1, "a suite without suiteId/version is invalid, not unreadable"
        if label.startswith("not-json"):
            assert validated.code == 2, validated

        ran = cli("run", events, "--suites", suites, "--out", out, "--quiet")
        note(repr(ran))
        assert_contained(ran, {0, 2, 3})
        assert_messages_content_free(ran)
        graded = summaries(out)
        if validated.code == 0:
            assert ran.code in (0, 3) and VICTIM in graded, "a valid suite's run is not graded"
        else:
            assert ran.code != 0, "run passes over a suite file validate refuses, exit 0"
        if validated.code != 0 and ran.code != 2:
            assert OTHER_RUN in graded, "a good run of another suite is not graded"
            if not claims_other_suite(text):
                assert VICTIM not in graded, "a run graded with a suite validate refuses"
        if VICTIM in graded and validated.code != 0:
            assert_never_passes_more(graded[VICTIM], clean_grade("plain")[1][VICTIM])

        verified = cli("verify", events, "--suites", suites)
        note(repr(verified))
        assert_contained(verified)
        assert_messages_content_free(verified)
        explained = cli("explain", events, "--suites", suites, "--run-id", VICTIM)
        assert_contained(explained)
        assert_messages_content_free(explained, data_output=True)

        compared = cli("regress", events, events, "--suites", suites, "--json")
        note(repr(compared))
        assert_contained(compared)
        assert_no_markers("stderr of regress", compared.err)
        if compared.code == 0:
            assert regress_compared(compared) > 0, "regress exits 0 having compared nothing"


def claims_other_suite(text: str) -> bool:
    """Whether a mutated suite's text no longer names VICTIM's suite (its suiteId or version
    changed): VICTIM is then graded from the host record (D-4), not with it."""
    try:
        doc = json.loads(text)
    except ValueError:
        return False
    if not isinstance(doc, dict):
        return True
    return (doc.get("suiteId"), doc.get("version")) != (SUITE_ID, VERSION)


def test_e85_validate_without_suites_is_not_ok(tmp_path: Path) -> None:
    """E-85: `validate` on a directory holding no suite file validates nothing: not exit 0."""
    (tmp_path / "empty").mkdir()
    ran = cli("validate", tmp_path / "empty")
    assert_contained(ran)
    assert ran.code != 0, ran


# --------------------------------------------------------------------------------------------
# 1c. Previous outputs, then `run --incremental`


NIGHTLY_RUNS = ("acme/run-n-0001", "acme/run-n-0002", "acme/run-n-0003")
GAPPY = "acme/run-n-0004"  # has a sequence gap, so problems.parquet holds a row


def _nightly_rows() -> list[dict[str, Any]]:
    rows = [row for run in NIGHTLY_RUNS for row in run_rows(run)]
    for row in run_rows(GAPPY):
        if row["sequence"] >= 5:
            row["sequence"] += 1  # E-5: a gap, a warning
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def nightly(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The nightly input, its `run --incremental` output (the one to damage), and the bytes a
    full regrade writes."""
    root = tmp_path_factory.mktemp("nightly")
    events = write_raw_events(root / "events" / "all.parquet", _nightly_rows()).parent
    suites = write_suites(root / "suites", fault_suite())
    first = cli("run", events, "--suites", suites, "--out", root / "template", "--incremental")
    assert first.code == 0, first
    full = cli("run", events, "--suites", suites, "--out", root / "full", "--quiet")
    assert full.code == 0, full
    expected = {name: (root / "full" / name).read_bytes() for name in OUTPUT_FILES}
    return {"root": root, "events": events, "suites": suites, "expected": expected}


def _edit_rows(path: Path, how: str, where: int) -> None:
    """Drop or duplicate one row (line, table row or manifest run entry) of an output file."""
    if path.suffix == ".jsonl":
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        at = where % len(lines)
        lines[at : at + 1] = [] if how == "drop-row" else [lines[at], lines[at]]
        path.write_text("".join(lines), encoding="utf-8")
    elif path.suffix == ".json":
        doc = json.loads(path.read_text(encoding="utf-8"))
        runs = doc["runs"]
        victim = sorted(runs)[where % len(runs)]
        if how == "drop-row":
            del runs[victim]
        else:
            runs["acme/run-ghost"] = runs[victim]
        path.write_text(json.dumps(doc), encoding="utf-8")
    else:
        table = pq.read_table(path)
        at = where % max(table.num_rows, 1)
        if how == "drop-row":
            table = pa.concat_tables([table.slice(0, at), table.slice(at + 1)])
        else:
            table = pa.concat_tables([table, table.slice(at, 1)])
        pq.write_table(table, path)


def damage(path: Path, how: str, where: int) -> None:
    """Damage one previous output file as a full disk, a crash, a tool or a person would."""
    if how == "delete":
        path.unlink()
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) * (where % 100) // 100])
    elif how == "corrupt":
        _damage_bytes(path, (where % 97) / 100, where)
    else:
        _edit_rows(path, how, where)


@settings(FAULTS, max_examples=24)
@given(fault=output_damage())
def test_e71_incremental_over_damaged_outputs_equals_a_full_regrade(
    nightly: dict[str, Any], fault: tuple[str, str, int]
) -> None:
    """E-71, E-50, E-51: a previous output file truncated, corrupted, deleted, emptied
    or with a row dropped or repeated; `run --incremental` on the same input exits as the full
    run did (0), without a traceback, and writes byte for byte what a full regrade writes (a
    damaged file is never carried over: the run falls back to a full regrade)."""
    name, how, where = fault
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        shutil.copytree(nightly["root"] / "template", out)
        damage(out / name, how, where)
        ran = cli(
            "run", nightly["events"], "--suites", nightly["suites"], "--out", out, "--incremental"
        )
        note(repr(ran))
        assert_contained(ran, {0})
        for file_name, expected in nightly["expected"].items():
            assert (out / file_name).read_bytes() == expected, (
                f"{file_name} differs from a full regrade"
            )


@pytest.mark.parametrize(
    ("name", "column"),
    [("summaries.jsonl", None), ("runs.parquet", "passed"), ("tasks.parquet", "passed")],
)
def test_e71_incremental_carries_no_hand_edited_pass(
    nightly: dict[str, Any], tmp_path: Path, name: str, column: str | None
) -> None:
    """E-71 (bad data never passes), E-50 ("the outputs equal a full regrade's"): a
    previous output hand-edited so a failing run or task reads as passed, its shape intact; the
    next `run --incremental` must not carry the forged pass over."""
    out = tmp_path / "out"
    shutil.copytree(nightly["root"] / "template", out)
    path = out / name
    if column is None:
        text = path.read_text(encoding="utf-8")
        assert '"passed": false' in text
        path.write_text(text.replace('"passed": false', '"passed": true'), encoding="utf-8")
    else:
        table = pq.read_table(path)
        forged = pa.array([True] * table.num_rows, pa.bool_())
        table = table.set_column(table.column_names.index(column), column, forged)
        pq.write_table(table, path)
    ran = cli(
        "run", nightly["events"], "--suites", nightly["suites"], "--out", out, "--incremental"
    )
    assert_contained(ran, {0})
    assert path.read_bytes() == nightly["expected"][name], "a forged pass was carried over"


# --------------------------------------------------------------------------------------------
# 1d. regress sides


@pytest.fixture(scope="module")
def task_side(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tasks.parquet of one graded run with two tasks (alpha 1.0, beta 0.5), as `run` writes."""
    root = tmp_path_factory.mktemp("task-side")
    write_raw_events(root / "events" / "a.parquet", run_rows(GOOD))
    suites = write_suites(root / "suites", fault_suite())
    ran = cli("run", root / "events", "--suites", suites, "--out", root / "out", "--quiet")
    assert ran.code == 0, ran
    return root / "out" / "tasks.parquet"


def edit_task_side(source: Path, target: Path, fault: str, value: Any, where: int) -> None:
    frame = pl.read_parquet(source)
    at = where % frame.height
    if fault == "zero-rows":
        frame = frame.head(0)
    elif fault == "gating-score":
        cells = frame["gating_score"].to_list()
        cells[at] = value
        frame = frame.with_columns(pl.Series("gating_score", cells, pl.Float64))
    elif fault == "all-gating-scores":
        frame = frame.with_columns(pl.lit(value, pl.Float64).alias("gating_score"))
    elif fault == "duplicate-row":
        frame = pl.concat([frame, frame.slice(at, 1)])
    elif fault == "gating-score-as-text":
        frame = frame.with_columns(pl.lit(value, pl.String).alias("gating_score"))
    elif fault == "column-dropped":
        frame = frame.drop(value)
    frame.write_parquet(target)


@settings(FAULTS, max_examples=20)
@given(
    fault=task_side_faults(),
    method=st.sampled_from(("paired-bootstrap", "paired-t", "sign-test", "mcnemar")),
    swap=st.booleans(),
)
def test_e69_regress_refuses_a_hand_edited_task_side(
    task_side: Path, fault: tuple[str, Any, int], method: str, swap: bool
) -> None:
    """E-69: a tasks.parquet side with no rows, NaN/null/Inf/out-of-range gating
    scores, a repeated row, a score column of text or a required column dropped is refused:
    exit 2 with a message, never a verdict (exit 0 or 1) and never a traceback."""
    kind, value, where = fault
    with tempfile.TemporaryDirectory() as tmp:
        edited = Path(tmp) / "tasks.parquet"
        edit_task_side(task_side, edited, kind, value, where)
        sides = (edited, task_side) if swap else (task_side, edited)
        ran = cli("regress", *sides, "--method", method)
        note(repr(ran))
        assert_contained(ran, {2})
        assert ran.err.strip(), "refused without saying why"


def test_e69_regress_clean_task_sides_compare(task_side: Path) -> None:
    """The control for the test above: the same side unedited is compared (exit 0, unchanged;
    a run compared with itself on purpose, E-114)."""
    ran = cli("regress", task_side, task_side, "--json", "--allow-same-run")
    assert_contained(ran, {0})
    assert regress_compared(ran) == 2, ran


# --------------------------------------------------------------------------------------------
# 1e. Options


@pytest.fixture(scope="module")
def small_input(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("options")
    events = write_raw_events(root / "events" / "a.parquet", run_rows(VICTIM)).parent
    suites = write_suites(root / "suites", fault_suite())
    ndjson = root / "events.ndjson"
    ndjson.write_text(
        "".join(
            json.dumps({**r, "timestamp": str(r["timestamp"])}) + "\n" for r in run_rows(VICTIM)
        ),
        encoding="utf-8",
    )
    return {"root": root, "events": events, "suites": suites, "ndjson": ndjson}


#: (command, option, bad values); the command's other arguments are filled in by `_option_args`
BAD_OPTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("run", "--default-pass-score", (*BAD_FLOATS, "-0.5", "1.5")),
    ("run", "--threads", BAD_COUNTS),
    ("run", "--batch-events", BAD_COUNTS),
    ("run", "--memory-limit", BAD_SIZES),
    ("run", "--since", ("yesterday", "nan", "2026-13-01")),
    ("verify", "--default-pass-score", BAD_FLOATS),
    ("verify", "--memory-limit", BAD_SIZES),
    ("sql", "--max-rows", ("-1", "nan", "x")),
    ("sql", "--memory-limit", BAD_SIZES),
    ("explain", "--trial", ("-1", "nan", "x")),
    ("explain", "--default-pass-score", BAD_FLOATS),
    ("regress", "--alpha", (*BAD_FLOATS, "0", "1", "-0.1")),
    ("regress", "--margin", (*BAD_FLOATS, "-1")),
    ("regress", "--seed", ("-1", "nan", "1.5", "x")),
    ("regress", "--resamples", ("nan", "-1", "0", "x")),
    ("regress", "--memory-limit", BAD_SIZES),
    ("ingest", "--memory-limit", BAD_SIZES),
)


def _option_args(command: str, paths: Mapping[str, Path], out: Path) -> list[str | Path]:
    events, suites = paths["events"], paths["suites"]
    return {
        "run": ["run", events, "--suites", suites, "--out", out, "--quiet"],
        "verify": ["verify", events, "--suites", suites],
        "sql": ["sql", events, "-e", "SELECT 1"],
        "explain": ["explain", events, "--suites", suites, "--run-id", VICTIM],
        "regress": ["regress", events, events, "--suites", suites],
        "ingest": ["ingest", paths["ndjson"], "--out", out],
    }[command]


@pytest.mark.parametrize(
    ("command", "option", "values"), BAD_OPTIONS, ids=[f"{c} {o}" for c, o, _ in BAD_OPTIONS]
)
@settings(FAULTS, max_examples=10)
@given(data=st.data())
def test_e82_meaningless_option_values_are_usage_errors(
    small_input: dict[str, Path],
    command: str,
    option: str,
    values: tuple[str, ...],
    data: st.DataObject,
) -> None:
    """E-82: NaN, infinities, negative seeds and counts, unparsable sizes and times
    are refused by the option's type: exit 2 with a message naming the option, nothing written,
    never an internal error."""
    value = data.draw(st.sampled_from(values), label="value")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        ran = cli(*_option_args(command, small_input, out), f"{option}={value}")
        note(repr(ran))
        assert_contained(ran, {2})
        assert option in ran.err, "the message does not name the option"
        assert not out.exists() or not any(out.iterdir()), "a usage error wrote outputs"


# --------------------------------------------------------------------------------------------
# 3. Content markers


def marker_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(text-payload rows, binary-payload rows): clean runs whose tool names and arguments carry
    SECRET (tests/helpers.py), with prompts, tool outputs, reasoning, a host scoreLabel and
    evaluatorType and a text score all carrying markers; a run whose tool call is not JSON; and,
    in the binary file, a run whose tool-call payload holds invalid UTF-8 next to its markers."""
    rows: list[dict[str, Any]] = []
    for run_id in (VICTIM, GOOD):
        for row in run_rows(run_id):
            payload = row["payload"]
            if row["type"] == "agent.invocation-started":
                payload["prompt"] = "SECRET prompt: crm:lookup-order for ORD-SECRET"
            if row["type"] == "agent.tool-returned":
                payload["output"] = {"text": "SECRET output of crm:lookup-order"}
            if row["type"] == "eval.scored":
                payload["output"] = "SECRET answer"
                payload["scoreLabel"] = "SECRET label"
                payload["evaluatorType"] = "SECRET-evaluator"
                if run_id == GOOD and payload["taskId"] == "beta":
                    payload["score"] = "SECRET score"
            rows.append(row)
    broken = run_rows("acme/run-d-not-json")
    for row in broken:
        if row["type"] == "agent.tool-called":
            row["payload"] = json.dumps(row["payload"])[:-3]  # cut inside the arguments
    rows.extend(broken)
    binary = run_rows("acme/run-e-bad-utf8")
    for row in binary:
        text = json.dumps(row["payload"]).encode("utf-8")
        if row["type"] == "agent.tool-called":
            text = text.replace(b"SECRET", b"SECRET\xff\xfe", 1)
        row["payload"] = text
    return rows, binary


def marker_suites(directory: Path) -> Path:
    """The suite of the marker runs (tool names and args carry SECRET), and an invalid suite
    with markers in its expected calls and fixtures: a call given as a bare tool-name string,
    and fixtures whose response holds SECRET."""
    write_json(directory / "good.json", make_suite())
    bad = make_suite(OTHER_SUITE)
    trajectory = bad["tasks"][0]["expected"]["trajectory"]
    trajectory["calls"].append(TOOL)  # a string where an object belongs
    trajectory["calls"][0]["argsMatch"] = 7  # wrong type next to SECRET args
    bad["tasks"][1]["fixtures"] = {
        "toolResponses": [{"tool": TOOL, "args": {"q": "SECRET"}, "response": {"r": "SECRET"}}],
        "onMiss": "SECRET",
    }
    write_json(directory / "bad.json", bad)
    return directory


def marker_ndjson(path: Path) -> Path:
    """NDJSON export with markers in good lines, a line that is not JSON, an item that is not a
    RunEventDoc, and a line with invalid UTF-8."""
    lines: list[bytes] = []
    for row in run_rows("acme/run-f-ingested"):
        doc = {**row, "timestamp": row["timestamp"].isoformat()}
        lines.append(json.dumps(doc).encode("utf-8"))
    lines.append(b'{"runId": "acme/run-f-ingested", "sequence": 99, "payload": {"toolName": "crm:')
    lines.append(json.dumps({"runId": 5, "type": "x", "payload": {"toolName": TOOL}}).encode())
    lines.append(
        b'{"runId": "acme/run-f-ingested", "sequence": 100, "type": "agent.tool-called", '
        b'"payload": {"toolName": "crm:lookup-order-SECRET\xff"}}'
    )
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def frame_text(path: Path) -> str:
    """Every cell of a Parquet table, and its metadata, as text."""
    frame = pl.read_parquet(path)
    metadata = pq.read_schema(path).metadata or {}
    return frame.write_ndjson() + repr(metadata)


@pytest.mark.parametrize("invalid_utf8", [False, True], ids=["text", "text+invalid-utf8"])
def test_content_markers_reach_no_output_and_no_message(tmp_path: Path, invalid_utf8: bool) -> None:
    """RFC 0244 §H, E-79 (messages without content): with markers planted in tool names, arguments,
    prompts, outputs, host labels, text scores, a payload that is not JSON and one with invalid
    UTF-8, and in an invalid suite and a broken export, no marker appears in summaries.jsonl, any
    cell of runs/tasks/trials/problems.parquet, manifest.json, the OpenTelemetry and Every Eval
    Ever exports, the HTML report, or any stdout/stderr of run, verify, regress, validate and
    ingest (nor explain's and sql's stderr)."""
    text_rows, binary_rows = marker_rows()
    events = tmp_path / "events"
    write_raw_events(events / "a-text.parquet", text_rows)
    if invalid_utf8:
        write_raw_events(events / "b-binary.parquet", binary_rows, {"payload": pa.binary()})
    suites = marker_suites(tmp_path / "suites")
    good_suites = write_suites(tmp_path / "good-suites", make_suite())
    out = tmp_path / "out"
    host = tmp_path / "host.jsonl"
    host.write_text(
        json.dumps({"runId": GOOD, "summary": {"suiteId": SUITE_ID, "trajectory": [TOOL]}}) + "\n",
        encoding="utf-8",
    )
    ingested = tmp_path / "ingested"

    commands: list[tuple[tuple[str | Path, ...], bool]] = [
        (("run", events, "--suites", good_suites, "--out", out, "--incremental"), False),
        (("run", events, "--suites", suites, "--out", tmp_path / "out-bad-suite"), False),
        (("verify", events, "--suites", good_suites), False),
        (("verify", events, "--suites", good_suites, "--summaries", host), False),
        (
            (
                "regress",
                events,
                events,
                "--suites",
                good_suites,
                "--base-run-id",
                GOOD,
                "--cand-run-id",
                VICTIM,
            ),
            False,
        ),
        (("regress", events, events, "--base-run-id", GOOD, "--cand-run-id", VICTIM), False),
        (("validate", suites), False),
        (("ingest", marker_ndjson(tmp_path / "export.ndjson"), "--out", ingested), False),
        (("explain", events, "--suites", good_suites, "--run-id", "acme/run-d-not-json"), True),
        (("explain", events, "--suites", good_suites, "--run-id", "acme/run-e-bad-utf8"), True),
        (("sql", events, "--suites", good_suites, "-e", "SELECT count(*) FROM runs"), True),
    ]
    failures: list[str] = []
    for args, data_output in commands:
        ran = cli(*args)
        try:
            assert_contained(ran)
            assert_messages_content_free(ran, data_output=data_output)
        except AssertionError as exc:
            failures.append(str(exc))
    if not (out / "summaries.jsonl").exists():
        failures.append("run wrote nothing: the outputs, exports and report are not checked")
    for args, _ in [
        (("export", "otel", out, "--events", events), False),
        (
            (
                "export",
                "eee",
                out,
                "--model-id",
                "acme/agent",
                "--org",
                "acme",
                "--retrieved-at",
                "1793620800",
            ),
            False,
        ),
        (("report", out), False),
    ]:
        ran = cli(*args)
        try:
            assert_contained(ran, {0})
            assert_messages_content_free(ran)
        except AssertionError as exc:
            failures.append(str(exc))
    for path in sorted(out.iterdir()) if out.exists() else []:
        if path.is_dir():
            continue
        text = frame_text(path) if path.suffix == ".parquet" else path.read_text("utf-8", "replace")
        try:
            assert_no_markers(path.name, text)
        except AssertionError as exc:
            failures.append(str(exc))
    assert {p.name for p in out.iterdir()} >= {
        *OUTPUT_FILES,
        "manifest.json",
        "otel-evaluations.jsonl",
        "eee.jsonl",
        "report.html",
    }
    assert not failures, "\n".join(failures)


def test_d3_invalid_utf8_payload_is_one_contained_problem(tmp_path: Path) -> None:
    """D-3, E-79 (messages without content): invalid UTF-8 in one tool call's payload makes that
    run a content-free problem naming the run and event; the run beside it in the same file
    grades as without it."""
    rows = run_rows(VICTIM) + run_rows(GOOD)
    call = next(r for r in rows if r["runId"] == VICTIM and r["type"] == "agent.tool-called")
    for row in rows:
        row["payload"] = json.dumps(row["payload"]).encode("utf-8")
    call["payload"] = call["payload"].replace(b"SECRET", b"SECRET\xff", 1)
    write_raw_events(tmp_path / "events" / "a.parquet", rows, {"payload": pa.binary()})
    suites = write_suites(tmp_path / "suites", fault_suite())
    ran = cli("run", tmp_path / "events", "--suites", suites, "--out", tmp_path / "out")
    assert_contained(ran, {3})
    assert_messages_content_free(ran)
    assert summary_lines(tmp_path / "out")[GOOD] == clean_grade("plain")[0][GOOD]
    found = problems(tmp_path / "out").filter(pl.col("run_id") == VICTIM)
    assert found.filter(pl.col("sequence") == call["sequence"]).height, found
    for message in found["message"]:
        assert_no_markers("problems.parquet", message)


def test_e80_null_type_cannot_hide_a_forbidden_call(tmp_path: Path) -> None:
    """E-80: a row whose `type` is null is a problem row, not silently dropped: here it is
    the only call to a forbidden tool, and dropping it would pass the task."""
    suite = make_suite(task_ids=("alpha",))
    suite["tasks"][0]["expected"]["trajectory"]["forbidden"] = ["billing:refund-all"]
    rows = [
        r
        for r in copy.deepcopy(standard_run(VICTIM).rows)
        if not (r["type"] == "eval.scored" and r["payload"]["taskId"] == "beta")
    ]
    returned = next(i for i, r in enumerate(rows) if r["type"] == "agent.tool-returned")
    forbidden = {
        **rows[returned],
        "type": None,
        "payload": {
            "agentId": "acme.agents.tester",
            "toolName": "billing:refund-all",
            "callId": "x",
        },
    }
    rows.insert(returned + 1, forbidden)
    for sequence, row in enumerate(rows):
        row["sequence"] = sequence
    write_raw_events(tmp_path / "events" / "a.parquet", rows)
    suites = write_suites(tmp_path / "suites", suite)
    ran = cli("run", tmp_path / "events", "--suites", suites, "--out", tmp_path / "out")
    assert_contained(ran, {0, 3})
    found = problems(tmp_path / "out").filter(
        (pl.col("run_id") == VICTIM) & (pl.col("sequence") == forbidden["sequence"])
    )
    assert found.height, "a null type is dropped without a problem row"
    graded = summaries(tmp_path / "out")
    if VICTIM in graded:
        alpha = next(t for t in graded[VICTIM]["tasks"] if t["taskId"] == "alpha")
        assert alpha["passed"] is False, "the unreadable row hid a forbidden call: alpha passes"
