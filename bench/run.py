"""Benchmark: the floor, `evalbatch run` and the per-record reference, side by side in one run, on
two shapes of log of the same size:

- A, `small`: many small runs, 20 tasks × 3 trials each (about 1,083 events a run; 9,234 runs
  at 10M)
- B, `large`: few large runs, 1,000 tasks × 10 trials each (about 180,003 events a run; 56 runs
  at 10M: the trials are A's, so 60 runs would be 10.8M events)

    python bench/run.py                                  # both shapes, 10M events each
    python bench/run.py --events 200k --shape both       # a quick check that everything runs
    python bench/run.py --events 10M --skip-reference    # the reference takes ~8 min at 10M
    python bench/run.py --memory                         # 100M, no reference: peak RSS
    python bench/run.py --repeat 3 --skip-reference      # interleaved rounds, medians

Each log is generated once by DuckDB (`bench/generate_events.sql`, seeded) and kept under
bench/data/<shape>-<events>-seed<seed>/ (gitignored). Each stage runs as its own child process
on the same files, with this checkout first on PYTHONPATH; its wall time and peak RSS come from
the operating system (wait4), so nothing here is a timed unit test. The markdown table printed
at the end, one row per stage with the command that produced it, can be pasted into
bench/RESULTS.md; `× floor` is the stage's seconds over the floor's of the same shape in the
same round. Where the native extractor is built (E-108), `evalbatch run` is timed with it and
again with `--extractor duckdb`, side by side.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: shape A's tasks and trials per run (tests/test_scale.py builds its log from them)
TASKS, TRIALS = 20, 3
#: mean events per trial of the generator: 4 + E[usage] + 2·E[calls] + E[judge]
EVENTS_PER_TRIAL = 4 + 4.5 + 9 + 0.5
#: mean events per run of shape A (kept for callers of the one-shape version)
EVENTS_PER_RUN = TASKS * TRIALS * EVENTS_PER_TRIAL + 3
GENERATOR = HERE / "generate_events.sql"
STAGE_NAMES = ("floor", "evalbatch run", "reference")


@dataclass(frozen=True)
class Shape:
    """One shape of generated log: how many tasks and trials each run holds."""

    name: str
    label: str
    tasks: int
    trials: int
    #: runs per generated Parquet file (about 2M events a file in both shapes)
    runs_per_file: int

    def __post_init__(self) -> None:
        if self.tasks > 1000:  # the generator's task ids have three digits
            raise ValueError("the generator writes at most 1,000 tasks a run")

    @property
    def events_per_run(self) -> float:
        """Mean events per run: the trials, plus eval.started, eval.completed, run.completed."""
        return self.tasks * self.trials * EVENTS_PER_TRIAL + 3

    def runs_for(self, events: int) -> int:
        return max(1, math.ceil(events / self.events_per_run))


SHAPES = {
    "small": Shape("small", "A", TASKS, TRIALS, runs_per_file=2000),
    "large": Shape("large", "B", 1000, 10, runs_per_file=12),
}


def parse_size(text: str) -> int:
    """`2M`, `500k`, `1G` or a plain number of events."""
    scale = {"k": 10**3, "m": 10**6, "g": 10**9}.get(text[-1].lower(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def suite(tasks: int = TASKS, trials: int = TRIALS) -> dict[str, object]:
    """The suite the generated runs claim: trajectories in every mode, fixtures, trials."""
    task_list = []
    for number in range(tasks):
        task_id = f"task-{number:03d}"
        mode = ["in-order", "any-order", "subset", "exact"][number % 4]
        calls = [
            {"tool": "crm:lookup-order", "args": {"orderId": number % 50}, "argsMatch": "subset"},
            {"tool": "billing:refund"},
        ]
        expected: dict[str, object] = {
            "kind": "trajectory" if number % 5 == 4 else "golden",
            "trajectory": {"match": mode, "calls": calls, "forbidden": ["billing:refund-all"]},
        }
        if expected["kind"] == "golden":
            expected["match"] = {"strategy": "contains", "value": "resolved"}
        task: dict[str, object] = {
            "taskId": task_id,
            "input": {"ticket": task_id},
            "expected": expected,
        }
        if number % 3 == 0:
            task["fixtures"] = {
                "toolResponses": [
                    {"tool": "crm:lookup-order", "response": {"status": "shipped"}},
                    {
                        "tool": "billing:refund",
                        "response": {"ok": True},
                        "args": {"amountMinor": 100},
                        "argsMatch": "subset",
                    },
                ],
                "onMiss": "fail" if number % 2 == 0 else "live",
            }
        task_list.append(task)
    return {
        "suiteId": "acme.bench.evals.support",
        "version": "1.0.0",
        "modes": ["golden", "rubric"],
        "trials": {"count": trials, "k": 2, "passRule": "all"},
        "thresholds": {"passScore": 0.5},
        "tasks": task_list,
    }


def data_dir(shape: Shape, events: int, seed: int) -> Path:
    """Where the log of this shape, size and seed is kept."""
    return HERE / "data" / f"{shape.name}-{events}-seed{seed}"


def generator_query() -> str:
    """The generator's SQL without its comment lines (editing those keeps cached logs valid)."""
    lines = GENERATOR.read_text().splitlines()
    return "\n".join(line for line in lines if not line.startswith("--"))


