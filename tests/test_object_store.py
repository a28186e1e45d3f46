"""Object storage in (E-153): event files read from an S3-compatible server through pyarrow.fs.

The server is moto's, in server mode, started on a free port once for the module and stopped at
its end, the teardown checking the port is closed (the `store` fixture of tests/conftest.py). The
samples are uploaded into a bucket, and each command given `s3://` URIs must answer as it answers
for the same files on the disk: the same bytes for `run`, the same report for `regress` and
`verify`, on either extractor. A missing object or bucket, credentials the server refuses and a
scheme nobody reads are each one line naming the URI, never a traceback; no DuckDB extension is
fetched or loaded for any of it.
"""

from __future__ import annotations

import glob
import json
import urllib.request
from pathlib import Path

import boto3
import duckdb
import pyarrow.parquet as pq
import pytest

from evalbatch import api
from evalbatch.extract import extractor
from evalbatch.extract.events_pass import new_connection
from evalbatch.inputs import event_files, object_store
from evalbatch.pipeline.collect import summaries_jsonl
from tests.helpers import (
    OUTPUT_FILES,
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    SAMPLES,
    Store,
    make_suite,
    run_main,
    standard_run,
    write_events,
    write_json,
)
from tests.helpers import S3_BUCKET as BUCKET

NATIVE = extractor.library() is not None


@pytest.fixture(scope="module")
def local_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`evalbatch run` over the samples on the disk: what every bucket run must equal."""
    from click.testing import CliRunner

    from evalbatch.cli import cli

    out = tmp_path_factory.mktemp("local") / "out"
    args = ["run", str(SAMPLE_EVENTS), "--suites", str(SAMPLE_SUITES), "--out", str(out)]
    result = CliRunner().invoke(cli, [*args, "--quiet"])
    assert result.exit_code in (0, 3), result.output
    return out


def _run(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    out: Path,
    *events: str,
    extra: tuple[str, ...] = (),
) -> tuple[int, str]:
    code, _, err = run_main(
        monkeypatch,
        capsys,
        "run",
        *events,
        "--suites",
        SAMPLE_SUITES,
        "--out",
        out,
        "--quiet",
        *extra,
    )
    return code, err


@pytest.mark.parametrize(
    "extractor_name",
    [
        pytest.param(
            "native",
            marks=pytest.mark.skipif(not NATIVE, reason="the native extractor is not built"),
        ),
        "duckdb",
    ],
)
def test_e153_run_from_a_bucket_writes_the_bytes_of_the_local_run(
    store: Store,
    local_out: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    extractor_name: str,
) -> None:
    """`run s3://bucket/events` (a prefix) grades what `run data/samples/events` grades, byte for
    byte, on the native extractor (which walks the rows DuckDB streams from the store) and on
    the reference one."""
    out = tmp_path / "out"
    code, err = _run(
        monkeypatch,
        capsys,
        out,
        f"s3://{BUCKET}/events",
        extra=("--extractor", extractor_name),
    )
    assert code == 0, err
    for name in OUTPUT_FILES:
        assert (out / name).read_bytes() == (local_out / name).read_bytes(), name
    recorded = json.loads((out / "run-inputs.json").read_text(encoding="utf-8"))
    assert recorded["events"] == [f"s3://{BUCKET}/events"]


def test_e153_objects_and_globs_name_the_same_files(
    store: Store,
    local_out: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Objects named one by one, and a glob, are the prefix's files: the same summaries."""
    named = [f"s3://{BUCKET}/events/{p.name}" for p in sorted(SAMPLE_EVENTS.glob("*.parquet"))]
    for number, events in enumerate((named, [f"s3://{BUCKET}/events/*.parquet"])):
        out = tmp_path / f"out-{number}"
        code, err = _run(monkeypatch, capsys, out, *events)
        assert code == 0, err
        summaries = (out / "summaries.jsonl").read_bytes()
        assert summaries == (local_out / "summaries.jsonl").read_bytes()


