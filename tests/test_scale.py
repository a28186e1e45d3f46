"""Out-of-core grading (CONTRACT §7): batches of whole runs give the same bytes as one pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import SAMPLES, generated_log, run_output_bytes

#: a slow family (generated logs at scale):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small log from the benchmark's generator (40 runs, about 45k events) and its suite."""
    target = tmp_path_factory.mktemp("generated")
    generated_log(target, runs=40, tasks=20, trials=3)
    return target


def test_batches_of_runs_give_identical_outputs_on_samples(tmp_path: Path) -> None:
    """§7: runs processed in batches; every output byte-identical to one pass (regression block
    included, whose baseline may land in another batch)."""
    inputs = [
        str(SAMPLES / "events"),
        str(SAMPLES / "regress"),
        "--suites",
        str(SAMPLES / "suites"),
    ]
    whole = run_output_bytes(tmp_path / "whole", *inputs)
    batched = run_output_bytes(tmp_path / "batched", *inputs, "--batch-events", "150")
    assert whole == batched


def test_batches_of_runs_give_identical_outputs_on_a_generated_log(
    tmp_path: Path, generated: Path
) -> None:
    inputs = [str(generated / "events.parquet"), "--suites", str(generated / "suites")]
    whole = run_output_bytes(tmp_path / "whole", *inputs)
    batched = run_output_bytes(tmp_path / "batched", *inputs, "--batch-events", "7000")
    assert whole == batched
    summaries = (tmp_path / "whole" / "summaries.jsonl").read_text().splitlines()
    assert len(summaries) == 40


def test_a_batch_per_run_gives_identical_outputs(tmp_path: Path, generated: Path) -> None:
    """§7: a run graded alone in its batch (every column constant) gets the same means, bit for
    bit, as one graded among others."""
    inputs = [str(generated / "events.parquet"), "--suites", str(generated / "suites")]
    whole = run_output_bytes(tmp_path / "whole", *inputs)
    alone = run_output_bytes(tmp_path / "alone", *inputs, "--batch-events", "1")
    assert whole == alone


def test_memory_limit_and_spill_dir_are_accepted(tmp_path: Path, generated: Path) -> None:
    inputs = [str(generated / "events.parquet"), "--suites", str(generated / "suites")]
    whole = run_output_bytes(tmp_path / "whole", *inputs)
    limited = run_output_bytes(
        tmp_path / "limited",
        *inputs,
        "--memory-limit",
        "512MB",
        "--temp-dir",
        str(tmp_path / "spill"),
    )
    assert whole == limited