def _recipe(shape: Shape, events: int, seed: int) -> dict[str, object]:
    """Everything a generated log depends on: a cached log is reused only when this matches."""
    return {
        "shape": shape.name,
        "runs": shape.runs_for(events),
        "tasks": shape.tasks,
        "trials": shape.trials,
        "runs_per_file": shape.runs_per_file,
        "seed": seed,
        "generator_sha256": hashlib.sha256(generator_query().encode()).hexdigest(),
    }


def is_cached(shape: Shape, events: int, seed: int) -> bool:
    """Whether the log of this shape, size and seed is on disk, made by today's recipe."""
    marker = data_dir(shape, events, seed) / ".complete"
    if not marker.exists():
        return False
    return bool(json.loads(marker.read_text()).get("recipe") == _recipe(shape, events, seed))


def ensure_log(shape: Shape, events: int, seed: int) -> Path:
    """The log of this shape, size and seed, generated first when missing.

    Generating runs in a child process: a child's peak RSS as wait4 reports it starts at its
    parent's (Linux carries the high-water mark across fork and exec), so the timing process
    stays small and never holds DuckDB's generating memory.
    """
    if not is_cached(shape, events, seed):
        command = [sys.executable, str(Path(__file__).resolve()), "--generate-only"]
        command += ["--shape", shape.name, "--events", str(events), "--seed", str(seed)]
        subprocess.run(command, cwd=ROOT, env=child_env(), check=True)
    return data_dir(shape, events, seed)


def generate(shape: Shape, events: int, seed: int) -> Path:
    """Write about `events` events of `shape` as Parquet files (kept for reruns)."""
    import duckdb

    target = data_dir(shape, events, seed)
    recipe = _recipe(shape, events, seed)
    if is_cached(shape, events, seed):
        return target
    shutil.rmtree(target, ignore_errors=True)
    (target / "events").mkdir(parents=True)
    (target / "suites").mkdir()
    bench_suite = suite(shape.tasks, shape.trials)
    (target / "suites" / "bench.json").write_text(json.dumps(bench_suite, indent=2))
    runs = shape.runs_for(events)
    query = generator_query()
    con = duckdb.connect()
    started = time.perf_counter()
    for number, first in enumerate(range(0, runs, shape.runs_per_file)):
        count = min(shape.runs_per_file, runs - first)
        path = target / "events" / f"part-{number:05d}.parquet"
        params = {
            "first_run": first,
            "runs": count,
            "tasks": shape.tasks,
            "trials": shape.trials,
            "seed": seed,
        }
        con.execute(f"COPY ({query}) TO '{path}' (FORMAT parquet, COMPRESSION zstd)", params)
    (total,) = con.execute(
        f"SELECT count(*) FROM read_parquet('{target}/events/*.parquet')"
    ).fetchone() or (0,)
    seconds = time.perf_counter() - started
    print(f"generated {shape.label}: {total:,} events in {runs:,} runs ({seconds:.1f} s)")
    facts = {"recipe": recipe, "events": total, "runs": runs}
    (target / ".complete").write_text(json.dumps(facts))
    return target


