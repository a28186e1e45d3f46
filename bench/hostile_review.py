"""Hostile review harness: runs `evalbatch` on hundreds of damaged, hostile and adversarial inputs
and judges every outcome.

    .venv/bin/python bench/hostile_review.py                      # every case (~1,400; 30 min)
    .venv/bin/python bench/hostile_review.py --quick              # a subset (~550 cases)
    .venv/bin/python bench/hostile_review.py --json report.json   # also write a JSON report
    .venv/bin/python bench/hostile_review.py --only 'regress|same-path' --keep /tmp/hostile
    .venv/bin/python bench/hostile_review.py --categories kill-9,full-disk   # some families
    .venv/bin/python bench/hostile_review.py --evalbatch /path/to/other/evalbatch --jobs 1

It builds every input in a temporary directory from the samples (`data/samples`, or
`--samples DIR`), never touching the files it was given, runs the evalbatch command it is told
to (default: `evalbatch` beside the Python running it) once per case as a child process, and
prints a table of counts by category and verdict, then one line per failure. Exit code: 0 when
every case is `ok`, 1 when some case FAILs, 2 when the harness itself could not run.

Categories of cases (each across every command that reads that kind of input):

- `malformed`: Parquet event files cut every few KB, bad footers and magic, flipped bytes in
  compressed pages, wrong column types and missing or doubled columns, special files (a FIFO, a
  link to /dev/zero, a dangling link); suites, capabilities and host summaries damaged as JSON;
  NDJSON, SSE, JSON-array, poll and debug-bundle exports, gzip and Inspect `.eval` archives
  damaged for `ingest`; output directories with a damaged table for `report`, `history`,
  `export` and `sql`.
- `hostile-values`: one eval run per hostile value (NaN, Infinity, huge, negative, booleans as
  numbers, passed as 1/0, strings where numbers belong, nulls) in scores, trial indexes, counts,
  costs, tokens and latencies; control characters, ANSI escapes, bidi and zero-width characters,
  homoglyphs and 100,000-character strings in ids; sequence gaps, duplicates and conflicts, a
  second `eval.completed`, `eval.scored` before `eval.started`, invalid suite ids, payloads that
  are not objects or not JSON; NDJSON lines with the same for `ingest`; `sql --safe` escapes.
- `deep-nesting`: suites, capabilities, payloads, host summaries, NDJSON lines, SSE frames and
  output-directory files nested 100, 1,000 and 100,000 levels deep.
- `decompression`: gzip lines, SSE frames and JSON documents, an Inspect archive member and a
  Parquet payload that each inflate to about 200 MB (50 MB with `--quick`); peak RSS recorded.
- `same-path`: one file, a copy, a symbolic link or a hard link of it on both sides of
  `regress`; one directory twice for `run`, `verify` and `history`.
- `output-inside-input`: `--out` inside an input directory, equal to it, or pointing at an input
  file, for every command that writes.
- `full-disk`: a small tmpfs (filled to several levels), a read-only mount and `ulimit -f`
  (RLIMIT_FSIZE) under `run`, `run --incremental`, `ingest`, `report`, `export` and `sql --out`:
  exit 4, the previous outputs byte for byte and nothing left behind, then a clean retry.
  Without the rights to mount, only the file-size limit and an unwritable directory are used.
- `kill-9`: `run`, `run --incremental` and `ingest` killed with SIGKILL after a delay and, with
  `strace` on the path, exactly at each rename or link into the output directory: the visible
  outputs must be the old ones or the new ones, never a mix (or, for `run`, a directory marked
  `outputs-incomplete` that `sql` refuses, E-119), and the next run must recover.
- `bad-options`: negative, zero, huge, NaN, infinite and non-numeric values for every numeric,
  size and time option of every command.

Every invocation records the command line, exit code, wall time, peak RSS (the child's VmHWM,
read until it exits: wait4's ru_maxrss also counts the harness the child was forked from),
whether stdout or stderr holds a Python traceback or "internal error", whether a marker string
planted in tool names, arguments, prompts and outputs of the hostile logs appears in a
printed line, an EvalSummary, a `problems.parquet` message, a report or an export (a leak),
whether it hung (killed after `--timeout`, 120 s) and a verdict: `ok`, or `FAIL` with the reasons:
traceback, internal error, crash (a signal), exit code outside the documented ones, exit 0 where
nothing was graded or compared, a pass that should not be (a trial passed on a garbage score,
scores outside 0..1 or not finite in the outputs), a leak, a raw control character printed, a
hang, peak RSS over 1 GB, a half-written output directory, or a message that does not name the
file, run or option at fault. Then "one input, one answer": on each input, a command that says
pass, agree or unchanged (exit 0) while another command refuses or skips it (exit 2 or 3) fails,
as does a run graded differently by the native and the DuckDB payload extractors.

Standard library only, plus pyarrow (present wherever evalbatch is installed) to build and read
Parquet files; run it with the evalbatch virtual environment's Python.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import io
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
import zipfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

#: the evalbatch of the environment whose Python runs the harness (the project's .venv)
DEFAULT_EVALBATCH = str(Path(sys.executable).with_name("evalbatch"))
#: planted in tool names, arguments, prompts and outputs: it must never be printed or written
#: into a summary, a problem message, a report or an export
MARKER = "ZQXLEAKMARK7731"
TIMEOUT = 120.0
RSS_LIMIT_MB = 1024.0
CATEGORIES = (
    "malformed",
    "hostile-values",
    "deep-nesting",
    "decompression",
    "same-path",
    "output-inside-input",
    "full-disk",
    "kill-9",
    "bad-options",
)
#: exit codes by which a command says it found something wrong with its input
INPUT_FAULT = {2, 3}
TRIALS_RUN = "acme/run-trials-k2-0001"
TRIALS_SUITE = "acme.support.evals.trials"
EVENT_SCHEMA = pa.schema(
    [
        ("eventId", pa.string()),
        ("runId", pa.string()),
        ("sequence", pa.int64()),
        ("type", pa.string()),
        ("payload", pa.string()),
        ("timestamp", pa.string()),
        ("schemaVersion", pa.int64()),
    ]
)
OUTPUT_TABLES = ("runs", "tasks", "trials", "problems")
UNIT_COLUMNS = ("score", "gating_score", "aggregate_score", "pass_at_k", "pass_hat_k")
NONNEGATIVE_COLUMNS = (
    "total_cost_usd",
    "cost_usd",
    "usage_cost_usd",
    "input_tokens",
    "output_tokens",
    "latency_ms",
    "task_count",
    "passed_count",
    "n",
)


# ------------------------------------------------------------------------------------------
# Small helpers


def jdump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def with_raw(obj: dict[str, Any], key: str, raw: str | None) -> str:
    """JSON text of `obj` with `key` set to the raw JSON text `raw` (NaN, 1e400, a duplicate key
    ...), or removed when `raw` is None."""
    copy = dict(obj)
    if raw is None:
        copy.pop(key, None)
        return jdump(copy)
    copy[key] = "\x00RAW\x00"
    return jdump(copy).replace('"\\u0000RAW\\u0000"', raw, 1)


def deep_object(depth: int, leaf: str = "1") -> str:
    return '{"a":' * depth + leaf + "}" * depth


def deep_array(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:80] or "x"


def read_rows(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


def write_rows(path: Path, rows: list[dict[str, Any]], **kwargs: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=EVENT_SCHEMA), path, **kwargs)
    return path


def renumber(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for index, row in enumerate(rows):
        row["sequence"] = index
    return rows


def with_run_id(rows: list[dict[str, Any]], run_id: str) -> list[dict[str, Any]]:
    return [{**row, "runId": run_id} for row in rows]


def index_of(rows: list[dict[str, Any]], type_: str, nth: int = 0) -> int:
    seen = 0
    for index, row in enumerate(rows):
        if row["type"] == type_:
            if seen == nth:
                return index
            seen += 1
    raise KeyError(f"no {type_} #{nth}")


def set_field(rows: list[dict[str, Any]], type_: str, key: str, raw: str | None, nth: int = 0):
    index = index_of(rows, type_, nth)
    rows[index]["payload"] = with_raw(json.loads(rows[index]["payload"]), key, raw)
    return rows


def event_line(row: dict[str, Any]) -> str:
    """One NDJSON line of an event row, the payload as JSON (not text)."""
    doc = {k: row[k] for k in ("runId", "sequence", "type", "timestamp", "eventId") if k in row}
    return jdump(doc)[:-1] + ',"payload":' + row["payload"] + "}"


def gzip_stream(path: Path, chunks: Iterable[bytes], level: int = 6) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=level) as gz:
        for chunk in chunks:
            gz.write(chunk)
    return path


def repeat_bytes(total: int, unit: bytes = b" ", block: int = 1 << 20) -> Iterable[bytes]:
    piece = unit * (block // len(unit))
    left = total
    while left > 0:
        yield piece[:left]
        left -= len(piece)


def zip_members(path: Path) -> dict[str, bytes]:
    """Every member of a zip archive, uncompressed. Inspect writes zstd members (method 93),
    which Python's zipfile cannot read before 3.14: those are inflated with pyarrow's codec."""
    data = path.read_bytes()
    members: dict[str, bytes] = {}
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if info.compress_type != 93:
                members[info.filename] = zf.read(info.filename)
                continue
            offset = info.header_offset
            name_len, extra_len = struct.unpack("<HH", data[offset + 26 : offset + 30])
            begin = offset + 30 + name_len + extra_len
            raw = data[begin : begin + info.compress_size]
            members[info.filename] = (
                pa.Codec("zstd").decompress(raw, decompressed_size=info.file_size).to_pybytes()
            )
    return members


def text_of(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


# ------------------------------------------------------------------------------------------
# Running one child


@dataclass
class Outcome:
    argv: list[str]
    rc: int
    wall: float
    rss_mb: float
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    killed_by_harness: bool = False


def spawn(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdin: bytes | Path | None = None,
    fsize: int | None = None,
    timeout: float = TIMEOUT,
    kill_after: float | None = None,
    kill_when: Callable[[], bool] | None = None,
) -> Outcome:
    """Run `argv`, wait for it with `os.wait4` (its own peak RSS, however many run at once), kill
    its process group past `timeout`, or on purpose after `kill_after` seconds or as soon as
    `kill_when()` is true."""

    def limit() -> None:  # in the child, before exec
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    with contextlib.ExitStack() as stack:
        out_f = stack.enter_context(tempfile.TemporaryFile())
        err_f = stack.enter_context(tempfile.TemporaryFile())
        stdin_handle: Any = subprocess.DEVNULL
        if isinstance(stdin, Path):
            stdin_handle = stack.enter_context(stdin.open("rb"))
        elif isinstance(stdin, bytes):
            stdin_handle = subprocess.PIPE
        start = time.monotonic()
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=stdin_handle,
            stdout=out_f,
            stderr=err_f,
            start_new_session=True,
            preexec_fn=limit if fsize is not None else None,
        )
        if isinstance(stdin, bytes):

            def feed() -> None:
                with contextlib.suppress(OSError):
                    assert proc.stdin is not None
                    proc.stdin.write(stdin)
                    proc.stdin.close()

            threading.Thread(target=feed, daemon=True).start()
        timed_out = killed = False
        hwm_kb = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            hwm_kb = peak_rss_kb(proc.pid, hwm_kb)
            elapsed = time.monotonic() - start
            purposeful = (kill_after is not None and elapsed >= kill_after) or (
                kill_when is not None and kill_when()
            )
            if purposeful or elapsed > timeout:
                timed_out = not purposeful
                killed = purposeful
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.002 if kill_when is not None else 0.02)
        wall = time.monotonic() - start
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # anything it left running
        proc.returncode = os.waitstatus_to_exitcode(status)
        out_f.seek(0)
        err_f.seek(0)
        return Outcome(
            argv=list(argv),
            rc=proc.returncode,
            wall=wall,
            rss_mb=(hwm_kb or usage.ru_maxrss) / 1024.0,
            stdout=out_f.read(),
            stderr=err_f.read(),
            timed_out=timed_out,
            killed_by_harness=killed,
        )


def peak_rss_kb(pid: int, last: int) -> int:
    """The child's peak RSS so far (VmHWM of its program, in KB), or `last` when it cannot be
    read. wait4's ru_maxrss is not used when this is known: it also counts the copy of the
    harness that the child was forked from before it ran evalbatch, which is large after the
    harness builds its bombs. VmHWM belongs to the program the child runs now, only grows, and
    is read every few milliseconds until the child exits."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return last


# ------------------------------------------------------------------------------------------
# Cases and verdicts


Check = Callable[["Case", Outcome], list[str]]


@dataclass
class Case:
    """One hostile invocation. `argv` follows the evalbatch command; `ok_codes` are the exit
    codes the docs allow for this input (None: any that is not a crash); `names` must each appear
    in what a failing command prints; `leak_paths` are files or output directories to search for
    the marker afterwards; `group` ties the invocations of one input together for the "one
    input, one answer" check, `role` says which command spoke (run, verify, conformance, ...)."""

    cid: str
    category: str
    command: str
    argv: list[str]
    ok_codes: set[int] | None = None
    why: str = ""
    names: list[str | tuple[str, ...]] = field(default_factory=list)
    leak_paths: list[Path] = field(default_factory=list)
    leak_streams: tuple[str, ...] = ("stdout", "stderr")
    checks: list[Check] = field(default_factory=list)
    before: Callable[[], None] | None = None
    stdin: bytes | Path | None = None
    fsize: int | None = None
    timeout: float = TIMEOUT
    serial: bool = False
    group: str | None = None
    role: str | None = None
    custom: Callable[[Case], tuple[Outcome, list[str]]] | None = None


@dataclass
class Result:
    case: Case
    outcome: Outcome
    reasons: list[str]
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return "FAIL" if self.reasons else "ok"


def outcome_text(outcome: Outcome) -> str:
    return text_of(outcome.stdout) + "\n" + text_of(outcome.stderr)


def generic_reasons(case: Case, outcome: Outcome) -> list[str]:
    reasons: list[str] = []
    text = outcome_text(outcome)
    if outcome.timed_out:
        reasons.append(f"hang: still running after {case.timeout:.0f} s, killed")
    elif outcome.rc < 0 and not outcome.killed_by_harness:
        reasons.append(f"crash: killed by signal {signal.Signals(-outcome.rc).name}")
    if "Traceback (most recent call last)" in text:
        reasons.append("Python traceback printed")
    for line in text.splitlines():
        if "internal error" in line.lower():
            reasons.append(f"internal error: {line.strip()[:160]}")
            break
    if outcome.rss_mb > RSS_LIMIT_MB:
        reasons.append(f"peak RSS {outcome.rss_mb:.0f} MB > {RSS_LIMIT_MB:.0f} MB")
    if (
        case.ok_codes is not None
        and not outcome.timed_out
        and outcome.rc >= 0
        and outcome.rc not in case.ok_codes
    ):
        reasons.append(f"exit {outcome.rc}, expected {'/'.join(map(str, sorted(case.ok_codes)))}")
    if outcome.rc > 0 and not outcome.stdout.strip() and not outcome.stderr.strip():
        reasons.append(f"exit {outcome.rc} with no message")
    fault = outcome.rc in (2, 3, 4) or (outcome.rc == 1 and case.command == "validate")
    if fault and case.names:
        missing = [
            "' or '".join(name) if isinstance(name, tuple) else name
            for name in case.names
            if not any(n in text for n in (name if isinstance(name, tuple) else (name,)))
        ]
        if missing:
            first = next((ln for ln in text_of(outcome.stderr).splitlines() if ln.strip()), "")
            reasons.append(
                f"message does not name {', '.join(repr(m) for m in missing)}: {first[:140]!r}"
            )
    for stream in case.leak_streams:
        data: bytes = getattr(outcome, stream)
        if MARKER.encode() in data:
            line = next(ln for ln in text_of(data).splitlines() if MARKER in ln)
            reasons.append(f"leak: planted content printed on {stream}: {line.strip()[:140]!r}")
        for raw, name in ((b"\x1b", "ESC"), (b"\x00", "NUL"), (b"\r", "CR")):
            if raw in data and "--format" not in case.argv:
                reasons.append(f"raw control character {name} printed on {stream}")
                break
    for path in case.leak_paths:
        reasons.extend(leak_hits(path))
    for check in case.checks:
        try:
            reasons.extend(check(case, outcome))
        except Exception as exc:  # a check that cannot read what it checks says so
            reasons.append(f"check {getattr(check, '__name__', '?')} failed: {exc!r}"[:200])
    return reasons


def leak_hits(path: Path) -> list[str]:
    """Where the marker appears in the outputs at `path` (an output directory or a file)."""
    hits: list[str] = []
    files = [path] if path.is_file() else []
    if path.is_dir():
        files = [
            path / name
            for name in (
                "summaries.jsonl",
                "report.html",
                "otel-evaluations.jsonl",
                "eee.jsonl",
                *(f"{t}.parquet" for t in OUTPUT_TABLES),
            )
        ]
    for file in files:
        if not file.is_file():
            continue
        if file.suffix == ".parquet":
            try:
                table = pq.read_table(file)
            except Exception:
                continue
            for name in table.column_names:
                if pa.types.is_string(table.schema.field(name).type) or pa.types.is_large_string(
                    table.schema.field(name).type
                ):
                    values = table.column(name).to_pylist()
                    if any(isinstance(v, str) and MARKER in v for v in values):
                        hits.append(f"leak: planted content in {file.name} column {name}")
        elif MARKER.encode() in file.read_bytes():
            hits.append(f"leak: planted content in {file.name}")
    return hits


# ---- reusable checks


def check_outputs_sane(out: Path) -> Check:
    """Scores in 0..1 and finite, costs and counts not negative, summaries strict JSON."""

    def outputs_sane(_case: Case, outcome: Outcome) -> list[str]:
        if outcome.rc not in (0, 3) or not (out / "summaries.jsonl").is_file():
            return []
        reasons = []
        for table in ("runs", "tasks", "trials"):
            path = out / f"{table}.parquet"
            if not path.is_file():
                reasons.append(f"exit {outcome.rc} but {table}.parquet missing")
                continue
            data = pq.read_table(path).to_pydict()
            for column, values in data.items():
                bad: Any = None
                if column in UNIT_COLUMNS:
                    bad = next((v for v in values if v is not None and not (0.0 <= v <= 1.0)), None)
                elif column in NONNEGATIVE_COLUMNS:
                    bad = next(
                        (v for v in values if v is not None and not (0 <= v < float("inf"))),
                        None,
                    )
                if bad is not None:
                    reasons.append(f"{table}.parquet {column} holds {bad!r}")
        for number, line in enumerate((out / "summaries.jsonl").read_text().splitlines(), 1):

            def refuse(token: str, number: int = number) -> Any:
                raise ValueError(f"summaries.jsonl line {number}: {token} is not JSON")

            try:
                doc = json.loads(line, parse_constant=refuse)
            except ValueError as exc:
                reasons.append(str(exc))
                continue
            for key, value in walk_numbers(doc):
                if key in ("aggregateScore", "score", "passAtK", "passHatK") and not (
                    0.0 <= value <= 1.0
                ):
                    reasons.append(f"summaries.jsonl line {number}: {key} {value!r}")
        return reasons

    return outputs_sane


