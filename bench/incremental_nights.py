"""Benchmark: what a night of `evalbatch run --incremental` costs over a store that keeps every
night's files (E-152), from this checkout and from another one given with `--vs`.

A store of nights, each its own directory of one Parquet file of about `--night-events` events
(shape A of bench/run.py: 20 tasks × 3 trials a run, run ids numbered on from the night
before), graded into an output directory night after night. For each number of nights kept
(`--kept`, e.g. 10 and 30) and each checkout, the output directory of the nights before the last
is made once (untimed, with that checkout's code); then, in interleaved rounds, a copy of it is
given the last night (`one night added`: the night's own runs graded, the rest carried) and,
right after, the same command again with nothing new (`nothing new`). Each command is a child
process timed by the operating system:

    git worktree add /tmp/before 146ad48
    python bench/incremental_nights.py --vs /tmp/before                        # 10 and 30 nights
    python bench/incremental_nights.py --vs /tmp/before --kept 3 --night-events 200k --rounds 1

The nights are generated once by DuckDB (`bench/generate_events.sql`) under
bench/data/nights-<events>-seed<seed>/ (gitignored); the output directories are made under it
too and replaced on every invocation, unless `--reuse` keeps those of the nights before the last
that the same checkouts made (they take minutes). Each child runs `python -P` with its checkout
on PYTHONPATH (without -P the working directory, this checkout, would come first), which is
checked before anything is timed. The markdown table printed at the end can be pasted into
bench/RESULTS.md: median wall and CPU seconds (fastest–slowest), the highest peak RSS, and the
median of the per-round CPU ratios of this checkout to the other (on a shared machine the CPU
seconds move far less than the wall seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench_run  # the benchmark's generator, shapes and header

SHAPE = bench_run.SHAPES["small"]


def store_dir(night_events: int, seed: int) -> Path:
    return bench_run.HERE / "data" / f"nights-{night_events}-seed{seed}"


def night_dir(store: Path, night: int) -> Path:
    return store / "events" / f"night-{night:03d}"


def ensure_nights(night_events: int, nights: int, seed: int) -> Path:
    """The store with at least `nights` nights, the missing ones generated (in a child process,
    so the timing process never holds DuckDB's generating memory). A night already there is
    never rewritten: its files keep their identity (E-152)."""
    store = store_dir(night_events, seed)
    done = store / ".complete"
    have = json.loads(done.read_text())["nights"] if done.exists() else 0
    if have < nights:
        command = [sys.executable, __file__, "--generate-only", "--kept", str(nights)]
        command += ["--night-events", str(night_events), "--seed", str(seed)]
        subprocess.run(command, check=True, env=bench_run.child_env())
    return store


def generate(night_events: int, nights: int, seed: int) -> None:
    """Write the nights the store lacks, each one file of its own runs."""
    import duckdb

    store = store_dir(night_events, seed)
    done = store / ".complete"
    facts = json.loads(done.read_text()) if done.exists() else {"nights": 0, "events": []}
    runs = SHAPE.runs_for(night_events)
    suites = store / "suites"
    suites.mkdir(parents=True, exist_ok=True)
    (suites / "bench.json").write_text(json.dumps(bench_run.suite(SHAPE.tasks, SHAPE.trials)))
    query = bench_run.generator_query()
    con = duckdb.connect()
    for night in range(facts["nights"], nights):
        target = night_dir(store, night)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        path = target / "part-00000.parquet"
        params = {
            "first_run": night * runs,
            "runs": runs,
            "tasks": SHAPE.tasks,
            "trials": SHAPE.trials,
            "seed": seed,
        }
        con.execute(f"COPY ({query}) TO '{path}' (FORMAT parquet, COMPRESSION zstd)", params)
        (count,) = con.execute(f"SELECT count(*) FROM read_parquet('{path}')").fetchone() or (0,)
        facts["events"].append(int(count))
        facts["nights"] = night + 1
        done.write_text(json.dumps(facts))
        print(f"generated night {night}: {count:,} events in {runs:,} runs", flush=True)


def run_command(store: Path, nights: int, out: Path) -> list[str]:
    """`evalbatch run --incremental` over the first `nights` nights, as the CLI is run from a
    checkout (its code first on PYTHONPATH)."""
    entry = "from evalbatch.cli import main; main()"
    events = [bench_run.shown(night_dir(store, night)) for night in range(nights)]
    suites = bench_run.shown(store / "suites")
    # -P: the working directory (this checkout) is not put before PYTHONPATH's checkout
    return [bench_run.python(), "-P", "-c", entry, "run", *events, "--suites", suites]


def check_imports(checkout: Path) -> None:
    """Stop unless a child given `checkout` on PYTHONPATH imports evalbatch from it."""
    command = [bench_run.python(), "-P", "-c", "import evalbatch; print(evalbatch.__file__)"]
    env = dict(os.environ, PYTHONPATH=str(checkout))
    found = subprocess.run(
        command, cwd=bench_run.ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    if not Path(found).resolve().is_relative_to(checkout.resolve()):
        sys.exit(f"a child given {checkout} imports evalbatch from {found}")


def incremental(command: list[str], out: Path) -> list[str]:
    return [*command, "--out", bench_run.shown(out), "--incremental", "--quiet"]


def shown_command(store: Path, nights: int) -> str:
    """The command as printed: the night directories as one brace expansion."""
    first, last = (bench_run.shown(night_dir(store, n)) for n in (0, nights - 1))
    stem = first.rsplit("-", 1)[0]
    events = f"{stem}-{{{first.rsplit('-', 1)[1]}..{last.rsplit('-', 1)[1]}}}"
    suites = bench_run.shown(store / "suites")
    return (
        f"evalbatch run {events} --suites {suites} --out OUT --incremental --quiet"
        if nights > 1
        else f"evalbatch run {first} --suites {suites} --out OUT --incremental --quiet"
    )


def timed(command: list[str], checkout: Path) -> tuple[float, float, float]:
    """Run `command` with `checkout` first on the import path: wall seconds, CPU seconds (user
    and system, of the child and its threads) and peak RSS MB. Exit codes other than 0 stop the
    benchmark with the command's output."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(command, cwd=bench_run.ROOT, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            out.seek(0)
            err.seek(0)
            sys.exit(
                f"exit {code} from {checkout}: {shlex.join(command)}\n"
                f"{out.read().decode(errors='replace')}\n{err.read().decode(errors='replace')}"
            )
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


@dataclass
class Figures:
    """One case's rounds for one checkout: wall and CPU seconds, peak RSS MB."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--vs", type=Path, help="the other checkout (a commit before E-152)")
    parser.add_argument(
        "--kept", default="10,30", help="nights kept, comma-separated (default 10,30)"
    )
    parser.add_argument("--night-events", type=bench_run.parse_size, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="reuse the outputs of the nights before the last that an earlier invocation made "
        "with the same checkouts (they take minutes to make)",
    )
    parser.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--generate-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    kept = sorted({int(k) for k in args.kept.split(",")})
    if args.generate_only:
        generate(args.night_events, max(kept), args.seed)
        return
    if args.vs is None:
        parser.error("--vs CHECKOUT is needed: the code to compare this checkout with")
    if min(kept) < 2:
        parser.error("--kept needs at least 2 nights (one kept, one added)")
    store = ensure_nights(args.night_events, max(kept), args.seed)
    night_counts = json.loads((store / ".complete").read_text())["events"]
    checkouts = {"this checkout": bench_run.ROOT, f"--vs {args.vs}": args.vs.resolve()}
    for checkout in checkouts.values():
        check_imports(checkout)
    cases = ("one night added", "nothing new")
    figures = {
        (nights, case, name): Figures() for nights in kept for case in cases for name in checkouts
    }
    work = store / "work"
    if not args.reuse:
        shutil.rmtree(work, ignore_errors=True)
    print(bench_run.header(sys.argv[1:], "bench/incremental_nights.py"), flush=True)
    bases: dict[tuple[int, str], Path] = {}
    for nights in kept:
        for number, (name, checkout) in enumerate(checkouts.items()):
            base = work / f"base-{nights}-{number}"
            bases[(nights, name)] = base
            made_by = work / f"base-{nights}-{number}.made-by"  # the checkout that made it
            if args.reuse and made_by.exists() and made_by.read_text() == str(checkout):
                print(f"reusing the outputs of {nights - 1} nights made with {name}")
                continue
            shutil.rmtree(base, ignore_errors=True)
            started = time.perf_counter()
            timed(incremental(run_command(store, nights - 1, base), base), checkout)
            seconds = time.perf_counter() - started
            made_by.write_text(str(checkout))
            print(f"made the outputs of {nights - 1} nights with {name} ({seconds:.1f} s)")
    for round_no in range(args.rounds):
        for nights in kept:
            for number, name in enumerate(checkouts):
                out = work / f"night-{nights}-{number}"
                shutil.rmtree(out, ignore_errors=True)
                shutil.copytree(bases[(nights, name)], out)
                command = incremental(run_command(store, nights, out), out)
                for case in cases:
                    wall, cpu, rss = timed(command, checkouts[name])
                    figures[(nights, case, name)].wall.append(wall)
                    figures[(nights, case, name)].cpu.append(cpu)
                    figures[(nights, case, name)].rss_mb.append(rss)
                    print(
                        f"round {round_no + 1}, {nights} nights, {case}, {name}: "
                        f"{wall:.2f} s wall, {cpu:.2f} s CPU, {rss:,.0f} MB",
                        flush=True,
                    )
    mine, other = checkouts
    print()
    for nights in kept:
        print(f"- {nights} nights: `{shown_command(store, nights)}`")
    print(
        f"\n| nights kept | events kept | case | wall s, {mine} | wall s, {other} "
        f"| CPU s, {mine} | CPU s, {other} | CPU ratio (paired median) "
        f"| peak RSS MB, {mine} / {other} |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for nights in kept:
        for case in cases:
            a, b = figures[(nights, case, mine)], figures[(nights, case, other)]
            ratio = statistics.median(x / y for x, y in zip(a.cpu, b.cpu, strict=True))
            print(
                f"| {nights} | {sum(night_counts[:nights]):,} | {case} | {_spread(a.wall)} "
                f"| {_spread(b.wall)} | {_spread(a.cpu)} | {_spread(b.cpu)} | {ratio:.3f} "
                f"| {max(a.rss_mb):,.0f} / {max(b.rss_mb):,.0f} |"
            )
    print(
        f"\nSeconds: median of {args.rounds} interleaved rounds (fastest–slowest); each night "
        f"holds {min(night_counts):,}–{max(night_counts):,} events in "
        f"{SHAPE.runs_for(args.night_events):,} runs; the CPU ratio is this checkout's over the "
        "other's, round by round."
    )


def _spread(values: list[float]) -> str:
    median = statistics.median(values)
    return (
        f"{median:.2f} ({min(values):.2f}–{max(values):.2f})"
        if len(values) > 1
        else f"{median:.2f}"
    )


if __name__ == "__main__":
    main()
