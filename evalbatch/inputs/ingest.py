"""Convert other OpenWOP event formats to the canonical Parquet layout, without loss (§1.2).

`ingest_paths` reads each input (`openwop_formats`: NDJSON/JSONL, JSON arrays, poll responses,
v1 debug bundles, SSE captures, any of them gzip-compressed) into event rows (`event_rows`: the
canonical columns, every other envelope field in `extra`, numbers and key order as written,
E-32), hands the rows to the writer of the layout (`parquet_layout`: one directory per run, E-33,
files linked into place complete, E-34, nothing left behind by a failed or killed ingest, E-75,
the same export again adds nothing, E-34), and reports what it read, wrote and
skipped. Each input is read within `InputLimits` (E-115, E-116): a breach is a problem of that
line, frame or file, and the other inputs are still ingested. An Inspect eval log becomes one
run (`inspect_logs`, E-111) and, when asked, a starting suite file for its task, whose bar is
the one its samples were graded with and whose pass rule the user chooses (E-149).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalbatch.errors import EXIT_OK, EXIT_SKIPPED, EXIT_UNUSABLE, OptionError
from evalbatch.inputs import inspect_logs
from evalbatch.inputs.event_rows import IngestProblem, RowSink
from evalbatch.inputs.inspect_logs import InspectOptions
from evalbatch.inputs.limits import DEFAULT_LIMITS, InputLimits
from evalbatch.inputs.openwop_formats import expand_inputs, read_into
from evalbatch.inputs.parquet_layout import DEFAULT_FLUSH_ROWS, LayoutWriter
from evalbatch.inputs.path_forms import Paths, as_paths
from evalbatch.options import Resources, StartingSuiteOptions


@dataclass
class IngestReport:
    """What `ingest_paths` read and wrote."""

    out_dir: Path
    files: int = 0
    #: the input files read, as found (`-` for standard input)
    paths: list[str] = field(default_factory=list)
    events: int = 0  # usable events read, whether written now or already there
    runs: int = 0
    written: list[Path] = field(default_factory=list)
    problems: list[IngestProblem] = field(default_factory=list)
    #: events, and runs with nothing new, whose rows a file in `out_dir` already holds (not added)
    events_already_there: int = 0
    runs_already_there: int = 0
    #: starting suite files written for Inspect logs (`suites_dir`)
    suites_written: list[Path] = field(default_factory=list)
    #: Inspect eval-set index files found among the inputs, left alone: no events (E-143)
    index_files: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 everything ingested; 3 something skipped or known missing; 2 nothing usable."""
        if self.events == 0:
            return EXIT_UNUSABLE
        return EXIT_SKIPPED if self.problems else EXIT_OK


def ingest_paths(
    paths: Paths,
    out_dir: str | Path,
    *,
    flush_rows: int = DEFAULT_FLUSH_ROWS,
    resources: Resources | None = None,
    inspect: InspectOptions | None = None,
    suites_dir: str | Path | None = None,
    suite_options: StartingSuiteOptions | None = None,
    limits: InputLimits = DEFAULT_LIMITS,
) -> IngestReport:
    """`evalbatch ingest`: convert every event in `paths` (one path or a list: files,
    directories, globs, `-` for standard input) to Parquet under `out_dir`, one directory per run.

    A line, frame or item that cannot be used is reported (file, line or frame, reason) and
    skipped; every other event is written. Nothing is written when no event is usable. An
    Inspect eval log's scores are read as `inspect` says (E-111); with `suites_dir`, a starting
    suite file is written there for each Inspect log's task, its passScore the bar `inspect`
    graded the samples with and its passRule the one `suite_options` choose (E-149); the index
    files of an Inspect eval set are left alone (`index_files`, E-143). Every input is read within
    `limits`: JSON nested or a line, frame, document or compressed file inflating past them is
    that item's or that file's problem (E-115, E-116).

    Raises:
        OptionError: `suite_options` without `suites_dir`, which would write no suite for them.
        InputError: an input path matches no file.
        OutputError: the events could not be written (a full disk); nothing was added.
    """
    if suite_options is not None and suites_dir is None:
        raise OptionError(
            "ingest_paths: suite_options say how the starting suites written to suites_dir are "
            "made: give suites_dir"
        )
    found = expand_inputs(as_paths(paths))
    index = [path for path in found if path != "-" and inspect_logs.is_eval_set_index(path)]
    files = [path for path in found if path not in index]
    out = Path(out_dir)
    report = IngestReport(out_dir=out, files=len(files), paths=files, index_files=index)
    writer = LayoutWriter(out, flush_rows, resources)
    try:
        for path in files:
            sink = RowSink(path, drain=writer.add)
            read = read_into(sink, inspect, limits)
            report.problems += sink.problems
            if suites_dir is not None and read is not None:
                suite = inspect_logs.suite_of(read, inspect, suite_options)
                written = _write_suite(suite, Path(suites_dir))
                if written is not None:
                    report.suites_written.append(written)
        report.events = writer.events
        report.runs = len(set(writer.parts) | set(writer.buffer))
        if report.events:
            report.written = writer.commit()
            report.events_already_there = writer.events_already_there
            report.runs_already_there = writer.runs_already_there
    finally:
        writer.discard()
    return report


def _write_suite(suite: dict[str, Any] | None, suites_dir: Path) -> Path | None:
    """The starting suite file of an Inspect log's task, as `<suiteId>-<version>.json` in
    `suites_dir` (an existing file is left as it is: the user may have added to it)."""
    if suite is None:
        return None
    suites_dir.mkdir(parents=True, exist_ok=True)
    target = suites_dir / f"{suite['suiteId']}-{suite['version']}.json"
    if target.exists():
        return None
    target.write_text(json.dumps(suite, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return target
