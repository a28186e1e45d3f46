"""Benchmark: `evalbatch report` at nightly scale, beside the `evalbatch run` that made its
input, and the page in headless Chromium (E-106).

    python bench/report_scale.py                        # 10,000 runs × 20 tasks × 3 trials
    python bench/report_scale.py --repeat 3             # interleaved rounds, medians
    python bench/report_scale.py --compare ../old-tree  # another checkout's report beside it

The log is shape A of bench/run.py (many small runs, 20 tasks × 3 trials each), generated once
and kept under bench/data/. Each round runs, as child processes timed by the operating system
(wait4): `evalbatch run` over the log, `evalbatch report` over its output, and Chromium from
start to its first screenshot of the page (a 1280×800 window, a fresh profile, no network).
With `--compare`, the report of another checkout (its code first on the import path) is timed
on the same output too. The markdown table printed at the end goes into bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # the benchmark's log, children and header

#: the window the first screen is taken in (the report's tests use the same)
SCREEN = "1280,800"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        sys.exit("headless Chromium is needed: apt-get install -y chromium (make browser)")
    return found


def screenshot_command(page: Path, profile: Path) -> list[str]:
    """Chromium from start to its first screenshot of `page`."""
    return [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--screenshot={profile / 'first-screen.png'}",
        f"--window-size={SCREEN}",
        page.as_uri(),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10_000, help="runs in the log (10,000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=1, help="interleaved rounds")
    parser.add_argument(
        "--compare", type=Path, default=None, help="another checkout whose report to time too"
    )
    args = parser.parse_args()
    shape = bench.SHAPES["small"]
    events = round(args.runs * shape.events_per_run)
    data = bench.ensure_log(shape, events, args.seed)
    total, runs = bench.log_facts(data)
    out = data / "out"
    page = out / "report.html"
    evalbatch = bench.shown(Path(sys.executable).with_name("evalbatch"))
    stages: dict[str, tuple[list[str], dict[str, str] | None]] = {
        "evalbatch run": (bench.run_command(data), None),
        "evalbatch report": ([evalbatch, "report", bench.shown(out), "-q"], None),
    }
    if args.compare is not None:
        other = args.compare.resolve()
        other_env = {**os.environ, "PYTHONPATH": str(other)}
        old_page = out / "report-compare.html"
        command = [evalbatch, "report", bench.shown(out), "-o", bench.shown(old_page), "-q"]
        stages[f"evalbatch report ({other.name})"] = (command, other_env)
    seconds: dict[str, list[float]] = {name: [] for name in [*stages, "Chromium first screen"]}
    rss: dict[str, list[float]] = {name: [] for name in seconds}
    sizes: dict[str, int] = {}
    for _ in range(args.repeat):
        for name, (command, stage_env) in stages.items():
            wall, peak, _ = bench.child(name, command, stage_env)
            seconds[name].append(wall)
            rss[name].append(peak)
        sizes["report.html"] = page.stat().st_size
        if args.compare is not None:
            sizes["report-compare.html"] = (out / "report-compare.html").stat().st_size
        with tempfile.TemporaryDirectory() as profile:
            command = screenshot_command(page, Path(profile))
            wall, peak, _ = bench.child("Chromium first screen", command)
            if not (Path(profile) / "first-screen.png").is_file():
                sys.exit("Chromium wrote no screenshot: " + shlex.join(command))
        seconds["Chromium first screen"].append(wall)
        rss["Chromium first screen"].append(peak)

    argv = sys.argv[1:]
    print(bench.header(argv, "bench/report_scale.py"))
    print(f"Log: {total:,} events, {runs:,} runs ({shape.tasks} tasks × {shape.trials} trials)")
    print()
    print("| stage | command | seconds | peak RSS MB |")
    print("|---|---|---:|---:|")
    for name, figures in seconds.items():
        command = stages[name][0] if name in stages else screenshot_command(page, Path("PROFILE"))
        spread = f" ({min(figures):.2f}–{max(figures):.2f})" if len(figures) > 1 else ""
        print(
            f"| {name} | `{shlex.join(command)}` | {statistics.median(figures):.2f}{spread} "
            f"| {max(rss[name]):,.0f} |"
        )
    print()
    for name, size in sizes.items():
        print(f"{name}: {size:,} bytes ({size / 1e6:.2f} MB)")
    ratio = statistics.median(
        r / w for r, w in zip(seconds["evalbatch report"], seconds["evalbatch run"], strict=True)
    )
    print(f"report / run: {ratio:.2f} (median of the per-round ratios)")
    if args.repeat > 1:
        print(f"Seconds: median of {args.repeat} interleaved rounds (fastest–slowest).")


if __name__ == "__main__":
    main()
