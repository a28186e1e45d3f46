"""E-154: on a Ray cluster of several nodes (separate raylets and object stores, started and
torn down with Ray's own `ray.cluster_utils.Cluster`: the `cluster` fixture of tests/conftest.py),
the workers write their shards' rows themselves and the driver commits: every output file is the
local engine's, byte for byte, the driver is handed no trial or task row, and nothing of the
shards is left behind.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import ray
from ray.cluster_utils import Cluster

from evalbatch import api
from evalbatch.options import Resources
from evalbatch.outputs.output_format import WORK_PREFIX
from evalbatch.pipeline import ray_engine
from evalbatch.pipeline.batch_rows import BatchOutput, batch_output
from tests.helpers import OUTPUT_FILES, SAMPLES, read_outputs
from tests.test_scale import generated  # noqa: F401  (fixture)

#: a slow family (a Ray cluster of three nodes): `make test` runs it
pytestmark = pytest.mark.slow

INPUTS = [str(SAMPLES / "events"), str(SAMPLES / "regress")]


def test_e154_the_cluster_has_three_nodes(cluster: Cluster) -> None:
    alive = [node for node in ray.nodes() if node["Alive"]]
    assert len(alive) == 3
    assert len({node["NodeManagerAddress"] + str(node["NodeManagerPort"]) for node in alive}) == 3


def test_e154_outputs_are_the_local_engines_byte_for_byte(cluster: Cluster, tmp_path: Path) -> None:
    """Graded on the cluster in shards smaller than the runs (each worker writing its shard's
    rows), the output directory holds exactly the local engine's files, and no working
    directory or shard file is left in it."""
    suites = [SAMPLES / "suites"]
    local = tmp_path / "local"
    api.write_outputs(INPUTS, local, suites)
    on_ray = tmp_path / "ray"
    api.write_outputs(
        INPUTS,
        on_ray,
        suites,
        engine="ray",
        ray_address=cluster.address,
        resources=Resources(batch_events=100),
    )
    assert read_outputs(on_ray) == read_outputs(local)
    assert sorted(p.name for p in on_ray.iterdir()) == sorted(p.name for p in local.iterdir())
    assert not [p for p in on_ray.iterdir() if p.name.startswith(WORK_PREFIX)]
    assert set(OUTPUT_FILES) <= {p.name for p in on_ray.iterdir()}


def test_e154_a_worker_hands_the_driver_no_rows(cluster: Cluster, tmp_path: Path) -> None:
    """With a shard directory, each shard comes back as its runs' rows, problems and baselines
    only: its trials and tasks are in the files its worker wrote, the very rows the worker's
    batch holds when it hands them over whole."""
    choices = api.load_suites([SAMPLES / "suites"])
    shards = tmp_path / "shards"
    plan, written, _ = ray_engine.grade_shards(
        INPUTS, choices, api.GradeOptions(), shard_events=100, shard_dir=shards
    )
    _, whole, _ = ray_engine.grade_shards(INPUTS, choices, api.GradeOptions(), shard_events=100)
    assert len(written) == len(whole) == len(plan.ranges) > 3
    for slim, part in zip(written, whole, strict=True):
        assert isinstance(slim, BatchOutput) and slim.written is not None
        assert slim.trials.height == 0 and slim.tasks.height == 0
        full = batch_output(part)
        assert pl.read_parquet(slim.written.trials).equals(full.trials.cast(slim.trials.schema))
        assert pl.read_parquet(slim.written.tasks).equals(full.tasks.cast(slim.tasks.schema))
        assert slim.runs.equals(full.runs)


def test_e154_a_generated_log_on_the_cluster(
    cluster: Cluster,
    tmp_path: Path,
    generated: Path,  # noqa: F811
) -> None:
    """A generated log of many runs, on the cluster, in shards of about 20,000 events: the
    local engine's files."""
    events, suites = [generated / "events.parquet"], [generated / "suites"]
    local = tmp_path / "local"
    api.write_outputs(events, local, suites)
    on_ray = tmp_path / "ray"
    api.write_outputs(
        events,
        on_ray,
        suites,
        engine="ray",
        ray_address=cluster.address,
        resources=Resources(batch_events=20_000),
    )
    assert read_outputs(on_ray) == read_outputs(local)
