"""Benchmark: `evalbatch history` over a month of nights, each night many runs of one suite.

N nights (default 30) of R runs each (1,000 and 10,000 are the sizes that matter), every run 20
tasks × 3 trials of one suite, each night graded by `evalbatch run` (this checkout) into its own
output directory DATA/nights-R/nNN/; then, as whole commands in child processes:

    evalbatch history DATA/nights-R/n* --json > /dev/null
    evalbatch history DATA/nights-R/n* > FILE            # the terminal tables; FILE's size kept

each timed by the operating system (wall clock and CPU; peak RSS of the process tree from wait4,
as in bench/run.py), stopped after --timeout seconds and then recorded as timed out, not failed
(and stopped too once it holds more than --max-rss GB, 80% of the memory by default, so an old
`history` cannot take the machine's memory).

    python bench/history_scale.py                                # 30 nights × 1,000 runs
    python bench/history_scale.py --runs 1000 10000 --timeout 900
    python bench/history_scale.py --vs /tmp/before               # two checkouts, interleaved
    python bench/history_scale.py --agents 2                     # runs split between two agents
    python bench/history_scale.py --runs 10000 --generate-only   # only make (or check) nights
    python bench/history_scale.py --nights 3 --runs 50           # a quick check

The nights are generated once and kept under DATA (default bench/data, gitignored):
DATA/nights-R/ (`-seedS` with another --seed, `-2agents` with --agents 2), one output directory
per night, the events in between deleted once graded; a night is reused while its recipe (sizes,
seed, the generator's SQL, the shaping below, the output schema version) is unchanged. The
events come from bench/generate_events.sql (DuckDB, seeded), reshaped in the same query, still
vectorized:

- each night's runs get their own ids (`$first_run` = night × R) and start on their own day:
  night n at 2026-11-02 02:00 UTC + n days, its runs spread over 20 hours;
- the suite is the generator's 20 tasks as host-scored golden tasks (no trajectories, which the
  generated calls would almost never match), and each trial's `passed` is redrawn from a pass
  rate per task (1.0 down to 0.0, TASK_RATES) by a hash of the seed and the event id;
  `task-008` breaks on night 20 (0.9 -> 0.3), so there is a change point to find;
- with --agents 2, about half the runs of each night (by a hash of the run id) are made by a
  second target agent (`acme.agents.billing` in place of `acme.agents.support` in every payload
  of the run), whose pass rates are the first's rotated by ten tasks.

With --vs OTHER_CHECKOUT the same commands run from the other checkout too (its code first on
PYTHONPATH, as bench/regress_changes.py does), in interleaved rounds, so before and after come
from one run on one machine (the nights are graded by this checkout, so the other must read its
output schema version). The markdown table printed at the end, with the command line that
produced it, can be pasted into bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench_run  # the benchmark's generator, children and header

#: every run: the generator's shape A, 20 tasks × 3 trials
TASKS, TRIALS = bench_run.TASKS, bench_run.TRIALS
SUITE_ID = "acme.bench.evals.support"
#: runs per generated Parquet file (about 2M events, as bench/run.py's shape A)
RUNS_PER_FILE = 2000
#: night 0 starts here; night n n days later; a night's runs start over SPREAD_MS
FIRST_NIGHT = datetime(2026, 11, 2, 2, 0)
SPREAD_MS = 20 * 3600 * 1000
#: each task's chance that a trial passes (task-000 always passes, task-019 never)
TASK_RATES: tuple[float, ...] = (
    *(1.0, 1.0, 1.0, 0.99, 0.98, 0.97, 0.95, 0.95, 0.9, 0.9),
    *(0.85, 0.8, 0.75, 0.7, 0.6, 0.5, 0.4, 0.3, 0.1, 0.0),
)
#: the planted change: this task passes BROKEN_RATE of its trials from this night on
BROKEN_TASK, BROKEN_NIGHT, BROKEN_RATE = 8, 20, 0.3
FIRST_AGENT, SECOND_AGENT = "acme.agents.support", "acme.agents.billing"

#: the generator's events, reshaped: the night's day, a pass rate per task, the second agent
RESHAPE = """
WITH generated AS (
{generator}
),
keyed AS (
    SELECT
        *,
        CAST(substr(runId, 16) AS BIGINT) - $night_first_run AS run_in_night,
        $agents = 2 AND hash($seed, runId, 'agent') % 2 = 1 AS second_agent,
        CASE WHEN type = 'eval.scored'
            THEN CAST(regexp_extract(payload, '"taskId":"task-([0-9]+)"', 1) AS INTEGER)
        END AS task_no,
        hash($seed, eventId, 'outcome') AS h
    FROM generated
),
drawn AS (
    SELECT
        *,
        CASE WHEN second_agent THEN replace(payload, $first_agent, $second_agent)
            ELSE payload END AS agent_payload,
        h % 1000 < round(1000 * CASE WHEN second_agent THEN $second_rates[task_no + 1]
            ELSE $first_rates[task_no + 1] END) AS passes
    FROM keyed
)
SELECT
    eventId,
    runId,
    sequence,
    type,
    CASE WHEN type = 'eval.scored' THEN regexp_replace(
        agent_payload,
        '"score":[^,]*,"passed":(true|false)',
        '"score":' || CASE WHEN passes THEN '1.0' ELSE printf('%.2f', (h // 1000 % 50) / 100.0)
            END || ',"passed":' || CASE WHEN passes THEN 'true' ELSE 'false' END
    ) ELSE agent_payload END AS payload,
    strftime(
        CAST($night_start AS TIMESTAMP)
            + to_milliseconds(run_in_night * $spacing_ms + sequence * 20),
        '%Y-%m-%dT%H:%M:%S.%gZ'
    ) AS timestamp,
    schemaVersion
FROM drawn
ORDER BY eventId
"""

COMMANDS = ("json", "table")


# --------------------------------------------------------------------------------------------
# Nights


@dataclass(frozen=True)
class Nights:
    """One set of nights: R runs a night, N nights, the seed and the number of target agents."""

    data: Path
    runs: int
    nights: int
    seed: int
    agents: int

    @property
    def root(self) -> Path:
        seed = "" if self.seed == 1 else f"-seed{self.seed}"
        agents = "" if self.agents == 1 else f"-{self.agents}agents"
        return self.data / f"nights-{self.runs}{seed}{agents}"

    def out_dir(self, night: int) -> Path:
        return self.root / f"n{night:02d}"

    def marker(self, night: int) -> Path:
        """What a night was made of and how long it took; hidden, so `n*` never names it."""
        return self.root / f".n{night:02d}.json"

    @property
    def label(self) -> str:
        agents = "" if self.agents == 1 else f", {self.agents} agents"
        return f"{self.runs:,} runs × {self.nights} nights{agents}"

    def out_dirs(self) -> list[Path]:
        return [self.out_dir(night) for night in range(self.nights)]

    def shown_glob(self) -> str:
        """The nights as a shell names them: `n*` when they are all the directory holds."""
        held = sorted(p.name for p in self.root.glob("n*"))
        wanted = [p.name for p in self.out_dirs()]
        tail = "n*" if held == wanted else f"n{{00..{self.nights - 1:02d}}}"
        return f"{bench_run.shown(self.root)}/{tail}"


def rates(night: int, second_agent: bool) -> list[float]:
    """The pass rate of each task on `night`: TASK_RATES, the planted change, and for the
    second agent the same rates rotated by ten tasks."""
    first = list(TASK_RATES)
    if night >= BROKEN_NIGHT:
        first[BROKEN_TASK] = BROKEN_RATE
    return first[10:] + first[:10] if second_agent else first


def history_suite() -> dict[str, object]:
    """The suite the nights are graded against: host-scored golden tasks, three trials."""
    tasks = [
        {
            "taskId": f"task-{number:03d}",
            "input": {"ticket": f"task-{number:03d}"},
            "expected": {"kind": "golden", "match": {"strategy": "contains", "value": "resolved"}},
        }
        for number in range(TASKS)
    ]
    return {
        "suiteId": SUITE_ID,
        "version": "1.0.0",
        "modes": ["golden"],
        "trials": {"count": TRIALS, "k": TRIALS, "passRule": "all"},
        "thresholds": {"passScore": 0.5},
        "tasks": tasks,
    }


def recipe(nights: Nights, night: int) -> dict[str, object]:
    """Everything a graded night depends on: a cached night is reused only when this matches."""
    from evalbatch.outputs.output_format import SCHEMA_VERSION

    shaping = json.dumps([RESHAPE, history_suite(), TASK_RATES, BROKEN_TASK, BROKEN_NIGHT])
    shaping += json.dumps([BROKEN_RATE, FIRST_AGENT, SECOND_AGENT, str(FIRST_NIGHT), SPREAD_MS])
    return {
        "night": night,
        "runs": nights.runs,
        "tasks": TASKS,
        "trials": TRIALS,
        "seed": nights.seed,
        "agents": nights.agents,
        "generator_sha256": hashlib.sha256(bench_run.generator_query().encode()).hexdigest(),
        "shaping_sha256": hashlib.sha256(shaping.encode()).hexdigest(),
        "schema_version": SCHEMA_VERSION,
    }


def is_cached(nights: Nights, night: int) -> bool:
    marker = nights.marker(night)
    if not marker.exists() or not nights.out_dir(night).is_dir():
        return False
    return bool(json.loads(marker.read_text()).get("recipe") == recipe(nights, night))


def generate_night(nights: Nights, night: int) -> dict[str, object]:
    """Generate one night's events (DuckDB, one query a file), grade them with `evalbatch run`
    into its output directory, delete the events; returns the facts kept in its marker."""
    import duckdb

    out = nights.out_dir(night)
    events = nights.root / f".events-n{night:02d}"
    for stale in (out, events):
        shutil.rmtree(stale, ignore_errors=True)
    nights.marker(night).unlink(missing_ok=True)
    events.mkdir(parents=True)
    suites = nights.root / "suites"
    suites.mkdir(exist_ok=True)
    (suites / "history.json").write_text(json.dumps(history_suite(), indent=2))

    query = RESHAPE.format(generator=bench_run.generator_query())
    start = FIRST_NIGHT + timedelta(days=night)
    started = time.perf_counter()
    con = duckdb.connect()
    for number, offset in enumerate(range(0, nights.runs, RUNS_PER_FILE)):
        params = {
            "first_run": night * nights.runs + offset,  # the generator's: this file's first
            "runs": min(RUNS_PER_FILE, nights.runs - offset),
            "tasks": TASKS,
            "trials": TRIALS,
            "seed": nights.seed,
            "night_first_run": night * nights.runs,
            "agents": nights.agents,
            "first_agent": FIRST_AGENT,
            "second_agent": SECOND_AGENT,
            "first_rates": rates(night, second_agent=False),
            "second_rates": rates(night, second_agent=True),
            "night_start": start.isoformat(sep=" "),
            "spacing_ms": SPREAD_MS // nights.runs,
        }
        path = events / f"part-{number:05d}.parquet"
        con.execute(f"COPY ({query}) TO '{path}' (FORMAT parquet, COMPRESSION zstd)", params)
    (total,) = con.execute(
        f"SELECT count(*) FROM read_parquet('{events}/*.parquet')"
    ).fetchone() or (0,)
    con.close()
    generated = time.perf_counter() - started

    evalbatch = bench_run.shown(Path(sys.executable).with_name("evalbatch"))
    command = [evalbatch, "run", bench_run.shown(events), "--suites", bench_run.shown(suites)]
    command += ["--out", bench_run.shown(out), "--quiet"]
    graded, rss_mb, _ = bench_run.child(f"evalbatch run (night {night})", command)
    shutil.rmtree(events)
    facts = {
        "recipe": recipe(nights, night),
        "events": total,
        "generate_s": round(generated, 2),
        "grade_s": round(graded, 2),
        "grade_rss_mb": round(rss_mb),
        "out_bytes": tree_bytes(out),
    }
    nights.marker(night).write_text(json.dumps(facts))
    return facts


def tree_bytes(path: Path) -> int:
    """Bytes of the files under `path`."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def generate(nights: Nights) -> None:
    """Make every missing night of `nights` (in this process: --generate-only's child)."""
    nights.root.mkdir(parents=True, exist_ok=True)
    for night in range(nights.nights):
        if is_cached(nights, night):
            continue
        facts = generate_night(nights, night)
        print(
            f"{nights.label}: night {night:02d}: {facts['events']:,} events, generated in "
            f"{facts['generate_s']:.1f} s, graded in {facts['grade_s']:.1f} s "
            f"({facts['grade_rss_mb']:,} MB)",
            flush=True,
        )


def ensure_nights(nights: Nights) -> None:
    """Every night of `nights`, generated in a child process when missing, so the timing process
    never holds DuckDB's memory (a child's peak RSS starts at its parent's: bench/run.py)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--make-nights"]
    command += ["--data", str(nights.data), "--runs", str(nights.runs)]
    command += ["--nights", str(nights.nights), "--seed", str(nights.seed)]
    command += ["--agents", str(nights.agents)]
    subprocess.run(command, cwd=bench_run.ROOT, env=bench_run.child_env(), check=True)


def night_facts(nights: Nights) -> dict[str, float]:
    """What making the nights took, from their markers."""
    marks = [json.loads(nights.marker(n).read_text()) for n in range(nights.nights)]
    return {
        "events": sum(m["events"] for m in marks),
        "generate_s": sum(m["generate_s"] for m in marks),
        "grade_s": sum(m["grade_s"] for m in marks),
        "grade_rss_mb": max(m["grade_rss_mb"] for m in marks),
        "out_bytes": sum(m["out_bytes"] for m in marks),
    }


# --------------------------------------------------------------------------------------------
# Timing


@dataclass
class Outcome:
    """One timed command: wall and CPU seconds, peak RSS, and how it ended."""

    wall: float
    cpu: float
    rss_mb: float
    #: the exit code; None when it was stopped
    code: int | None
    #: why it was stopped: "timeout" or "memory" (over --max-rss); None when it ended
    stopped: str | None = None
    #: CPU seconds the rest of the machine used meanwhile (None where /proc/stat is missing)
    others_cpu: float | None = None
    lines: int | None = None
    size: int | None = None
    stderr: str = ""


def busy_seconds() -> float | None:
    """CPU seconds the machine has been busy since boot, all cores (Linux /proc/stat)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    ticks = [int(f) for f in fields]
    idle = ticks[3] + ticks[4]  # idle, iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def count_lines(path: Path) -> tuple[int, int]:
    """Lines and bytes of a file, read in chunks (the table of the old `history` is large)."""
    lines = size = 0
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            lines += chunk.count(b"\n")
            size += len(chunk)
    return lines, size


def group_rss_mb(pgid: int) -> float:
    """Resident MB of the processes of a process group, now (Linux /proc; 0 elsewhere)."""
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:  # after the command's name: state, ppid, pgrp, ..., rss (pages) 22nd
                fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid:
                    total += int(fields[21]) * page
            except (OSError, ValueError, IndexError):  # gone meanwhile
                continue
    return total / 2**20


def memory_total_gb() -> float | None:
    try:
        line = Path("/proc/meminfo").read_text().split("\n", 1)[0]  # MemTotal: N kB
    except OSError:
        return None
    return int(line.split()[1]) / 2**20


def timed(
    command: list[str], env: dict[str, str], out: Path | None, timeout: float, max_rss_gb: float
) -> Outcome:
    """Run `command` as bench/run.py's `child` does (its own process, wall clock, peak RSS from
    wait4: the largest of the process and the children it waited for), stdout to `out` or
    /dev/null, but stopped, with its whole process group, after `timeout` seconds or once the
    group holds more than `max_rss_gb` (0: no limit), so an old `history` cannot take the
    machine's memory; bench/hostile_inputs.py stops its children at a timeout the same way."""
    stopped: list[str] = []
    done = threading.Event()

    def watch(pgid: int, started: float) -> None:
        while not done.wait(0.25):
            if time.perf_counter() - started > timeout:
                stopped.append("timeout")
            elif max_rss_gb and group_rss_mb(pgid) > max_rss_gb * 1024:
                stopped.append("memory")
            else:
                continue
            os.killpg(pgid, signal.SIGKILL)
            return

    with open(out or os.devnull, "wb") as stdout, tempfile.TemporaryFile() as err:
        busy_before = busy_seconds()
        started = time.perf_counter()
        proc = subprocess.Popen(
            command,
            cwd=bench_run.ROOT,
            env=env,
            stdout=stdout,
            stderr=err,
            start_new_session=True,  # its own process group: a stop stops all of it
        )
        watcher = threading.Thread(target=watch, args=(proc.pid, started), daemon=True)
        watcher.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            done.set()
            watcher.join()
        wall = time.perf_counter() - started
        busy_after = busy_seconds()
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    cpu = usage.ru_utime + usage.ru_stime  # of the process and its threads (and children)
    code = None if stopped else proc.returncode
    outcome = Outcome(wall, cpu, usage.ru_maxrss / 1024, code, stderr=stderr)
    outcome.stopped = stopped[0] if stopped else None
    if busy_before is not None and busy_after is not None:
        outcome.others_cpu = max(0.0, busy_after - busy_before - cpu)
    if out is not None:
        outcome.lines, outcome.size = count_lines(out)
    return outcome


def history_command(nights: Nights, kind: str) -> list[str]:
    """`evalbatch history` of the nights, as a user runs it (the shell's glob expanded)."""
    evalbatch = bench_run.shown(Path(sys.executable).with_name("evalbatch"))
    dirs = [bench_run.shown(path) for path in nights.out_dirs()]
    return [evalbatch, "history", *dirs, *(["--json"] if kind == "json" else [])]


def shown_command(nights: Nights, kind: str) -> str:
    """The command as the table prints it: the glob, not the directories."""
    evalbatch = bench_run.shown(Path(sys.executable).with_name("evalbatch"))
    if kind == "json":
        return f"{evalbatch} history {nights.shown_glob()} --json > /dev/null"
    return f"{evalbatch} history {nights.shown_glob()} > FILE"


def checkout_env(checkout: Path) -> dict[str, str]:
    """A child's environment: `checkout`'s code first on the import path; no COLUMNS, so the
    tables written to a file are as wide as they need (evalbatch.commands.printing)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(checkout)
    return env


def commit_of(checkout: Path) -> str:
    """The commit a checkout is at, `+changes` when its tracked files differ from it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True)
        return done.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return f"{commit}{' +changes' if git('status', '--porcelain', '--untracked-files=no') else ''}"


@dataclass
class Cell:
    """One command on one set of nights from one checkout: its outcome in each round."""

    nights: Nights
    kind: str
    checkout: str
    outcomes: list[Outcome] = field(default_factory=list)


def wall_text(cell: Cell, timeout: float, max_rss_gb: float) -> str:
    """The median wall of the rounds that ended; else why none did."""
    finished = [o.wall for o in cell.outcomes if o.code is not None]
    failed = sorted({o.code for o in cell.outcomes if o.code not in (None, 0, 3)})
    if failed:
        return f"failed (exit {', '.join(map(str, failed))})"
    over = [o.wall for o in cell.outcomes if o.stopped == "memory"]
    timed_out = sum(o.stopped == "timeout" for o in cell.outcomes)
    stops = []
    if timed_out:
        stops.append(f"timed out (> {timeout:g} s)" + (f" {timed_out}×" if finished else ""))
    if over:
        stops.append(f"stopped over {max_rss_gb:g} GB RSS at {min(over):.0f} s")
    if not finished:
        return "; ".join(stops)
    text = f"{statistics.median(finished):.1f}"
    if len(finished) > 1:
        text += f" ({min(finished):.1f}–{max(finished):.1f})"
    return "; ".join([text, *stops])


def cpu_text(cell: Cell) -> str:
    """CPU seconds (median); of a command stopped at the timeout, what it used until then."""
    finished = [o.cpu for o in cell.outcomes if o.code is not None]
    if finished:
        return f"{statistics.median(finished):.1f}"
    return f"> {max(o.cpu for o in cell.outcomes):.1f}"


def size_text(cell: Cell) -> str:
    if cell.kind == "json":
        return "— (/dev/null)"
    last = cell.outcomes[-1]
    if last.lines is None or last.size is None:
        return "—"
    text = f"{last.lines:,} lines, {last.size / 1e6:,.1f} MB"
    return text + (" so far" if last.code is None else "")


def others_text(cell: Cell) -> str:
    """The CPU seconds other processes took while the command ran (the highest of the rounds):
    a machine that is not idle shows here, not only in slower walls."""
    figures = [o.others_cpu for o in cell.outcomes if o.others_cpu is not None]
    return f"{max(figures):.1f}" if figures else "—"


def table(cells: list[Cell], timeout: float, max_rss_gb: float, several_checkouts: bool) -> str:
    head = "| command | " + ("code | " if several_checkouts else "")
    head += "runs per night | nights | wall s | CPU s | peak RSS GB | output | others' CPU s |"
    rule = "|---|" + ("---|" if several_checkouts else "") + "---:|---:|---:|---:|---:|---|---:|"
    lines = [head, rule]
    for cell in cells:
        rss = max(o.rss_mb for o in cell.outcomes) / 1024
        code = f" {cell.checkout} |" if several_checkouts else ""
        wall = wall_text(cell, timeout, max_rss_gb)
        lines.append(
            f"| `{shown_command(cell.nights, cell.kind)}` |{code} {cell.nights.runs:,} | "
            f"{cell.nights.nights} | {wall} | {cpu_text(cell)} | {rss:.2f} "
            f"| {size_text(cell)} | {others_text(cell)} |"
        )
    return "\n".join(lines)


def check_ignored(data: Path) -> None:
    """Generated nights are never committed: DATA inside the checkout must be gitignored."""
    inside = data.resolve().is_relative_to(bench_run.ROOT)
    probe = data.resolve() / "nights-probe"
    if inside:
        done = subprocess.run(["git", "check-ignore", "-q", str(probe)], cwd=bench_run.ROOT)
        if done.returncode != 0:
            sys.exit(f"{data} is inside the checkout but not gitignored: use bench/data")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--runs", type=int, nargs="+", default=[1000], help="runs a night (1000; 10000)"
    )
    parser.add_argument("--nights", type=int, default=30, help="nights (30, at most 100)")
    parser.add_argument(
        "--agents", type=int, choices=(1, 2), default=1, help="target agents a night (1)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--data", type=Path, default=bench_run.HERE / "data", help="where nights are kept"
    )
    parser.add_argument(
        "--timeout", type=float, default=600, help="seconds before a command is stopped (600)"
    )
    total = memory_total_gb()
    parser.add_argument(
        "--max-rss",
        type=float,
        default=round(0.8 * total, 1) if total else 0.0,
        help="GB of RSS at which a command is stopped (80%% of the memory; 0: no limit)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds (1)")
    parser.add_argument(
        "--only", choices=COMMANDS, default=None, help="time only --json or only the tables"
    )
    parser.add_argument("--vs", type=Path, default=None, help="another checkout to time too")
    parser.add_argument(
        "--generate-only", action="store_true", help="make the missing nights, time nothing"
    )
    parser.add_argument("--make-nights", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not 1 <= args.nights <= 100:
        parser.error("--nights must be between 1 and 100")
    if args.rounds < 1 or args.timeout <= 0 or min(args.runs) < 1:
        parser.error("--rounds, --timeout and --runs must be positive")
    check_ignored(args.data)
    data = args.data.resolve()
    sets = [Nights(data, runs, args.nights, args.seed, args.agents) for runs in args.runs]
    if args.make_nights:
        for nights in sets:
            generate(nights)
        return

    started = time.perf_counter()
    for nights in sets:
        ensure_nights(nights)
    print(f"nights ready in {time.perf_counter() - started:.1f} s", flush=True)
    if args.generate_only:
        for nights in sets:
            print(facts_line(nights))
        return

    checkouts = {commit_of(bench_run.ROOT): bench_run.ROOT}
    if args.vs is not None:
        other = args.vs.resolve()
        name = f"--vs {bench_run.shown(other)} ({commit_of(other)})"
        checkouts = {f"this checkout ({commit_of(bench_run.ROOT)})": bench_run.ROOT, name: other}
    kinds = [args.only] if args.only else list(COMMANDS)
    cells = [Cell(nights, kind, name) for nights in sets for kind in kinds for name in checkouts]
    for round_no in range(args.rounds):  # interleaved: a slow spell hits every cell
        for cell in cells:
            checkout = checkouts[cell.checkout]
            out = None
            if cell.kind == "table":
                tag = "this" if cell.checkout == next(iter(checkouts)) else "vs"
                out = data / f"history-table-{cell.nights.root.name}-{tag}.txt"
            command = history_command(cell.nights, cell.kind)
            outcome = timed(command, checkout_env(checkout), out, args.timeout, args.max_rss)
            cell.outcomes.append(outcome)
            ended = {"timeout": "timed out", "memory": "stopped over --max-rss"}.get(
                outcome.stopped or "", f"exit {outcome.code}"
            )
            print(
                f"round {round_no + 1}: {cell.nights.label}, {cell.kind}, {cell.checkout}: "
                f"{outcome.wall:.1f} s, {outcome.cpu:.1f} s CPU, {outcome.rss_mb:,.0f} MB, {ended} "
                f"(other processes: {outcome.others_cpu or 0:.1f} s CPU)",
                flush=True,
            )
            if outcome.code not in (None, 0, 3):
                print(outcome.stderr[-2000:], file=sys.stderr)

    print(f"\n{bench_run.header(sys.argv[1:], 'bench/history_scale.py')}")
    for name, checkout in checkouts.items():
        print(f"Code {name}: `PYTHONPATH={bench_run.shown(checkout)}` for every command")
    for nights in sets:
        print(facts_line(nights))
    print()
    print(table(cells, args.timeout, args.max_rss, len(checkouts) > 1))
    rounds = f"median of {args.rounds} interleaved rounds" if args.rounds > 1 else "one round"
    print(
        f"\nWall s: {rounds}, stopped after {args.timeout:g} s or over {args.max_rss:g} GB of "
        "RSS; CPU s: user + system (median), "
        "until the stop when stopped; peak RSS: the highest, of the process and its children "
        "(wait4); output: the table's stdout (FILE), last round; others' CPU s: what the rest "
        "of the machine used meanwhile (/proc/stat, the highest round), near 0 on an idle one."
    )


def facts_line(nights: Nights) -> str:
    facts = night_facts(nights)
    return (
        f"Nights {bench_run.shown(nights.root)}: {nights.label}, {facts['events']:,.0f} events "
        f"in all; generated in {facts['generate_s']:,.0f} s and graded in "
        f"{facts['grade_s']:,.0f} s (evalbatch run peak {facts['grade_rss_mb']:,.0f} MB); "
        f"output directories {facts['out_bytes'] / 1e6:,.0f} MB"
    )


if __name__ == "__main__":
    main()
