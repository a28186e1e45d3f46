"""E-150: `explain --sample-text` shows what each trial's Inspect sample said (the answer, the
target, the scorer's explanation, the error), read from the log when asked, on logs Inspect
itself wrote (examples/inspect/make_logs.py, the machinery of test_inspect_logs.py), and nothing
else ever holds them (§H).

The expected texts are those Inspect's own reader reads back from the same log, never guesses.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from evalbatch.cli import cli
from evalbatch.explain.run_explanation import explain_paths
from evalbatch.explain.sample_text import TEXT_CHARS, NoSampleText, with_sample_text
from evalbatch.explain.text_rendering import render_text
from evalbatch.inputs import inspect_logs
from evalbatch.inputs.limits import InputLimits
from tests.helpers import SAMPLE_EVENTS
from tests.test_inspect_logs import inspect_log, logs  # noqa: F401  (fixture)

#: the label of each line of sample text, as `explain` prints it
LABELS = ("    answer (", "    target: ", "    explanation (", "    error: ", "    sample text ")


def _invoke(*args: str | Path) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _run_id(log: Path) -> str:
    return str(inspect_log().read_eval_log(str(log), header_only=True).eval.eval_id)


def _samples(log: Path) -> list[Any]:
    """Every sample x epoch of `log`, as Inspect's reader reads it back."""
    return list(inspect_log().read_eval_log(str(log)).samples or [])


def _blocks(text: str) -> dict[tuple[str, int], str]:
    """Each trial's lines of `explain`'s text, by (taskId, trial index)."""
    blocks: dict[tuple[str, int], str] = {}
    for task in re.split(r"^(?=task )", text, flags=re.M)[1:]:
        task_id = task.split()[1]
        for trial in re.split(r"^(?=  trial )", task, flags=re.M)[1:]:
            blocks[(task_id, int(trial.split()[1]))] = trial
    return blocks


def _expected_lines(sample: Any, scorer: str) -> list[str]:
    """The lines `--sample-text` shows for `sample`, from what Inspect's reader read of it."""
    score = (sample.scores or {}).get(scorer)
    lines = []
    if score is not None and score.answer is not None:
        lines.append(f"    answer (scorer {scorer}): {score.answer}")
    else:
        lines.append(f"    answer (the model's output): {sample.output.completion}")
    lines.append(f"    target: {sample.target}")
    if score is not None and score.explanation is not None:
        lines.append(f"    explanation (scorer {scorer}): {score.explanation}")
    if sample.error is not None:
        lines.append(f"    error: {sample.error.message}")
    return lines


def _has_no_sample_text(shown: str, samples: list[Any]) -> None:
    """No line of sample text, and none of the samples' answers, explanations or errors (those
    of more than a few characters, which cannot be part of another line by chance)."""
    assert not [line for line in shown.splitlines() if line.startswith(LABELS)], shown
    texts = {s.output.completion for s in samples}
    texts |= {s.error.message for s in samples if s.error is not None}
    for sample in samples:
        for score in (sample.scores or {}).values():
            texts |= {t for t in (score.answer, score.explanation) if t is not None}
    for text in texts:
        if len(text) >= 5 and not text.isdigit():
            assert text not in shown, text


