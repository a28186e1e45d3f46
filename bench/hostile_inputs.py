"""Benchmark: what hostile compressed input costs `evalbatch ingest` (E-115, E-116).

Two small files that inflate to gigabytes, generated here (in a temporary directory, streamed
through Python's gzip and zipfile, nothing kept), each ingested by its own child process:

- `gzip-line`: a ~1 MB `.ndjson.gz` whose one line inflates to 1 GiB;
- `eval-archive`: a ~2 MB Inspect `.eval` archive (a zip) whose first sample member inflates
  to 2 GiB (the other members are the sample log's, `data/samples/inspect/arithmetic.eval`;
  reading it needs Inspect's log reader, `evalbatch[inspect]`);
- `baseline`: a one-line `.ndjson`, for the process's own footprint.

    python bench/hostile_inputs.py                        # all three
    python bench/hostile_inputs.py --case gzip-line       # one of them
    python bench/hostile_inputs.py --timeout 120          # kill a child after 120 s
    python bench/hostile_inputs.py --ingest-args='--max-ratio 100000'   # the next cap in line

Each child runs with this checkout first on PYTHONPATH; its wall time is the clock's and its peak
RSS the operating system's (wait4), never a timed unit test. A child still running after
`--timeout` seconds is killed and its row says so. The markdown table printed at the end has one
row per case: the command, its exit code, wall seconds and peak RSS; bounded input means an exit
code of 2 or 3 (a clear problem), seconds rather than minutes, and a peak RSS near the baseline's.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EVALBATCH = ROOT / ".venv" / "bin" / "evalbatch"
TEMPLATE_LOG = ROOT / "data" / "samples" / "inspect" / "arithmetic.eval"
MIB = 1 << 20
GIB = 1 << 30
#: what is written at a time: the generator holds no more than this
CHUNK = 4 * MIB


def _pad(write: Callable[[bytes], object], size: int) -> None:
    """`size` bytes of one repeated letter, written a chunk at a time."""
    chunk = b"a" * CHUNK
    while size > 0:
        write(chunk[: min(size, CHUNK)])
        size -= CHUNK


def gzip_line(directory: Path, inflated: int = GIB) -> Path:
    """A `.ndjson.gz` holding one RunEventDoc line of `inflated` bytes (a padding payload)."""
    head = b'{"runId":"bench/hostile-0001","sequence":0,"type":"run.note","payload":{"pad":"'
    tail = b'"}}\n'
    path = directory / "one-line.ndjson.gz"
    with gzip.open(path, "wb", compresslevel=9) as out:
        out.write(head)
        _pad(out.write, inflated - len(head) - len(tail))
        out.write(tail)
    return path


def eval_archive(directory: Path, inflated: int = 2 * GIB) -> Path:
    """An Inspect `.eval` archive: the sample log's members (deflated), its first sample's JSON
    padded with a `metadata.pad` string so that the member inflates to `inflated` bytes."""
    import zipfile_zstd  # noqa: F401  (Inspect's archives are zstd; it teaches zipfile to read them)

    path = directory / "big-sample.eval"
    with (
        zipfile.ZipFile(TEMPLATE_LOG) as template,
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out,
    ):
        names = template.namelist()
        padded = next(n for n in names if n.startswith("samples/"))
        for name in names:
            data = template.read(name)
            if name != padded:
                out.writestr(name, data)
                continue
            sample = json.loads(data)
            sample.pop("metadata", None)
            head = b'{"metadata":{"pad":"'
            tail = b'"},' + json.dumps(sample).encode()[1:]
            with out.open(name, "w", force_zip64=True) as member:
                member.write(head)
                _pad(member.write, inflated - len(head) - len(tail))
                member.write(tail)
    return path


def baseline(directory: Path) -> Path:
    path = directory / "one-event.ndjson"
    path.write_text('{"runId":"bench/baseline-0001","sequence":0,"type":"run.note"}\n')
    return path


CASES: dict[str, tuple[str, Callable[[Path], Path]]] = {
    "gzip-line": ("~1 MB .ndjson.gz, one line inflating to 1 GiB", gzip_line),
    "eval-archive": ("~2 MB .eval archive, one sample member inflating to 2 GiB", eval_archive),
    "baseline": ("a one-event .ndjson (the process's own footprint)", baseline),
}


@dataclass(frozen=True)
class Measured:
    case: str
    what: str
    input_bytes: int
    command: str
    exit_code: int | None  # None: killed at the timeout
    seconds: float
    rss_mb: float
    first_line: str  # what it printed first (stderr, then stdout)


def child_env() -> dict[str, str]:
    """The environment of every child: this checkout's code first on the import path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def measure(case: str, directory: Path, timeout: float, extra: list[str]) -> Measured:
    """Generate the case's file, then ingest it in a child: wall time from the clock, peak RSS
    from wait4 (a child killed at `timeout` reports the peak it had reached)."""
    what, generate = CASES[case]
    source = generate(directory)
    out = directory / f"out-{case}"
    command = [str(EVALBATCH), "ingest", str(source), "--out", str(out), *extra]
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        proc = subprocess.Popen(command, env=child_env(), stdout=stdout, stderr=stderr)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        seconds = time.perf_counter() - started
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        stderr.seek(0)
        stdout.seek(0)
        said = (stderr.read() + stdout.read()).decode(errors="replace").strip().splitlines()
    shown = shlex.join(command).replace(str(directory), "$TMP").replace(str(ROOT) + "/", "")
    first = said[0].strip().replace(str(directory), "$TMP") if said else ""
    return Measured(
        case=case,
        what=what,
        input_bytes=source.stat().st_size,
        command=shown,
        exit_code=None if code < 0 else code,
        seconds=seconds,
        rss_mb=usage.ru_maxrss / 1024,
        first_line=first,
    )


def table(rows: list[Measured]) -> str:
    lines = [
        "| case | input | command | exit code | seconds | peak RSS MB | first line it printed |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        code = "killed (timeout)" if r.exit_code is None else str(r.exit_code)
        said = r.first_line.replace("|", "\\|")
        lines.append(
            f"| {r.case} | {r.what}; {r.input_bytes:,} bytes | `{r.command}` | {code} | "
            f"{r.seconds:.1f} | {r.rss_mb:,.0f} | {said} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--case", choices=sorted(CASES), action="append", help="a case to run (default: all)"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="kill a child after this")
    parser.add_argument(
        "--ingest-args", default="", help="more options for each ingest, as one string"
    )
    args = parser.parse_args()
    cases = args.case or ["baseline", "gzip-line", "eval-archive"]
    rows = []
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="evalbatch-hostile-") as scratch:
            rows.append(measure(case, Path(scratch), args.timeout, shlex.split(args.ingest_args)))
            print(f"{case}: done", file=sys.stderr)
    uname = platform.uname()
    python = Path(sys.executable)
    shown = python.relative_to(ROOT) if python.is_relative_to(ROOT) else python
    print(f"Command: `{shlex.join([str(shown), *sys.argv])}`")
    print(f"Machine: {uname.machine}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
