"""Benchmark: `evalbatch run` on the local engine and on Ray, side by side, on generated logs of
shape B (few large runs, 1,000 tasks × 10 trials; bench/run.py) or, with `--shape small`, A
(many small runs), with the memory of the Ray driver and of its workers apart.

    python bench/ray_engines.py                                 # 10M and 50M, one round
    python bench/ray_engines.py --events 10M --rounds 3
    python bench/ray_engines.py --events 10M --shard-events 250k 1M  # worker memory by shard
    python bench/ray_engines.py --events 2M --shape small       # the driver's cost per run
    python bench/ray_engines.py --events 2M --rounds 1          # a quick check

Each command is a whole child process (`evalbatch run ... --quiet`, with `--engine ray` and
`--batch-events N` for Ray, which starts its own local cluster), in interleaved rounds, each
engine into its own output directory. While a child runs, its process tree is sampled every
50 ms (psutil): the driver's figure is the RSS of the `evalbatch` process alone; the workers'
is the highest RSS of any one Ray worker process (`ray::…`/`default_worker.py`), which counts
the pages of the object store it maps; Ray's own daemons (raylet, GCS) are left out of both.
Wall seconds come from the clock; sampling is too coarse for a peak shorter than 50 ms.

After each Ray command its outputs are compared with the local engine's of the same round:
`summaries.jsonl` byte for byte (cmp) and every table as data (Polars `equals`, rows in file
order); a difference stops the benchmark. The markdown table printed at the end, with the
command line that produced it, can be pasted into bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import filecmp
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench_run  # the benchmark's generator, shapes, children and header

TABLES = ("runs", "tasks", "trials", "problems")
SAMPLE_SECONDS = 0.05


def _is_worker(command: list[str], name: str) -> bool:
    """A Ray worker process (not the raylet, the GCS or a dashboard agent)."""
    return name.startswith("ray::") or any(part.endswith("default_worker.py") for part in command)


@dataclass
class Sampled:
    """What sampling a child's process tree found."""

    driver_mb: float = 0.0
    driver_cpu: float = 0.0  # CPU seconds of the driver process (its last sample)
    worker_mb: float = 0.0
    workers_seen: set[int] = field(default_factory=set)


def _sample(pid: int, found: Sampled, done: threading.Event) -> None:
    import psutil

    try:
        driver = psutil.Process(pid)
    except psutil.Error:
        return
    while not done.is_set():
        try:
            found.driver_mb = max(found.driver_mb, driver.memory_info().rss / 2**20)
            cpu = driver.cpu_times()
            found.driver_cpu = cpu.user + cpu.system
            family = driver.children(recursive=True)
        except psutil.Error:
            break
        for proc in family:
            try:
                if _is_worker(proc.cmdline(), proc.name()):
                    found.workers_seen.add(proc.pid)
                    found.worker_mb = max(found.worker_mb, proc.memory_info().rss / 2**20)
            except psutil.Error:
                continue
        time.sleep(SAMPLE_SECONDS)


def timed(command: list[str]) -> tuple[float, Sampled]:
    """Run `command` as a child of this checkout; its wall seconds and sampled memory."""
    found, done = Sampled(), threading.Event()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            command, cwd=bench_run.ROOT, env=bench_run.child_env(), stdout=out, stderr=err
        )
        sampler = threading.Thread(target=_sample, args=(proc.pid, found, done), daemon=True)
        sampler.start()
        code = proc.wait()
        seconds = time.perf_counter() - started
        done.set()
        sampler.join()
        if code != 0:
            out.seek(0)
            err.seek(0)
            sys.exit(
                f"failed with exit code {code}: {shlex.join(command)}\n"
                f"{out.read().decode(errors='replace')}\n{err.read().decode(errors='replace')}"
            )
    return seconds, found


def same_outputs(local: Path, ray: Path) -> None:
    """Stop unless `ray` holds the local engine's outputs: summaries.jsonl byte for byte, the
    tables as data."""
    import polars as pl

    if not filecmp.cmp(local / "summaries.jsonl", ray / "summaries.jsonl", shallow=False):
        sys.exit(f"summaries.jsonl differ: {local} {ray}")
    for name in TABLES:
        left = pl.read_parquet(local / f"{name}.parquet")
        right = pl.read_parquet(ray / f"{name}.parquet")
        if not left.equals(right):
            sys.exit(f"{name}.parquet differ as data: {local} {ray}")