def test_e150_a_failed_trial_shows_its_answer_target_and_explanation_only_when_asked(
    logs: dict[str, Path],  # noqa: F811
) -> None:
    """On the log itself (E-144), every trial of `arithmetic` shows under its grade what Inspect
    read of its sample, the answer and explanation of the scorer the mapping used (the log's
    first, `match`); a failed one (`sum-3`, wrong in every epoch) so says why it failed its
    output grade. Without the option none of it is shown."""
    log = logs["arithmetic.eval"]
    run_id = _run_id(log)
    samples = _samples(log)
    shown = _invoke("explain", log, "--run-id", run_id, "--sample-text")
    assert shown.exit_code == 0, shown.output
    assert f"sample text (--sample-text) read from {log}" in shown.output
    blocks = _blocks(shown.output)
    assert len(blocks) == len(samples) == 12
    for sample in samples:
        block = blocks[(inspect_logs.task_id(sample.id), sample.epoch - 1)]
        lines = [line for line in block.splitlines() if line.startswith(LABELS)]
        assert lines == _expected_lines(sample, "match"), block
    failed = [s for s in samples if s.scores["match"].value == "I"]
    assert {(s.id, s.epoch) for s in failed} >= {("sum-3", 1), ("sum-3", 2), ("sum-3", 3)}
    one = _invoke("explain", log, "--run-id", run_id, "--task-id", "sum-3", "--epoch", "1")
    plain = _invoke("explain", log, "--run-id", run_id)
    for without in (one, plain):
        assert without.exit_code == 0, without.output
        _has_no_sample_text(without.output, samples)
        assert "sample text" not in without.output
    asked = _invoke(
        "explain", log, "--run-id", run_id, "--task-id", "sum-3", "--epoch", "1", "--sample-text"
    )
    (trial,) = _blocks(asked.output).values()
    assert "  FAIL  output grade" in trial
    score = next(s for s in failed if (s.id, s.epoch) == ("sum-3", 1)).scores["match"]
    assert f"    answer (scorer match): {score.answer}\n    target: 7\n" in trial
    assert f"    explanation (scorer match): {score.explanation}\n" in trial


def test_e150_json_puts_it_in_each_trials_inspect_block_only_when_asked(
    logs: dict[str, Path],  # noqa: F811
) -> None:
    """`--json` adds `sampleText` to each trial's `inspect` block and `sampleLog` to the run's,
    only with the option: for samples named `Row 1/B` (a slash, a space) and the number 7 too."""
    log = logs["row-ids.eval"]
    run_id = _run_id(log)
    document = json.loads(_invoke("explain", log, "--run-id", run_id, "--json").output)
    assert "sampleLog" not in document["inspect"]
    trials = [t for task in document["tasks"] for t in task["trials"]]
    assert trials and all("sampleText" not in t["inspect"] for t in trials)
    asked = _invoke("explain", log, "--run-id", run_id, "--json", "--sample-text")
    document = json.loads(asked.output)
    assert document["inspect"]["sampleLog"] == str(log)
    by_trial = {
        (t["inspect"]["sampleId"], t["inspect"]["epoch"]): t["inspect"]["sampleText"]
        for task in document["tasks"]
        for t in task["trials"]
    }
    samples = _samples(log)
    assert len(by_trial) == len(samples) == 6
    for sample in samples:
        score = sample.scores["match"]
        assert by_trial[(str(sample.id), sample.epoch)] == {
            "scorer": "match",
            "answer": score.answer,
            "answerFrom": "score",
            "target": sample.target,
            "explanation": score.explanation,
            "error": None,
            "unread": None,
            "cut": {},
        }


def test_e150_an_errored_sample_shows_its_error_only_when_asked(
    logs: dict[str, Path],  # noqa: F811
) -> None:
    """The sample that failed in `sample-error` (a `.json` log) has no score: its answer is the
    model's last output, and its error message is shown, in the text and in `--json`, only
    with the option."""
    log = logs["sample-error.json"]
    run_id = _run_id(log)
    (errored,) = [s for s in _samples(log) if s.error is not None]
    task_id = inspect_logs.task_id(errored.id)
    args = ("explain", log, "--run-id", run_id, "--task-id", str(errored.id))
    shown = _invoke(*args, "--sample-text")
    assert shown.exit_code == 0, shown.output
    ((key, block),) = _blocks(shown.output).items()
    assert key == (task_id, 0)
    lines = [line for line in block.splitlines() if line.startswith(LABELS)]
    assert lines == _expected_lines(errored, "match")
    assert f"    error: {errored.error.message}" in lines
    assert lines[0].startswith("    answer (the model's output): ")
    without = _invoke(*args)
    assert errored.error.message not in without.output
    _has_no_sample_text(without.output, [errored])
    (task,) = json.loads(_invoke(*args, "--json", "--sample-text").output)["tasks"]
    (trial,) = task["trials"]
    assert trial["inspect"]["sampleText"]["error"] == errored.error.message
    assert trial["inspect"]["sampleText"]["answerFrom"] == "output"
    assert errored.error.message not in _invoke(*args, "--json").output