def test_e153_a_list_of_uris_is_graded_where_it_is_handed(store: Store) -> None:
    """What a worker elsewhere is given, a list of object URIs, is graded by the library as the
    same files on the disk are: it lists nothing but the objects named."""
    files = sorted(SAMPLE_EVENTS.glob("*.parquet"))
    remote = api.grade_paths([f"s3://{BUCKET}/events/{p.name}" for p in files], SAMPLE_SUITES)
    local = api.grade_paths(files, SAMPLE_SUITES)
    assert summaries_jsonl(remote) == summaries_jsonl(local)
    assert remote.runs.equals(local.runs)
    assert remote.problems.equals(local.problems)


def test_e153_regress_compares_sides_read_from_a_bucket(
    store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`regress` on two objects gives the verdict, and the JSON, it gives on the two files."""
    reports = []
    for base in (str(SAMPLES / "regress"), f"s3://{BUCKET}/regress"):
        code, out, err = run_main(
            monkeypatch,
            capsys,
            "regress",
            f"{base}/baseline.parquet",
            f"{base}/candidate.parquet",
            "--suites",
            SAMPLE_SUITES,
            "--json",
        )
        assert code == 1, err  # the samples' candidate regressed
        reports.append(json.loads(out))
    assert reports[0] == reports[1]


def test_e153_verify_recomputes_runs_read_from_a_bucket(
    store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`verify` on the bucket's events finds what it finds on the disk's."""
    reports = []
    for events in (str(SAMPLE_EVENTS), f"s3://{BUCKET}/events"):
        code, out, err = run_main(
            monkeypatch, capsys, "verify", events, "--suites", SAMPLE_SUITES, "--json"
        )
        assert code == 1, err  # the samples' host record disagrees on purpose
        reports.append(json.loads(out))
    assert reports[0] == reports[1]


def test_e153_aliases_struct_payloads_and_hive_keys_read_as_on_the_disk(
    store: Store, tmp_path: Path
) -> None:
    """The canonical column handling holds for objects: aliased columns with a struct payload
    under a `day=` prefix, and a map payload whose run id is only in its `runId=` prefix, grade
    as the same files on the disk (DuckDB's own reader, its own hive keys)."""
    root = tmp_path / "layout"
    write_json(tmp_path / "suites" / "basic.json", make_suite())
    write_events(
        root / "day=2026-11-02" / "a.parquet",
        standard_run("run-a").rows,
        names={"runId": "run_id", "sequence": "seq", "payload": "data"},
        payload="struct",
        timestamp="parquet",
    )
    only_in_path = root / "runId=run-b" / "b.parquet"
    write_events(only_in_path, standard_run("run-b").rows, payload="map")
    pq.write_table(pq.read_table(only_in_path).drop_columns(["runId"]), only_in_path)
    uri = store.upload(root, "layout")
    remote = api.grade_paths(uri, tmp_path / "suites")
    local = api.grade_paths(root, tmp_path / "suites")
    assert remote.runs.height == 2
    assert summaries_jsonl(remote) == summaries_jsonl(local)
    assert remote.problems.equals(local.problems)


@pytest.mark.parametrize(
    ("uri", "said"),
    [
        (f"s3://{BUCKET}/no-such-prefix", "no object or prefix of that name"),
        ("s3://no-such-bucket/events", "there is no bucket 'no-such-bucket'"),
        (f"s3://{BUCKET}/events/*.csv", "nothing matches"),
        ("http://example.invalid/events.parquet", "http:// is not read"),
    ],
)
def test_e153_nothing_there_is_one_line_naming_the_uri(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    uri: str,
    said: str,
) -> None:
    code, err = _run(monkeypatch, capsys, tmp_path / "out", uri)
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert repr(uri) in err and said in err
    assert not (tmp_path / "out").exists()


def _set_auth(store: Store, after_requests: str) -> None:
    """moto's own switch: check every request's credentials from now on ("0"), or never
    ("inf", the default)."""
    request = urllib.request.Request(
        f"{store.endpoint}/moto-api/reset-auth",
        data=after_requests.encode(),
        headers={"Content-Type": "text/plain"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200


def test_e153_refused_credentials_are_one_line_naming_the_uri(
    store: Store,
    local_out: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With the server checking credentials, a key it issued reads the bucket (from the
    standard variables), and a wrong secret or an unknown key is refused: one line naming the
    URI and the credentials to check, no traceback, nothing written."""
    iam = boto3.client("iam", endpoint_url=store.endpoint, region_name="us-east-1")
    iam.create_user(UserName="grader")
    issued = iam.create_access_key(UserName="grader")["AccessKey"]
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*"}]}
    policy["Statement"][0]["Resource"] = "*"
    iam.put_user_policy(UserName="grader", PolicyName="read", PolicyDocument=json.dumps(policy))
    _set_auth(store, "0")
    try:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", issued["AccessKeyId"])
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", issued["SecretAccessKey"])
        code, err = _run(monkeypatch, capsys, tmp_path / "ok", f"s3://{BUCKET}/events")
        assert code == 0, err
        summaries = (tmp_path / "ok" / "summaries.jsonl").read_bytes()
        assert summaries == (local_out / "summaries.jsonl").read_bytes()
        for key_id, secret in ((issued["AccessKeyId"], "wrong"), ("AKIAUNKNOWN", "wrong")):
            monkeypatch.setenv("AWS_ACCESS_KEY_ID", key_id)
            monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
            for uri in (f"s3://{BUCKET}/events", f"s3://{BUCKET}/events/*.parquet"):
                code, err = _run(monkeypatch, capsys, tmp_path / "refused", uri)
                assert code == 2
                assert err.count("\n") == 1 and "Traceback" not in err
                assert f"cannot read {uri!r}: access denied: check the credentials" in err
                assert secret not in err
                assert not (tmp_path / "refused").exists()
    finally:
        _set_auth(store, "inf")


def test_e153_an_unreadable_object_is_left_out_and_the_rest_graded(
    store: Store,
    local_out: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An object that is not Parquet is one file problem naming its URI (§6), as a file on the
    disk is; the others are graded as before."""
    readme = f"s3://{BUCKET}/notes/README.md"
    out = tmp_path / "out"
    code, err = _run(monkeypatch, capsys, out, readme, f"s3://{BUCKET}/events")
    assert code == 3, err
    assert f"{readme}: not a readable Parquet file" in err
    assert (out / "summaries.jsonl").read_bytes() == (local_out / "summaries.jsonl").read_bytes()


def test_e153_an_object_gone_after_the_listing_cannot_be_read(store: Store) -> None:
    """An object deleted after it was listed (or a store unreachable mid-run) is named as one
    that cannot be read, not as damaged data."""
    key = "gone/trials.parquet"
    uri = store.upload(SAMPLE_EVENTS / "trials.parquet", key)
    con = new_connection()
    try:
        sources = event_files.scan(con, [uri])
        store.client.delete_object(Bucket=BUCKET, Key=key)
        (problem,) = event_files.find_unreadable(con, sources)
    finally:
        con.close()
    assert problem.path == uri and problem.code == "file-unreadable"
    assert problem.message.startswith(f"{uri}: cannot be read (")


def test_e153_an_interrupted_ingest_in_a_prefix_leaves_it_out(
    store: Store,
    local_out: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A prefix holding an ingest's marker, uploaded from a directory an ingest was killed
    linking into, is left out and named (E-122), found by the listing or looked up above a file
    named directly."""
    partial = tmp_path / "partial" / "runs"
    partial.mkdir(parents=True)
    (partial / "trials.parquet").write_bytes((SAMPLE_EVENTS / "trials.parquet").read_bytes())
    (tmp_path / "partial" / object_store.INCOMPLETE).write_text("{}", encoding="utf-8")
    marked = store.upload(tmp_path / "partial", "partial")
    for given in (marked, f"{marked}/runs/trials.parquet"):
        out = tmp_path / "out"
        code, err = _run(monkeypatch, capsys, out, given, f"s3://{BUCKET}/events")
        assert code == 3, err
        assert f"{marked}: an ingest into it was interrupted" in err
        summaries = (out / "summaries.jsonl").read_bytes()
        assert summaries == (local_out / "summaries.jsonl").read_bytes()


def test_e153_an_inspect_log_in_a_bucket_is_reported_not_read(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Only Parquet is read from a store: an Inspect log there is named, with what to do."""
    code, err = _run(monkeypatch, capsys, tmp_path / "out", f"s3://{BUCKET}/inspect")
    assert code == 2
    assert err.count("\n") == 1
    assert f"s3://{BUCKET}/inspect/arithmetic.eval: an Inspect log in object storage" in err


GLOB_TREE = (
    "top.parquet",
    "a/one.parquet",
    "a/two.txt",
    "a/b/x1.parquet",
    "a/b/x22.parquet",
    "a/.hidden/x3.parquet",
    "a/.dot.parquet",
    "c/d/e/deep.parquet",
)
GLOBS = (
    "*.parquet",
    "**/*.parquet",
    "a/**",
    "a/*/x?.parquet",
    "[ab]/*.parquet",
    "a/.*.parquet",
    "a/.hidden/*",
    "**/e/*",
    "*/*",
)


def test_e153_globs_match_what_pythons_glob_matches_on_the_disk(
    store: Store, tmp_path: Path
) -> None:
    """A glob over a prefix finds the objects Python's `glob(recursive=True)` finds for the
    same tree on the disk (names starting with `.` only by a `.`), and a prefix every object
    below it that is Parquet."""
    root = tmp_path / "tree"
    for name in GLOB_TREE:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"")
    uri = store.upload(root, "tree")
    for pattern in GLOBS:
        on_disk = sorted(
            Path(path).relative_to(root).as_posix()
            for path in glob.glob(str(root / pattern), recursive=True)
            if Path(path).is_file()
        )
        listed = object_store.expand(f"{uri}/{pattern}").files
        assert [name.removeprefix(f"{uri}/") for name in listed] == on_disk, pattern
    everything = object_store.expand(uri).files
    local = event_files.expand_paths([str(root)])
    assert [name.removeprefix(f"{uri}/") for name in everything] == [
        Path(path).relative_to(root).as_posix() for path in local
    ]


def test_e153_no_extension_is_fetched_or_loaded(store: Store) -> None:
    """A connection over the bucket's events reads them with httpfs neither installed nor
    loaded, and every connection evalbatch makes refuses to fetch or load one by itself."""
    con = api.connect(f"s3://{BUCKET}/events", SAMPLE_SUITES)
    try:
        assert con.sql("SELECT count(*) FROM evalbatch_internal.events").fetchall()[0][0] > 0
        (httpfs,) = con.sql(
            "SELECT installed, loaded FROM duckdb_extensions() WHERE extension_name = 'httpfs'"
        ).fetchall()
        assert httpfs == (False, False)
    finally:
        con.close()
    fresh = new_connection()
    try:
        for setting in ("autoinstall_known_extensions", "autoload_known_extensions"):
            (value,) = fresh.sql(f"SELECT current_setting('{setting}')").fetchall()[0]
            assert value is False, setting
        with pytest.raises(duckdb.Error):  # without pyarrow.fs behind it, a URI is not read
            fresh.read_parquet(f"s3://{BUCKET}/events/trials.parquet").fetchall()
    finally:
        fresh.close()


def test_e153_no_code_installs_or_loads_an_extension() -> None:
    """No module or query of evalbatch's says INSTALL or LOAD (E-153): the static half of the
    check above."""
    root = Path(__file__).resolve().parents[1]
    sources = [*root.joinpath("evalbatch").rglob("*.py"), *root.joinpath("sql").rglob("*.sql")]
    for path in sources:
        text = path.read_text(encoding="utf-8").upper()
        for word in ("INSTALL HTTPFS", "LOAD HTTPFS", "INSTALL_EXTENSION", "LOAD_EXTENSION"):
            assert word not in text, (path, word)


@pytest.mark.parametrize(
    ("command", "destination"),
    [
        (("run", str(SAMPLE_EVENTS), "--suites", str(SAMPLE_SUITES)), f"s3://{BUCKET}/out"),
        (("ingest", str(SAMPLES / "inspect")), "gs://a-bucket/ingested"),
    ],
)
def test_e153_outputs_are_not_written_to_a_store(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: tuple[str, ...],
    destination: str,
) -> None:
    """`--out` in object storage is refused before anything is written (outputs stay local or
    shared): a `Path` would fold it into a local directory `s3:/...` and write there."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run_main(monkeypatch, capsys, *command, "--out", destination)
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"--out {destination}: outputs are written to a local or shared path" in err
    assert list(tmp_path.iterdir()) == []
