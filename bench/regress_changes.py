"""Benchmark: what the changes behind a verdict (E-136) cost `evalbatch regress` on two large logs.

Two logs of one run each, about 10M events apiece (1,000 tasks × 556 trials, the generator's
trials, seeds 1 and 2: the same suite, other behaviour), compared by `evalbatch regress --json`
from this checkout and from another one given with `--vs` (a worktree of a commit before the
changes), in interleaved rounds, each command a child process timed by the operating system:

    git worktree add /tmp/before f4e2341
    python bench/regress_changes.py --vs /tmp/before            # 3 rounds, 10M events a log
    python bench/regress_changes.py --vs /tmp/before --events 1M --rounds 1   # a quick check

The logs are generated once by DuckDB (`bench/generate_events.sql`) under
bench/data/one-run-<events>-seed<seed>/ (gitignored). The markdown table printed at the end can
be pasted into bench/RESULTS.md: median wall and CPU seconds, the highest peak RSS, and the median
of the per-round ratios of this checkout to the other.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench_run  # the benchmark's generator, children and header

#: one run a log, as many trials of the generator's 1,000 tasks as the size asks
TASKS = 1000


def shape_for(events: int) -> bench_run.Shape:
    """One run of about `events` events: 1,000 tasks and the trials that make it up."""
    per_task = bench_run.EVENTS_PER_TRIAL * TASKS
    trials = max(1, math.ceil(events / per_task))  # one run holds them all
    return bench_run.Shape("one-run", "C", TASKS, trials, runs_per_file=1)


def ensure_logs(events: int) -> tuple[Path, Path]:
    """The base (seed 1) and candidate (seed 2) logs, generated in a child process when missing
    (so no DuckDB memory is held by the process that times the commands)."""
    logs = []
    for seed in (1, 2):
        shape = shape_for(events)
        data = bench_run.data_dir(shape, events, seed)
        marker = data / ".complete"
        if not marker.exists():
            command = [sys.executable, __file__, "--generate-only"]
            command += ["--events", str(events), "--seed", str(seed)]
            subprocess.run(command, check=True, env=bench_run.child_env())
        logs.append(data)
    return logs[0], logs[1]


def regress_command(base: Path, cand: Path) -> list[str]:
    """`evalbatch regress` of the two logs, as the CLI is run from a checkout."""
    entry = "from evalbatch.cli import main; main()"
    suites = bench_run.shown(base / "suites")
    sides = [bench_run.shown(base / "events"), bench_run.shown(cand / "events")]
    # -P: without it `-c` puts the working directory (this checkout) before PYTHONPATH, and
    # every side would run this checkout's code
    return [bench_run.python(), "-P", "-c", entry, "regress", *sides, "--suites", suites, "--json"]


@dataclass
class Timed:
    """One checkout's rounds: wall and CPU seconds, peak RSS in MB."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)


def timed(command: list[str], checkout: Path) -> tuple[float, float, float, str]:
    """Run `command` with `checkout` first on the import path: wall s, CPU s (user + system of
    the child and its threads), peak RSS MB, its stdout. Exit codes 0 and 1 are verdicts."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(command, cwd=bench_run.ROOT, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        if code not in (0, 1):
            stderr = err.read().decode(errors="replace")
            sys.exit(f"exit {code} from {checkout}: {shlex.join(command)}\n{stdout}\n{stderr}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, stdout


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--vs", type=Path, help="the other checkout (a commit before E-136)")
    parser.add_argument("--events", type=bench_run.parse_size, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--generate-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate_only:
        bench_run.generate(shape_for(args.events), args.events, args.seed)
        return
    if args.vs is None:
        parser.error("--vs CHECKOUT is needed: the code to compare this checkout with")
    base, cand = ensure_logs(args.events)
    command = regress_command(base, cand)
    checkouts = {"this checkout": bench_run.ROOT, f"--vs {args.vs}": args.vs.resolve()}
    for checkout in checkouts.values():
        bench_run.check_imports(checkout)
    figures = {name: Timed() for name in checkouts}
    verdicts = set()
    print(bench_run.header(sys.argv[1:], "bench/regress_changes.py"))
    for round_no in range(args.rounds):
        for name, checkout in checkouts.items():
            wall, cpu, rss, stdout = timed(command, checkout)
            figures[name].wall.append(wall)
            figures[name].cpu.append(cpu)
            figures[name].rss_mb.append(rss)
            verdicts.add((name, '"verdict": "' in stdout))
            print(f"round {round_no + 1} {name}: {wall:.2f} s wall, {cpu:.2f} s CPU, {rss:,.0f} MB")
    events, _ = bench_run.log_facts(base)
    mine, other = figures["this checkout"], figures[f"--vs {args.vs}"]
    wall_ratio = statistics.median(a / b for a, b in zip(mine.wall, other.wall, strict=True))
    cpu_ratio = statistics.median(a / b for a, b in zip(mine.cpu, other.cpu, strict=True))
    print(f"\nCommand: `{shlex.join(command)}` ({events:,} events a side)\n")
    print("| figure | " + " | ".join(checkouts) + " | ratio (paired median) |")
    print("|---|---:|---:|---:|")
    print(
        f"| wall s (median of {args.rounds}) | {statistics.median(mine.wall):.2f} | "
        f"{statistics.median(other.wall):.2f} | {wall_ratio:.3f} |"
    )
    print(
        f"| CPU s (median) | {statistics.median(mine.cpu):.2f} | "
        f"{statistics.median(other.cpu):.2f} | {cpu_ratio:.3f} |"
    )
    print(f"| peak RSS MB (highest) | {max(mine.rss_mb):,.0f} | {max(other.rss_mb):,.0f} | — |")


if __name__ == "__main__":
    main()
