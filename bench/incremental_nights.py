"""Benchmark: what a night of `evalbatch run --incremental` costs over a store that keeps every
night's files (E-152, E-156), from this checkout and from another one given with `--vs`.

Two layouts of a store of Parquet files, each file its own runs (run ids numbered on from the
file before), of a shape of bench/run.py (`--shape`: `small`, A, 20 tasks × 3 trials a run, the
default; `large`, B, 1,000 tasks × 10 trials a run):

- *nights* (without `--added-events`): `--kept` nights of about `--night-events` events each;
  the night timed adds the last of them to the outputs of the ones before it.
- *kept files* (`--added-events N`): `--kept` files of about `--night-events` events each are
  the outputs' store; the night timed adds one more file of about N events (its run ids after
  every kept file's).

For each number of files kept (`--kept`, e.g. 10 and 30) and each checkout, the output
directory of the store before the night is made once (untimed, with that checkout's code);
then, in interleaved rounds, a copy of it is given the night (`one night added` or `one file
added`: its own runs graded, the rest carried), right after that the same command again with
nothing new (`nothing new`), and then the added file graded alone into an empty directory by a
plain `evalbatch run` (`its file alone`: what the night is held to). Each command is a child
process timed by the operating system:

    git worktree add /tmp/before 146ad48
    python bench/incremental_nights.py --vs /tmp/before                        # 10 and 30 nights
    python bench/incremental_nights.py --vs /tmp/before --kept 3 --night-events 200k --rounds 1
    python bench/incremental_nights.py --vs /tmp/before --shape large --kept 10 \
        --night-events 3M --added-events 1M                  # 10 kept files of 3M, 1M added

The files are generated once by DuckDB (`bench/generate_events.sql`) under
bench/data/nights-<events>-seed<seed>/ (shape A) or bench/data/nights-large-<events>-seed<seed>/
(shape B; an added file under its `added-<events>/`), gitignored; the output directories are
made under it too and replaced on every invocation, unless `--reuse` keeps those of the store
before the night that the same checkouts made (they take minutes). Each child runs `python -P`
with its checkout on PYTHONPATH (without -P the working directory, this checkout, would come
first), which is checked before anything is timed. The markdown table printed at the end can be
pasted into bench/RESULTS.md: median wall and CPU seconds (fastest–slowest), the highest peak
RSS, and the median of the per-round CPU ratios of this checkout to the other (on a shared
machine the CPU seconds move far less than the wall seconds).
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench_run  # the benchmark's generator, shapes and header

#: the first run number of an added file: after every kept file's runs, whatever their number
ADDED_FIRST_RUN = 9_000_000


def store_dir(shape: bench_run.Shape, night_events: int, seed: int) -> Path:
    """Where a store of files of `night_events` events of `shape` is kept (shape A's as before
    shapes were an option, so its stores stay valid)."""
    stem = "nights" if shape.name == "small" else f"nights-{shape.name}"
    return bench_run.HERE / "data" / f"{stem}-{night_events}-seed{seed}"


def night_dir(store: Path, night: int) -> Path:
    return store / "events" / f"night-{night:03d}"


def added_dir(store: Path, added_events: int) -> Path:
    return store / f"added-{added_events}"


def ensure_nights(
    shape: bench_run.Shape, night_events: int, nights: int, seed: int, added_events: int | None
) -> Path:
    """The store with at least `nights` nights (and the added file, when asked for), the missing
    ones generated (in a child process, so the timing process never holds DuckDB's generating
    memory). A file already there is never rewritten: it keeps its identity (E-152)."""
    store = store_dir(shape, night_events, seed)
    done = store / ".complete"
    facts = json.loads(done.read_text()) if done.exists() else {}
    missing = facts.get("nights", 0) < nights
    if added_events is not None and str(added_events) not in facts.get("added", {}):
        missing = True
    if missing:
        command = [sys.executable, __file__, "--generate-only", "--kept", str(nights)]
        command += ["--night-events", str(night_events), "--seed", str(seed)]
        command += ["--shape", shape.name]
        if added_events is not None:
            command += ["--added-events", str(added_events)]
        subprocess.run(command, check=True, env=bench_run.child_env())
    return store


def _write_file(
    con: Any, shape: bench_run.Shape, path: Path, first_run: int, runs: int, seed: int
) -> int:
    """One file of `runs` runs of `shape` from run number `first_run`; its event count."""
    params = {
        "first_run": first_run,
        "runs": runs,
        "tasks": shape.tasks,
        "trials": shape.trials,
        "seed": seed,
    }
    query = bench_run.generator_query()
    con.execute(f"COPY ({query}) TO '{path}' (FORMAT parquet, COMPRESSION zstd)", params)
    (count,) = con.execute(f"SELECT count(*) FROM read_parquet('{path}')").fetchone() or (0,)
    return int(count)


def generate(
    shape: bench_run.Shape, night_events: int, nights: int, seed: int, added_events: int | None
) -> None:
    """Write the nights the store lacks, each one file of its own runs, and the added file."""
    import duckdb

    store = store_dir(shape, night_events, seed)
    done = store / ".complete"
    facts = json.loads(done.read_text()) if done.exists() else {"nights": 0, "events": []}
    facts.setdefault("added", {})
    runs = shape.runs_for(night_events)
    suites = store / "suites"
    suites.mkdir(parents=True, exist_ok=True)
    (suites / "bench.json").write_text(json.dumps(bench_run.suite(shape.tasks, shape.trials)))
    con = duckdb.connect()
    for night in range(facts["nights"], nights):
        target = night_dir(store, night)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        count = _write_file(con, shape, target / "part-00000.parquet", night * runs, runs, seed)
        facts["events"].append(count)
        facts["nights"] = night + 1
        done.write_text(json.dumps(facts))
        print(f"generated night {night}: {count:,} events in {runs:,} runs", flush=True)
    if added_events is not None and str(added_events) not in facts["added"]:
        target = added_dir(store, added_events)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        added_runs = shape.runs_for(added_events)
        path = target / "part-00000.parquet"
        count = _write_file(con, shape, path, ADDED_FIRST_RUN, added_runs, seed)
        facts["added"][str(added_events)] = count
        done.write_text(json.dumps(facts))
        print(f"generated the added file: {count:,} events in {added_runs:,} runs", flush=True)


@dataclass(frozen=True)
class Layout:
    """What the outputs hold before the night (`before`), and the night's event directories."""

    before: list[Path]
    night: list[Path]

    @property
    def added(self) -> Path:
        return self.night[-1]


