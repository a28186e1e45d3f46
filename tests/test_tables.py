"""The output tables' columns are documented in one place and versioned (E-53: a test fails
when a column changes without a version bump; CONTRACT §4 tables).

`tests/data/table_schemas.json` is the snapshot of the columns at the current `SCHEMA_VERSION`.
A change of columns must come with a bumped version and a new snapshot:

    .venv/bin/python -c "from tests.test_tables import write_snapshot; write_snapshot()"
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evalbatch import api
from evalbatch.outputs import output_format
from evalbatch.reduce import stats
from tests.helpers import SAMPLE_EVENTS, SAMPLE_SUITES

SNAPSHOT = Path(__file__).parent / "data" / "table_schemas.json"


def _current() -> dict[str, list[list[str]]]:
    return {
        name: [[column, str(dtype)] for column, dtype in schema.items()]
        for name, schema in output_format.schemas().items()
    }


def write_snapshot() -> None:
    doc = {"schema_version": output_format.SCHEMA_VERSION, "tables": _current()}
    SNAPSHOT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def test_columns_change_only_with_a_version_bump() -> None:
    """E-53 (versioned tables)."""
    snapshot = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    if snapshot["tables"] != _current():
        if snapshot["schema_version"] >= output_format.SCHEMA_VERSION:
            pytest.fail("the output tables' columns changed: bump output_format.SCHEMA_VERSION")
        pytest.fail("the version is bumped: rewrite the snapshot (see this module's docstring)")
    assert snapshot["schema_version"] == output_format.SCHEMA_VERSION


def test_every_column_is_documented_and_nothing_else() -> None:
    """E-53 (versioned tables)."""
    for name, schema in output_format.schemas().items():
        assert list(output_format.COLUMNS[name]) == list(schema), name
        assert all(text.strip() for text in output_format.COLUMNS[name].values()), name


@pytest.fixture(scope="module")
def sample_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tables")
    api.write_outputs([SAMPLE_EVENTS], out, [SAMPLE_SUITES])
    return out


@pytest.mark.parametrize("name", ["runs", "tasks", "trials", "problems"])
def test_files_carry_their_table_and_schema_version(sample_out: Path, name: str) -> None:
    """E-53 (versioned tables)."""
    schema = pq.read_schema(sample_out / f"{name}.parquet")
    assert schema.metadata[b"evalbatch.table"] == name.encode()
    assert (
        schema.metadata[b"evalbatch.schema_version"] == str(output_format.SCHEMA_VERSION).encode()
    )
    assert schema.names == list(output_format.COLUMNS[name])


def test_tasks_hold_pass_at_k_and_pass_hat_k_for_every_k(sample_out: Path) -> None:
    """§3.5 (RFC 0244 §B formulas): for each task with a trials block, element k-1 of the lists
    is pass@k and pass^k for k = 1..n, exactly (E-52; native lists since schema version 4,
    E-53)."""
    rows = pq.read_table(sample_out / "tasks.parquet").to_pylist()
    with_trials = [r for r in rows if r["pass_at_k"] is not None]
    assert with_trials, "the samples hold a run with repeated trials"
    for row in with_trials:
        n, c = row["n"], row["passed_count"]
        assert row["pass_at_k_by_k"] == [float(stats.pass_at_k(n, c, k)) for k in range(1, n + 1)]
        assert row["pass_hat_k_by_k"] == [float(stats.pass_hat_k(n, c, k)) for k in range(1, n + 1)]
    refund = next(r for r in rows if r["task_id"] == "refund-approved")
    # data/samples/README.md: n = 3, c = 2 -> pass@k 2/3, 1, 1 and pass^k 2/3, 1/3, 0
    assert refund["pass_at_k_by_k"] == pytest.approx([2 / 3, 1.0, 1.0])
    assert refund["pass_hat_k_by_k"] == pytest.approx([2 / 3, 1 / 3, 0.0])
    assert all(r["pass_at_k_by_k"] is None for r in rows if r["pass_at_k"] is None)