def walk_numbers(doc: Any, key: str = "") -> Iterable[tuple[str, float]]:
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from walk_numbers(v, k)
    elif isinstance(doc, list):
        for v in doc:
            yield from walk_numbers(v, key)
    elif isinstance(doc, int | float) and not isinstance(doc, bool):
        yield key, doc


def summaries_count(out: Path) -> int:
    path = out / "summaries.jsonl"
    return len(path.read_text().splitlines()) if path.is_file() else -1


def check_graded_something(out: Path) -> Check:
    def graded_something(case: Case, outcome: Outcome) -> list[str]:
        if outcome.rc == 0 and "--allow-empty" not in case.argv and summaries_count(out) == 0:
            return ["exit 0 with no eval run graded"]
        return []

    return graded_something


def check_summaries(out: Path, expected: int) -> Check:
    def graded_the_good_runs(_case: Case, outcome: Outcome) -> list[str]:
        if outcome.rc in (0, 3) and summaries_count(out) < expected:
            return [f"graded {summaries_count(out)} runs, the readable input holds {expected}"]
        return []

    return graded_the_good_runs


def check_flagged(out: Path, run_id: str) -> Check:
    """A hostile value must leave a trace: the run not graded, or a problem row."""

    def flagged(_case: Case, outcome: Outcome) -> list[str]:
        if outcome.rc != 0:
            return []
        path = out / "problems.parquet"
        rows = pq.read_table(path).to_pylist() if path.is_file() else []
        if not any(r["run_id"] == run_id or r["run_id"] is None for r in rows):
            return ["exit 0, the run graded without a problem row for the hostile value"]
        return []

    return flagged


def check_trial_not_passed(out: Path, run_id: str, sequence: int) -> Check:
    def no_pass_on_garbage(_case: Case, outcome: Outcome) -> list[str]:
        path = out / "trials.parquet"
        if outcome.rc not in (0, 3) or not path.is_file():
            return []
        for row in pq.read_table(path).to_pylist():
            if (
                row["run_id"] == run_id
                and row["sequence"] == sequence
                and row["counted"]
                and row["passed"]
            ):
                return [
                    f"a pass that should not be: the trial of event {sequence} (hostile "
                    f"score/passed) counted as passed, score {row['score']!r}"
                ]
        return []

    return no_pass_on_garbage


def check_not_positive(what: str) -> Check:
    def not_positive(_case: Case, outcome: Outcome) -> list[str]:
        if outcome.rc == 0:
            return [f"exit 0 ({what})"]
        return []

    return not_positive


def check_regress_compared(_case: Case, outcome: Outcome) -> list[str]:
    if outcome.rc in (0, 1) and not re.search(r"^suite \S+: [A-Z]+", text_of(outcome.stdout), re.M):
        return [f"exit {outcome.rc} but no suite was compared"]
    return []


def check_conformance_executed(_case: Case, outcome: Outcome) -> list[str]:
    match = re.search(r"^conformance: (\S+) \(([^)]*)\)", text_of(outcome.stdout), re.M)
    if outcome.rc == 0 and match:
        counts = dict((v, int(n)) for n, v in re.findall(r"(\d+) (executed-\w+)", match[2]))
        if not counts.get("executed-pass") and not counts.get("executed-fail"):
            return ["conformance exit 0 with no requirement executed"]
    return []


def check_file_unchanged(path: Path, digest: str) -> Check:
    def unchanged(_case: Case, _outcome: Outcome) -> list[str]:
        if not path.exists():
            return [f"input {path.name} was removed"]
        if path.is_file() and sha256_file(path) != digest:
            return [f"input {path.name} was overwritten"]
        return []

    return unchanged


def check_no_path(path: Path) -> Check:
    def nothing_there(_case: Case, _outcome: Outcome) -> list[str]:
        return [f"wrote outside its output directory: {path}"] if path.exists() else []

    return nothing_there


# ------------------------------------------------------------------------------------------
# The workspace: inputs built from the samples


class Workspace:
    def __init__(self, root: Path, samples: Path, evalbatch: list[str], quick: bool) -> None:
        self.root = root
        self.quick = quick
        self.evalbatch = evalbatch
        self.inputs = root / "inputs"
        self.outs = root / "outs"
        self.scratch = root / "scratch"
        for d in (self.inputs, self.outs, self.scratch, root / "mpl"):
            d.mkdir(parents=True, exist_ok=True)
        self.s = self.inputs / "samples"
        shutil.copytree(samples, self.s, ignore=shutil.ignore_patterns("*.py"))
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALBATCH_", "RAY_"))}
        self.env.update(COLUMNS="200", NO_COLOR="1", TERM="dumb", MPLCONFIGDIR=str(root / "mpl"))
        self.mounts: list[Path] = []
        self._ids: Counter[str] = Counter()
        self._outs: Counter[str] = Counter()

    # -- paths

    def file(self, *parts: str) -> Path:
        path = self.inputs.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def out(self, cid: str) -> Path:
        """A fresh output path for one case (not created)."""
        name = slug(cid)
        self._outs[name] += 1
        if self._outs[name] > 1:
            name = f"{name}-{self._outs[name]}"
        return self.outs / name

    def cid(self, base: str) -> str:
        self._ids[base] += 1
        return base if self._ids[base] == 1 else f"{base}#{self._ids[base]}"

    def run_setup(self, args: list[str], stdin: bytes | None = None) -> Outcome:
        outcome = spawn([*self.evalbatch, *args], cwd=self.scratch, env=self.env, stdin=stdin)
        if outcome.rc not in (0, 1):
            raise SystemExit(
                f"hostile_review: setup command failed (exit {outcome.rc}): "
                f"{shlex.join(args)}\n{text_of(outcome.stderr)[-2000:]}"
            )
        return outcome

    # -- inputs every family uses

    def prepare(self) -> None:
        s = self.s
        self.events = s / "events"
        self.suites = s / "suites"
        self.trials = s / "events" / "trials.parquet"
        self.baseline = s / "regress" / "baseline.parquet"
        self.candidate = s / "regress" / "candidate.parquet"
        self.caps_full = s / "capabilities" / "full-host.json"
        self.eval_log = s / "inspect" / "arithmetic.eval"
        # suites with the marker as a forbidden tool (a forbidden hit names no tool anywhere)
        self.suites_marked = self.inputs / "suites-marked"
        shutil.copytree(self.suites, self.suites_marked)
        trials_suite = json.loads((self.suites / "trials.json").read_text())
        trials_suite["tasks"][1]["expected"]["trajectory"]["forbidden"].append(f"{MARKER}:x")
        (self.suites_marked / "trials.json").write_text(json.dumps(trials_suite, indent=2))
        self.trials_suite = trials_suite
        # a suites directory that also holds an invalid suite
        self.suites_invalid = self.inputs / "suites-invalid"
        shutil.copytree(self.suites_marked, self.suites_invalid)
        bad = json.loads(json.dumps(trials_suite))
        bad.update(suiteId="acme.support.evals.invalid", trials={"count": -1, "k": 2})
        (self.suites_invalid / "invalid.json").write_text(json.dumps(bad))
        # NDJSON exports of the samples
        self.ndjson = self.file("ndjson", "samples.ndjson")
        rows = sorted(
            [r for f in sorted(self.events.glob("*.parquet")) for r in read_rows(f)],
            key=lambda r: (r["runId"], r["sequence"]),
        )
        self.ndjson.write_text("".join(event_line(r) + "\n" for r in rows))
        self.sample_rows = rows
        self.regress_ndjson = self.file("ndjson", "regress.ndjson")
        reg = [r for f in (self.baseline, self.candidate) for r in read_rows(f)]
        self.regress_ndjson.write_text("".join(event_line(r) + "\n" for r in reg))
        # graded output directories
        self.good_out = self.outs / "_good"
        self.run_setup(
            [
                "run",
                str(self.events),
                "--suites",
                str(self.suites),
                "--out",
                str(self.good_out),
                "-q",
            ]
        )
        self.regress_out = self.outs / "_regress"
        self.run_setup(
            [
                "run",
                str(s / "regress"),
                "--suites",
                str(self.suites),
                "--out",
                str(self.regress_out),
                "-q",
            ]
        )
        self.marked_base = self.marked_rows("acme/hostile-base")
        # the baseline side of every regress case: the trials sample under another run id
        # (one latency changed: regress refuses two sides whose events are the same)
        base_rows = with_run_id(read_rows(self.trials), "acme/regress-base")
        set_field(base_rows, "eval.scored", "latencyMs", "901")
        self.regress_base = write_rows(self.file("regress-base", "trials.parquet"), base_rows)

    def marked_rows(self, run_id: str) -> list[dict[str, Any]]:
        """The trials sample with the marker in every place content lives (tool arguments and
        outputs, prompts, decisions, the answer, a tool's name), its host record corrected so
        that `verify` agrees with it: a hostile value is then the only thing to disagree on."""
        rows = [dict(r) for r in read_rows(self.trials)]
        marked: list[dict[str, Any]] = []
        for row in rows:
            payload = json.loads(row["payload"])
            kind = row["type"]
            if kind == "agent.tool-called":
                payload["inputs"] = {**payload.get("inputs", {}), "note": f"{MARKER} args"}
            elif kind == "agent.tool-returned":
                payload["outputs"] = {"text": f"{MARKER} tool output"}
            elif kind == "agent.prompt-resolved":
                payload["prompt"] = f"{MARKER} system prompt"
            elif kind == "agent.decided":
                payload["rationale"] = f"{MARKER} rationale"
            elif kind == "eval.scored":
                payload["output"] = f"{MARKER} answer"
                if payload["taskId"] == "refund-approved" and payload["trialIndex"] == 1:
                    # the sample host passed a trial with a forbidden call: the base agrees
                    payload.update(passed=False, scoreLabel="fail")
            elif kind == "run.completed":
                payload["outputs"] = {"answer": f"{MARKER} final"}
            marked.append({**row, "runId": run_id, "payload": jdump(payload)})
            if kind == "agent.tool-called" and payload.get("callId", "").endswith("00005"):
                probe = {
                    "agentId": "acme.agents.support",
                    "toolName": f"{MARKER}:probe",
                    "callId": "call-probe",
                    "inputs": {"q": f"{MARKER} probe args"},
                }
                marked.append(
                    {**row, "runId": run_id, "payload": jdump(probe), "eventId": "evt-probe"}
                )
        return renumber(marked)

    def scored_sequence(self, rows: list[dict[str, Any]]) -> int:
        return rows[index_of(rows, "eval.scored")]["sequence"]

    # -- mounts for the full-disk cases

    def mount_tmpfs(self, path: Path, size: str) -> bool:
        path.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
            capture_output=True,
        )
        if done.returncode == 0:
            self.mounts.append(path)
        return done.returncode == 0

    def umount(self, path: Path) -> None:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)
        with contextlib.suppress(ValueError):
            self.mounts.remove(path)

    def cleanup(self) -> None:
        for path in list(self.mounts):
            self.umount(path)


# ------------------------------------------------------------------------------------------
# Case families