def layout(store: Path, kept: int, added_events: int | None) -> Layout:
    """The nights layout (the last of `kept` nights added) or the kept-files one (the added
    file after all `kept`)."""
    if added_events is None:
        nights = [night_dir(store, night) for night in range(kept)]
        return Layout(nights[:-1], nights)
    files = [night_dir(store, night) for night in range(kept)]
    return Layout(files, [*files, added_dir(store, added_events)])


def run_command(store: Path, events: list[Path]) -> list[str]:
    """`evalbatch run` over `events`, as the CLI is run from a checkout (its code first on
    PYTHONPATH)."""
    entry = "from evalbatch.cli import main; main()"
    suites = bench_run.shown(store / "suites")
    # -P: the working directory (this checkout) is not put before PYTHONPATH's checkout
    shown = [bench_run.shown(path) for path in events]
    return [bench_run.python(), "-P", "-c", entry, "run", *shown, "--suites", suites]


def incremental(command: list[str], out: Path) -> list[str]:
    return [*command, "--out", bench_run.shown(out), "--incremental", "--quiet"]


def plain(command: list[str], out: Path) -> list[str]:
    return [*command, "--out", bench_run.shown(out), "--quiet"]


def shown_events(paths: list[Path]) -> str:
    """Event directories as printed: numbered nights as one brace expansion."""
    nights = [bench_run.shown(p) for p in paths if p.name.startswith("night-")]
    others = [bench_run.shown(p) for p in paths if not p.name.startswith("night-")]
    if len(nights) > 1:
        stem = nights[0].rsplit("-", 1)[0]
        first, last = (n.rsplit("-", 1)[1] for n in (nights[0], nights[-1]))
        nights = [f"{stem}-{{{first}..{last}}}"]
    return " ".join([*nights, *others])