def test_e150_an_ingested_directory_needs_the_runs_own_log(
    tmp_path: Path,
    logs: dict[str, Path],  # noqa: F811
) -> None:
    """From an ingested directory the log is not known: without `--inspect-log` it is exit 2
    naming the option; `--inspect-log` takes the log or a directory holding it; another run's
    log is exit 2 naming the file and the run, none of its content; the options are read only
    with `--sample-text`, and a run not from an Inspect log has no sample text."""
    log = logs["arithmetic.eval"]
    events = tmp_path / "events"
    assert _invoke("ingest", log, "--out", events, "--quiet").exit_code == 0
    run_id = _run_id(log)
    args = ("explain", events, "--run-id", run_id, "--task-id", "sum-3", "--epoch", "2")
    needed = _invoke(*args, "--sample-text")
    assert needed.exit_code == 2 and "--inspect-log" in needed.output, needed.output
    assert log.name in needed.output
    (sample,) = [s for s in _samples(log) if (s.id, s.epoch) == ("sum-3", 2)]
    for given in (log, log.parent):
        shown = _invoke(*args, "--sample-text", "--inspect-log", given)
        assert shown.exit_code == 0, shown.output
        assert f"    answer (scorer match): {sample.scores['match'].answer}\n" in shown.output
    other = logs["sample-error.json"]
    wrong = _invoke(*args, "--sample-text", "--inspect-log", other)
    assert wrong.exit_code == 2, wrong.output
    assert str(other) in wrong.output and run_id in wrong.output
    assert "the adder is down" not in wrong.output and _run_id(other) not in wrong.output
    alone = _invoke(*args, "--inspect-log", log)
    assert alone.exit_code == 2 and "--sample-text" in alone.output
    unknown = _invoke(*args, "--sample-text", "--inspect-log", log, "--inspect-scorer", "nope")
    assert unknown.exit_code == 2 and "its scorers: match" in unknown.output
    samples = _invoke(
        "explain", SAMPLE_EVENTS, "--run-id", "acme/run-trajectory-0001", "--sample-text"
    )
    assert samples.exit_code == 2 and "not from an Inspect log" in samples.output


def test_e150_a_sample_past_a_cap_is_not_read(
    logs: dict[str, Path],  # noqa: F811
) -> None:
    """The log is read within the caps an ingest reads it in (E-116): a wanted sample whose
    member is past one is not read and says so; any other member past one leaves the log
    unread, one error naming the log and the cap."""
    log = logs["arithmetic.eval"]
    run_id = _run_id(log)
    explanation = explain_paths(log, run_id=run_id, task_id="sum-3", epoch=1)
    # the samples' members are about 11 kB each; the header and summaries are smaller
    capped = with_sample_text(explanation, log, limits=InputLimits(max_member_bytes=8000))
    (trial,) = [t for task in capped.tasks for t in task.trials]
    assert trial.sample_text is not None and trial.sample_text.answer is None
    text = render_text(capped)
    assert re.search(
        r"^    sample text not read: its archive member declares a size past the cap of "
        r"8,000 bytes \(--max-member-bytes\)$",
        text,
        re.M,
    ), text
    with pytest.raises(NoSampleText, match=r"is not read: archive member 0 .* past the cap"):
        with_sample_text(explanation, log, limits=InputLimits(max_member_bytes=1000))


def _texts(out: Path) -> str:
    """Every value of every file `run` wrote: its text files as they are, its tables' cells."""
    found = []
    for path in sorted(out.rglob("*")):
        if path.suffix == ".parquet":
            found.append(json.dumps(pl.read_parquet(path).to_dicts(), default=str))
        elif path.is_file():
            found.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(found)


