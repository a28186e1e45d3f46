"""Benchmark: what one Ray shard costs a worker, by shard size — the figures docs/scale.md
projects from.

    python bench/shard_cost.py                                  # 10M log, shards of 250k/1M/4M
    python bench/shard_cost.py --events 10M --shard-events 1M --shape small

For each shard size the log (bench/run.py's generator: shape B, 1,000 tasks × 10 trials a run,
unless `--shape small`) is planned as `--engine ray` plans it (`event_files.plan_batches` with
`batch_events` = the size), and its first shard is graded in a child process exactly as a Ray
worker grades one (`grade_shard` on a one-thread connection, then `write_shard` into a temporary
directory: extraction, grading, reductions and writing its rows), without Ray. The shard's wall
and CPU seconds are the child's own around that (its threads' CPU included; starting Python and
planning the log left out); its peak RSS is the whole child's, from the operating system
(wait4). The markdown table
printed at the end, with the command line that produced it, can be pasted into bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench_run  # the benchmark's generator, shapes and header


def grade_first_shard(events_dir: str, suites_dir: str, shard_events: int) -> dict[str, float]:
    """In the child: plan, then grade and write the first shard as a worker would."""
    from evalbatch.extract import trial_tables
    from evalbatch.inputs import event_files, suites
    from evalbatch.options import GradeOptions, Resources
    from evalbatch.pipeline.batch_rows import batch_output
    from evalbatch.pipeline.shard import grade_shard
    from evalbatch.pipeline.shard_files import write_shard

    choices = suites.load_suites([Path(suites_dir)])
    con = trial_tables.new_connection(Resources(threads=1))
    sources = event_files.scan(con, [events_dir])
    plan = event_files.plan_batches(con, sources, batch_events=shard_events)
    con.close()
    started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    con = trial_tables.new_connection(Resources(threads=1))
    sources = event_files.scan(con, [events_dir])
    part = grade_shard(con, sources, plan.ranges[0], choices, GradeOptions())
    con.close()
    batch = batch_output(part)
    batch.run_range = plan.ranges[0]
    with tempfile.TemporaryDirectory() as directory:
        write_shard(Path(directory), 0, batch)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "events": plan.events[0],
        "runs": plan.spans[0][2],
        "shards": len(plan.ranges),
        "seconds": time.perf_counter() - started,
        "cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--events", default="10M", help="the generated log's size")
    parser.add_argument("--shape", choices=tuple(bench_run.SHAPES), default="large")
    parser.add_argument("--shard-events", nargs="+", default=["250k", "1M", "4M"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        events_dir, suites_dir, size = args.child
        print(json.dumps(grade_first_shard(events_dir, suites_dir, int(size))))
        return
    shape = bench_run.SHAPES[args.shape]
    data = bench_run.ensure_log(shape, bench_run.parse_size(args.events), args.seed)
    lines = [
        "| shard size (--batch-events) | shards in the log | events in the shard | runs "
        "| shard wall s | shard CPU s | events per CPU s | peak RSS MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in (bench_run.parse_size(text) for text in args.shard_events):
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            str(data / "events"),
            str(data / "suites"),
            str(size),
        ]
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(command, env=bench_run.child_env(), stdout=out)
            _, status, usage = os.wait4(proc.pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"failed: {shlex.join(command)}")
            out.seek(0)
            facts = json.loads(out.read().decode().strip().splitlines()[-1])
        seconds, cpu = facts["seconds"], facts["cpu"]
        print(f"shards of {size:,}: {seconds:.1f} s, {cpu:.1f} s CPU", flush=True)
        lines.append(
            f"| {size:,} | {facts['shards']:,.0f} | {facts['events']:,.0f} | {facts['runs']:,.0f} "
            f"| {seconds:.1f} | {cpu:.1f} | {facts['events'] / cpu:,.0f} "
            f"| {usage.ru_maxrss / 1024:,.0f} |"
        )
    print()
    print(bench_run.header(sys.argv[1:], "bench/shard_cost.py"))
    print()
    print("\n".join(lines))


if __name__ == "__main__":
    main()