def shown_command(store: Path, events: list[Path], incremental_run: bool = True) -> str:
    """A command as printed."""
    suites = bench_run.shown(store / "suites")
    tail = " --incremental --quiet" if incremental_run else " --quiet"
    return f"evalbatch run {shown_events(events)} --suites {suites} --out OUT{tail}"


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
        "--kept", default="10,30", help="files kept, comma-separated (default 10,30)"
    )
    parser.add_argument(
        "--shape",
        choices=sorted(bench_run.SHAPES),
        default="small",
        help="small: A, 20 tasks × 3 trials a run (default); large: B, 1,000 × 10",
    )
    parser.add_argument("--night-events", type=bench_run.parse_size, default=1_000_000)
    parser.add_argument(
        "--added-events",
        type=bench_run.parse_size,
        default=None,
        help="the kept-files layout: the night adds one file of this many events to --kept "
        "files (without it, the night adds the last of --kept nights)",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="reuse the outputs of the store before the night that an earlier invocation made "
        "with the same checkouts (they take minutes to make)",
    )
    parser.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--generate-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    shape = bench_run.SHAPES[args.shape]
    kept = sorted({int(k) for k in args.kept.split(",")})
    if args.generate_only:
        generate(shape, args.night_events, max(kept), args.seed, args.added_events)
        return
    if args.vs is None:
        parser.error("--vs CHECKOUT is needed: the code to compare this checkout with")
    if min(kept) < (1 if args.added_events is not None else 2):
        parser.error("--kept needs at least 2 nights (one kept, one added), or 1 file kept")
    store = ensure_nights(shape, args.night_events, max(kept), args.seed, args.added_events)
    facts = json.loads((store / ".complete").read_text())
    night_counts = facts["events"]
    checkouts = {"this checkout": bench_run.ROOT, f"--vs {args.vs}": args.vs.resolve()}
    for checkout in checkouts.values():
        bench_run.check_imports(checkout)
    added = "one file added" if args.added_events is not None else "one night added"
    cases = (added, "nothing new", "its file alone")
    figures = {
        (nights, case, name): Figures() for nights in kept for case in cases for name in checkouts
    }
    suffix = "" if args.added_events is None else f"-added{args.added_events}"
    work = store / f"work{suffix}"
    if not args.reuse:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    print(bench_run.header(sys.argv[1:], "bench/incremental_nights.py"), flush=True)
    bases: dict[tuple[int, str], Path] = {}
    for nights in kept:
        files = layout(store, nights, args.added_events)
        for number, (name, checkout) in enumerate(checkouts.items()):
            base = work / f"base-{nights}-{number}"
            bases[(nights, name)] = base
            made_by = work / f"base-{nights}-{number}.made-by"  # the checkout that made it
            if args.reuse and made_by.exists() and made_by.read_text() == str(checkout):
                print(f"reusing the outputs of the store before the night, made with {name}")
                continue
            shutil.rmtree(base, ignore_errors=True)
            started = time.perf_counter()
            timed(incremental(run_command(store, files.before), base), checkout)
            seconds = time.perf_counter() - started
            made_by.write_text(str(checkout))
            print(f"made the outputs of {len(files.before)} files with {name} ({seconds:.1f} s)")
    for round_no in range(args.rounds):
        for nights in kept:
            files = layout(store, nights, args.added_events)
            for number, name in enumerate(checkouts):
                out = work / f"night-{nights}-{number}"
                alone = work / f"alone-{nights}-{number}"
                shutil.rmtree(out, ignore_errors=True)
                shutil.copytree(bases[(nights, name)], out)
                command = incremental(run_command(store, files.night), out)
                commands = {
                    added: command,
                    "nothing new": command,
                    "its file alone": plain(run_command(store, [files.added]), alone),
                }
                for case in cases:
                    shutil.rmtree(alone, ignore_errors=True)
                    wall, cpu, rss = timed(commands[case], checkouts[name])
                    figures[(nights, case, name)].wall.append(wall)
                    figures[(nights, case, name)].cpu.append(cpu)
                    figures[(nights, case, name)].rss_mb.append(rss)
                    print(
                        f"round {round_no + 1}, {nights} kept, {case}, {name}: "
                        f"{wall:.2f} s wall, {cpu:.2f} s CPU, {rss:,.0f} MB",
                        flush=True,
                    )
    mine, other = checkouts
    print()
    for nights in kept:
        files = layout(store, nights, args.added_events)
        print(f"- {nights} kept, the night: `{shown_command(store, files.night)}`")
    print(f"- its file alone: `{shown_command(store, [files.added], incremental_run=False)}`")
    print(
        f"\n| files kept | events kept | case | wall s, {mine} | wall s, {other} "
        f"| CPU s, {mine} | CPU s, {other} | CPU ratio (paired median) "
        f"| peak RSS MB, {mine} / {other} |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for nights in kept:
        files = layout(store, nights, args.added_events)
        events_kept = sum(night_counts[: len(files.before)])
        for case in cases:
            a, b = figures[(nights, case, mine)], figures[(nights, case, other)]
            ratio = statistics.median(x / y for x, y in zip(a.cpu, b.cpu, strict=True))
            print(
                f"| {len(files.before)} | {events_kept:,} | {case} | {_spread(a.wall)} "
                f"| {_spread(b.wall)} | {_spread(a.cpu)} | {_spread(b.cpu)} | {ratio:.3f} "
                f"| {max(a.rss_mb):,.0f} / {max(b.rss_mb):,.0f} |"
            )
        mine_night = statistics.median(
            x / y
            for x, y in zip(
                figures[(nights, added, mine)].cpu,
                figures[(nights, "its file alone", mine)].cpu,
                strict=True,
            )
        )
        print(
            f"\n{len(files.before)} kept: the night added costs {mine_night:.2f}× its file "
            f"alone in CPU seconds ({mine}, median of the per-round ratios)"
        )
    added_count = (
        facts["added"][str(args.added_events)]
        if args.added_events is not None
        else night_counts[max(kept) - 1]
    )
    print(
        f"\nSeconds: median of {args.rounds} interleaved rounds (fastest–slowest); each kept "
        f"file holds {min(night_counts):,}–{max(night_counts):,} events in "
        f"{shape.runs_for(args.night_events):,} runs of shape {shape.label} "
        f"({shape.tasks:,} tasks × {shape.trials} trials); the file added holds "
        f"{added_count:,} events; the CPU ratio is this checkout's over the other's, round by "
        "round."
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