@pytest.mark.slow
def test_e150_run_writes_none_of_it(
    tmp_path: Path,
    logs: dict[str, Path],  # noqa: F811
) -> None:
    """§H: the summaries, tables and problems `run` writes on the same logs, and what it prints,
    hold no answer, explanation or error message of theirs (the texts `explain --sample-text`
    shows of them)."""
    for name in ("arithmetic.eval", "sample-error.json"):
        log = logs[name]
        out = tmp_path / name / "out"
        ran = _invoke("run", log, "--out", out)
        assert ran.exit_code in (0, 3), ran.output
        shown = _invoke("explain", log, "--run-id", _run_id(log), "--sample-text")
        written = _texts(out) + ran.output
        texts = {"wrong", "tool call for tool add", "the adder is down"}
        assert any(text in shown.output for text in texts)
        for text in texts:
            assert text not in written, (name, text)


#: an eval whose sample's target and the model's answer are long and hold control characters,
#: written by Inspect's own mock model and log writer
HOSTILE_EVAL = """
import sys
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import match
from inspect_ai.solver import generate

ANSWER = "\\x1b[2J\\x1b]0;owned\\x07" + "a" * 700 + "\\n  trial 9  PASS"
TARGET = "line one\\nline two\\r\\x00" + "t" * 600
output = ModelOutput.from_content(model="mockllm/model", content=ANSWER)
output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # none counted online
model = get_model("mockllm/model", custom_outputs=[output])
task = Task(
    name="hostile",
    dataset=[Sample(id="s-1", input="say it", target=TARGET)],
    solver=[generate()],
    scorer=match(),
)
eval(task, model=model, log_dir=sys.argv[1], display="none")
"""


@pytest.mark.slow
def test_e150_texts_are_cut_and_escaped(tmp_path: Path) -> None:
    """Each text is cut to its first TEXT_CHARS characters, saying how many it had, and shown on
    one line with its control characters escaped (E-83): no escape code reaches the terminal and
    no text makes a line of its own. `--json` has the same characters, as JSON."""
    logs_dir = tmp_path / "logs"
    script = tmp_path / "hostile.py"
    script.write_text(HOSTILE_EVAL, encoding="utf-8")
    subprocess.run([sys.executable, str(script), str(logs_dir)], check=True, capture_output=True)
    (log,) = logs_dir.glob("*.eval")
    (sample,) = _samples(log)
    answer = sample.scores["match"].answer
    assert len(answer) > TEXT_CHARS and len(sample.target) > TEXT_CHARS and "\x1b" in answer
    args = ("explain", log, "--run-id", _run_id(log), "--sample-text")
    shown = _invoke(*args).output
    assert "\x1b" not in shown and "\x07" not in shown and "\x00" not in shown and "\r" not in shown
    assert not re.search(r"^  trial 9", shown, re.M)
    (line,) = [line for line in shown.splitlines() if line.startswith("    answer (")]
    assert line.startswith("    answer (scorer match): \\x1b[2J\\x1b]0;owned\\x07aaa")
    assert line.endswith(f"a ... [the first {TEXT_CHARS} of {len(answer):,} characters]")
    (target,) = [line for line in shown.splitlines() if line.startswith("    target: ")]
    assert target.startswith("    target: line one\\nline two\\r\\x00ttt")
    (trial,) = [
        t for task in json.loads(_invoke(*args, "--json").output)["tasks"] for t in task["trials"]
    ]
    text = trial["inspect"]["sampleText"]
    assert text["answer"] == answer[:TEXT_CHARS] and text["target"] == sample.target[:TEXT_CHARS]
    assert text["cut"] == {
        "answer": len(answer),
        "target": len(sample.target),
        "explanation": len(sample.scores["match"].explanation),
    }


def test_e150_the_length_documented_is_the_one_cut() -> None:
    """`--help` and docs/explain.md state the length each text is cut to (the help cannot read
    `TEXT_CHARS`: the engine loads when a command runs, not for `--help`)."""
    help_text = " ".join(_invoke("explain", "--help").output.split())
    assert f"each cut to {TEXT_CHARS} characters" in help_text
    page = (Path(__file__).resolve().parents[1] / "docs" / "explain.md").read_text()
    assert f"Each text is cut to its first {TEXT_CHARS} characters" in " ".join(page.split())
