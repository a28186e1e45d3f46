"""Start-up loads only what the command uses.

`evalbatch --help` and `--version` read no data, so they load none of the engine's heavy
libraries; `evalbatch run` loads the engine but not what only other commands need (matplotlib
for `report`, Ray for `--engine ray`, jsonschema to name the faults of a suite the compiled
validator rejected). Each case runs in a fresh interpreter, since a test process has long since
imported everything; what is checked is which modules are loaded, never how long it took.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import OUTPUT_FILES, ROOT, SAMPLE_EVENTS, SAMPLE_SUITES, run_python

#: a slow family (fresh interpreters, to see what each command loads):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

#: libraries only some commands need, and the engine's readers, which --help needs none of
HEAVY_FOR_HELP = (
    "scipy",
    "jsonschema",
    "jsonschema_rs",
    "matplotlib",
    "ray",
    "pyarrow",
    "polars",
    "numpy",
    "duckdb",
    "statsmodels",
)
#: libraries `run` on valid suites does not need (fsspec only for object-store URIs, E-153;
#: boto3 never: the tests' S3 client)
HEAVY_FOR_RUN = ("matplotlib", "ray", "jsonschema", "statsmodels", "fsspec", "boto3")
HEAVY = tuple(sorted(set(HEAVY_FOR_HELP + HEAVY_FOR_RUN)))

#: runs `evalbatch ARGS...` as the console script does, then writes the exit code and which of
#: HEAVY are loaded to the file named by the first argument
_SCRIPT = """
import json, sys
import evalbatch.cli
report, *args = sys.argv[1:]
sys.argv = ["evalbatch", *args]
try:
    evalbatch.cli.main()
    code = 0
except SystemExit as exc:
    code = exc.code
with open(report, "w") as out:
    json.dump({"code": code, "loaded": [m for m in HEAVY if m in sys.modules]}, out)
"""


def _loaded_after(tmp_path: Path, *args: str | Path) -> tuple[int, list[str], str]:
    """The exit code of `evalbatch ARGS...` in a new interpreter, which of HEAVY it loaded and
    what it printed."""
    report = tmp_path / "loaded.json"
    script = f"HEAVY = {HEAVY!r}\n{_SCRIPT}"
    finished = run_python(script, report, *args)
    assert finished.stderr == "", finished.stderr
    found = json.loads(report.read_text(encoding="utf-8"))
    return found["code"], found["loaded"], finished.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--version"],
        *(
            [*command.split(), "--help"]
            for command in (
                "run",
                "validate",
                "regress",
                "verify",
                "ingest",
                "sql",
                "export",
                "export otel",
                "export eee",
                "report",
                "explain",
                "suite",
                "suite infer",
            )
        ),
    ],
    ids=lambda args: " ".join(args),
)
def test_help_and_version_load_no_heavy_library(tmp_path: Path, args: list[str]) -> None:
    """Importing `evalbatch.cli` and printing the help or the version loads
    no data library at all: neither scipy, jsonschema, matplotlib, Ray, Arrow, Polars, NumPy nor
    DuckDB (the engine loads when a command runs)."""
    code, loaded, _ = _loaded_after(tmp_path, *args)
    assert code == 0
    assert [m for m in loaded if m in HEAVY_FOR_HELP] == []


def test_run_on_the_samples_loads_neither_matplotlib_ray_nor_jsonschema(tmp_path: Path) -> None:
    """`run` on the samples (every suite valid) grades them all without
    loading matplotlib (`report` only), Ray (`--engine ray` only) or jsonschema (it only names
    the faults of a document the compiled validator rejected)."""
    out = tmp_path / "out"
    code, loaded, _ = _loaded_after(
        tmp_path, "run", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--out", out, "--quiet"
    )
    assert code == 0
    assert sorted(p.name for p in out.iterdir() if p.name in OUTPUT_FILES) == sorted(OUTPUT_FILES)
    assert [m for m in loaded if m in HEAVY_FOR_RUN] == []


def test_validate_still_names_a_faulty_suites_faults(tmp_path: Path) -> None:
    """The faults of a suite the compiled validator rejects are still named: jsonschema loads
    for them when they are found (CONTRACT §1.3)."""
    suite = json.loads((SAMPLE_SUITES / "trajectory.json").read_text(encoding="utf-8"))
    suite["tasks"][0]["surprise"] = True
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite), encoding="utf-8")
    code, loaded, printed = _loaded_after(tmp_path, "validate", path)
    assert code == 1
    assert "error: $.tasks[0].surprise: unknown member (closed object)" in printed
    assert "jsonschema" in loaded


def test_the_library_surface_loads_on_first_use() -> None:
    """`import evalbatch` loads no engine; `evalbatch.grade_paths` and the rest of `__all__` are
    `evalbatch.api`'s once used."""
    script = (
        "import sys, evalbatch\n"
        "before = 'evalbatch.api' in sys.modules\n"
        "from evalbatch import api\n"
        "same = all(getattr(evalbatch, n) is getattr(api, n) for n in evalbatch.__all__)\n"
        "try:\n"
        "    evalbatch.no_such_name\n"
        "    missing = False\n"
        "except AttributeError:\n"
        "    missing = True\n"
        "print(before, same, missing)\n"
    )
    finished = run_python(script)
    assert (finished.returncode, finished.stdout, finished.stderr) == (0, "False True True\n", "")


_ALLOCATOR_SCRIPT = """
import os, sys
import evalbatch.cli
sys.argv = ["evalbatch", "run", *sys.argv[1:]]
try:
    evalbatch.cli.main()
except SystemExit:
    pass
print(os.environ.get(evalbatch.cli.POLARS_ALLOCATOR_VARIABLE), "polars" in sys.modules)
"""


@pytest.mark.parametrize("user_setting", [None, "dirty_decay_ms:0"])
def test_e109_the_command_keeps_freed_pages_unless_the_user_chose(
    tmp_path: Path, user_setting: str | None
) -> None:
    """E-109: `evalbatch` sets Polars' allocator to keep freed pages for a while before Polars
    loads (the variable is read once, when it starts); a setting of the user's own stands."""
    env = dict(os.environ)
    env.pop("_RJEM_MALLOC_CONF", None)
    if user_setting is not None:
        env["_RJEM_MALLOC_CONF"] = user_setting
    out = tmp_path / "out"
    finished = subprocess.run(
        [
            sys.executable,
            "-c",
            _ALLOCATOR_SCRIPT,
            str(SAMPLE_EVENTS),
            "--suites",
            str(SAMPLE_SUITES),
            "--out",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    setting, polars_loaded = finished.stdout.split()
    assert polars_loaded == "True"  # the command loaded Polars after choosing
    # Polars puts its own defaults first; jemalloc takes the last value of each option
    effective = dict(option.split(":") for option in setting.split(","))
    expected = user_setting or "dirty_decay_ms:5000,muzzy_decay_ms:5000"
    assert effective == {**effective, **dict(o.split(":") for o in expected.split(","))}
    if user_setting is None:
        assert effective["dirty_decay_ms"] == effective["muzzy_decay_ms"] == "5000"