@dataclass
class Row:
    events: int
    runs: int
    engine: str
    command: list[str]
    seconds: list[float] = field(default_factory=list)
    driver_mb: list[float] = field(default_factory=list)
    driver_cpu: list[float] = field(default_factory=list)
    worker_mb: list[float] = field(default_factory=list)
    workers: list[int] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)  # to the local engine, round by round


def table(rows: list[Row], rounds: int) -> str:
    lines = [
        "| events | runs | engine | command | wall s | × local | driver CPU s "
        "| driver peak RSS MB | worker peak RSS MB (workers) |",
        "|---:|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        seconds = statistics.median(row.seconds)
        spread = f" ({min(row.seconds):.1f}–{max(row.seconds):.1f})" if len(row.seconds) > 1 else ""
        ratio = f"{statistics.median(row.ratios):.2f}" if row.ratios else "1.00"
        workers = f"{max(row.worker_mb):,.0f} ({max(row.workers)})" if max(row.workers) else "–"
        lines.append(
            f"| {row.events:,} | {row.runs:,} | {row.engine} | `{shlex.join(row.command)}` "
            f"| {seconds:.1f}{spread} | {ratio} | {statistics.median(row.driver_cpu):.1f} "
            f"| {max(row.driver_mb):,.0f} | {workers} |"
        )
    note = (
        f"Wall: median of {rounds} interleaved rounds (fastest–slowest); × local: median of the "
        "per-round ratios; driver CPU: median (user and system, sampled up to 50 ms before "
        "it exits). Peak RSS: the highest of the rounds."
        if rounds > 1
        else "One round; × local: this command's seconds over the local engine's."
    )
    return "\n".join([*lines, "", note])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--events", nargs="+", default=["10M", "50M"], help="sizes of the logs")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds")
    parser.add_argument(
        "--shard-events",
        nargs="+",
        default=None,
        help="Ray's --batch-events, one Ray command each (default: evalbatch's own)",
    )
    parser.add_argument(
        "--shape",
        choices=tuple(bench_run.SHAPES),
        default="large",
        help="B large (default): few large runs; A small: many small runs (the driver per run)",
    )
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    shard_sizes: list[int | None] = [None]
    if args.shard_events:
        shard_sizes = [bench_run.parse_size(text) for text in args.shard_events]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="ray-engines-", dir=bench_run.HERE / "data") as tmp:
        for size in (bench_run.parse_size(text) for text in args.events):
            data = bench_run.ensure_log(bench_run.SHAPES[args.shape], size, args.seed)
            events, runs = bench_run.log_facts(data)
            local_out = Path(tmp) / f"local-{size}"
            local = Row(events, runs, "local", bench_run.run_command(data))
            local.command[local.command.index("--out") + 1] = bench_run.shown(local_out)
            rays: list[Row] = []
            for shard in shard_sizes:
                extra = ["--engine", "ray"] + (["--batch-events", str(shard)] if shard else [])
                row = Row(events, runs, "ray" + (f", shards ≤{shard:,}" if shard else ""), [])
                row.command = [*local.command, *extra]
                row.command[row.command.index("--out") + 1] = bench_run.shown(
                    Path(tmp) / f"ray-{size}-{shard or 'default'}"
                )
                rays.append(row)
            for _ in range(args.rounds):
                for row in (local, *rays):
                    out = bench_run.ROOT / row.command[row.command.index("--out") + 1]
                    shutil.rmtree(out, ignore_errors=True)
                    seconds, found = timed(row.command)
                    row.seconds.append(seconds)
                    row.driver_mb.append(found.driver_mb)
                    row.driver_cpu.append(found.driver_cpu)
                    row.worker_mb.append(found.worker_mb)
                    row.workers.append(len(found.workers_seen))
                    if row is not local:
                        row.ratios.append(seconds / local.seconds[-1])
                        same_outputs(local_out, out)
                    print(
                        f"{events:,} events, {row.engine}: {seconds:.1f} s, driver "
                        f"{found.driver_mb:,.0f} MB, worker {found.worker_mb:,.0f} MB",
                        flush=True,
                    )
            rows += [local, *rays]
    print()
    print(bench_run.header(sys.argv[1:], "bench/ray_engines.py"))
    print()
    print(table(rows, args.rounds))


if __name__ == "__main__":
    main()
