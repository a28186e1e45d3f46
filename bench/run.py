"""Benchmark: the floor, `evalbatch run`, and the per-record reference, side by side in one run.

    python bench/run.py --events 2M            # generates bench/data/2M/ once, then times
    python bench/run.py --events 10M --skip-reference

Each stage runs as its own child process on the same files; its wall time and peak RSS come from
the operating system (wait4), so nothing here is a timed unit test.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TASKS, TRIALS = 20, 3
# mean events per run of the generator: per trial 4 + E[usage] + 2·E[calls] + E[judge]
EVENTS_PER_RUN = TASKS * TRIALS * (4 + 4.5 + 9 + 0.5) + 3
RUNS_PER_FILE = 2000


def parse_size(text: str) -> int:
    """`2M`, `500k`, `1G` or a plain number of events."""
    scale = {"k": 10**3, "m": 10**6, "g": 10**9}.get(text[-1].lower(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def suite() -> dict[str, object]:
    """The suite the generated runs claim: trajectories in every mode, fixtures, trials."""
    tasks = []
    for number in range(TASKS):
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
        tasks.append(task)
    return {
        "suiteId": "acme.bench.evals.support",
        "version": "1.0.0",
        "modes": ["golden", "rubric"],
        "trials": {"count": TRIALS, "k": 2, "passRule": "all"},
        "thresholds": {"passScore": 0.5},
        "tasks": tasks,
    }


def generate(events: int, seed: int) -> Path:
    """Write about `events` events as Parquet files under bench/data/<size>/ (kept for reruns)."""
    target = HERE / "data" / f"{events}"
    marker = target / ".complete"
    if marker.exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    (target / "events").mkdir(parents=True)
    (target / "suites").mkdir()
    (target / "suites" / "bench.json").write_text(json.dumps(suite(), indent=2))
    runs = max(1, math.ceil(events / EVENTS_PER_RUN))
    query = (HERE / "generate_events.sql").read_text()
    query = "\n".join(line for line in query.splitlines() if not line.startswith("--"))
    con = duckdb.connect()
    started = time.perf_counter()
    for number, first in enumerate(range(0, runs, RUNS_PER_FILE)):
        count = min(RUNS_PER_FILE, runs - first)
        path = target / "events" / f"part-{number:05d}.parquet"
        con.execute(
            f"COPY ({query}) TO '{path}' (FORMAT parquet, COMPRESSION zstd)",
            {"first_run": first, "runs": count, "tasks": TASKS, "trials": TRIALS, "seed": seed},
        )
    total = con.execute(
        f"SELECT count(*) FROM read_parquet('{target / 'events'}/*.parquet')"
    ).fetchall()[0][0]
    print(f"generated {total:,} events in {runs:,} runs ({time.perf_counter() - started:.1f} s)")
    marker.write_text(str(total))
    return target


def run_command(data: Path) -> list[str]:
    """`evalbatch run` over a generated log, as every benchmark times it (the whole command)."""
    evalbatch = str(Path(sys.executable).with_name("evalbatch"))
    return [
        evalbatch,
        "run",
        str(data / "events"),
        "--suites",
        str(data / "suites"),
        "--out",
        str(data / "out"),
        "--quiet",
    ]


def measure(name: str, command: list[str]) -> dict[str, float]:
    """Run one stage as a child process; wall time and peak RSS from wait4."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode() if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 3):
        sys.exit(f"{name} failed with exit code {code}:\n{out}\n{err}")
    return {"seconds": seconds, "rss_mb": usage.ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--events", default="2M", help="size of the generated log, e.g. 2M, 10M, 100M"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-reference", action="store_true", help="do not time the reference")
    parser.add_argument(
        "--threads", type=int, default=None, help="DuckDB threads for evalbatch run"
    )
    parser.add_argument("--memory-limit", default=None, help="passed to evalbatch run")
    args = parser.parse_args()

    data = generate(parse_size(args.events), args.seed)
    total = int((data / ".complete").read_text())
    files = sorted(str(p) for p in (data / "events").glob("*.parquet"))
    python = sys.executable
    run_cmd = run_command(data)
    if args.threads:
        run_cmd += ["--threads", str(args.threads)]
    if args.memory_limit:
        run_cmd += ["--memory-limit", args.memory_limit]

    results = {
        "floor (DuckDB, needed fields)": measure("floor", [python, str(HERE / "floor.py"), *files])
    }
    results["evalbatch run"] = measure("evalbatch run", run_cmd)
    if not args.skip_reference:
        reference = [
            python,
            "-c",
            (
                "import sys; sys.path.insert(0, 'bench'); from reference_run import main\n"
                f"for f in {files!r}: main(f, {str(data / 'suites' / 'bench.json')!r})"
            ),
        ]
        results["reference (per record)"] = measure("reference", reference)

    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"\nmachine: {machine}")
    print(f"input: {total:,} events in {len(files)} files ({data})")
    print(f"command: {' '.join(run_cmd)}\n")
    print(f"{'stage':<32} {'seconds':>9} {'events/s':>12} {'peak RSS MB':>12}")
    for name, figures in results.items():
        rate = total / figures["seconds"]
        print(f"{name:<32} {figures['seconds']:>9.2f} {rate:>12,.0f} {figures['rss_mb']:>12,.0f}")
    floor = results["floor (DuckDB, needed fields)"]["seconds"]
    engine = results["evalbatch run"]["seconds"]
    print(f"\n(b)/(a) evalbatch run / floor     = {engine / floor:.2f}")
    if "reference (per record)" in results:
        reference_seconds = results["reference (per record)"]["seconds"]
        print(f"(c)/(b) reference / evalbatch run = {reference_seconds / engine:.2f}")


if __name__ == "__main__":
    main()