class Plan:
    """Collects the cases of every family."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.cases: list[Case] = []

    def add(self, category: str, cid: str, argv: list[str], **kwargs: Any) -> Case:
        command = argv[0] if argv[0] != "export" else f"export {argv[1]}"
        case = Case(cid=self.ws.cid(cid), category=category, command=command, argv=argv, **kwargs)
        self.cases.append(case)
        return case

    # ---- an events input graded by every command that reads events

    def events_matrix(
        self,
        category: str,
        name: str,
        paths: list[Path],
        *,
        suites: Path | None = None,
        run_id: str = TRIALS_RUN,
        commands: Iterable[str] = ("run", "verify", "conformance", "explain", "regress", "sql"),
        run_codes: set[int] | None = None,
        other_codes: dict[str, set[int]] | None = None,
        names: list[str | tuple[str, ...]] | None = None,
        run_checks: Callable[[Path], list[Check]] | None = None,
        verify_flag: bool = False,
        conf_flag: bool | None = None,
        extractors: bool = False,
        expected_runs: int | None = None,
        grouped: bool = True,
    ) -> None:
        ws = self.ws
        suites = suites or ws.suites_marked
        group = f"{category}:{name}" if grouped else None
        other_codes = other_codes or {}
        files = [str(p) for p in paths]
        s_args = ["--suites", str(suites)]
        run_codes = run_codes if run_codes is not None else {0, 2, 3}
        names = names or []
        if ws.quick:  # the commands that differ most in how they read events
            commands = [c for c in commands if c in ("run", "verify", "conformance", "regress")]
        for command in commands:
            cid = f"{command}:{name}"
            if command in ("run", "run-duckdb"):
                out = ws.out(f"{category}-{cid}")
                argv = ["run", *files, *s_args, "--out", str(out)]
                if command == "run-duckdb":
                    argv += ["--extractor", "duckdb"]
                checks = [check_outputs_sane(out), check_graded_something(out)]
                if expected_runs is not None:
                    checks.append(check_summaries(out, expected_runs))
                if command == "run" and run_checks is not None:
                    checks += run_checks(out)
                self.add(
                    category,
                    cid,
                    argv,
                    ok_codes=run_codes,
                    names=names,
                    leak_paths=[out],
                    checks=checks,
                    group=group,
                    role=command,
                )
            elif command == "verify":
                self.add(
                    category,
                    cid,
                    ["verify", *files, *s_args],
                    ok_codes=other_codes.get("verify", {0, 1, 2, 3}),
                    names=names,
                    checks=[check_not_positive("verify agrees")] if verify_flag else [],
                    group=group,
                    role="verify",
                )
            elif command == "conformance":
                checks = [check_conformance_executed]
                if verify_flag if conf_flag is None else conf_flag:
                    checks.append(check_not_positive("conformance passes"))
                self.add(
                    category,
                    cid,
                    [
                        "verify",
                        *files,
                        *s_args,
                        "--conformance",
                        "--capabilities",
                        str(ws.caps_full),
                    ],
                    ok_codes=other_codes.get("conformance", {0, 1, 2, 3}),
                    names=names,
                    checks=checks,
                    group=group,
                    role="conformance",
                )
            elif command == "explain":
                if "\x00" in run_id:
                    continue
                self.add(
                    category,
                    cid,
                    ["explain", *files, *s_args, "--run-id", run_id],
                    ok_codes=other_codes.get("explain", {0, 2, 3}),
                    names=names,
                    leak_streams=("stderr",),
                    group=group,
                    role="explain",
                )
            elif command == "regress":
                self.add(
                    category,
                    cid,
                    ["regress", str(ws.regress_base), files[0], *s_args, "--allow-mixed"],
                    ok_codes=other_codes.get("regress", {0, 1, 2}),
                    names=names,
                    checks=[check_regress_compared],
                    group=group,
                    role="regress",
                )
            elif command == "sql":
                self.add(
                    category,
                    cid,
                    [
                        "sql",
                        *files,
                        *s_args,
                        "-e",
                        "SELECT run_id, code, message FROM problems ORDER BY ALL",
                    ],
                    ok_codes=other_codes.get("sql", {0, 2}),
                    names=names,
                    group=group,
                    role="sql",
                )
            elif command == "export":
                out_file = ws.out(f"{category}-{cid}") / "otel.jsonl"
                out_file.parent.mkdir(parents=True, exist_ok=True)
                self.add(
                    category,
                    cid,
                    [
                        "export",
                        "otel",
                        str(ws.good_out),
                        "--events",
                        *files,
                        "--out",
                        str(out_file),
                    ],
                    ok_codes=other_codes.get("export", {0, 2}),
                    names=names,
                    leak_paths=[out_file],
                    group=group,
                    role="export",
                )
            else:
                raise ValueError(command)

    # ---- malformed files

    def malformed(self) -> None:
        self.parquet_truncations()
        self.parquet_footers()
        self.parquet_column_types()
        self.special_files()
        self.suite_damage()
        self.capabilities_damage()
        self.summaries_damage()
        self.ingest_damage()
        self.outdir_damage()

    def big_parquet(self) -> Path:
        """About 90 KB of events (every sample run four times over), small row groups, zstd."""
        ws = self.ws
        base = [r for f in sorted((ws.s / "events").glob("*.parquet")) for r in read_rows(f)]
        base += read_rows(ws.baseline) + read_rows(ws.candidate)
        rows = []
        for copy in range(4):
            rows += [{**r, "runId": f"{r['runId']}-copy{copy}"} for r in base]
        return write_rows(
            ws.file("big", "big.parquet"), rows, row_group_size=120, compression="zstd"
        )

    def parquet_truncations(self) -> None:
        ws = self.ws
        big = self.big_parquet()
        data = big.read_bytes()
        step = 16384 if ws.quick else 8192
        cuts = [*range(step, len(data), step), len(data) - 4, len(data) - 1]
        for number, cut in enumerate(cuts):
            path = ws.file("trunc", f"cut-{cut:07d}.parquet")
            path.write_bytes(data[:cut])
            name = f"parquet-cut-{cut}"
            self.add(
                "malformed",
                f"run:{name}",
                [
                    "run",
                    str(path),
                    "--suites",
                    str(ws.suites),
                    "--out",
                    str(ws.out(f"trunc-{cut}")),
                ],
                ok_codes={2},
                names=[path.name],
                group=f"malformed:{name}",
                role="run",
            )
            if number % (2 if ws.quick else 3) == 0:
                self.events_matrix(
                    "malformed",
                    name,
                    [path],
                    suites=ws.suites,
                    commands=("verify", "explain", "regress", "sql", "export"),
                    other_codes={
                        "verify": {2},
                        "explain": {2},
                        "regress": {2},
                        "sql": {2},
                        "export": {2},
                    },
                    names=[path.name],
                )
            if number % (3 if ws.quick else 4) == 0:
                out = ws.out(f"trunc-good-{cut}")
                self.add(
                    "malformed",
                    f"run:{name}+good",
                    [
                        "run",
                        str(path),
                        str(ws.events),
                        "--suites",
                        str(ws.suites),
                        "--out",
                        str(out),
                    ],
                    ok_codes={3},
                    names=[path.name],
                    checks=[check_summaries(out, 3)],
                    group=f"malformed:{name}+good",
                    role="run",
                )
                self.add(
                    "malformed",
                    f"verify:{name}+good",
                    ["verify", str(path), str(ws.events), "--suites", str(ws.suites)],
                    ok_codes={1, 3},
                    names=[path.name],
                    group=f"malformed:{name}+good",
                    role="verify",
                )

    def parquet_footers(self) -> None:
        ws = self.ws
        data = ws.trials.read_bytes()
        footer_len = struct.unpack("<I", data[-8:-4])[0]
        meta_start = len(data) - 8 - footer_len
        rng = random.Random(7)
        zstd_path = ws.file("footer", "zstd-source.parquet")
        write_rows(zstd_path, read_rows(ws.trials), compression="zstd")
        zdata = bytearray(zstd_path.read_bytes())
        for offset in range(200, 600, 7):
            zdata[offset] ^= 0x5A
        variants: dict[str, bytes] = {
            "tail-magic": data[:-4] + b"XXXX",
            "head-magic": b"XXXX" + data[4:],
            "footer-len-huge": data[:-8] + struct.pack("<I", 0xFFFFFFF0) + b"PAR1",
            "footer-len-one": data[:-8] + struct.pack("<I", 1) + b"PAR1",
            "footer-len-zero": data[:-8] + struct.pack("<I", 0) + b"PAR1",
            "footer-zeroed": data[:meta_start] + b"\x00" * footer_len + data[-8:],
            "footer-random": data[:meta_start]
            + bytes(rng.randrange(256) for _ in range(footer_len))
            + data[-8:],
            "only-magic": b"PAR1",
            "double-magic": b"PAR1PAR1",
            "empty": b"",
            "csv": b"runId,sequence,type,payload\nacme/x,0,eval.started,{}\n",
            "json": json.dumps({"runId": "acme/x"}).encode(),
            "gzip": gzip.compress(data),
            "data-missing": data[:4] + data[meta_start - 64 :],
            "appended-garbage": data + b"garbage after the footer",
            "flipped-zstd-pages": bytes(zdata),
        }
        if ws.quick:
            variants = {k: variants[k] for k in list(variants)[::2]}
        for name, blob in variants.items():
            path = ws.file("footer", name, "trials.parquet")
            path.write_bytes(blob)
            readable = name == "head-magic"  # readers look at the footer's magic only
            self.events_matrix(
                "malformed",
                f"parquet-{name}",
                [path],
                suites=ws.suites,
                commands=("run", "verify", "regress", "export"),
                run_codes={0, 2} if readable else {2},
                names=[str(path.parent.name)],
                other_codes={
                    "verify": {1, 2} if readable else {2},
                    "explain": {0, 2} if readable else {2},
                    "regress": {0, 1, 2} if readable else {2},
                    "sql": {0, 2} if readable else {2},
                    "export": {0, 2} if readable else {2},
                },
            )

    def parquet_column_types(self) -> None:
        ws = self.ws
        rows = read_rows(ws.trials)
        cols: dict[str, list[Any]] = {k: [r[k] for r in rows] for k in rows[0]}
        n = len(rows)

        def table(**changes: Any) -> pa.Table:
            arrays: dict[str, Any] = {}
            for key, values in cols.items():
                arrays[key] = pa.array(values)
            for key, value in changes.items():
                if value is None:
                    arrays.pop(key, None)
                else:
                    arrays[key] = value
            return pa.table(arrays)

        seq = cols["sequence"]
        variants: dict[str, tuple[pa.Table, bool]] = {
            "sequence-string": (table(sequence=pa.array([str(v) for v in seq])), False),
            "sequence-double": (table(sequence=pa.array([float(v) for v in seq])), False),
            "sequence-double-half": (table(sequence=pa.array([v / 2 for v in seq])), False),
            "sequence-double-nan": (
                table(sequence=pa.array([float("nan") if v == 9 else float(v) for v in seq])),
                False,
            ),
            "sequence-bool": (table(sequence=pa.array([bool(v % 2) for v in seq])), False),
            "sequence-int32": (table(sequence=pa.array(seq, pa.int32())), True),
            "sequence-uint64-max": (
                table(sequence=pa.array([2**64 - 1 - v for v in seq], pa.uint64())),
                False,
            ),
            "sequence-decimal": (table(sequence=pa.array(seq, pa.decimal128(20, 2))), False),
            "sequence-all-null": (table(sequence=pa.nulls(n, pa.int64())), False),
            "runId-int": (table(runId=pa.array(list(range(n)))), False),
            "runId-invalid-utf8": (table(runId=pa.array([b"acme/\xff\xfe"] * n)), False),
            "runId-list": (table(runId=pa.array([[r] for r in cols["runId"]])), False),
            "runId-dictionary": (
                table(runId=pa.array(cols["runId"]).dictionary_encode()),
                True,
            ),
            "runId-large-string": (table(runId=pa.array(cols["runId"], pa.large_string())), True),
            "type-int": (table(type=pa.array([7] * n)), False),
            "type-binary": (table(type=pa.array([t.encode() for t in cols["type"]])), False),
            "payload-int": (table(payload=pa.array([1] * n)), False),
            "payload-binary": (
                table(payload=pa.array([p.encode() for p in cols["payload"]], pa.binary())),
                False,
            ),
            "payload-map": (
                table(
                    payload=pa.array(
                        [
                            [(k, jdump(v)) for k, v in json.loads(p).items()]
                            for p in cols["payload"]
                        ],
                        pa.map_(pa.string(), pa.string()),
                    )
                ),
                False,
            ),
            "payload-list": (table(payload=pa.array([[p] for p in cols["payload"]])), False),
            "timestamp-int": (table(timestamp=pa.array(list(range(n)))), True),
            "timestamp-bool": (table(timestamp=pa.array([True] * n)), False),
            "missing-payload": (table(payload=None), False),
            "missing-sequence": (table(sequence=None), False),
            "missing-runId": (table(runId=None), False),
            "missing-type": (table(type=None), False),
            "alias-both-run-id": (
                table(run_id=pa.array(["acme/other-run"] * n)),
                False,
            ),
            "alias-both-payload-data": (table(data=pa.array(["{}"] * n)), False),
            "column-case-RunId": (
                table(runId=None, RunId=pa.array(cols["runId"])),
                False,
            ),
            "zero-rows": (pa.Table.from_pylist([], schema=EVENT_SCHEMA), False),
            "wide-1000-columns": (
                table(**{f"extra{i}": pa.array([i] * n) for i in range(1000)}),
                True,
            ),
        }
        if ws.quick:
            variants = {k: variants[k] for k in list(variants)[::2]}
        for name, (tbl, benign) in variants.items():
            path = ws.file("types", name, "trials.parquet")
            pq.write_table(tbl, path)
            self.events_matrix(
                "malformed",
                f"column-{name}",
                [path],
                suites=ws.suites,
                commands=("run", "verify", "regress"),
                run_codes={0} if benign else {0, 2, 3},
                names=[] if benign else [(path.parent.name, TRIALS_RUN)],
            )

    def special_files(self) -> None:
        ws = self.ws
        cases: dict[str, Path] = {}
        fifo_dir = ws.file("special", "fifo", "x")
        fifo_dir.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ws.trials, fifo_dir.parent / "trials.parquet")
        os.mkfifo(fifo_dir.parent / "pipe.parquet")
        cases["fifo-in-dir"] = fifo_dir.parent
        zero = ws.file("special", "devzero", "zero.parquet")
        zero.symlink_to("/dev/zero")
        cases["link-to-dev-zero"] = zero
        dangling = ws.file("special", "dangling", "gone.parquet")
        dangling.symlink_to(ws.inputs / "does-not-exist.parquet")
        cases["dangling-link"] = dangling
        loop = ws.file("special", "loop", "x")
        shutil.copy(ws.trials, loop.parent / "trials.parquet")
        (loop.parent / "again").symlink_to(loop.parent)
        cases["symlink-loop-dir"] = loop.parent
        as_dir = ws.file("special", "dirnamed", "trials.parquet", "x")
        as_dir.parent.mkdir(parents=True, exist_ok=True)
        cases["directory-named-parquet"] = as_dir.parent
        empty_dir = ws.file("special", "emptydir", "x").parent
        empty_dir.mkdir(parents=True, exist_ok=True)
        cases["empty-directory"] = empty_dir
        for name, path in cases.items():
            codes = {0, 3} if name in ("fifo-in-dir", "symlink-loop-dir") else {2}
            self.events_matrix(
                "malformed",
                f"special-{name}",
                [path],
                suites=ws.suites,
                commands=("run", "verify"),
                run_codes=codes,
                other_codes={"verify": {0, 1, 3} if 0 in codes else {2}},
            )
        for name, src in (("dev-zero", "/dev/zero"), ("dev-urandom", "/dev/urandom")):
            self.add(
                "malformed",
                f"ingest:{name}",
                ["ingest", src, "--out", str(ws.out(f"ingest-{name}"))],
                ok_codes={2, 3},
                why="an endless device as input",
            )

    def suite_damage(self) -> None:
        ws = self.ws
        text = (ws.suites / "trials.json").read_text()
        doc = json.loads(text)

        def mod(**changes: Any) -> str:
            copy = json.loads(text)
            for path, value in changes.items():
                target = copy
                keys = path.split("__")
                for key in keys[:-1]:
                    target = target[int(key)] if key.isdigit() else target[key]
                last = keys[-1]
                if value is ...:
                    del target[last]
                else:
                    target[last] = value
            return json.dumps(copy, indent=2)

        variants: dict[str, tuple[bytes, str]] = {
            # name: (content, kind) kind: broken = not usable, invalid = schema/rule fault,
            # valid = a suite that grades
            "trunc-10": (text[: len(text) // 10].encode(), "broken"),
            "trunc-50": (text[: len(text) // 2].encode(), "broken"),
            "trunc-90": (text[: len(text) * 9 // 10].encode(), "broken"),
            "empty": (b"", "broken"),
            "whitespace": (b"  \n\t ", "broken"),
            "latin1": (text.replace("nobody", "n\u00e9body").encode("latin-1"), "broken"),
            "utf16": (text.encode("utf-16"), "broken"),
            "bom": (b"\xef\xbb\xbf" + text.encode(), "broken-or-valid"),
            "trailing-garbage": ((text + "}{").encode(), "broken"),
            "array": (json.dumps([doc]).encode(), "broken"),
            "null": (b"null", "broken"),
            "number": (b"42", "broken"),
            "duplicate-suiteId": (
                text.replace('"suiteId"', '"suiteId": "acme.other", "suiteId"', 1).encode(),
                "invalid",
            ),
            "passScore-nan": (
                text.replace('"passScore": 0.7', '"passScore": NaN').encode(),
                "broken-or-invalid",
            ),
            "passScore-string": (mod(thresholds__passScore="0.7").encode(), "invalid"),
            "passScore-2": (mod(thresholds__passScore=2).encode(), "invalid"),
            "passScore-negative": (mod(thresholds__passScore=-1).encode(), "invalid"),
            "trials-count-0": (mod(trials__count=0).encode(), "invalid"),
            "trials-count-negative": (mod(trials__count=-1).encode(), "invalid"),
            "trials-count-1e9": (mod(trials__count=10**9).encode(), "invalid"),
            "trials-count-1.5": (mod(trials__count=1.5).encode(), "invalid"),
            "trials-count-string": (mod(trials__count="3").encode(), "invalid"),
            "trials-k-above-count": (mod(trials__k=5).encode(), "invalid"),
            "passRule-unknown": (mod(trials__passRule="most").encode(), "invalid"),
            "tasks-empty": (mod(tasks=[]).encode(), "invalid"),
            "taskId-duplicate": (mod(tasks__1__taskId="order-status").encode(), "invalid"),
            "suiteId-ansi": (mod(suiteId="acme.\x1b[31mred").encode(), "unmatched"),
            "version-empty": (mod(version="").encode(), "broken-or-invalid"),
            "no-suiteId": (mod(suiteId=...).encode(), "broken"),
            "unknown-key": (mod(extraField=1).encode(), "invalid"),
            "huge-input-20MB": (
                mod(tasks__0__input={"message": "x" * (20 << 20)}).encode(),
                "valid",
            ),
        }
        if ws.quick:
            variants = {k: variants[k] for k in list(variants)[::2]}
        codes = {
            "broken": ({1, 2}, {2}),
            "invalid": ({1}, {2, 3}),
            "broken-or-invalid": ({1, 2}, {2, 3}),
            "broken-or-valid": ({0, 2}, {0, 2}),
            "valid": ({0}, {0}),
            "unmatched": ({1}, {0}),  # no run claims it: the run is graded from its host record
        }
        for name, (blob, kind) in variants.items():
            suite_dir = ws.file("suites-damaged", name, "x").parent
            suite_dir.mkdir(parents=True, exist_ok=True)
            for other in ws.suites.glob("*.json"):
                if other.name != "trials.json":
                    shutil.copy(other, suite_dir / other.name)
            (suite_dir / "trials.json").write_bytes(blob)
            validate_codes, run_codes = codes[kind]
            group = f"malformed:suite-{name}" if kind != "unmatched" else None
            self.add(
                "malformed",
                f"validate:suite-{name}",
                ["validate", str(suite_dir / "trials.json")],
                ok_codes=validate_codes,
                names=["trials.json"],
                group=group,
                role="validate",
            )
            grade_codes = run_codes | ({1} if 0 in run_codes else set())
            self.events_matrix(
                "malformed",
                f"suite-{name}",
                [ws.trials],
                suites=suite_dir,
                commands=("run", "verify", "explain")
                if name in ("trunc-50", "passScore-nan", "unknown-key", "huge-input-20MB")
                else ("run", "verify"),
                run_codes=run_codes,
                other_codes={"verify": grade_codes, "explain": run_codes},
                names=[("trials.json", TRIALS_RUN)],
                grouped=kind != "unmatched",
            )
            if name in ("trunc-50", "passScore-nan", "trials-count-0", "unknown-key"):
                reg_dir = ws.file("suites-damaged-regress", name, "x").parent
                shutil.copytree(suite_dir, reg_dir, dirs_exist_ok=True)
                (reg_dir / "regression.json").write_bytes(
                    blob.replace(TRIALS_SUITE.encode(), b"acme.support.evals.regression")
                    if kind != "valid"
                    else (ws.suites / "regression.json").read_bytes()
                )
                self.add(
                    "malformed",
                    f"regress:suite-{name}",
                    ["regress", str(ws.baseline), str(ws.candidate), "--suites", str(reg_dir)],
                    ok_codes={2},
                    names=["regression.json"],
                    checks=[check_regress_compared],
                )

    def capabilities_damage(self) -> None:
        ws = self.ws
        text = ws.caps_full.read_text()

        def es(**changes: Any) -> bytes:
            doc = json.loads(text)
            for key, value in changes.items():
                if value is ...:
                    del doc["agents"]["evalSuite"][key]
                else:
                    doc["agents"]["evalSuite"][key] = value
            return json.dumps(doc).encode()

        variants: dict[str, tuple[bytes, set[int]]] = {
            "trunc-50": (text[: len(text) // 2].encode(), {2}),
            "not-json": (b"{", {2}),
            "array": (b"[]", {2}),
            "null": (b"null", {2}),
            "empty-object": (b"{}", {1, 2}),
            "agents-null": (b'{"protocolVersion":"2","agents":null}', {1, 2}),
            "maxTrials-negative": (es(trials={"maxTrials": -1}), {2}),
            "maxTrials-nan": (text.replace('"maxTrials": 10', '"maxTrials": NaN').encode(), {2}),
            "maxTrials-string": (es(trials={"maxTrials": "10"}), {2}),
            "maxTrials-1e309": (
                text.replace('"maxTrials": 10', '"maxTrials": 1e309').encode(),
                {2},
            ),
            "maxTrials-bool": (es(trials={"maxTrials": True}), {2}),
            "modes-string": (es(modes="golden"), {2}),
            "supported-string": (es(supported="yes"), {2}),
            "unknown-key": (es(extra=1), {2}),
            "no-modes": (es(modes=...), {2}),
            "maxTasks-negative": (es(maxTasksPerSuite=-5), {2}),
        }
        if ws.quick:
            variants = {k: variants[k] for k in list(variants)[::2]}
        for name, (blob, codes) in variants.items():
            path = ws.file("caps", name, "host-caps.json")
            path.write_bytes(blob)
            group = f"malformed:caps-{name}"
            self.add(
                "malformed",
                f"validate:caps-{name}",
                ["validate", str(ws.suites / "trials.json"), "--capabilities", str(path)],
                ok_codes=codes,
                names=["host-caps.json"],
                group=group,
                role="validate",
            )
            self.add(
                "malformed",
                f"verify:caps-{name}",
                ["verify", str(ws.events), "--suites", str(ws.suites), "--capabilities", str(path)],
                ok_codes=codes,
                names=["host-caps.json"],
                group=group,
                role="verify",
            )

    def summaries_damage(self) -> None:
        ws = self.ws
        lines = (ws.good_out / "summaries.jsonl").read_text().splitlines()
        first = json.loads(lines[0])

        def line_with(mutate: Callable[[dict[str, Any]], None]) -> str:
            doc = json.loads(lines[1])  # the trajectory run (it has trajectory blocks)
            mutate(doc)
            return "\n".join([lines[0], json.dumps(doc), *lines[2:]]) + "\n"

        def set_path(doc: dict[str, Any], value: Any, *keys: Any) -> None:
            target: Any = doc
            for key in keys[:-1]:
                target = target[key]
            target[keys[-1]] = value

        whole = "\n".join(lines) + "\n"
        variants: dict[str, tuple[str | bytes, set[int]]] = {
            "trunc-mid-line": (whole[: len(whole) // 2], {2}),
            "not-json": ("garbage\n", {2}),
            "aggregate-nan": (
                whole.replace('"aggregateScore": 1.0', '"aggregateScore": NaN'),
                {1, 2},
            ),
            "aggregate-string": (
                line_with(lambda d: set_path(d, "1.0", "summary", "aggregateScore")),
                {1, 2},
            ),
            "marker-extra-key": (
                line_with(lambda d: set_path(d, f"{MARKER} note", "summary", "note")),
                {1, 2},
            ),
            "marker-trajectory-tools": (
                line_with(
                    lambda d: set_path(
                        d, [f"{MARKER}:tool"], "summary", "tasks", 0, "trajectory", "tools"
                    )
                ),
                {1, 2},
            ),
            "runId-unknown": (jdump({**first, "runId": "acme/nope"}) + "\n", {2}),
            "empty": ("", {2}),
            "array-of-nulls": ("[null, null]", {2}),
            "duplicate-line": (whole + lines[0] + "\n", {1, 2}),
            "bom": (b"\xef\xbb\xbf" + whole.encode(), {0, 1, 2}),
            "score-1e400": (whole.replace('"score": 1.0', '"score": 1e400', 1), {1, 2}),
        }
        if ws.quick:
            variants = {k: variants[k] for k in list(variants)[::2]}
        for name, (content, codes) in variants.items():
            path = ws.file("summaries", name, "host-summaries.jsonl")
            path.write_bytes(content if isinstance(content, bytes) else content.encode())
            group = f"malformed:summaries-{name}"
            self.add(
                "malformed",
                f"verify:summaries-{name}",
                ["verify", str(ws.events), "--suites", str(ws.suites), "--summaries", str(path)],
                ok_codes=codes,
                names=[] if 1 in codes else [path.name],
                checks=[check_not_positive("verify agrees with a damaged summary")]
                if 0 not in codes
                else [],
                group=group,
                role="verify",
            )
            if name.startswith("marker") or name in ("aggregate-nan", "score-1e400"):
                self.add(
                    "malformed",
                    f"conformance:summaries-{name}",
                    [
                        "verify",
                        str(ws.events),
                        "--suites",
                        str(ws.suites),
                        "--summaries",
                        str(path),
                        "--conformance",
                    ],
                    ok_codes=codes,
                    checks=[check_not_positive("conformance passes a faulty summary")],
                    group=group,
                    role="conformance",
                )

    def ingest_damage(self) -> None:
        ws = self.ws
        lines = ws.ndjson.read_text().splitlines()
        whole = "\n".join(lines) + "\n"
        mid = len(lines) // 2

        def with_line(index: int, new: str | bytes) -> bytes:
            out = [ln.encode() for ln in lines]
            out[index] = new if isinstance(new, bytes) else new.encode()
            return b"\n".join(out) + b"\n"

        line = json.loads(lines[mid])
        rng = random.Random(11)
        nd: dict[str, tuple[bytes, set[int]]] = {
            "trunc-mid-line": (whole[: len(whole) * 6 // 10].encode(), {3}),
            "nul-bytes": (with_line(mid, lines[mid][:30] + "\x00" * 10 + lines[mid][30:]), {3}),
            "binary-garbage": (with_line(mid, bytes(rng.randrange(256) for _ in range(300))), {3}),
            "crlf": (whole.replace("\n", "\r\n").encode(), {0}),
            "bom": (b"\xef\xbb\xbf" + whole.encode(), {0, 3}),
            "blank-lines": (whole.replace("\n", "\n\n   \n").encode(), {0}),
            "array-line": (with_line(mid, "[1,2,3]"), {3}),
            "invalid-utf8": (
                with_line(mid, lines[mid].encode()[:40] + b"\xff\xfe" + lines[mid].encode()[40:]),
                {3},
            ),
            "parquet-named-ndjson": (ws.trials.read_bytes(), {2}),
            "whitespace-only": (b"\n \n\t\n", {2}),
            "cr-only": (whole.replace("\n", "\r").encode(), {0, 2, 3}),
            "sequence-missing": (
                with_line(mid, jdump({k: v for k, v in line.items() if k != "sequence"})),
                {3},
            ),
        }
        sse_frames = [
            f"id: {json.loads(ln)['sequence']}\nevent: {json.loads(ln)['type']}\ndata: {ln}\n\n"
            for ln in lines
        ]
        sse = "".join(sse_frames)

        def sse_with(index: int, frame: str) -> bytes:
            frames = list(sse_frames)
            frames[index] = frame
            return "".join(frames).encode()

        sse_variants: dict[str, tuple[bytes, set[int]]] = {
            "data-not-json": (sse_with(mid, "id: 1\nevent: x\ndata: {not json\n\n"), {3}),
            "no-data": (sse_with(mid, "id: 7\nevent: eval.scored\n\n"), {0, 3}),
            "batch-not-array": (sse_with(mid, 'event: batch\ndata: {"a":1}\n\n'), {3}),
            "id-not-number": (sse.replace("id: 1\n", "id: one\n", 1).encode(), {0, 3}),
            "id-negative": (sse.replace("id: 1\n", "id: -1\n", 1).encode(), {0, 3}),
            "cr-line-ends": (sse.replace("\n", "\r").encode(), {0, 3}),
            "no-final-blank": (sse.rstrip("\n").encode(), {0, 3}),
            "comments-and-retry": (sse.replace("\n\n", "\n: comment\nretry: 10\n\n").encode(), {0}),
            "nul": (sse_with(mid, "data: \x00\x00\n\n"), {3}),
            "trunc-mid-frame": (sse[: len(sse) * 6 // 10].encode(), {0, 3}),
        }
        poll = {
            "runId": TRIALS_RUN,
            "events": [json.loads(ln) for ln in lines if TRIALS_RUN in ln],
            "lastSequence": 78,
            "status": "completed",
            "isTerminal": True,
        }
        bundle = {
            "bundleVersion": 1,
            "run": {"runId": TRIALS_RUN},
            "events": [
                {
                    **{k: v for k, v in e.items() if k not in ("payload", "sequence")},
                    "data": e["payload"],
                    "seq": e["sequence"],
                }
                for e in poll["events"]
            ],
            "metrics": {"eventCount": len(poll["events"])},
        }
        arr = "[" + ",".join(lines) + "]"
        json_variants: dict[str, tuple[bytes, set[int]]] = {
            "array-truncated": (arr[: len(arr) // 2].encode(), {2, 3}),
            "array-of-numbers": (b"[1,2,3]", {2, 3}),
            "poll-runId-number": (
                json.dumps(
                    {
                        **poll,
                        "runId": 5,
                        "events": [
                            {k: v for k, v in e.items() if k != "runId"} for e in poll["events"]
                        ],
                    }
                ).encode(),
                {2, 3},
            ),
            "poll-events-not-list": (json.dumps({**poll, "events": {"a": 1}}).encode(), {2, 3}),
            "bundle-truncated-flag": (json.dumps({**bundle, "truncated": True}).encode(), {3}),
            "bundle-count-mismatch": (
                json.dumps({**bundle, "metrics": {"eventCount": 9999}}).encode(),
                {3},
            ),
            "bundle-version-999": (
                json.dumps({**bundle, "bundleVersion": 999}).encode(),
                {0, 2, 3},
            ),
        }
        gz = gzip.compress(whole.encode())
        gz_variants: dict[str, tuple[bytes, set[int]]] = {
            "gz-truncated": (gz[: len(gz) // 2], {3}),
            "gz-bad-crc": (gz[:-8] + b"\x00\x00\x00\x00" + gz[-4:], {3}),
            "gz-trailing-garbage": (gz + b"not gzip at all", {0, 3}),
            "gz-two-members": (gz + gzip.compress(b""), {0}),
            "gz-header-only": (gz[:10], {2, 3}),
            "gz-double": (gzip.compress(gz), {2, 3}),
            "gz-extension-plain": (whole.encode(), {0}),
        }
        for family, variants, ext in (
            ("ndjson", nd, ".ndjson"),
            ("sse", sse_variants, ".sse"),
            ("json", json_variants, ".json"),
            ("gzip", gz_variants, ".ndjson.gz"),
        ):
            items = list(variants.items())
            if ws.quick:
                items = items[::2]
            for name, (blob, codes) in items:
                path = ws.file("ingest-damaged", f"{family}-{name}", f"export{ext}")
                path.write_bytes(blob)
                self.add(
                    "malformed",
                    f"ingest:{family}-{name}",
                    ["ingest", str(path), "--out", str(ws.out(f"ing-{family}-{name}"))],
                    ok_codes=codes,
                    names=[path.name] if 3 in codes else [],
                    group=f"malformed:ingest-{family}-{name}",
                    role="ingest",
                )
        self.eval_damage()

    def eval_damage(self) -> None:
        ws = self.ws
        data = ws.eval_log.read_bytes()
        members = zip_members(ws.eval_log)
        first_central = data.find(b"PK\x01\x02")
        sample = next(n for n in members if n.startswith("samples/"))
        flipped = bytearray(data)
        local = data.find(sample.encode())
        for offset in range(local + 80, local + 160, 3):
            flipped[offset] ^= 0xFF

        def rezip(changes: dict[str, bytes | None], extra: dict[str, bytes] | None = None):
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                for name, blob in members.items():
                    new = changes.get(name, blob)
                    if new is not None:
                        zf.writestr(name, new)
                for name, blob in (extra or {}).items():
                    zf.writestr(name, blob)
            return buf.getvalue()

        inner = io.BytesIO()
        with zipfile.ZipFile(inner, "w") as zf:
            zf.writestr("nested.eval", data)
        variants: dict[str, tuple[bytes, set[int]]] = {
            "trunc-25": (data[: len(data) // 4], {2, 3}),
            "trunc-50": (data[: len(data) // 2], {2, 3}),
            "trunc-75": (data[: len(data) * 3 // 4], {2, 3}),
            "trunc-95": (data[: len(data) * 95 // 100], {2, 3}),
            "no-central-directory": (data[:first_central], {2, 3}),
            "flipped-member-bytes": (bytes(flipped), {2, 3}),
            "empty-zip": (rezip({n: None for n in members}), {2, 3}),
            "no-header": (rezip({"header.json": None}), {0, 2, 3}),
            "not-a-zip": (b"this is not an archive\n" * 10, {2}),
            "traversal-member": (
                rezip({}, {"../../escape-eval.json": b"{}", "/abs-escape.json": b"{}"}),
                {0, 2, 3},
            ),
            "nested-zip": (inner.getvalue(), {2, 3}),
            "sample-not-json": (rezip({sample: b"{not json"}), {2, 3}),
            "sample-deep": (rezip({sample: deep_array(100000).encode()}), {2, 3}),
        }
        if ws.quick:
            variants = {k: variants[k] for k in list(variants)[::2]}
        for name, (blob, codes) in variants.items():
            path = ws.file("eval-damaged", name, "log.eval")
            path.write_bytes(blob)
            out = ws.out(f"ing-eval-{name}")
            category = "deep-nesting" if name == "sample-deep" else "malformed"
            self.add(
                category,
                f"ingest:eval-{name}",
                [
                    "ingest",
                    str(path),
                    "--out",
                    str(out),
                    "--write-suites",
                    str(out.parent / f"{out.name}-suites"),
                ],
                ok_codes=codes,
                names=["log.eval"] if 0 not in codes else [],
                checks=[
                    check_no_path(ws.root / "escape-eval.json"),
                    check_no_path(Path("/abs-escape.json")),
                ],
                group=f"malformed:eval-{name}",
                role="ingest",
            )

    def outdir_damage(self) -> None:
        ws = self.ws
        good = ws.good_out

        def damaged(name: str, fn: Callable[[Path], None]) -> Path:
            path = ws.outs / f"_damaged-{name}"
            shutil.copytree(good, path)
            fn(path)
            return path

        def trunc(file: str) -> Callable[[Path], None]:
            def cut(p: Path) -> None:
                blob = (p / file).read_bytes()
                (p / file).write_bytes(blob[: len(blob) // 2])

            return cut

        summaries = (good / "summaries.jsonl").read_text()
        variants: dict[str, tuple[Callable[[Path], None], str]] = {
            "runs-truncated": (trunc("runs.parquet"), "runs.parquet"),
            "tasks-missing": (lambda p: (p / "tasks.parquet").unlink(), "tasks.parquet"),
            "trials-truncated": (trunc("trials.parquet"), "trials.parquet"),
            "summaries-garbage": (
                lambda p: (p / "summaries.jsonl").write_text("garbage\n"),
                "summaries.jsonl",
            ),
            "summaries-extra-run": (
                lambda p: (p / "summaries.jsonl").write_text(
                    summaries
                    + summaries.splitlines()[0].replace("fixture-miss-0001", "ghost-0001")
                    + "\n"
                ),
                "summaries.jsonl",
            ),
            "summaries-nan": (
                lambda p: (p / "summaries.jsonl").write_text(
                    summaries.replace('"aggregateScore": 0.5', '"aggregateScore": NaN')
                ),
                "summaries.jsonl",
            ),
            "trials-is-events": (
                lambda p: shutil.copy(ws.trials, p / "trials.parquet"),
                "trials.parquet",
            ),
            "problems-empty-file": (
                lambda p: (p / "problems.parquet").write_bytes(b""),
                "problems.parquet",
            ),
            "manifest-garbage": (
                lambda p: (p / "manifest.json").write_text("{garbage"),
                "manifest.json",
            ),
            "summaries-deep": (
                lambda p: (p / "summaries.jsonl").write_text(summaries + deep_array(100000) + "\n"),
                "summaries.jsonl",
            ),
        }
        if ws.quick:
            variants = {k: variants[k] for k in list(variants)[::2]}
        for name, (fn, file) in variants.items():
            path = damaged(name, fn)
            category = "deep-nesting" if "deep" in name else "malformed"
            group = f"{category}:outdir-{name}"
            codes = {0, 2} if name in ("manifest-garbage", "summaries-nan") else {2}
            report = path / "report-out.html"
            self.add(
                category,
                f"report:outdir-{name}",
                ["report", str(path), "--out", str(report)],
                ok_codes=codes,
                names=[file],
                leak_paths=[report],
                group=group,
                role="report",
            )
            self.add(
                category,
                f"history:outdir-{name}",
                ["history", str(path)],
                ok_codes=codes,
                names=[file],
                group=group,
                role="history",
            )
            self.add(
                category,
                f"export-otel:outdir-{name}",
                ["export", "otel", str(path), "--out", str(path / "o.jsonl")],
                ok_codes=codes,
                names=[file],
                group=group,
                role="export",
            )
            self.add(
                category,
                f"export-eee:outdir-{name}",
                [
                    "export",
                    "eee",
                    str(path),
                    "--model-id",
                    "acme/agent",
                    "--org",
                    "acme",
                    "--out",
                    str(path / "e.jsonl"),
                ],
                ok_codes=codes,
                names=[file],
                group=group,
                role="export",
            )
            self.add(
                category,
                f"sql:outdir-{name}",
                ["sql", str(path), "-e", "SELECT count(*) FROM runs JOIN tasks USING (run_id)"],
                ok_codes=codes,
                names=[file],
                group=group,
                role="sql",
            )

    # ---- hostile values

    def hostile_values(self) -> None:
        ws = self.ws
        for spec in hostile_specs(ws):
            name, mutate, run_flag, bad_trial, verify_flag, conf_flag = spec
            run_id = f"acme/hostile-{name}"
            rows = [dict(r) for r in ws.marked_rows(run_id)]
            scored_seq = ws.scored_sequence(rows)
            rows = mutate(rows)
            real_ids = sorted({r["runId"] for r in rows if isinstance(r["runId"], str)})
            if len(real_ids) == 1:
                run_id = real_ids[0]
            path = ws.file("hostile", slug(name), "events.parquet")
            try:
                write_rows(path, rows)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                table = pa.Table.from_pylist(rows)
                pq.write_table(table, path)
            if len(real_ids) > 1:
                run_id = real_ids[0]

            def checks(
                out: Path,
                run_id: str = run_id,
                flag: bool = run_flag,
                bad: bool = bad_trial,
                seq: int = scored_seq,
            ) -> list[Check]:
                found: list[Check] = []
                if flag:
                    found.append(check_flagged(out, run_id))
                if bad:
                    found.append(check_trial_not_passed(out, run_id, seq))
                return found

            ids_hostile = name.startswith(("runId-", "suiteId-"))
            commands = ["run", "verify", "conformance"]
            if name.startswith(("runId", "taskId")):
                commands.append("explain")
            if name.startswith(("payload", "score", "sequence")):
                commands.append("run-duckdb")
            if name.startswith(("score", "passed", "bools", "second")):
                commands.append("regress")
            if name.startswith("payload"):
                commands.append("sql")
            if ws.quick:
                commands = [c for c in commands if c in ("run", "verify", "conformance")]
            self.events_matrix(
                "hostile-values",
                name,
                [path],
                run_id=run_id,
                commands=commands,
                suites=ws.suites_invalid if name == "suiteId-invalid-suite" else None,
                run_checks=checks,
                names=[]
                if ids_hostile or not run_id.isprintable() or name == "no-eval-started"
                else [run_id],
                verify_flag=verify_flag,
                conf_flag=conf_flag,
            )
        self.ingest_hostile()
        self.sql_safe()

    def ingest_hostile(self) -> None:
        ws = self.ws
        rows = ws.marked_rows("acme/hostile-ndjson")
        lines = [event_line(r) for r in rows]
        scored = index_of(rows, "eval.scored")
        doc = json.loads(lines[scored])

        def variant(index: int, text: str) -> str:
            copy = list(lines)
            copy[index] = text
            return "\n".join(copy) + "\n"

        def field_raw(key: str, raw: str | None) -> str:
            return variant(scored, with_raw(doc, key, raw))

        def payload_raw(key: str, raw: str) -> str:
            p = doc["payload"]
            inner = with_raw(p, key, raw)
            return variant(
                scored, with_raw({k: v for k, v in doc.items() if k != "payload"}, "payload", inner)
            )

        variants: dict[str, tuple[str, set[int]]] = {
            "score-nan-literal": (payload_raw("score", "NaN"), {3}),
            "score-1e400": (payload_raw("score", "1e400"), {0, 3}),
            "score-infinity": (payload_raw("score", "Infinity"), {3}),
            "taskId-lone-surrogate": (payload_raw("taskId", '"\\ud800"'), {0, 3}),
            "duplicate-keys": (payload_raw("score", '1.0,"score":0.0'), {0}),
            "sequence-string": (field_raw("sequence", '"5"'), {3}),
            "sequence-float": (field_raw("sequence", "5.0"), {0, 3}),
            "sequence-fraction": (field_raw("sequence", "5.5"), {3}),
            "sequence-negative": (field_raw("sequence", "-1"), {3}),
            "sequence-2^64": (field_raw("sequence", str(2**64)), {3}),
            "sequence-1e400": (field_raw("sequence", "1e400"), {3}),
            "sequence-bool": (field_raw("sequence", "true"), {3}),
            "runId-number": (field_raw("runId", "42"), {3}),
            "runId-ansi": (field_raw("runId", '"acme/\\u001b[31mred\\u001b[0m"'), {0}),
            "runId-dotdot": (field_raw("runId", '"../../../escape-ingest"'), {0}),
            "runId-slashes": (field_raw("runId", '"/abs/escape-ingest2"'), {0}),
            "runId-long": (field_raw("runId", json.dumps("r" * 100000)), {0}),
            "runId-nul": (field_raw("runId", '"acme/a\\u0000b"'), {0, 3}),
            "runId-case-twin": (
                "\n".join(lines)
                + "\n"
                + "\n".join(
                    ln.replace("acme/hostile-ndjson", "ACME/HOSTILE-NDJSON") for ln in lines
                )
                + "\n",
                {0},
            ),
            "type-null": (field_raw("type", "null"), {3}),
            "payload-string": (field_raw("payload", '"not an object"'), {0, 3}),
            "timestamp-number": (field_raw("timestamp", "1700000000"), {0, 3}),
        }
        if ws.quick:
            variants = {k: variants[k] for k in list(variants)[::2]}
        for name, (content, codes) in variants.items():
            path = ws.file("ingest-hostile", name, "export.ndjson")
            path.write_text(content)
            out = ws.out(f"ing-hostile-{name}")
            self.add(
                "hostile-values",
                f"ingest:{name}",
                ["ingest", str(path), "--out", str(out)],
                ok_codes=codes,
                names=["export.ndjson"] if 3 in codes and 0 not in codes else [],
                checks=[
                    check_no_path(ws.root / "escape-ingest"),
                    check_no_path(ws.inputs / "escape-ingest"),
                    check_no_path(Path("/abs/escape-ingest2")),
                ],
                group=f"hostile-values:ingest-{name}",
                role="ingest",
            )

    def sql_safe(self) -> None:
        ws = self.ws
        target = ws.scratch / "sql-safe-written.csv"
        queries = {
            "read-file": "SELECT * FROM read_text('/etc/hostname')",
            "copy-to": f"COPY (SELECT 1) TO '{target}'",
            "attach": f"ATTACH '{ws.scratch / 'x.duckdb'}' AS x",
            "unlock-setting": "SET enable_external_access = true",
            "install": "INSTALL httpfs",
            "glob": "SELECT * FROM glob('/etc/*')",
        }
        for name, query in queries.items():
            self.add(
                "hostile-values",
                f"sql:safe-{name}",
                ["sql", str(ws.good_out), "--safe", "-e", query],
                ok_codes={2},
                checks=[check_no_path(target), check_no_path(ws.scratch / "x.duckdb")],
            )

    # ---- deep nesting

    def deep_nesting(self) -> None:
        ws = self.ws
        depths = [100, 100000] if ws.quick else [100, 1000, 100000]
        for depth in depths:
            d = f"{depth}"
            # suites: deep task input, deep expected args
            for where in ("input", "args"):
                suite = json.loads(json.dumps(ws.trials_suite))
                text = json.dumps(suite)
                if where == "input":
                    text = text.replace(
                        '"message": "Has order A-4001 shipped yet?"',
                        f'"message": "x", "context": {deep_object(depth)}',
                    )
                else:
                    text = text.replace(
                        '"args": {"amountMinor": 4200}',
                        f'"args": {{"amountMinor": 4200, "x": {deep_array(depth)}}}',
                    )
                suite_dir = ws.file("deep", f"suite-{where}-{d}", "x").parent
                suite_dir.mkdir(parents=True, exist_ok=True)
                (suite_dir / "trials.json").write_text(text)
                group = f"deep-nesting:suite-{where}-{d}"
                self.add(
                    "deep-nesting",
                    f"validate:suite-{where}-{d}",
                    ["validate", str(suite_dir / "trials.json")],
                    ok_codes={0, 1, 2} if depth <= 100 else {1, 2},
                    group=group,
                    role="validate",
                )
                codes = {0, 2, 3} if depth <= 100 else {2, 3}
                self.events_matrix(
                    "deep-nesting",
                    f"suite-{where}-{d}",
                    [ws.trials],
                    suites=suite_dir,
                    commands=("run", "verify", "explain") if not ws.quick else ("run",),
                    run_codes=codes,
                    other_codes={"verify": codes | {1}, "explain": codes},
                )
                if where == "input" and not ws.quick:
                    reg = ws.file("deep", f"suite-regress-{d}", "x").parent
                    reg.mkdir(parents=True, exist_ok=True)
                    (reg / "regression.json").write_text(
                        (ws.suites / "regression.json")
                        .read_text()
                        .replace('"input": {', f'"input": {{"context": {deep_object(depth)}, ', 1)
                    )
                    self.add(
                        "deep-nesting",
                        f"regress:suite-{d}",
                        ["regress", str(ws.baseline), str(ws.candidate), "--suites", str(reg)],
                        ok_codes={1, 2} if depth <= 100 else {2},
                        group=f"deep-nesting:suite-regress-{d}",
                        role="regress",
                    )
            # capabilities
            caps = json.loads(ws.caps_full.read_text())
            caps_text = json.dumps(caps).replace(
                '"regressionVerdict": true', f'"regressionVerdict": true, "x": {deep_object(depth)}'
            )
            caps_path = ws.file("deep", f"caps-{d}", "host-caps.json")
            caps_path.write_text(caps_text)
            caps_whole = ws.file("deep", f"caps-whole-{d}", "host-caps.json")
            caps_whole.write_text(deep_array(depth, json.dumps(caps)))
            for label, path in (("caps", caps_path), ("caps-whole", caps_whole)):
                group = f"deep-nesting:{label}-{d}"
                self.add(
                    "deep-nesting",
                    f"validate:{label}-{d}",
                    ["validate", str(ws.suites / "trials.json"), "--capabilities", str(path)],
                    ok_codes={2},
                    names=["host-caps.json"],
                    group=group,
                    role="validate",
                )
                self.add(
                    "deep-nesting",
                    f"verify:{label}-{d}",
                    [
                        "verify",
                        str(ws.events),
                        "--suites",
                        str(ws.suites),
                        "--capabilities",
                        str(path),
                    ],
                    ok_codes={2},
                    names=["host-caps.json"],
                    group=group,
                    role="verify",
                )
            # payloads inside a Parquet log
            for where in ("tool-inputs", "scored-metadata"):
                run_id = f"acme/deep-{where}-{d}"
                rows = ws.marked_rows(run_id)
                if where == "tool-inputs":
                    i = index_of(rows, "agent.tool-called", 1)
                    rows[i]["payload"] = with_raw(
                        json.loads(rows[i]["payload"]),
                        "inputs",
                        deep_object(depth, json.dumps(MARKER)),
                    )
                else:
                    i = index_of(rows, "eval.scored")
                    rows[i]["payload"] = with_raw(
                        json.loads(rows[i]["payload"]), "metadata", deep_array(depth)
                    )
                path = write_rows(ws.file("deep", f"payload-{where}-{d}", "events.parquet"), rows)
                self.events_matrix(
                    "deep-nesting",
                    f"payload-{where}-{d}",
                    [path],
                    run_id=run_id,
                    commands=("run", "verify", "conformance", "explain", "sql", "run-duckdb")
                    if not ws.quick
                    else ("run", "verify", "explain"),
                    names=[],
                )
            # NDJSON and SSE for ingest
            lines = ws.ndjson.read_text().splitlines()
            doc = json.loads(lines[5])
            deep_line = with_raw(doc, "payload", deep_object(depth))
            for label, content in (
                ("ndjson-payload", "\n".join([*lines[:5], deep_line, *lines[6:]]) + "\n"),
                ("ndjson-line", "\n".join([*lines, deep_array(depth)]) + "\n"),
                (
                    "sse-frame",
                    "".join(f"data: {ln}\n\n" for ln in lines[:5])
                    + f"data: {deep_array(depth)}\n\n",
                ),
            ):
                ext = ".sse" if label.startswith("sse") else ".ndjson"
                path = ws.file("deep", f"{label}-{d}", f"export{ext}")
                path.write_text(content)
                self.add(
                    "deep-nesting",
                    f"ingest:{label}-{d}",
                    ["ingest", str(path), "--out", str(ws.out(f"deep-{label}-{d}"))],
                    ok_codes={0, 3} if depth <= 100 else {3},
                    names=[path.name] if depth > 100 else [],
                    group=f"deep-nesting:{label}-{d}",
                    role="ingest",
                )
            # host summaries
            summaries = (ws.good_out / "summaries.jsonl").read_text().splitlines()
            deep_summary = json.loads(summaries[0])
            text = json.dumps(deep_summary).replace(
                '"fixtureMissCount": 0', f'"fixtureMissCount": 0, "x": {deep_object(depth)}', 1
            )
            path = ws.file("deep", f"summaries-{d}", "host-summaries.jsonl")
            path.write_text("\n".join([text, *summaries[1:]]) + "\n")
            self.add(
                "deep-nesting",
                f"verify:summaries-{d}",
                ["verify", str(ws.events), "--suites", str(ws.suites), "--summaries", str(path)],
                ok_codes={1, 2},
                checks=[check_not_positive("verify agrees with a deep summary")],
                group=f"deep-nesting:summaries-{d}",
                role="verify",
            )
            # an incremental output directory whose manifest is deep
            out = ws.outs / f"_deep-manifest-{d}"
            self.add(
                "deep-nesting",
                f"run-incremental:manifest-{d}",
                [
                    "run",
                    str(ws.events),
                    "--suites",
                    str(ws.suites),
                    "--out",
                    str(out),
                    "--incremental",
                ],
                ok_codes={0},
                before=self._deep_manifest(out, depth),
            )

    def _deep_manifest(self, out: Path, depth: int) -> Callable[[], None]:
        ws = self.ws

        def before() -> None:
            ws.run_setup(
                [
                    "run",
                    str(ws.events),
                    "--suites",
                    str(ws.suites),
                    "--out",
                    str(out),
                    "--incremental",
                    "-q",
                ]
            )
            manifest = out / "manifest.json"
            doc = json.loads(manifest.read_text())
            manifest.write_text(json.dumps(doc)[:-1] + f', "x": {deep_array(depth)}}}')

        return before

    # ---- decompression

    def decompression(self) -> None:
        ws = self.ws
        size = (50 if ws.quick else 200) << 20
        mb = size >> 20
        lines = ws.ndjson.read_text().splitlines()
        head = "\n".join(lines).encode() + b"\n"
        one = json.loads(lines[5])

        def huge_line() -> Iterable[bytes]:
            start = with_raw(one, "payload", '{"blob":"\x00"}').split("\x00")
            yield head
            yield start[0].encode()
            yield from repeat_bytes(size, b"A")
            yield start[1].encode() + b"\n"

        bombs: dict[str, tuple[str, Callable[[], Iterable[bytes]]]] = {
            "gzip-one-huge-line": (".ndjson.gz", huge_line),
            "gzip-spaces": (".ndjson.gz", lambda: [head, *repeat_bytes(size, b" ")]),
            "gzip-newlines": (".ndjson.gz", lambda: [head, *repeat_bytes(size, b"\n")]),
            "gzip-repeated-events": (
                ".ndjson.gz",
                lambda: repeat_bytes(size, (lines[5] + "\n").encode() * 64),
            ),
            "gzip-sse-frame": (
                ".sse.gz",
                lambda: [b"data: [", *repeat_bytes(size, b" "), b"]\n\n"],
            ),
            "gzip-json-array": (
                ".json.gz",
                lambda: [b"[", head.replace(b"\n", b",")[:-1], *repeat_bytes(size, b" "), b"]"],
            ),
        }
        for name, (ext, chunks) in bombs.items():
            path = gzip_stream(ws.file("bombs", name, f"bomb{ext}"), chunks(), level=9)
            self.add(
                "decompression",
                f"ingest:{name}-{mb}MB",
                ["ingest", str(path), "--out", str(ws.out(f"bomb-{name}"))],
                ok_codes={2, 3},  # past 16 MiB at over 200:1 is a problem (E-116)
                names=[path.name],
                serial=True,
                group=f"decompression:{name}",
                role="ingest",
                why=f"{path.stat().st_size} bytes inflating to {mb} MB",
            )
        path = ws.file("bombs", "gzip-spaces", "bomb.ndjson.gz")
        self.add(
            "decompression",
            f"ingest:stdin-gzip-{mb}MB",
            ["ingest", "-", "--out", str(ws.out("bomb-stdin"))],
            ok_codes={2, 3},
            stdin=path,
            serial=True,
        )
        # an Inspect archive whose sample member inflates
        members = zip_members(ws.eval_log)
        sample = next(n for n in members if n.startswith("samples/"))
        bomb_eval = ws.file("bombs", "eval-member", "bomb.eval")
        with zipfile.ZipFile(bomb_eval, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
            for name, blob in members.items():
                if name == sample:
                    with zf.open(name, "w", force_zip64=True) as member:
                        member.write(b"{")
                        for chunk in repeat_bytes(size, b" "):
                            member.write(chunk)
                        member.write(blob.lstrip()[1:])
                else:
                    zf.writestr(name, blob)
        self.add(
            "decompression",
            f"ingest:eval-member-{mb}MB",
            ["ingest", str(bomb_eval), "--out", str(ws.out("bomb-eval"))],
            ok_codes={2, 3},
            names=["bomb.eval"],
            serial=True,
            group="decompression:eval",
            role="ingest",
        )
        # a Parquet payload that inflates
        rows = ws.marked_rows("acme/bomb-payload")
        i = index_of(rows, "agent.tool-returned")
        rows[i]["payload"] = '{"blob":"' + "A" * size + '"}'
        bomb_parquet = write_rows(
            ws.file("bombs", "parquet", "events.parquet"), rows, compression="zstd"
        )
        del rows
        self.events_matrix(
            "decompression",
            f"parquet-payload-{mb}MB",
            [bomb_parquet],
            run_id="acme/bomb-payload",
            commands=("run", "verify", "explain"),
            names=[],
        )
        for case in self.cases:
            if case.category == "decompression":
                case.serial = True

    # ---- same path on both sides

    def same_path(self) -> None:
        ws = self.ws
        base = ws.baseline
        copy = ws.file("same", "copy", "baseline.parquet")
        shutil.copy(base, copy)
        link = ws.file("same", "symlink", "baseline.parquet")
        link.symlink_to(base)
        hard = ws.file("same", "hardlink", "baseline.parquet")
        os.link(base, hard)
        s = ["--suites", str(ws.suites)]
        pairs = {
            "same-file": (str(base), str(base)),
            "copy": (str(base), str(copy)),
            "symlink": (str(base), str(link)),
            "hardlink": (str(base), str(hard)),
            "dot-spelling": (str(base), str(base.parent / "." / base.name)),
            "same-directory": (str(ws.events), str(ws.events)),
            "file-and-its-directory": (str(ws.trials), str(ws.events)),
            "tasks-table-same": (
                str(ws.regress_out / "tasks.parquet"),
                str(ws.regress_out / "tasks.parquet"),
            ),
        }
        tasks_copy = ws.outs / "_regress-copy"
        shutil.copytree(ws.regress_out, tasks_copy)
        pairs["tasks-table-copy"] = (
            str(ws.regress_out / "tasks.parquet"),
            str(tasks_copy / "tasks.parquet"),
        )
        for name, (a, b) in pairs.items():
            extra: list[str] = []
            if name.startswith("tasks-table"):
                extra = [
                    "--base-run-id",
                    "acme/run-regress-candidate-0001",
                    "--cand-run-id",
                    "acme/run-regress-candidate-0001",
                ]
            argv = ["regress", a, b, *([] if name.startswith("tasks") else s), *extra]
            self.add(
                "same-path",
                f"regress:{name}",
                argv,
                ok_codes={2},
                checks=[check_regress_compared],
                group=f"same-path:{name}",
                role="regress",
                why="one run compared with itself is no comparison (it must not pass)",
            )
            if name in ("same-file", "copy") and not ws.quick:
                self.add(
                    "same-path",
                    f"regress-json:{name}",
                    [*argv, "--json"],
                    ok_codes={2},
                    group=f"same-path:{name}",
                    role="regress",
                )
        self.add(
            "same-path",
            "regress:same-run-ids",
            [
                "regress",
                str(ws.baseline),
                str(ws.candidate),
                *s,
                "--base-run-id",
                "acme/run-regress-baseline-0001",
                "--cand-run-id",
                "acme/run-regress-baseline-0001",
            ],
            ok_codes={2},
            checks=[check_regress_compared],
        )
        # the same events twice must grade as once
        once = ws.outs / "_good"
        twice = ws.out("same-path-run-twice")
        self.add(
            "same-path",
            "run:same-file-twice",
            [
                "run",
                str(ws.trials),
                str(ws.trials),
                str(copy.parent / ".." / ".." / "samples" / "events" / "trials.parquet"),
                *s,
                "--out",
                str(twice),
            ],
            ok_codes={0},
            checks=[same_summaries(twice, once, TRIALS_RUN)],
        )
        twice_dir = ws.out("same-path-dir-twice")
        self.add(
            "same-path",
            "run:same-dir-twice",
            ["run", str(ws.events), str(ws.events), *s, "--out", str(twice_dir)],
            ok_codes={0},
            checks=[same_summaries(twice_dir, once, None)],
        )
        self.add(
            "same-path",
            "verify:same-dir-twice",
            ["verify", str(ws.events), str(ws.events), *s],
            ok_codes={1},
            checks=[verdict_count(3)],
        )
        self.add(
            "same-path",
            "history:same-dir-twice",
            ["history", str(ws.regress_out), str(ws.regress_out)],
            ok_codes={0},
        )
        self.add(
            "same-path",
            "report:history-is-itself",
            [
                "report",
                str(ws.regress_out),
                "--history",
                str(ws.regress_out),
                "--out",
                str(ws.out("same-path-report") / "r.html"),
            ],
            ok_codes={0, 2},
            before=lambda: ws.out("same-path-report").mkdir(parents=True, exist_ok=True),
        )
        # report over a night that made no comparison must not say "no regression"
        for label, out in (("no-comparison", ws.good_out), ("with-regression", ws.regress_out)):
            html = ws.out(f"report-{label}") / "report.html"
            self.add(
                "same-path",
                f"report:{label}",
                ["report", str(out), "--out", str(html)],
                ok_codes={0},
                leak_paths=[html],
                checks=[report_claims(out, html)],
                before=lambda h=html: h.parent.mkdir(parents=True, exist_ok=True),
            )
        cand_only = ws.outs / "_candidate-only"
        self.add(
            "same-path",
            "report:baseline-absent",
            ["report", str(cand_only), "--out", str(cand_only / "r.html")],
            ok_codes={0},
            checks=[report_claims(cand_only, cand_only / "r.html")],
            before=lambda: ws.run_setup(
                ["run", str(ws.candidate), *s, "--out", str(cand_only), "-q"]
            ),
        )

    # ---- output inside input

    def output_inside_input(self) -> None:
        ws = self.ws
        s = ["--suites", str(ws.suites)]
        first = ws.outs / "_good"
        for label, sub in (("sub", ["graded"]), ("deep-sub", ["a", "b", "graded"])):
            ev = ws.file("oii", f"events-{label}", "x").parent
            shutil.copytree(ws.events, ev, dirs_exist_ok=True)
            out = ev.joinpath(*sub)
            for attempt in (1, 2):
                self.add(
                    "output-inside-input",
                    f"run:out-in-events-{label}-{attempt}",
                    ["run", str(ev), *s, "--out", str(out)],
                    ok_codes={0},
                    checks=[same_summaries(out, first, None)],
                )
        same = ws.file("oii", "same", "x").parent
        shutil.copytree(ws.events, same, dirs_exist_ok=True)
        for attempt in (1, 2):
            self.add(
                "output-inside-input",
                f"run:out-equals-events-{attempt}",
                ["run", str(same), *s, "--out", str(same)],
                ok_codes={0, 2},
                checks=[inputs_intact(same, ws.events)],
            )
        target = ws.file("oii", "file", "trials.parquet")
        shutil.copy(ws.trials, target)
        digest = sha256_file(target)
        self.add(
            "output-inside-input",
            "run:out-is-input-file",
            ["run", str(target), *s, "--out", str(target)],
            ok_codes={2, 4},
            names=["trials.parquet"],
            checks=[check_file_unchanged(target, digest)],
        )
        glob_dir = ws.file("oii", "glob", "x").parent
        shutil.copytree(ws.events, glob_dir, dirs_exist_ok=True)
        for attempt in (1, 2):
            self.add(
                "output-inside-input",
                f"run:glob-reaches-out-{attempt}",
                ["run", str(glob_dir / "**" / "*.parquet"), *s, "--out", str(glob_dir / "graded")],
                ok_codes={0},
                checks=[same_summaries(glob_dir / "graded", first, None)],
            )
        # ingest
        nd = ws.file("oii", "ingest", "samples.ndjson")
        shutil.copy(ws.ndjson, nd)
        nd_digest = sha256_file(nd)
        self.add(
            "output-inside-input",
            "ingest:out-is-input-file",
            ["ingest", str(nd), "--out", str(nd)],
            ok_codes={2, 4},
            names=["samples.ndjson"],
            checks=[check_file_unchanged(nd, nd_digest)],
        )
        for attempt in (1, 2):
            self.add(
                "output-inside-input",
                f"ingest:out-equals-input-dir-{attempt}",
                ["ingest", str(nd.parent), "--out", str(nd.parent)],
                ok_codes={0, 2},
                checks=[check_file_unchanged(nd, nd_digest), ingest_events(nd.parent, 170)],
            )
            self.add(
                "output-inside-input",
                f"ingest:out-inside-input-dir-{attempt}",
                ["ingest", str(nd.parent), "--out", str(nd.parent / "parts")],
                ok_codes={0, 2},
                checks=[ingest_events(nd.parent / "parts", 170)],
            )
        suites_file = ws.file("oii", "inspect", "suite.json")
        shutil.copy(ws.suites / "trials.json", suites_file)
        s_digest = sha256_file(suites_file)
        self.add(
            "output-inside-input",
            "ingest:write-suites-is-a-file",
            [
                "ingest",
                str(ws.eval_log),
                "--out",
                str(ws.out("oii-inspect")),
                "--write-suites",
                str(suites_file),
            ],
            ok_codes={2, 4},
            checks=[check_file_unchanged(suites_file, s_digest)],
        )
        # report, export and sql writing over their own inputs
        out = ws.outs / "_oii-out"
        shutil.copytree(ws.good_out, out)
        for name in ("runs.parquet", "summaries.jsonl"):
            digest = sha256_file(out / name)
            self.add(
                "output-inside-input",
                f"report:out-is-{name}",
                ["report", str(out), "--out", str(out / name)],
                ok_codes={2, 4},
                checks=[check_file_unchanged(out / name, digest)],
            )
        digest = sha256_file(out / "tasks.parquet")
        self.add(
            "output-inside-input",
            "export-otel:out-is-tasks.parquet",
            ["export", "otel", str(out), "--out", str(out / "tasks.parquet")],
            ok_codes={2, 4},
            checks=[check_file_unchanged(out / "tasks.parquet", digest)],
        )
        digest = sha256_file(out / "trials.parquet")
        self.add(
            "output-inside-input",
            "export-eee:out-is-trials.parquet",
            [
                "export",
                "eee",
                str(out),
                "--model-id",
                "acme/a",
                "--org",
                "acme",
                "--out",
                str(out / "trials.parquet"),
            ],
            ok_codes={2, 4},
            checks=[check_file_unchanged(out / "trials.parquet", digest)],
        )
        ev_copy = ws.file("oii", "export-events", "trials.parquet")
        shutil.copy(ws.trials, ev_copy)
        digest = sha256_file(ev_copy)
        self.add(
            "output-inside-input",
            "export-otel:out-is-events-file",
            ["export", "otel", str(ws.good_out), "--events", str(ev_copy), "--out", str(ev_copy)],
            ok_codes={2, 4},
            checks=[check_file_unchanged(ev_copy, digest)],
        )
        digest = sha256_file(out / "problems.parquet")
        self.add(
            "output-inside-input",
            "sql:out-is-input-table",
            [
                "sql",
                str(out),
                "-e",
                "SELECT * FROM runs",
                "--format",
                "parquet",
                "--out",
                str(out / "problems.parquet"),
            ],
            ok_codes={2, 4},
            checks=[check_file_unchanged(out / "problems.parquet", digest)],
        )
        sql_ev = ws.file("oii", "sql-events", "trials.parquet")
        shutil.copy(ws.trials, sql_ev)
        digest = sha256_file(sql_ev)
        self.add(
            "output-inside-input",
            "sql:out-is-events-file",
            [
                "sql",
                str(sql_ev),
                *s,
                "-e",
                "SELECT * FROM runs",
                "--format",
                "parquet",
                "--out",
                str(sql_ev),
            ],
            ok_codes={2, 4},
            checks=[check_file_unchanged(sql_ev, digest)],
        )
        self.add(
            "output-inside-input",
            "run:temp-dir-is-input-file",
            [
                "run",
                str(target),
                *s,
                "--out",
                str(ws.out("oii-tempdir")),
                "--temp-dir",
                str(target),
            ],
            ok_codes={0, 2},
            checks=[check_file_unchanged(target, sha256_file(target))],
        )
        for case in self.cases:
            if case.category == "output-inside-input":
                case.serial = True  # the second attempt must follow the first

    # ---- full disk

    def full_disk(self) -> None:
        ws = self.ws
        probe = ws.root / "mnt-probe"
        can_mount = ws.mount_tmpfs(probe, "1m")
        if can_mount:
            ws.umount(probe)
        scenarios = disk_scenarios(ws)
        leaves = [0, 48 << 10] if ws.quick else [0, 8 << 10, 48 << 10, 160 << 10]
        for scenario in scenarios:
            if can_mount:
                for leave in leaves:
                    self.add(
                        "full-disk",
                        f"{scenario.name}:tmpfs-free-{leave >> 10}K",
                        scenario.argv(Path("/OUT")),
                        serial=True,
                        custom=disk_runner(ws, scenario, "tmpfs", leave),
                    )
                self.add(
                    "full-disk",
                    f"{scenario.name}:read-only-mount",
                    scenario.argv(Path("/OUT")),
                    serial=True,
                    custom=disk_runner(ws, scenario, "ro", 0),
                )
            else:
                self.add(
                    "full-disk",
                    f"{scenario.name}:unwritable-dir",
                    scenario.argv(Path("/OUT")),
                    serial=True,
                    custom=disk_runner(ws, scenario, "chmod", 0),
                )
            for limit in [16 << 10] if ws.quick else [4 << 10, 16 << 10]:
                self.add(
                    "full-disk",
                    f"{scenario.name}:ulimit-f-{limit >> 10}K",
                    scenario.argv(Path("/OUT")),
                    serial=True,
                    custom=disk_runner(ws, scenario, "fsize", limit),
                )

    # ---- kill -9

    def kill9(self) -> None:
        ws = self.ws
        big = kill_inputs(ws)
        scenarios = [
            KillScenario("run", big, ["--batch-events", "20000"], "rename"),
            KillScenario(
                "run-incremental", big, ["--incremental", "--batch-events", "20000"], "rename"
            ),
            KillScenario("ingest", big, [], "link"),
        ]
        delays = [0.5, 2.0] if ws.quick else [0.3, 1.0, 2.0, 3.5, 5.0]
        have_strace = shutil.which("strace") is not None
        for scenario in scenarios:
            for delay in delays:
                self.add(
                    "kill-9",
                    f"{scenario.name}:sigkill-after-{delay}s",
                    scenario.argv(ws, Path("/OUT")),
                    serial=True,
                    custom=kill_runner(ws, scenario, ("time", delay)),
                )
            if have_strace:
                points = [1, 2, 4] if ws.quick else list(range(1, 7))
                for n in points:
                    self.add(
                        "kill-9",
                        f"{scenario.name}:sigkill-at-{scenario.syscalls}-{n}",
                        scenario.argv(ws, Path("/OUT")),
                        serial=True,
                        custom=kill_runner(ws, scenario, ("strace", n)),
                    )

    # ---- bad option values

    def bad_options(self) -> None:
        ws = self.ws
        s = ["--suites", str(ws.suites)]
        ev = [str(ws.events)]
        outdir = ws.good_out
        specs: list[tuple[str, list[str], str, str, set[int]]] = []

        def opts(cmd: str, base: list[str], ok: set[int], *names: str) -> None:
            for name in names:
                specs.append((cmd, base, name, OPTION_KINDS[name], ok))

        opts(
            "run",
            ["run", *ev, *s],
            {0},
            "--default-pass-score",
            "--threads",
            "--batch-events",
            "--memory-limit",
            "--since",
            "--until",
        )
        opts(
            "verify",
            ["verify", *ev, *s],
            {1},
            "--default-pass-score",
            "--batch-events",
            "--since",
        )
        opts(
            "regress",
            ["regress", str(ws.baseline), str(ws.candidate), *s],
            {1},
            "--alpha",
            "--margin",
            "--seed",
            "--resamples",
            "--effect",
            "--power",
            "--threads",
            "--memory-limit",
        )
        opts(
            "ingest",
            ["ingest", str(ws.eval_log)],
            {0},
            "--inspect-pass-score",
        )
        opts(
            "explain",
            ["explain", *ev, *s, "--run-id", TRIALS_RUN],
            {0},
            "--trial",
            "--default-pass-score",
        )
        opts("report", ["report", str(outdir)], {0}, "--detail-runs")
        opts("history", ["history", str(ws.regress_out)], {0}, "--alpha", "--since")
        opts(
            "sql",
            ["sql", str(outdir), "-e", "SELECT 1"],
            {0},
            "--max-rows",
            "--threads",
            "--memory-limit",
        )
        opts(
            "sql-events", ["sql", *ev, *s, "-e", "SELECT 1"], {0}, "--default-pass-score", "--until"
        )
        opts(
            "export-eee",
            ["export", "eee", str(outdir), "--model-id", "acme/a", "--org", "acme"],
            {0},
            "--retrieved-at",
        )
        opts("export-otel", ["export", "otel", str(outdir)], {0}, "--threads")
        for cmd, base, name, kind, ok in specs:
            values = OPTION_VALUES[kind]
            if ws.quick:
                values = values[::3]
            for value in values:
                valid = option_valid(name, value)
                argv = list(base)
                out = ws.out(f"opt-{cmd}{name}")
                if cmd in ("run", "ingest"):
                    argv += ["--out", str(out)]
                elif cmd in ("report", "export-eee", "export-otel", "sql", "sql-events"):
                    argv += ["--out", str(out / "file.out")]
                argv += [name, value]
                codes = set(ok)
                if valid is None:
                    codes |= {2}
                elif not valid:
                    codes = {2}
                if name == "--trial" and valid:
                    codes |= {2}
                if name in ("--since", "--until", "--memory-limit") and valid:
                    codes |= {2}  # a filter that selects nothing, or out of memory: exit 2
                self.add(
                    "bad-options",
                    f"{cmd}:{name}={value!r}",
                    argv,
                    ok_codes=codes,
                    names=[name] if valid is False else [],
                    before=lambda o=out: o.mkdir(parents=True, exist_ok=True),
                    why=f"{name} {value!r}: {'valid' if valid else 'invalid'}",
                )


OPTION_KINDS = {
    "--default-pass-score": "unit",
    "--inspect-pass-score": "unit",
    "--alpha": "open-unit",
    "--power": "open-unit",
    "--effect": "half-open-unit",
    "--margin": "nonneg-float",
    "--threads": "threads",
    "--batch-events": "pos-int",
    "--resamples": "resamples",
    "--seed": "nonneg-int",
    "--trial": "nonneg-int",
    "--detail-runs": "nonneg-int",
    "--max-rows": "nonneg-int",
    "--memory-limit": "size",
    "--since": "time",
    "--until": "time",
    "--retrieved-at": "seconds",
}
_FLOATS = ["-1", "0", "1e308", "1e400", "nan", "inf", "abc", "0x10"]
_INTS = ["-1", "0", "9223372036854775808", "99999999999999999999999", "1e3", "nan", "1.5"]
OPTION_VALUES = {
    "unit": _FLOATS,
    "open-unit": _FLOATS,
    "half-open-unit": _FLOATS,
    "nonneg-float": _FLOATS,
    "threads": [*_INTS, "1025"],
    "pos-int": _INTS,
    "resamples": [*_INTS, "100000000000"],
    "nonneg-int": _INTS,
    "size": ["-1", "0", "1B", "1MB", "1e400GB", "nanGB", "101%", "-5%", "999999999TB", "80%"],
    "time": ["nan", "", "2026-13-45", "99999-01-01", "\x1b[31m", "2026-11-02T10:30Z"],
    "seconds": ["-1", "1e3", "nan", "inf", "99999999999999999999999", "1.5", "1793620800"],
}


def option_valid(name: str, value: str) -> bool | None:
    """Whether the docs accept `value` for `name` (None: it depends, either answer is fine)."""
    kind = OPTION_KINDS[name]
    if kind in ("unit", "open-unit", "half-open-unit", "nonneg-float"):
        try:
            x = float(value)
        except ValueError:
            return False
        if x != x or x in (float("inf"), float("-inf")):
            return False
        if "_" in value:
            return None  # Python's float() takes it; either answer is fine
        return {
            "unit": 0 <= x <= 1,
            "open-unit": 0 < x < 1,
            "half-open-unit": 0 < x <= 1,
            "nonneg-float": 0 <= x < 1,  # --margin: score points
        }[kind]
    if kind in ("threads", "pos-int", "resamples", "nonneg-int"):
        if not re.fullmatch(r"-?\d+", value):
            return False
        x = int(value)
        if kind == "resamples" and x > 10**8:
            return None  # valid, but a bound is as fair as an answer
        return {
            "threads": 1 <= x <= 1024,
            "pos-int": x >= 1,
            "resamples": x >= 10000,
            "nonneg-int": x >= 0,
        }[kind]
    if kind == "size":
        m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", value)
        if m:
            scale = {
                "B": 1,
                "KB": 1e3,
                "MB": 1e6,
                "GB": 1e9,
                "TB": 1e12,
                "KiB": 1024,
                "MiB": 2**20,
                "GiB": 2**30,
                "TiB": 2**40,
            }[m[2]]
            if float(m[1]) * scale >= 1e12 * 1e6:
                return None
            return float(m[1]) * scale >= 1e6
        m = re.fullmatch(r"(\d+(?:\.\d+)?)%", value)
        if m:
            return 0 < float(m[1]) <= 100
        return False
    if kind == "time":
        return None if value in ("0001-01-01", "99999-01-01") else value in ("2026-11-02T10:30Z",)
    if kind == "seconds":
        if re.fullmatch(r"\d{15,}", value):
            return None  # plain decimal, but past any date: either answer is fine
        return bool(re.fullmatch(r"\d+(\.\d+)?", value))
    raise ValueError(kind)


# ---- hostile value specifications


Spec = tuple[str, Callable[[list[dict[str, Any]]], Any], bool, bool, bool, bool]


def hostile_specs(ws: Workspace) -> list[Spec]:
    """(name, mutate rows, run must flag it, the mutated trial must not pass, verify must not
    agree, verify --conformance must not pass). Verify compares the host's eval records (scores,
    passed, indexes, counts, the aggregate), so only hostile values there must make it disagree;
    conformance also checks their wire shape (a negative cost or latency on eval.scored)."""
    specs: list[Spec] = []

    def add(
        name: str,
        fn: Callable[[list[dict[str, Any]]], Any],
        flag: bool = True,
        bad_trial: bool = False,
        verify_flag: bool | None = None,
        conf_flag: bool | None = None,
    ) -> None:
        def mutate(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
            result = fn(rows)
            return rows if result is None else result

        verify = flag if verify_flag is None else verify_flag
        specs.append(
            (name, mutate, flag, bad_trial, verify, verify if conf_flag is None else conf_flag)
        )

    def scored(key: str, raw: str | None, nth: int = 0):
        return lambda rows: set_field(rows, "eval.scored", key, raw, nth)

    for name, raw in [
        ("nan", "NaN"),
        ("inf", "Infinity"),
        ("neg-inf", "-Infinity"),
        ("1e308", "1e308"),
        ("1e400", "1e400"),
        ("negative", "-1"),
        ("2.5", "2.5"),
        ("true", "true"),
        ("string-number", '"1.0"'),
        ("string-marker", json.dumps(f"{MARKER} score")),
        ("null", "null"),
        ("missing", None),
        ("bigint", "123456789012345678901234567890"),
    ]:
        add(f"score-{name}", scored("score", raw), bad_trial=True)
    add("score-denormal", scored("score", "5e-324"), flag=False)
    for name, raw in [("1", "1"), ("string", '"true"'), ("null", "null"), ("missing", None)]:
        add(f"passed-{name}", scored("passed", raw), bad_trial=True)

    def bools_as_numbers(rows: list[dict[str, Any]]) -> None:
        for row in rows:
            if row["type"] == "eval.scored":
                p = json.loads(row["payload"])
                text = with_raw(p, "passed", "1" if p["passed"] else "0")
                row["payload"] = with_raw(
                    json.loads(text), "score", "1" if p["score"] >= 0.5 else "0"
                )

    add("bools-as-numbers", bools_as_numbers, bad_trial=True)
    for name, raw in [
        ("negative", "-1"),
        ("fraction", "0.5"),
        ("string", '"0"'),
        ("huge", "1000000000000000000"),
        ("duplicate", "0"),
    ]:
        add(f"trialIndex-{name}", scored("trialIndex", raw, 3 if name == "duplicate" else 0))
    for name, raw in [
        ("null", "null"),
        ("number", "42"),
        ("unknown", '"no-such-task"'),
        ("empty", '""'),
        ("ansi", '"order\\u001b[2J-status"'),
        ("long", json.dumps("t" * 100000)),
    ]:
        add(f"taskId-{name}", scored("taskId", raw))
    for name, raw in [("negative", "-5"), ("nan", "NaN"), ("huge", "1e300"), ("string", '"fast"')]:
        add(
            f"latencyMs-{name}",
            scored("latencyMs", raw),
            flag=name == "nan",
            verify_flag=name == "nan",
            conf_flag=name != "huge",
        )
    for name, raw in [("nan", "NaN"), ("negative", "-1"), ("huge", "1e300"), ("string", '"cheap"')]:
        add(f"costUsd-{name}", scored("costUsd", raw), verify_flag=name == "nan", conf_flag=True)
    usage = "provider.usage"
    for name, key, raw in [
        ("cost-nan", "costEstimateUsd", "NaN"),
        ("cost-negative", "costEstimateUsd", "-5"),
        ("cost-1e20", "costEstimateUsd", "1e20"),
        ("tokens-negative", "inputTokens", "-1"),
        ("tokens-fraction", "inputTokens", "1.5"),
        ("tokens-1e20", "inputTokens", "1e20"),
        ("tokens-bool", "inputTokens", "true"),
        ("tokens-string", "outputTokens", '"many"'),
    ]:
        add(
            f"usage-{name}",
            lambda rows, k=key, r=raw: set_field(rows, usage, k, r),
            verify_flag="nan" in name,  # NaN is not JSON: the run cannot be read at all
        )
    done = "eval.completed"
    for name, key, raw in [
        ("aggregate-nan", "aggregateScore", "NaN"),
        ("aggregate-2", "aggregateScore", "2"),
        ("passed-string", "passed", '"yes"'),
        ("taskCount-negative", "taskCount", "-1"),
        ("passedCount-huge", "passedCount", "1000000000"),
    ]:
        add(
            f"completed-{name}",
            lambda rows, k=key, r=raw: set_field(rows, done, k, r),
            flag=False,
            verify_flag=True,
        )
    start = "eval.started"
    # the runs are graded with their suite, whose trials.count is the count: eval.started's
    # taskCount is never read, and a trialCount only stands in for a missing suite (E-10, E-78),
    # so one that is integral and >= 1 (however large) is no fault of a suite run
    for name, key, raw, flagged in [
        ("taskCount-negative", "taskCount", "-3", False),
        ("trialCount-0", "trialCount", "0", True),
        ("trialCount-negative", "trialCount", "-1", True),
        ("trialCount-1e12", "trialCount", "1000000000000", False),
        ("trialCount-10001", "trialCount", "10001", False),
        ("trialCount-string", "trialCount", '"3"', True),
    ]:
        add(
            f"started-{name}",
            lambda rows, k=key, r=raw: set_field(rows, start, k, r),
            flag=flagged,
        )

    # sequences and event order
    add("sequence-gap", lambda rows: [r for r in rows if not 12 <= r["sequence"] <= 14])
    add(
        "sequence-duplicate-same",
        lambda rows: sorted([*rows, dict(rows[6])], key=lambda r: r["sequence"]),
        flag=False,
    )

    def dup_diff(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        twin = dict(rows[6])
        twin["payload"] = jdump({"toolName": f"{MARKER}:conflict", "inputs": {"x": MARKER}})
        return sorted([*rows, twin], key=lambda r: r["sequence"])

    add("sequence-duplicate-conflict", dup_diff)

    def set_seq(index: int, value: int):
        def fn(rows: list[dict[str, Any]]) -> None:
            rows[index]["sequence"] = value

        return fn

    add("sequence-negative", set_seq(0, -1))
    add("sequence-2^53", set_seq(-1, 2**53))
    add("sequence-int64-max", set_seq(-1, 2**63 - 1))

    def second_completed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        i = index_of(rows, done)
        extra = {
            **rows[i],
            "eventId": "evt-dup-completed",
            "payload": jdump(
                {"aggregateScore": 0.1, "passed": False, "taskCount": 3, "passedCount": 0}
            ),
        }
        return renumber([*rows[: i + 1], extra, *rows[i + 1 :]])

    add("second-eval-completed", second_completed, verify_flag=True)

    def scored_before_started(rows: list[dict[str, Any]]) -> None:
        a, b = index_of(rows, start), index_of(rows, "eval.scored")
        rows[a]["sequence"], rows[b]["sequence"] = rows[b]["sequence"], rows[a]["sequence"]

    add("scored-before-started", scored_before_started)

    def started_twice(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        i = index_of(rows, start)
        extra = {
            **rows[i],
            "eventId": "evt-dup-started",
            "payload": jdump(
                {
                    "suiteId": "acme.support.evals.trajectory",
                    "suiteVersion": "1.0.0",
                    "taskCount": 5,
                }
            ),
        }
        return renumber([*rows[: i + 1], extra, *rows[i + 1 :]])

    add("eval-started-twice", started_twice)
    add("no-eval-started", lambda rows: renumber([r for r in rows if r["type"] != start]))
    add("no-eval-completed", lambda rows: renumber([r for r in rows if r["type"] != done]))

    def no_bracket(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        first_start = index_of(rows, "agent.invocation-started")
        first_end = index_of(rows, "agent.invocation-completed")
        return renumber([r for i, r in enumerate(rows) if i not in (first_start, first_end)])

    add("scored-without-bracket", no_bracket, verify_flag=False)
    # suite ids
    for name, raw in [
        ("empty", '""'),
        ("space", '" "'),
        ("ansi", '"acme.\\u001b[31mred"'),
        ("long", json.dumps("s" * 100000)),
        ("number", "42"),
        ("null", "null"),
        ("invalid-suite", '"acme.support.evals.invalid"'),
    ]:
        add(f"suiteId-{name}", lambda rows, r=raw: set_field(rows, start, "suiteId", r))
    add(
        "suiteVersion-not-semver",
        lambda rows: set_field(rows, start, "suiteVersion", '"not-semver"'),
    )
    add("suiteVersion-number", lambda rows: set_field(rows, start, "suiteVersion", "1.0"))
    add(
        "suite-unknown",
        lambda rows: set_field(rows, start, "suiteId", '"acme.no.such"'),
        flag=False,
    )
    # event types

    def set_type(value: str | None):
        def fn(rows: list[dict[str, Any]]) -> None:
            rows[index_of(rows, "eval.scored")]["type"] = value

        return fn

    add("type-null", set_type(None))
    add("type-unknown", set_type("eval.scored.v9"))
    add("type-uppercase", set_type("EVAL.SCORED"))
    add("type-trailing-space", set_type("eval.scored "))

    # payloads
    def payload(text: str | None):
        def fn(rows: list[dict[str, Any]]) -> None:
            rows[index_of(rows, "eval.scored")]["payload"] = text

        return fn

    base_scored = '"taskId":"order-status","score":1.0,"passed":true,"trialIndex":0'
    for name, text in [
        ("array", "[1,2]"),
        ("string", '"x"'),
        ("number", "7"),
        ("json-null", "null"),
        ("not-json-marker", f'{{"note":"{MARKER}'),
        ("empty", ""),
        ("column-null", None),
        ("duplicate-keys", f'{{{base_scored},"score":0.0}}'),
        ("trailing-comma", f"{{{base_scored},}}"),
        ("bom", f"\ufeff{{{base_scored}}}"),
        ("nul-escape", f'{{{base_scored},"taskId":"order\\u0000status"}}'),
        ("lone-surrogate", f'{{{base_scored},"note":"\\ud800"}}'),
    ]:
        # a key repeated in a payload is JSON, the last one counting (D-7, E-26): no fault
        add(f"payload-{name}", payload(text), flag=name not in ("bom", "duplicate-keys"))
    add(
        "payload-10MB-string",
        lambda rows: set_field(rows, "eval.scored", "blob", json.dumps("b" * (10 << 20))),
        flag=False,
    )
    # timestamps

    def stamps(value: str):
        def fn(rows: list[dict[str, Any]]) -> None:
            for row in rows:
                row["timestamp"] = value

        return fn

    for name, value in [
        ("garbage", "not-a-time"),
        ("year-0", "0000-01-01T00:00:00Z"),
        ("year-9999-nanos", "9999-12-31T23:59:59.999999999Z"),
        ("epoch-number", "1700000000"),
        ("empty", ""),
    ]:
        add(f"timestamp-{name}", stamps(value), flag=False)
    # run ids

    def run_ids(value: str):
        return lambda rows: with_run_id(rows, value)

    for name, value in [
        ("ansi", "acme/\x1b[31mred\x1b[0m-run"),
        ("newline", "acme/a\nb"),
        ("cr", "acme/a\rb"),
        ("nul", "acme/a\x00b"),
        ("long", "acme/" + "r" * 100000),
        ("rtl", "acme/\u202egnp.exe"),
        ("zero-width", "acme/hostile\u200b-zw"),
        ("homoglyph", "\u0430cme/run-trials-k2-0001"),
        ("empty", ""),
        ("dotdot", "../../../../tmp/evil"),
        ("space", " "),
    ]:
        add(f"runId-{name}", run_ids(value), flag=name in ("empty", "space"))

    def nfc_nfd(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        nfc = unicodedata.normalize("NFC", "acme/caf\u00e9")
        nfd = unicodedata.normalize("NFD", nfc)
        return with_run_id(rows, nfc) + with_run_id(rows, nfd)

    add("runId-nfc-nfd-twins", nfc_nfd, flag=False)
    # tool calls

    def tool(key: str, raw: str):
        return lambda rows: set_field(rows, "agent.tool-called", key, raw, 1)

    add("toolName-number", tool("toolName", "42"), flag=False)
    add("toolName-null", tool("toolName", "null"), flag=False)
    add("toolName-object", tool("toolName", json.dumps({"x": MARKER})), flag=False)
    add("toolName-1MB", tool("toolName", json.dumps("t" * (1 << 20) + MARKER)), flag=False)
    add("inputs-string-marker", tool("inputs", json.dumps(f"{MARKER} raw")), flag=False)

    def forbidden_marker(rows: list[dict[str, Any]]) -> None:
        for row in rows:
            if row["type"] == "agent.tool-called" and "billing:refund-all" in row["payload"]:
                row["payload"] = row["payload"].replace("billing:refund-all", f"{MARKER}:x")

    add("toolName-forbidden-marker", forbidden_marker, flag=False)
    if ws.quick:
        specs = specs[::4]
    return specs


# ---- more checks used above


def same_summaries(out: Path, reference: Path, run_id: str | None) -> Check:
    """`out` graded the same runs to the same summaries as `reference` (one run, or all)."""

    def same(_case: Case, outcome: Outcome) -> list[str]:
        if outcome.rc != 0:
            return []
        mine = {
            json.loads(ln)["runId"]: ln for ln in (out / "summaries.jsonl").read_text().splitlines()
        }
        ref = {
            json.loads(ln)["runId"]: ln
            for ln in (reference / "summaries.jsonl").read_text().splitlines()
        }
        if run_id is not None:
            ref = {run_id: ref[run_id]}
        if mine != ref:
            return [
                f"graded {sorted(mine)} where the input once holds {sorted(ref)}"
                if set(mine) != set(ref)
                else "summaries differ from one reading"
            ]
        return []

    return same


def verdict_count(expected: int) -> Check:
    def counted(_case: Case, outcome: Outcome) -> list[str]:
        m = re.search(r"^verdict: \S+ \((\d+) eval runs?", text_of(outcome.stdout), re.M)
        if m and int(m[1]) != expected:
            return [f"verdict over {m[1]} eval runs, the input holds {expected}"]
        return []

    return counted


def inputs_intact(directory: Path, original: Path) -> Check:
    def intact(_case: Case, _outcome: Outcome) -> list[str]:
        reasons = []
        for src in original.glob("*.parquet"):
            mine = directory / src.name
            if not mine.is_file() or sha256_file(mine) != sha256_file(src):
                reasons.append(f"input {src.name} was changed or removed")
        return reasons

    return intact


def ingest_events(out: Path, expected: int) -> Check:
    def counted(_case: Case, outcome: Outcome) -> list[str]:
        if outcome.rc != 0:
            return []
        keys = set()
        for part in out.rglob("part-*.parquet"):
            if "runId=" not in str(part) and "runKey=" not in str(part):
                continue
            t = pq.read_table(part, columns=["runId", "sequence"])
            keys |= set(zip(t.column(0).to_pylist(), t.column(1).to_pylist(), strict=True))
        if len(keys) != expected:
            return [f"{len(keys)} distinct events under {out.name}, the input holds {expected}"]
        return []

    return counted


def report_claims(out: Path, html: Path) -> Check:
    """A report says "no regression" only when some run was compared with a baseline."""

    def claims(_case: Case, outcome: Outcome) -> list[str]:
        if outcome.rc != 0 or not html.is_file():
            return []
        runs = pq.read_table(out / "runs.parquet").to_pylist()
        compared = [r for r in runs if r["regression_verdict"] is not None]
        page = html.read_text(errors="replace")
        if not compared and re.search(r"no regression", page, re.I):
            return ["report says 'No regression' but no run was compared with a baseline"]
        regressed = [r for r in compared if r["regression_verdict"] == "regressed"]
        if regressed and re.search(r"no regression", page, re.I):
            return ["report says 'No regression' while a run regressed"]
        return []

    return claims


# ------------------------------------------------------------------------------------------
# Full disk


@dataclass
class DiskScenario:
    """A command that writes into a directory, with the state it finds there before."""

    name: str
    argv: Callable[[Path], list[str]]
    prepare: Callable[[Path], None]


def disk_scenarios(ws: Workspace) -> list[DiskScenario]:
    s = ["--suites", str(ws.suites)]
    new_events = [str(ws.events), str(ws.s / "regress")]

    def graded(out: Path, report: bool = True) -> None:
        ws.run_setup(["run", str(ws.events), *s, "--out", str(out), "-q"])
        if report:
            ws.run_setup(["report", str(out), "-q"])

    def graded_incremental(out: Path) -> None:
        ws.run_setup(["run", str(ws.events), *s, "--out", str(out), "-q", "--incremental"])

    def ingested(out: Path) -> None:
        ws.run_setup(["ingest", str(ws.ndjson), "--out", str(out), "-q"])

    def graded_with_files(out: Path) -> None:
        graded(out, report=False)
        ws.run_setup(["run", *new_events, *s, "--out", str(out), "-q"])
        ws.run_setup(["report", str(out), "-q"])
        ws.run_setup(["export", "otel", str(out), "-q"])
        ws.run_setup(
            [
                "export",
                "eee",
                str(out),
                "--model-id",
                "acme/a",
                "--org",
                "acme",
                "--retrieved-at",
                "1793620800",
                "-q",
            ]
        )
        (out / "q.csv").write_text("old\n")

    return [
        DiskScenario("run", lambda o: ["run", *new_events, *s, "--out", str(o)], graded),
        DiskScenario(
            "run-incremental",
            lambda o: ["run", *new_events, *s, "--out", str(o), "--incremental"],
            graded_incremental,
        ),
        DiskScenario(
            "ingest", lambda o: ["ingest", str(ws.regress_ndjson), "--out", str(o)], ingested
        ),
        DiskScenario(
            "report", lambda o: ["report", str(o), "--title", "new " * 50], graded_with_files
        ),
        DiskScenario(
            "export-otel",
            lambda o: [
                "export",
                "otel",
                str(o),
                *(x for e in new_events for x in ("--events", e)),
                "--service-name",
                "x" * 300,
            ],
            graded_with_files,
        ),
        DiskScenario(
            "export-eee",
            lambda o: [
                "export",
                "eee",
                str(o),
                "--model-id",
                "acme/b",
                "--org",
                "acme",
                "--retrieved-at",
                "1793620801",
            ],
            graded_with_files,
        ),
        DiskScenario(
            "sql-out",
            lambda o: [
                "sql",
                str(o),
                "-e",
                "SELECT * FROM trials, range(20)",
                "--format",
                "csv",
                "--out",
                str(o / "q.csv"),
            ],
            graded_with_files,
        ),
    ]


def snapshot(directory: Path) -> dict[str, str]:
    """Every file below `directory` (hidden ones too) and its sha256; directories as 'dir'."""
    snap: dict[str, str] = {}
    if not directory.exists():
        return snap
    for path in sorted(directory.rglob("*")):
        rel = str(path.relative_to(directory))
        if path.is_symlink():
            snap[rel] = "link"
        elif path.is_dir():
            snap[rel] = "dir"
        elif path.is_file():
            snap[rel] = sha256_file(path)
    return snap


def diff_snap(before: dict[str, str], after: dict[str, str]) -> str:
    added = sorted(set(after) - set(before))
    gone = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    parts = []
    for label, names in (("added", added), ("removed", gone), ("changed", changed)):
        if names:
            parts.append(f"{label} {', '.join(names[:6])}{' ...' if len(names) > 6 else ''}")
    return "; ".join(parts) or "same"


def fill_disk(mount: Path, leave: int) -> None:
    stat = os.statvfs(mount)
    free = stat.f_bavail * stat.f_frsize
    size = max(0, free - leave)
    with (mount / "filler").open("wb", buffering=0) as handle:
        block = b"\0" * (1 << 20)
        try:
            while size > 0:
                n = handle.write(block[: min(len(block), size)])
                size -= n
            if leave == 0:
                while True:
                    handle.write(b"\0" * 4096)
                    handle.flush()
        except OSError:
            pass


def disk_runner(ws: Workspace, scenario: DiskScenario, mode: str, amount: int):
    def run(case: Case) -> tuple[Outcome, list[str]]:
        base = ws.root / "disk" / slug(case.cid)
        base.mkdir(parents=True, exist_ok=True)
        reasons: list[str] = []
        mounted = False
        if mode in ("tmpfs", "ro"):
            mounted = ws.mount_tmpfs(base, "8m")
            if not mounted:
                raise RuntimeError("tmpfs mount failed")
        out = base / "out"
        try:
            scenario.prepare(out)
            before = snapshot(out)
            fsize = None
            if mode == "tmpfs":
                fill_disk(base, amount)
            elif mode == "ro":
                subprocess.run(["mount", "-o", "remount,ro", str(base)], check=True)
            elif mode == "chmod":
                os.chmod(out, 0o555)
            elif mode == "fsize":
                fsize = amount
            argv = [*ws.evalbatch, *scenario.argv(out)]
            case.argv = scenario.argv(out)
            outcome = spawn(argv, cwd=ws.scratch, env=ws.env, fsize=fsize)
            after = snapshot(out)
            if outcome.rc == 4:
                if after != before:
                    reasons.append(
                        f"exit 4 but the output directory changed: {diff_snap(before, after)}"
                    )
            elif outcome.rc == 0:
                reasons.extend(scenario_complete(scenario, out, outcome))
            else:
                reasons.append(
                    f"exit {outcome.rc} on a write failure, expected 4 (or 0 when it fit)"
                )
            if outcome.rc == 4 and not re.search(
                r"No space|Read-only|File too large|"
                r"Permission denied|could not be written",
                text_of(outcome.stderr),
            ):
                reasons.append("exit 4 without naming the OS's reason")
            # the retry with room to write
            if mode == "tmpfs":
                (base / "filler").unlink(missing_ok=True)
            elif mode == "ro":
                subprocess.run(["mount", "-o", "remount,rw", str(base)], check=True)
            elif mode == "chmod":
                os.chmod(out, 0o755)
            retry = spawn(argv, cwd=ws.scratch, env=ws.env)
            if retry.rc not in (0, 1):
                reasons.append(
                    f"retry with room: exit {retry.rc}: {text_of(retry.stderr).strip()[:160]}"
                )
            else:
                reasons.extend(f"retry: {r}" for r in scenario_complete(scenario, out, retry))
            return outcome, reasons
        finally:
            if mounted:
                ws.umount(base)

    return run


def scenario_complete(scenario: DiskScenario, out: Path, outcome: Outcome) -> list[str]:
    leftovers = (
        [
            p.name
            for p in out.iterdir()
            if p.name.startswith((".evalbatch-", ".ingest-", ".tmp"))
            or p.name.endswith((".tmp", ".partial"))
        ]
        if out.is_dir()
        else []
    )
    reasons = [f"left behind: {', '.join(leftovers)}"] if leftovers else []
    if scenario.name.startswith("run"):
        try:
            for table in OUTPUT_TABLES:
                pq.read_table(out / f"{table}.parquet")
            if summaries_count(out) < 5:
                reasons.append(
                    f"exit {outcome.rc} but summaries.jsonl holds {summaries_count(out)} of 5 runs"
                )
        except Exception as exc:
            reasons.append(f"exit {outcome.rc} but the outputs are not whole: {exc!r}"[:200])
    return reasons


# ------------------------------------------------------------------------------------------
# kill -9

#: the marker a run keeps in its output directory while it renames its files into place (E-119)
INCOMPLETE = "outputs-incomplete"
#: the marker an ingest keeps in its output directory while it links parts into place (E-122)
INGEST_MARKER = "_INGEST_INCOMPLETE"


@dataclass
class KillScenario:
    name: str
    events: Path
    extra: list[str]
    syscalls: str

    def argv(self, ws: Workspace, out: Path) -> list[str]:
        if self.name == "ingest":
            return ["ingest", str(self.events.parent / "kill.ndjson"), "--out", str(out), "-q"]
        return [
            "run",
            str(self.events),
            "--suites",
            str(ws.suites),
            "--out",
            str(out),
            "-q",
            *self.extra,
        ]

    def prepare(self, ws: Workspace, out: Path) -> None:
        if self.name == "ingest":
            ws.run_setup(["ingest", str(ws.ndjson), "--out", str(out), "-q"])
            return
        ws.run_setup(
            [
                "run",
                str(ws.events),
                "--suites",
                str(ws.suites),
                "--out",
                str(out),
                "-q",
                *self.extra,
            ]
        )
        ws.run_setup(["report", str(out), "-q", "--title", "old"])

    def state(self, out: Path) -> tuple[Any, list[str]]:
        """What a reader sees (visible files and their content), and faults (a torn part)."""
        faults: list[str] = []
        if self.name == "ingest":
            parts = set()
            for part in sorted(out.rglob("part-*.parquet")):
                rel = part.relative_to(out)
                if any(p.startswith(".") for p in rel.parts):
                    continue
                try:
                    meta = pq.read_metadata(part).metadata or {}
                    pq.read_table(part)
                except Exception as exc:
                    faults.append(f"torn part {rel}: {exc!r}"[:160])
                    continue
                parts.add((rel.parts[0], meta.get(b"evalbatch.ingest.sha256", b"?").decode()))
            return frozenset(parts), faults
        visible = {k: v for k, v in snapshot(out).items() if not k.startswith(".")}
        return visible, faults

    def compare(self, state: Any, old: Any, new: Any) -> str:
        """'old outputs', 'new outputs', 'MIXED', or what is stale. The files made from the
        tables (report.html, the exports) may be gone after a kill, never beside new tables."""
        if self.name == "ingest":
            return "old outputs" if state == old else "new outputs" if state == new else "MIXED"
        derived = ("report.html", "otel-evaluations.jsonl", "eee.jsonl")
        if INCOMPLETE in state:
            # E-119: a run died between its first and last rename; every reader must refuse it
            return "marked incomplete"

        def core(snap: dict[str, str]) -> dict[str, str]:
            return {k: v for k, v in snap.items() if k not in (*derived, "manifest.json")}

        made = sorted(k for k in state if k in derived)
        manifest = state.get("manifest.json")
        # an incremental run removes the old manifest first and writes the new one last: a
        # directory without one is whole (the next incremental run regrades every run)
        if core(state) == core(old) and manifest in (None, old.get("manifest.json")):
            if any(state[k] != old.get(k) for k in made):
                return "stale: a derived file changed"
            gone = sorted({k for k in old if k in derived} - set(made))
            gone += ["manifest.json"] if manifest is None and "manifest.json" in old else []
            return "old outputs" + (f" ({', '.join(gone)} removed)" if gone else "")
        if core(state) == core(new) and manifest in (None, new.get("manifest.json")):
            if made:
                return f"stale: {', '.join(made)} of the old tables beside the new ones"
            return "new outputs"
        return "MIXED"

    def leftovers(self, out: Path) -> list[str]:
        return sorted(
            p.name
            for p in out.iterdir()
            if (p.name.startswith(".") and p.name != ".evalbatch.lock") or p.name == INGEST_MARKER
        )

    def refused_as_interrupted(self, ws: Workspace, out: Path) -> bool:
        """An ingest's half-linked directory is acceptable only while it holds the ingest's
        marker and a reader refuses it as interrupted (E-122), never grades it."""
        if self.name != "ingest" or not (out / INGEST_MARKER).is_file():
            return False
        probe = spawn(
            [
                *ws.evalbatch,
                "run",
                str(out),
                "--suites",
                str(ws.suites),
                "--out",
                str(out.parent / "probe"),
                "-q",
            ],
            cwd=ws.scratch,
            env=ws.env,
        )
        return probe.rc == 2 and "interrupted" in text_of(probe.stderr)


def kill_inputs(ws: Workspace) -> Path:
    """Many runs (each sample run copied), big enough that grading takes a few seconds."""
    base = [r for f in sorted(ws.events.glob("*.parquet")) for r in read_rows(f)]
    base += read_rows(ws.baseline) + read_rows(ws.candidate)
    copies = 60 if ws.quick else 150
    rows: list[dict[str, Any]] = []
    for copy in range(copies):
        rows += [{**r, "runId": f"{r['runId']}-k{copy:04d}"} for r in base]
    path = write_rows(ws.file("kill", "events.parquet"), rows)
    with (path.parent / "kill.ndjson").open("w") as handle:
        for row in rows:
            handle.write(event_line(row) + "\n")
    return path


_REFERENCE: dict[str, Any] = {}
_REFERENCE_LOCK = threading.Lock()


def kill_reference(ws: Workspace, scenario: KillScenario) -> tuple[Any, Any, float]:
    """The old state, the new state and the time a clean run takes."""
    with _REFERENCE_LOCK:
        if scenario.name not in _REFERENCE:
            out = ws.root / "kill" / f"_reference-{scenario.name}"
            scenario.prepare(ws, out)
            old, _ = scenario.state(out)
            outcome = spawn([*ws.evalbatch, *scenario.argv(ws, out)], cwd=ws.scratch, env=ws.env)
            if outcome.rc not in (0, 3):
                raise SystemExit(f"kill reference run failed: {text_of(outcome.stderr)}")
            new, _ = scenario.state(out)
            _REFERENCE[scenario.name] = (old, new, outcome.wall)
        return _REFERENCE[scenario.name]


def kill_runner(ws: Workspace, scenario: KillScenario, trigger: tuple[str, float]):
    def run(case: Case) -> tuple[Outcome, list[str]]:
        old, new, clean_wall = kill_reference(ws, scenario)
        out = ws.root / "kill" / slug(case.cid) / "out"
        scenario.prepare(ws, out)
        argv = scenario.argv(ws, out)
        case.argv = argv
        notes = f"(a clean run takes {clean_wall:.1f} s)"
        if trigger[0] == "time":
            killed = spawn(
                [*ws.evalbatch, *argv], cwd=ws.scratch, env=ws.env, kill_after=trigger[1]
            )
        else:
            sys_set = (
                "rename,renameat,renameat2"
                if scenario.syscalls == "rename"
                else "link,linkat,rename,renameat,renameat2"
            )
            wrapper = [
                "strace",
                "-f",
                "-qq",
                "-o",
                "/dev/null",
                "-e",
                f"trace={sys_set}",
                "-e",
                f"inject={sys_set}:signal=KILL:when={int(trigger[1])}",
            ]
            killed = spawn([*wrapper, *ws.evalbatch, *argv], cwd=ws.scratch, env=ws.env)
        state, faults = scenario.state(out)
        reasons = list(faults)
        finished = killed.rc in (0, 3)
        where = scenario.compare(state, old, new)
        if where.startswith("stale"):
            reasons.append(where)
        elif where == "marked incomplete":
            probe = spawn(
                [*ws.evalbatch, "sql", str(out), "-e", "SELECT count(*) FROM runs"],
                cwd=ws.scratch,
                env=ws.env,
            )
            if probe.rc != 2 or "interrupted" not in text_of(probe.stderr):
                reasons.append(
                    f"sql reads a directory marked incomplete: exit {probe.rc}: "
                    + " ".join(text_of(probe.stdout + probe.stderr).split())[:120]
                )
        elif where != "MIXED":
            pass
        elif scenario.refused_as_interrupted(ws, out):
            where = "half-linked, marked interrupted and refused by readers"
        else:
            where = "MIXED"
            if scenario.name == "ingest":
                added = len(state - old) if isinstance(state, frozenset) else "?"
                total = len(new - old) if isinstance(new, frozenset) else "?"
                reasons.append(
                    f"half-written: {added} of {total} new parts in place after "
                    "the kill (neither the old directory nor the new one)"
                )
            else:
                olds = sorted(k for k in state if old.get(k) == state[k])
                news = sorted(k for k in state if new.get(k) == state[k] and k not in olds)
                reasons.append(
                    f"half-written: new {', '.join(news) or '-'}; old "
                    f"{', '.join(olds) or '-'}; "
                    f"{', '.join(sorted(set(state) - set(olds) - set(news))) or ''}".rstrip("; ")
                )
            # what a reader makes of it now
            probe = (
                spawn(
                    [
                        *ws.evalbatch,
                        "sql",
                        str(out),
                        "-e",
                        "SELECT (SELECT count(*) FROM runs) AS runs, "
                        "(SELECT count(DISTINCT run_id) FROM tasks) AS task_runs",
                    ],
                    cwd=ws.scratch,
                    env=ws.env,
                )
                if scenario.name != "ingest"
                else None
            )
            if probe is not None and probe.rc == 0:
                reasons.append(
                    "sql reads the mixed directory without complaint: "
                    + " ".join(text_of(probe.stdout).split())[:120]
                )
        left = scenario.leftovers(out)
        recovery = spawn([*ws.evalbatch, *argv], cwd=ws.scratch, env=ws.env)
        state2, faults2 = scenario.state(out)
        if recovery.rc not in (0, 3):
            reasons.append(
                f"next run did not recover: exit {recovery.rc}: "
                f"{text_of(recovery.stderr).strip()[:160]}"
            )
        elif state2 != new:
            reasons.append("next run left outputs that differ from a clean run's")
        reasons.extend(f"after recovery: {f}" for f in faults2)
        still = scenario.leftovers(out)
        if still:
            reasons.append(f"left behind after the next run: {', '.join(still)}")
        recovery.argv = argv
        case.why = (
            f"killed at {killed.wall:.2f} s {notes}: {where}"
            f"{'; the command had finished' if finished else ''}"
            f"{'; left ' + ', '.join(left) if left else ''}"
        )
        return recovery, reasons

    return run


# ------------------------------------------------------------------------------------------
# Running and reporting


def run_case(ws: Workspace, case: Case) -> Result:
    try:
        if case.before is not None:
            case.before()
        if case.custom is not None:
            outcome, extra = case.custom(case)
        else:
            outcome = spawn(
                [*ws.evalbatch, *case.argv],
                cwd=ws.scratch,
                env=ws.env,
                stdin=case.stdin,
                fsize=case.fsize,
                timeout=case.timeout,
            )
            extra = []
    except SystemExit:
        raise
    except Exception as exc:
        outcome = Outcome(
            argv=case.argv,
            rc=-999,
            wall=0.0,
            rss_mb=0.0,
            stdout=b"",
            stderr=f"harness error: {exc!r}".encode(),
        )
        return Result(case, outcome, [f"harness could not run the case: {exc!r}"[:200]])
    reasons = generic_reasons(case, outcome) + extra
    return Result(case, outcome, list(dict.fromkeys(reasons)))


def cross_checks(results: list[Result]) -> None:
    """One input, one answer: exit 0 (pass, agree, unchanged, ingested) where another command
    refused or skipped the same input (exit 2 or 3); and the native and DuckDB extractors must
    grade alike."""
    groups: dict[str, list[Result]] = defaultdict(list)
    for result in results:
        if result.case.group:
            groups[result.case.group].append(result)
    for members in groups.values():
        faults = [
            r
            for r in members
            if r.case.role
            in ("run", "verify", "conformance", "explain", "regress", "ingest", "validate")
            and r.outcome.rc in INPUT_FAULT
            and not (r.case.role == "regress" and r.outcome.rc == 3)
        ]
        for r in members:
            if r.outcome.rc != 0 or r.case.role not in (
                "run",
                "verify",
                "conformance",
                "explain",
                "regress",
                "validate",
            ):
                continue
            others = [f for f in faults if f.case.role != r.case.role]
            if others:
                f = others[0]
                r.reasons.append(
                    f"one input, one answer: exit 0 here, while {f.case.role} exits "
                    f"{f.outcome.rc} on the same input ({first_line(f.outcome)})"
                )
        native = next((r for r in members if r.case.role == "run"), None)
        duck = next((r for r in members if r.case.role == "run-duckdb"), None)
        if native and duck:
            a, b = run_out(native.case), run_out(duck.case)
            if native.outcome.rc != duck.outcome.rc:
                duck.reasons.append(
                    f"extractors disagree: native exit {native.outcome.rc}, "
                    f"duckdb exit {duck.outcome.rc}"
                )
            elif (
                a
                and b
                and (a / "summaries.jsonl").is_file()
                and (a / "summaries.jsonl").read_bytes() != (b / "summaries.jsonl").read_bytes()
            ):
                duck.reasons.append("extractors disagree: summaries.jsonl differs")
            elif a and b and problem_codes(a) != problem_codes(b):
                duck.reasons.append(
                    f"extractors disagree on problems: native "
                    f"{problem_codes(a)}, duckdb {problem_codes(b)}"
                )


def run_out(case: Case) -> Path | None:
    if "--out" in case.argv:
        return Path(case.argv[case.argv.index("--out") + 1])
    return None


def problem_codes(out: Path) -> list[str]:
    path = out / "problems.parquet"
    if not path.is_file():
        return []
    return sorted(pq.read_table(path, columns=["code"]).column(0).to_pylist())


def first_line(outcome: Outcome) -> str:
    for line in text_of(outcome.stderr).splitlines() + text_of(outcome.stdout).splitlines():
        if line.strip():
            return line.strip()[:120]
    return "no message"


def display_argv(ws: Workspace, argv: list[str]) -> str:
    text = shlex.join(["evalbatch", *argv]).replace(str(ws.root), "$WS")
    text = text.encode("unicode_escape").decode("ascii")
    return text if len(text) < 400 else text[:380] + f"... ({len(text)} chars)"


def print_summary(ws: Workspace, results: list[Result]) -> None:
    by_cat: dict[str, Counter[str]] = defaultdict(Counter)
    by_cmd: dict[str, Counter[str]] = defaultdict(Counter)
    for r in results:
        by_cat[r.case.category][r.verdict] += 1
        by_cmd[r.case.command][r.verdict] += 1
    print()
    print(f"{'category':<22}{'cases':>7}{'ok':>7}{'FAIL':>7}")
    for cat in CATEGORIES:
        c = by_cat.get(cat, Counter())
        print(f"{cat:<22}{sum(c.values()):>7}{c['ok']:>7}{c['FAIL']:>7}")
    tot = Counter(r.verdict for r in results)
    print(f"{'total':<22}{len(results):>7}{tot['ok']:>7}{tot['FAIL']:>7}")
    print()
    print(f"{'command':<22}{'cases':>7}{'ok':>7}{'FAIL':>7}")
    for cmd in sorted(by_cmd):
        c = by_cmd[cmd]
        print(f"{cmd:<22}{sum(c.values()):>7}{c['ok']:>7}{c['FAIL']:>7}")
    rss = max((r.outcome.rss_mb for r in results), default=0)
    slow = max(results, key=lambda r: r.outcome.wall, default=None)
    print(
        f"\npeak RSS of any child: {rss:.0f} MB; slowest: "
        f"{slow.case.cid if slow else '-'} ({slow.outcome.wall if slow else 0:.1f} s)"
    )
    fails = [r for r in results if r.reasons]
    if fails:
        print(f"\nFAIL ({len(fails)}):")
    for r in fails:
        o = r.outcome
        print(
            f"FAIL [{r.case.category}] {r.case.cid}: exit {o.rc}, {o.wall:.1f} s, {o.rss_mb:.0f} MB"
        )
        n = len(ws.evalbatch)
        shown = o.argv[n:] if o.argv[:n] == ws.evalbatch else r.case.argv
        print(f"    $ {display_argv(ws, shown)}")
        for reason in r.reasons:
            print(f"    - {reason.encode('unicode_escape').decode('ascii')[:300]}")
        if r.case.why and r.case.category == "kill-9":
            print(f"    ({r.case.why})")


def write_json(path: Path, ws: Workspace, results: list[Result], started: float) -> None:
    doc = {
        "evalbatch": ws.evalbatch,
        "quick": ws.quick,
        "seconds": round(time.time() - started, 1),
        "marker": MARKER,
        "counts": {
            cat: dict(Counter(r.verdict for r in results if r.case.category == cat))
            for cat in CATEGORIES
        },
        "cases": [
            {
                "id": r.case.cid,
                "category": r.case.category,
                "command": r.case.command,
                "argv": display_argv(ws, r.case.argv),
                "exitCode": r.outcome.rc,
                "wallSeconds": round(r.outcome.wall, 3),
                "peakRssMb": round(r.outcome.rss_mb, 1),
                "timedOut": r.outcome.timed_out,
                "traceback": b"Traceback (most recent call last)"
                in r.outcome.stdout + r.outcome.stderr,
                "internalError": b"internal error" in r.outcome.stdout + r.outcome.stderr,
                "leak": any(x.startswith("leak") for x in r.reasons),
                "verdict": r.verdict,
                "reasons": r.reasons,
                "note": r.case.why,
                "stderr": text_of(r.outcome.stderr)[-600:],
            }
            for r in results
        ],
    }
    path.write_text(json.dumps(doc, indent=1))


def build_plan(ws: Workspace, categories: list[str], only: str | None) -> list[Case]:
    plan = Plan(ws)
    builders = {
        "malformed": plan.malformed,
        "hostile-values": plan.hostile_values,
        "deep-nesting": plan.deep_nesting,
        "decompression": plan.decompression,
        "same-path": plan.same_path,
        "output-inside-input": plan.output_inside_input,
        "full-disk": plan.full_disk,
        "kill-9": plan.kill9,
        "bad-options": plan.bad_options,
    }
    for name, build in builders.items():
        if name in categories:
            build()
    cases = plan.cases
    if only:
        cases = [c for c in cases if re.search(only, f"{c.category}:{c.cid}")]
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run evalbatch on hostile inputs and judge every outcome.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--evalbatch",
        default=DEFAULT_EVALBATCH,
        help=f"the evalbatch command (split like a shell would): default {DEFAULT_EVALBATCH}",
    )
    parser.add_argument(
        "--samples",
        type=Path,
        default=None,
        help="the sample inputs (default: data/samples of the checkout holding the harness)",
    )
    parser.add_argument("--quick", action="store_true", help="a subset of every family")
    parser.add_argument("--json", type=Path, default=None, help="also write a JSON report")
    parser.add_argument(
        "--categories",
        default=",".join(CATEGORIES),
        help="comma-separated families to build and run (default: all): " + ", ".join(CATEGORIES),
    )
    parser.add_argument(
        "--only", default=None, help="a regular expression on 'category:case-id' choosing cases"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=3,
        help="cases run at once (default 3), besides the decompression, full-disk and kill-9 "
        "cases, which run one after another",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT,
        help="seconds before a case counts as hung (default 120)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="build in this directory and keep it (default: a temporary one)",
    )
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args(argv)

    evalbatch = shlex.split(args.evalbatch)
    samples = args.samples
    if samples is None:
        samples = Path(__file__).resolve().parent.parent / "data" / "samples"
    if not (samples / "events").is_dir():
        print(f"hostile_review: no samples at {samples}", file=sys.stderr)
        return 2
    if shutil.which(evalbatch[0]) is None and not Path(evalbatch[0]).exists():
        print(f"hostile_review: cannot find {evalbatch[0]}", file=sys.stderr)
        return 2
    started = time.time()
    root = args.keep or Path(tempfile.mkdtemp(prefix="hostile-review-"))
    if args.keep and root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    ws = Workspace(root.resolve(), samples, evalbatch, args.quick)

    stopping = threading.Event()

    def stop(signum: int, _frame: Any) -> None:  # unmount and clean up on SIGTERM too
        stopping.set()  # the cases not yet started are not started
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        print(f"building inputs in {ws.root} ...", flush=True)
        ws.prepare()
        categories = [c.strip() for c in args.categories.split(",") if c.strip()]
        unknown = sorted(set(categories) - set(CATEGORIES))
        if unknown:
            print(f"hostile_review: unknown categories {unknown}", file=sys.stderr)
            return 2
        cases = build_plan(ws, categories, args.only)
        for case in cases:
            case.timeout = min(case.timeout, args.timeout)
        if args.list:
            for case in cases:
                print(f"{case.category:<20} {case.cid}")
            print(f"{len(cases)} cases")
            return 0
        print(f"running {len(cases)} cases with {args.jobs} at once ...", flush=True)
        results: list[Result] = []
        done = [0]
        lock = threading.Lock()

        def one(case: Case) -> Result:
            if stopping.is_set():
                raise SystemExit(2)
            result = run_case(ws, case)
            with lock:
                done[0] += 1
                if result.reasons or done[0] % 50 == 0:
                    mark = "FAIL" if result.reasons else "ok"
                    print(
                        f"  [{done[0]}/{len(cases)}] {mark} {case.category} {case.cid} "
                        f"(exit {result.outcome.rc}, {result.outcome.wall:.1f} s)",
                        flush=True,
                    )
            return result

        parallel = [c for c in cases if not c.serial]
        serial = [c for c in cases if c.serial]
        # the cases that mount, kill or inflate run one at a time, beside the others
        with ThreadPoolExecutor(max_workers=1) as alone:
            in_turn = alone.submit(lambda: [one(case) for case in serial])
            with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                results.extend(pool.map(one, parallel))
            results.extend(in_turn.result())
        order = {c.cid: i for i, c in enumerate(cases)}
        results.sort(key=lambda r: order[r.case.cid])
        cross_checks(results)
        print_summary(ws, results)
        if args.json:
            write_json(args.json, ws, results, started)
            print(f"\nwrote {args.json}")
        print(f"\n{len(results)} invocations in {time.time() - started:.0f} s")
        return 1 if any(r.reasons for r in results) else 0
    finally:
        ws.cleanup()
        if args.keep is None:
            shutil.rmtree(ws.root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