def log_facts(data: Path) -> tuple[int, int]:
    """(events, runs) of a generated log."""
    facts = json.loads((data / ".complete").read_text())
    return int(facts["events"]), int(facts["runs"])


def shown(path: Path | str) -> str:
    """A path as the printed commands give it: relative to the checkout when inside it."""
    text = str(path)
    root = f"{ROOT}{os.sep}"
    return text[len(root) :] if text.startswith(root) else text


def python() -> str:
    return shown(sys.executable)


def floor_command(data: Path) -> list[str]:
    """The floor over a generated log (DuckDB expands the glob)."""
    return [python(), "bench/floor.py", shown(data / "events" / "*.parquet")]


#: the native extractor's library, where `make native` built it
NATIVE_LIBRARY = ROOT / "evalbatch" / "extract" / "_native_scan.so"


def run_command(data: Path, extra: tuple[str, ...] = ()) -> list[str]:
    """`evalbatch run` over a generated log, as every benchmark times it (the whole command)."""
    evalbatch = shown(Path(sys.executable).with_name("evalbatch"))
    events, suites, out = (shown(data / name) for name in ("events", "suites", "out"))
    return [evalbatch, "run", events, "--suites", suites, "--out", out, "--quiet", *extra]


def reference_command(data: Path) -> list[str]:
    """The per-record reference grader over a generated log."""
    suite_file = shown(data / "suites" / "bench.json")
    return [python(), "bench/reference_run.py", suite_file, shown(data / "events")]


