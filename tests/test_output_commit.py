"""An output directory is read one way (decision E-121; E-22 for `export otel --events`).

- E-121: `export` and `report` read an output directory as `sql` and `history` do, through
  `outdir.load`: one directory, one answer;
- E-22: `export otel --events` leaves out a damaged event file, naming it, as `run` does.
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evalbatch import api
from evalbatch.errors import InputError
from evalbatch.outputs import outdir
from tests.conftest import (
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    run_main,
)

# --------------------------------------------------------------------------------------------
# Output directories and inputs every section uses


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The samples graded into an output directory."""
    out = tmp_path_factory.mktemp("graded") / "out"
    api.write_outputs(SAMPLE_EVENTS, out, SAMPLE_SUITES)
    return out


def _copy(path: Path, source: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, path)
    return path


def _readers(out: Path) -> dict[str, list[str | Path]]:
    """Every command that reads an output directory, as a user runs it on `out`."""
    elsewhere = out.parent / "elsewhere"
    return {
        "sql": ["sql", out, "-e", "SELECT count(*) FROM runs"],
        "history": ["history", out],
        "report": ["report", out, "--out", elsewhere / "report.html"],
        "export-otel": ["export", "otel", out, "--out", elsewhere / "otel.jsonl"],
        "export-eee": [
            "export",
            "eee",
            out,
            "--model-id",
            "acme/agent",
            "--org",
            "acme",
            "--out",
            elsewhere / "eee.jsonl",
        ],
    }


# --------------------------------------------------------------------------------------------
# E-121: one checked reader


def _truncate(name: str) -> Callable[[Path], None]:
    def damage(out: Path) -> None:
        data = (out / name).read_bytes()
        (out / name).write_bytes(data[: len(data) // 2])

    return damage


def _remove(name: str) -> Callable[[Path], None]:
    return lambda out: (out / name).unlink()


def _empty(name: str) -> Callable[[Path], None]:
    return lambda out: (out / name).write_bytes(b"")


def _extra_summary(out: Path) -> None:
    lines = (out / "summaries.jsonl").read_text().splitlines(keepends=True)
    (out / "summaries.jsonl").write_text(
        "".join(lines) + lines[0].replace('"runId": "', '"runId": "zz-extra-', 1)
    )


def _events_as_trials(out: Path) -> None:
    shutil.copyfile(SAMPLE_EVENTS / "trials.parquet", out / "trials.parquet")


DAMAGE: dict[str, Callable[[Path], None]] = {
    "runs-truncated": _truncate("runs.parquet"),
    "tasks-missing": _remove("tasks.parquet"),
    "problems-empty": _empty("problems.parquet"),
    "trials-truncated": _truncate("trials.parquet"),
    "events-as-trials": _events_as_trials,
    "summary-of-a-run-not-in-the-tables": _extra_summary,
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_e121_every_reader_gives_one_answer_for_one_output_directory(
    graded: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    damage: str,
) -> None:
    """E-121: export, report, history and sql refuse a damaged output directory alike (exit 2,
    the same reason), where export and report used to write from it."""
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    DAMAGE[damage](out)
    with pytest.raises(InputError) as refused:
        outdir.load(out)
    reason = str(refused.value)
    for name, argv in _readers(out).items():
        code, _, stderr = run_main(monkeypatch, capsys, *argv)
        assert code == 2, (name, stderr)
        assert reason in stderr, (name, stderr)
        assert "internal error" not in stderr, stderr
    assert not (tmp_path / "elsewhere").exists()


# --------------------------------------------------------------------------------------------
# E-22: export otel --events leaves a damaged event file out, as run does


def _data_pages_missing(path: Path) -> None:
    data = path.read_bytes()
    footer = struct.unpack("<I", data[-8:-4])[0]
    start = len(data) - 8 - footer
    path.write_bytes(data[:4] + data[start - 64 :])


def _zstd_pages_flipped(path: Path) -> None:
    pq.write_table(pq.read_table(path), path, compression="zstd")
    data = bytearray(path.read_bytes())
    for offset in range(200, 600, 7):
        data[offset] ^= 0x5A
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage", [_data_pages_missing, _zstd_pages_flipped], ids=["pages-missing", "zstd-flipped"]
)
def test_e22_export_otel_leaves_out_a_damaged_event_file_as_run_does(
    graded: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    damage: Callable[[Path], None],
) -> None:
    """E-22: `export otel --events` names a file whose data pages cannot be read and reads the
    others, as `run` skips it (it was an internal error); given alone, it is exit 2."""
    bad = _copy(tmp_path / "bad" / "trials.parquet", SAMPLE_EVENTS / "trials.parquet")
    damage(bad)
    code, _, stderr = run_main(
        monkeypatch, capsys, "run", bad, SAMPLE_EVENTS, "--suites", SAMPLE_SUITES,
        "--out", tmp_path / "run", "-q",
    )  # fmt: skip
    assert code == 3 and "internal error" not in stderr
    good = tmp_path / "good.jsonl"
    code, _, stderr = run_main(
        monkeypatch, capsys, "export", "otel", graded, "--events", SAMPLE_EVENTS,
        "--out", good, "-q",
    )  # fmt: skip
    assert code == 0, stderr
    both = tmp_path / "both.jsonl"
    code, _, stderr = run_main(
        monkeypatch, capsys, "export", "otel", graded, "--events", bad, "--events",
        SAMPLE_EVENTS, "--out", both, "-q",
    )  # fmt: skip
    assert code == 0, stderr
    assert f"evalbatch: left out: {bad}: damaged Parquet data" in stderr
    assert "internal error" not in stderr
    assert both.read_bytes() == good.read_bytes()
    code, _, stderr = run_main(
        monkeypatch, capsys, "export", "otel", graded, "--events", bad,
        "--out", tmp_path / "alone.jsonl", "-q",
    )  # fmt: skip
    assert code == 2 and str(bad) in stderr and "internal error" not in stderr, stderr
    assert not (tmp_path / "alone.jsonl").exists()
