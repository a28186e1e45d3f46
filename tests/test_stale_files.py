"""E-88: the report and export files `evalbatch report` and `evalbatch export` write
into an output directory are made from its graded tables, so the next `run` into the directory,
which replaces those tables, removes them rather than leave them describing runs that are no
longer there. A run that fails leaves them with the tables they were made from.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalbatch import api
from evalbatch.cli import cli
from evalbatch.errors import OutputError
from evalbatch.outputs import output_format, writer
from tests.helpers import SAMPLE_EVENTS, SAMPLE_SUITES, directory_state, fail_at_call

#: a slow family (runs that remove stale files):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow


def _invoke(*args: str | Path) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code in (0, 3), result.output  # 3: the samples hold a skipped event
    return result.stdout


def _run_ids(out: Path) -> list[str]:
    lines = (out / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["runId"] for line in lines]


def test_e88_a_new_run_removes_the_report_and_exports_of_the_last(
    tmp_path: Path,
) -> None:
    """run, report, export otel and eee with their default paths, then run again over other
    events: none of the three files is left, the user's own files are, and a report made now
    describes the new runs only."""
    out = tmp_path / "out"
    _invoke("run", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--out", out)
    _invoke("report", out)
    _invoke("export", "otel", out, "--events", SAMPLE_EVENTS)
    _invoke("export", "eee", out, "--model-id", "acme/agent", "--org", "acme")
    assert sorted(p.name for p in out.iterdir() if p.name in output_format.DERIVED_FILES) == sorted(
        output_format.DERIVED_FILES
    )
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    (out / "mine.html").write_text("mine", encoding="utf-8")
    before = _run_ids(out)

    _invoke("run", SAMPLE_EVENTS / "trials.parquet", "--suites", SAMPLE_SUITES, "--out", out)
    assert [name for name in output_format.DERIVED_FILES if (out / name).exists()] == []
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert (out / "mine.html").read_text(encoding="utf-8") == "mine"
    after = _run_ids(out)
    assert len(after) == 1 and len(before) == 3 and set(after) < set(before)

    _invoke("report", out)
    page = (out / output_format.REPORT_FILE).read_text(encoding="utf-8")
    assert after[0] in page
    assert not [run_id for run_id in set(before) - set(after) if run_id in page]


@pytest.fixture
def graded(tmp_path: Path) -> Path:
    """An output directory of the samples holding a report and both exports (placeholders:
    only their names matter to `run`)."""
    out = tmp_path / "out"
    api.write_outputs([SAMPLE_EVENTS], out, [SAMPLE_SUITES])
    for name in output_format.DERIVED_FILES:
        (out / name).write_text(f"made from the first run: {name}\n", encoding="utf-8")
    return out


def test_e88_a_run_that_fails_leaves_the_report_with_its_tables(
    graded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E-72 with E-88: a disk that fills while the new tables are renamed into place
    leaves the directory as it was, the report and exports included (they still describe the
    tables there)."""
    before = directory_state(graded)
    no_space = OSError(errno.ENOSPC, "No space left on device")
    fail_at_call(monkeypatch, writer.os, "replace", 2, no_space)
    with pytest.raises(OutputError):
        api.write_outputs([SAMPLE_EVENTS / "trials.parquet"], graded, [SAMPLE_SUITES])
    assert directory_state(graded) == before


def test_e88_a_directory_of_that_name_is_left_and_the_run_goes_on(
    graded: Path,
) -> None:
    """Only files are removed: a directory that happens to be called `report.html` is not
    evalbatch's to remove, and does not stop the run."""
    (graded / output_format.REPORT_FILE).unlink()
    (graded / output_format.REPORT_FILE).mkdir()
    api.write_outputs([SAMPLE_EVENTS / "trials.parquet"], graded, [SAMPLE_SUITES])
    assert (graded / output_format.REPORT_FILE).is_dir()
    assert (
        not (graded / output_format.OTEL_FILE).exists()
        and not (graded / output_format.EEE_FILE).exists()
    )
    assert len(_run_ids(graded)) == 1