def child_env() -> dict[str, str]:
    """The environment of every timed child: this checkout's code first on the import path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def check_imports(checkout: Path) -> None:
    """Stop unless a child given `checkout` on PYTHONPATH (and run with `python -P`, so the
    working directory does not come first) imports evalbatch from it."""
    command = [python(), "-P", "-c", "import evalbatch; print(evalbatch.__file__)"]
    env = dict(os.environ, PYTHONPATH=str(checkout))
    found = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    if not Path(found).resolve().is_relative_to(checkout.resolve()):
        sys.exit(f"a child given {checkout} imports evalbatch from {found}")


def child(
    name: str, command: list[str], env: dict[str, str] | None = None
) -> tuple[float, float, str]:
    """Run one stage as a child process: (wall seconds, peak RSS in MB from wait4, its stdout).

    Its output goes to temporary files, so a chatty child never blocks on a full pipe; a child
    that fails (exit code other than 0 or 3) stops the benchmark with its output.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(command, cwd=ROOT, env=env or child_env(), stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        if code not in (0, 3):
            stderr = err.read().decode(errors="replace")
            sys.exit(
                f"{name} failed with exit code {code}: {shlex.join(command)}\n{stdout}\n{stderr}"
            )
    return seconds, usage.ru_maxrss / 1024, stdout


def measure(name: str, command: list[str]) -> dict[str, float]:
    """Run one stage as a child process; wall time and peak RSS from wait4."""
    seconds, rss_mb, _ = child(name, command)
    return {"seconds": seconds, "rss_mb": rss_mb}


def checkout() -> str:
    """The commit the timed code comes from (with `+changes` when the tree differs from it)."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{commit}{' +changes' if dirty else ''}" if commit else "unknown"


def header(argv: list[str], script: str = "bench/run.py") -> str:
    """What a pasted table needs beside it: the command, the machine, the code and the stack."""
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    stack = f"DuckDB {metadata.version('duckdb')}, Polars {metadata.version('polars')}"
    command = shlex.join([python(), script, *argv])
    load = ", ".join(f"{figure:.2f}" for figure in os.getloadavg())
    own_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return (
        f"Command: `{command}` at {time.strftime('%Y-%m-%d %H:%M')} (load average {load})\n"
        f"Machine: {machine}; {stack}; code at {checkout()}\n"
        f"Peak RSS of the timing process: {own_rss:,.0f} MB (no child's figure reads below it)"
    )


@dataclass
class Row:
    """One stage of one shape: its command and the figures of each round it ran in."""

    shape: Shape
    events: int
    runs: int
    stage: str
    command: list[str]
    seconds: list[float]
    rss_mb: list[float]
    ratios: list[float]


def table(rows: list[Row], rounds: int) -> str:
    """The markdown table: median seconds, the highest peak RSS, the median of the ratios to
    the floor of the same shape taken round by round."""
    lines = [
        "| shape | events | runs | stage | command | seconds | events/s | peak RSS MB | × floor |",
        "|---|---:|---:|---|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        seconds = statistics.median(row.seconds)
        ratio = statistics.median(row.ratios)
        spread = f" ({min(row.seconds):.2f}–{max(row.seconds):.2f})" if len(row.seconds) > 1 else ""
        lines.append(
            f"| {row.shape.label} {row.shape.name} | {row.events:,} | {row.runs:,} | {row.stage} "
            f"| `{shlex.join(row.command)}` | {seconds:.2f}{spread} | {row.events / seconds:,.0f} "
            f"| {max(row.rss_mb):,.0f} | {ratio:.2f} |"
        )
    note = (
        f"Seconds: median of {rounds} interleaved rounds (fastest–slowest); × floor: median of "
        "the per-round ratios."
        if rounds > 1
        else "One round; × floor is the stage's seconds over the floor's of the same shape."
    )
    return "\n".join([*lines, "", note])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--events", default=None, help="events in each generated log: 200k, 10M (default), 100M"
    )
    parser.add_argument(
        "--shape",
        choices=("small", "large", "both"),
        default="both",
        help="A: many small runs (20 tasks × 3 trials); B: few large runs (1,000 × 10)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--skip-reference", action="store_true", help="do not time the reference (~8 min at 10M)"
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="the memory run: --events 100M (unless given) and --skip-reference",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="interleaved rounds of floor and run (the reference runs in the first only)",
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="DuckDB threads for evalbatch run"
    )
    parser.add_argument("--memory-limit", default=None, help="passed to evalbatch run")
    parser.add_argument("--batch-events", default=None, help="passed to evalbatch run")
    parser.add_argument("--generate-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    events = parse_size(args.events or ("100M" if args.memory else "10M"))
    skip_reference = args.skip_reference or args.memory
    extra: list[str] = []
    for flag, value in (
        ("--threads", args.threads),
        ("--memory-limit", args.memory_limit),
        ("--batch-events", args.batch_events),
    ):
        if value is not None:
            extra += [flag, str(value)]

    shapes = [SHAPES[args.shape]] if args.shape != "both" else list(SHAPES.values())
    if args.generate_only:
        for shape in shapes:
            generate(shape, events, args.seed)
        return
    rows: list[Row] = []
    for shape in shapes:
        data = ensure_log(shape, events, args.seed)
        total, runs = log_facts(data)
        commands = {"(a) floor": floor_command(data)}
        if NATIVE_LIBRARY.exists():  # both extractors side by side (E-108)
            commands["(b) evalbatch run"] = run_command(data, (*extra, "--extractor", "native"))
            commands["(b) evalbatch run, DuckDB extractor"] = run_command(
                data, (*extra, "--extractor", "duckdb")
            )
        else:
            commands["(b) evalbatch run"] = run_command(data, tuple(extra))
        if not skip_reference:
            commands["(c) reference"] = reference_command(data)
        rows += [Row(shape, total, runs, stage, cmd, [], [], []) for stage, cmd in commands.items()]

    for round_no in range(args.repeat):  # interleaved: a slow spell of the machine hits every row
        floor_seconds: dict[str, float] = {}
        for row in rows:
            if row.stage == "(c) reference" and round_no > 0:
                continue
            figures = measure(f"{row.shape.label} {row.stage}", row.command)
            if row.stage == "(a) floor":
                floor_seconds[row.shape.name] = figures["seconds"]
            row.seconds.append(figures["seconds"])
            row.rss_mb.append(figures["rss_mb"])
            row.ratios.append(figures["seconds"] / floor_seconds[row.shape.name])
            print(
                f"round {round_no + 1}: {row.shape.label} {row.stage}: "
                f"{figures['seconds']:.2f} s, {figures['rss_mb']:,.0f} MB",
                flush=True,
            )

    print(f"\n{header(sys.argv[1:])}\n")
    print(table(rows, args.repeat))


if __name__ == "__main__":
    main()
