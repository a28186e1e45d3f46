"""Incremental runs (E-50): grade only what is new or changed since the last run into an output
directory, and carry every other run's rows over as they were.

`manifest.json` in the output directory records, for each run the last run saw, a fingerprint of
its events, the suite it claimed (id and version) with the sha256 of the suite file it was
graded with, and the baseline its `eval.started` names; and, once, the settings every grade
depends on (evalbatch and DuckDB versions, grading options). A run is graded again when its events
or its suite file changed, when it is new, or when its baseline is new, changed or gone (its
regression block depends on the baseline's tasks). Anything else about the directory that is not
as expected (no manifest, other settings, an output file missing or unreadable) makes it a full
regrade. Either way the outputs equal a full regrade's, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from evalbatch import inputs, sql, suites
from evalbatch.options import GradeOptions
from evalbatch.version import package_version

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = 1
OUTPUT_NAMES = ("summaries.jsonl", "runs.parquet", "tasks.parquet", "trials.parquet")


@dataclass(frozen=True)
class RunEntry:
    """What one run's grade depended on."""

    events: str
    suite_key: tuple[str, str] | None = None  # (suiteId, version) its eval.started claims
    suite: str | None = None  # sha256 of the suite file it was graded with (suite_digest)
    baseline: str | None = None  # the baselineRunId its eval.started names


@dataclass
class Manifest:
    settings: dict[str, Any]
    runs: dict[str, RunEntry]

    def text(self) -> str:
        runs = {}
        for run_id, entry in sorted(self.runs.items()):
            doc = {k: v for k, v in asdict(entry).items() if v is not None}
            if entry.suite_key is not None:
                doc["suite_key"] = list(entry.suite_key)
            runs[run_id] = doc
        body = {"format": MANIFEST_FORMAT, "settings": self.settings, "runs": runs}
        return json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def read_manifest(out_dir: Path) -> Manifest | None:
    """The manifest of the last run into `out_dir`, or None when there is none usable."""
    try:
        doc = json.loads((out_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
        if doc.get("format") != MANIFEST_FORMAT:
            return None
        runs = {}
        for run_id, entry in doc["runs"].items():
            key = entry.get("suite_key")
            runs[run_id] = RunEntry(
                events=entry["events"],
                suite_key=(key[0], key[1]) if key else None,
                suite=entry.get("suite"),
                baseline=entry.get("baseline"),
            )
        return Manifest(settings=doc["settings"], runs=runs)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None


def settings(options: GradeOptions) -> dict[str, Any]:
    """What every grade depends on besides a run's events and suite."""
    return {
        "evalbatch": package_version(),
        "duckdb": duckdb.__version__,
        "options": {
            "default_pass_score": options.default_pass_score,
            "on_miss_default": options.on_miss_default,
        },
    }


def suite_digest(choice: suites.SuiteChoice | None) -> str | None:
    """The suite a run is graded with, as its runs-table provenance names it (the sha256 of the
    suite file, E-54), or the sha256 of the reason it has none usable; None when no suite was
    supplied."""
    if choice is None:
        return None
    if choice.doc is not None and choice.sha256 is not None:
        return choice.sha256
    text = f"problem:{choice.problem}:{choice.message}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def event_fingerprints(con: duckdb.DuckDBPyConnection, sources: inputs.Sources) -> dict[str, str]:
    """A fingerprint of each run's rows as grading reads them (order-free: rows may move between
    files): their count and two sums of row hashes."""
    inputs.register(con, sources, None)
    return dict(sql.relation(con, "run_fingerprints").fetchall())


@dataclass
class Selection:
    """Which runs to grade, and what the previous outputs supply for the others."""

    dirty: frozenset[str] | None  # None: grade everything
    fingerprints: dict[str, str]
    previous: Manifest | None
    carried: Carried | None = None

    @property
    def full(self) -> bool:
        return self.dirty is None


def select(
    out_dir: Path,
    options: GradeOptions,
    fingerprints: dict[str, str],
    choices: Mapping[tuple[str, str], suites.SuiteChoice],
) -> Selection:
    """Compare the inputs with the last run's manifest: the runs to grade again."""
    previous = read_manifest(out_dir)
    if previous is None or previous.settings != settings(options):
        return Selection(None, fingerprints, previous)
    if not all((out_dir / name).is_file() for name in OUTPUT_NAMES):
        return Selection(None, fingerprints, previous)
    old = previous.runs

    def changed(run_id: str, fingerprint: str) -> bool:
        entry = old.get(run_id)
        if entry is None or entry.events != fingerprint:
            return True  # new, or its events changed
        if entry.suite_key is None:
            return False
        return entry.suite != suite_digest(choices.get(entry.suite_key))

    direct = {
        run_id for run_id, fingerprint in fingerprints.items() if changed(run_id, fingerprint)
    }
    gone = set(old) - set(fingerprints)
    moved = direct | gone
    follows = {
        run_id
        for run_id in fingerprints
        if run_id in old and old[run_id].baseline is not None and old[run_id].baseline in moved
    }
    dirty = frozenset(direct | follows)
    try:
        carried = Carried.load(out_dir, set(fingerprints) - dirty)
    except (OSError, ValueError, pl.exceptions.PolarsError):
        return Selection(None, fingerprints, previous)
    return Selection(dirty, fingerprints, previous, carried)


def _run_id_of_line(line: str) -> str:
    """The runId of a summaries.jsonl line: `{"runId": "...", "summary": ...}`."""
    prefix = '{"runId": '
    if not line.startswith(prefix):
        raise ValueError("not a summaries.jsonl line")
    run_id, _ = json.JSONDecoder().raw_decode(line, len(prefix))
    return run_id


@dataclass
class Carried:
    """The previous outputs of the runs that are not graded again."""

    runs: set[str]
    summaries_path: Path
    trials_path: Path
    run_rows: pl.DataFrame
    task_rows: pl.DataFrame
    problem_rows: pl.DataFrame

    @classmethod
    def load(cls, out_dir: Path, runs: set[str]) -> Carried:
        keep = pl.col("run_id").is_in(sorted(runs))
        problems = out_dir / "problems.parquet"
        return cls(
            runs=runs,
            summaries_path=out_dir / "summaries.jsonl",
            trials_path=out_dir / "trials.parquet",
            run_rows=pl.read_parquet(out_dir / "runs.parquet").filter(keep),
            task_rows=pl.read_parquet(out_dir / "tasks.parquet").filter(keep),
            problem_rows=pl.read_parquet(problems).filter(keep)
            if problems.is_file()
            else pl.DataFrame(),
        )

    def summary_lines(self) -> Iterator[tuple[str, str]]:
        """(runId, line) of each carried run, in file (runId) order, read one at a time."""
        with self.summaries_path.open(encoding="utf-8") as lines:
            for line in lines:
                run_id = _run_id_of_line(line)
                if run_id in self.runs:
                    yield run_id, line

    def trials(self, low: str | None, high: str | None) -> pl.DataFrame:
        """The carried trial rows with low <= run_id < high (None is open)."""
        keep = pl.col("run_id").is_in(sorted(self.runs))
        if low is not None:
            keep &= pl.col("run_id") >= low
        if high is not None:
            keep &= pl.col("run_id") < high
        return pl.scan_parquet(self.trials_path).filter(keep).collect()
