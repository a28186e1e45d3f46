"""Writing the results (§4): summaries.jsonl plus the runs/tasks/trials/problems tables.

Every file is written beside its destination and renamed into place, so a reader never sees a
half-written file and a crash leaves the previous outputs whole. Rows are sorted and JSON keys keep
the contract's order, so the same inputs give byte-identical files.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import polars as pl

from evalbatch.api import GradeResult

TABLES = ("runs", "tasks", "trials", "problems")


def _file_mode() -> int:
    """The mode an ordinary new file gets (0644 under umask 022); mkstemp makes 0600 files."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _atomic(path: Path, write: Callable[[Path], None]) -> None:
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(handle)
    try:
        write(Path(tmp))
        os.chmod(tmp, _file_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def summaries_jsonl(result: GradeResult) -> str:
    """One line per graded run, sorted by runId: {"runId": ..., "summary": ...}."""
    lines = [
        json.dumps({"runId": run_id, "summary": summary}, ensure_ascii=False)
        for run_id, summary in sorted(result.summaries.items())
    ]
    return "".join(line + "\n" for line in lines)


def write(result: GradeResult, out_dir: str | Path) -> dict[str, Path]:
    """Write every output into `out_dir` (created if needed); returns what went where."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    text = summaries_jsonl(result)
    target = out / "summaries.jsonl"
    _atomic(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    written["summaries"] = target
    for name in TABLES:
        frame: pl.DataFrame = getattr(result, name)
        target = out / f"{name}.parquet"
        _atomic(target, lambda tmp, frame=frame: frame.write_parquet(tmp, statistics=False))
        written[name] = target
    return written
