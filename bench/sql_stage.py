"""Where `evalbatch run` spends its time against the floor, for each shape of log: the floor, the
events pass alone, the whole SQL stage, and the whole command, each as its own child process on
the same files. The SQL stages are timed from after their imports (the child prints its own
seconds); `evalbatch run`, as in bench/run.py, as the whole command.

    python bench/sql_stage.py --events 10M --shape both     # needs the logs bench/run.py made
    python bench/sql_stage.py --stage events 'bench/data/small-200000-seed1/events/*.parquet'

The events pass is the first SQL query (sql/events/events.sql with what it reads,
`events_pass.events_pass`): every payload parsed once, plus the strict-JSON checks DuckDB's
lenient parser needs (NaN, trailing commas, repeated keys: D-3, D-7, E-60..E-61), the
duplicate-key collapse (D-3) and the 16-digit check (D-7); it is timed over one batch of every
run, and over the batches `run` cuts (`plan_batches`, one after another, nothing beside them:
the pass as `run` does it). The whole SQL stage adds the per-type tables, eval spans, trial
segments and brackets (§2) and the batch fingerprints, all for one batch of every run in the
files. `STAGES` is the one place that names the engine's entry points.
Wall time and peak RSS come from wait4; each stage is run `--repeat` times, interleaved, and
the fastest is kept. Prints a markdown table, one row per stage with its command.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shlex
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from run import (
    NATIVE_LIBRARY,
    SHAPES,
    Shape,
    child,
    data_dir,
    floor_command,
    header,
    is_cached,
    log_facts,
    measure,
    parse_size,
    python,
    run_command,
    shown,
)

if TYPE_CHECKING:
    from evalbatch.options import Extractor, Resources


def _floor(files: list[str], _resources: Resources) -> None:
    import floor

    with contextlib.redirect_stdout(io.StringIO()):
        floor.main(files)


def _events_pass(files: list[str], resources: Resources) -> None:
    from evalbatch.extract import events_pass
    from evalbatch.inputs import event_files

    con = events_pass.new_connection(resources)
    events_pass.events_pass(con, event_files.scan(con, files), None)


def _events_pass_batched(files: list[str], resources: Resources) -> None:
    from evalbatch.extract import events_pass
    from evalbatch.inputs import event_files

    con = events_pass.new_connection(resources)
    sources = event_files.scan(con, files)
    for runs in event_files.plan_batches(con, sources, resources.batch_events).ranges:
        events_pass.events_pass(con, sources, runs)


def _sql_stage(files: list[str], resources: Resources) -> None:
    from evalbatch.extract import sql_files, trial_tables
    from evalbatch.inputs import event_files

    con = trial_tables.new_connection(resources)
    trial_tables.extract(con, event_files.scan(con, files), None)
    con.execute(sql_files.load_query("batch_fingerprints").text).fetchall()


#: stage name -> (label in the table, what the child runs after its imports)
STAGES: dict[str, tuple[str, Callable[[list[str], Resources], None]]] = {
    "floor": ("floor, timed after its imports", _floor),
    "events": ("events pass (parse + checks, one batch)", _events_pass),
    "batches": ("events pass (parse + checks) in run's batches", _events_pass_batched),
    "sql": ("whole SQL stage (one batch)", _sql_stage),
}


def run_stage(stage: str, patterns: list[str], extractor: Extractor = "auto") -> None:
    """The child: import what the stage needs, then time only the stage and print its seconds
    (with the extractor named: the library reads no environment variable, E-130)."""
    import duckdb  # noqa: F401  (imported before the clock starts, as every stage needs it)

    from evalbatch.extract import trial_tables  # noqa: F401
    from evalbatch.inputs import event_files
    from evalbatch.options import Resources

    files = event_files.expand_paths(patterns)
    started = time.perf_counter()
    STAGES[stage][1](files, Resources(extractor=extractor))
    print(time.perf_counter() - started)


def _by(extractor: str | None) -> str:
    """A row label's note of the extractor it ran with (E-108)."""
    return f", {extractor} extractor" if extractor is not None else ""


def timed(name: str, command: list[str]) -> dict[str, float]:
    """A stage's own seconds (the child prints them last) and the child's peak RSS (wait4)."""
    _, rss_mb, stdout = child(name, command)
    return {"seconds": float(stdout.split()[-1]), "rss_mb": rss_mb}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--events", default="10M", help="size of the logs bench/run.py made")
    parser.add_argument("--shape", choices=("small", "large", "both"), default="both")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="runs per stage (fastest kept)")
    parser.add_argument(
        "--stage", choices=sorted(STAGES), help="be the child: time this stage over FILES"
    )
    parser.add_argument(
        "--extractor", choices=("native", "duckdb"), help="with --stage: the extractor (E-108)"
    )
    parser.add_argument("files", nargs="*", help="with --stage: event files or globs")
    args = parser.parse_args()
    if args.stage:
        run_stage(args.stage, args.files, args.extractor or "auto")
        return
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    events = parse_size(args.events)
    shapes = [SHAPES[args.shape]] if args.shape != "both" else list(SHAPES.values())
    #: (shape, stage label, command, whether the child prints its own seconds)
    rows: list[tuple[Shape, str, list[str], bool]] = []
    for shape in shapes:
        data = data_dir(shape, events, args.seed)
        if not is_cached(shape, events, args.seed):
            sys.exit(
                f"no generated log at {shown(data)}: run "
                f"bench/run.py --events {args.events} --shape {shape.name} first"
            )
        files = shown(data / "events" / "*.parquet")
        rows.append((shape, "floor (DuckDB, needed fields)", floor_command(data), False))
        extractors = ("native", "duckdb") if NATIVE_LIBRARY.exists() else (None,)
        for stage, (label, _) in STAGES.items():
            for name in extractors if stage != "floor" else (None,):
                command = [python(), "bench/sql_stage.py", "--stage", stage, files]
                if name is not None:
                    command[2:2] = ["--extractor", name]
                rows.append((shape, f"{label}{_by(name)}", command, True))
        for name in extractors:
            extra = ("--extractor", name) if name is not None else ()
            rows.append((shape, f"evalbatch run{_by(name)}", run_command(data, extra), False))

    best: dict[int, dict[str, float]] = {}
    for _ in range(args.repeat):  # interleaved, so a slow spell of the machine hits every stage
        for number, (shape, label, command, own_clock) in enumerate(rows):
            name = f"{shape.label} {label}"
            figures = timed(name, command) if own_clock else measure(name, command)
            if number not in best or figures["seconds"] < best[number]["seconds"]:
                best[number] = figures

    print(f"\n{header(sys.argv[1:], 'bench/sql_stage.py')}\n")
    print("| shape | events | runs | stage | command | seconds | × floor | peak RSS MB |")
    print("|---|---:|---:|---|---|---:|---:|---:|")
    floor = 0.0
    for number, (shape, label, command, _) in enumerate(rows):
        figures = best[number]
        if command == floor_command(data_dir(shape, events, args.seed)):
            floor = figures["seconds"]
        total, runs = log_facts(data_dir(shape, events, args.seed))
        print(
            f"| {shape.label} {shape.name} | {total:,} | {runs:,} | {label} "
            f"| `{shlex.join(command)}` | {figures['seconds']:.2f} "
            f"| {figures['seconds'] / floor:.2f} | {figures['rss_mb']:,.0f} |"
        )
    print(
        f"\nFastest of {args.repeat} interleaved runs each. Rows with `--stage` are timed by the "
        "child from after its imports; the others as whole processes. × floor: over the floor "
        "of the same shape as a whole process (as bench/run.py)."
    )


if __name__ == "__main__":
    main()
