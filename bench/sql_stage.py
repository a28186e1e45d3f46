"""Where `evalbatch run` spends its time against the floor: the floor, the events pass alone,
the whole SQL stage, and the whole command, each as its own child process on the same files.
The SQL stages are timed from after their imports; `evalbatch run`, as in bench/run.py, as the
whole command.

    python bench/sql_stage.py --events 2M      # needs bench/data/<size>/ from bench/run.py

The events pass is the first SQL query (sql/events/events.sql with what it reads,
`extract.events_pass`): every payload parsed once, plus the strict-JSON checks DuckDB's lenient
parser needs (NaN, trailing commas, repeated keys: D-3, D-7, E-60..E-61), the duplicate-key
collapse (D-3) and the 16-digit check (D-7). The whole SQL stage adds the per-type tables, eval
spans, trial segments and brackets (§2). Wall time and peak RSS come from wait4; each stage is run
`--repeat` times and the fastest is kept.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from run import HERE, ROOT, measure, parse_size, run_command

#: one stage in a child process, timed from after its imports: argv[1] is the stage ("floor",
#: "events" or "sql"), then the files; prints its seconds
STAGE = """
import contextlib, io, sys, time
sys.path.insert(0, "bench")
import floor
from evalbatch.extract import trial_tables
from evalbatch.inputs import event_files
from evalbatch.extract import sql_files
stage, files = sys.argv[1], sys.argv[2:]
started = time.perf_counter()
if stage == "floor":
    with contextlib.redirect_stdout(io.StringIO()):
        floor.main(files)
else:
    con = trial_tables.connect()
    sources = event_files.scan(con, files)
    if stage == "events":
        trial_tables.events_pass(con, sources, None)
    else:
        trial_tables.extract(con, sources, None)
        con.execute(sql_files.load("batch_fingerprints").text).fetchall()
print(time.perf_counter() - started)
"""


def timed(command: list[str]) -> dict[str, float]:
    """A stage's own seconds (it prints them) and the child's peak RSS (wait4)."""
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{command[3]} stage failed")
    seconds = float((proc.stdout.read() if proc.stdout else "").split()[-1])
    return {"seconds": seconds, "rss_mb": usage.ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--events", default="2M", help="size of a log bench/run.py generated")
    parser.add_argument("--repeat", type=int, default=3, help="runs per stage (fastest kept)")
    args = parser.parse_args()
    data = HERE / "data" / str(parse_size(args.events))
    if not (data / ".complete").exists():
        sys.exit(f"no generated log at {data}: run bench/run.py --events {args.events} first")
    files = sorted(str(p) for p in (data / "events").glob("*.parquet"))
    python = sys.executable
    stages = {
        "floor (DuckDB, needed fields)": [python, "-c", STAGE, "floor", *files],
        "events pass (parse + checks)": [python, "-c", STAGE, "events", *files],
        "whole SQL stage": [python, "-c", STAGE, "sql", *files],
        "evalbatch run": run_command(data),
    }
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.repeat):  # interleaved, so a slow spell of the machine hits every stage
        for name, command in stages.items():
            figures = timed(command) if command[1] == "-c" else measure(name, command)
            if name not in best or figures["seconds"] < best[name]["seconds"]:
                best[name] = figures
    floor = best["floor (DuckDB, needed fields)"]["seconds"]
    total = int((data / ".complete").read_text())
    print(f"input: {total:,} events ({data}); fastest of {args.repeat} runs each\n")
    print(f"{'stage':<32} {'seconds':>9} {'x floor':>8} {'peak RSS MB':>12}")
    for name, figures in best.items():
        print(
            f"{name:<32} {figures['seconds']:>9.2f} {figures['seconds'] / floor:>8.2f}"
            f" {figures['rss_mb']:>12,.0f}"
        )


if __name__ == "__main__":
    main()
