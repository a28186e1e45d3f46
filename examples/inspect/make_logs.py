"""Small Inspect eval logs, written by Inspect itself, for `evalbatch ingest` (E-111).

    python examples/inspect/make_logs.py OUT_DIR            # needs evalbatch[inspect]

Runs offline: every task's model is Inspect's own mock model (`mockllm/model`) with scripted
outputs that call tools, and every log is written by Inspect's own log writer, as `.eval`
archives and `.json` logs. What the logs hold:

- arithmetic (3 epochs, .eval and .json): the model calls `add` and answers with its result;
  sample `sum-3`'s answer is wrong in every epoch, `sum-2`'s in the second; each model call
  reports its tokens and a cost.
- arithmetic-pass-at-k (4 epochs): as above, reduced by Inspect with `mean` and `pass_at_2`, so
  its own pass@k stands beside evalbatch's.
- mean-scored (3 epochs): scored by a numeric scorer (1 for the right sum, 1/3 for any other
  answer) whose metrics are Inspect's `mean` and `stderr`, not `accuracy`.
- best-epoch (2 epochs): as arithmetic, each sample's epochs reduced by Inspect with `max`, so
  Inspect reports no mean of the epochs.
- two-scorers: each sample scored by `match` and by a scorer whose value is a dict of scores.
- judged (2 epochs): scored by `model_graded_qa`, whose grader is a second mock model that
  answers `GRADE: C` for a right sum and `GRADE: I` otherwise: a judge whose calls and cost are
  the sample's too.
- tool-error (.eval): the `add` tool fails for one sample and the eval stops (status `error`).
- sample-error: one sample fails, the eval goes on (`fail_on_error=False`): that sample has no
  score.
- scored-error (.eval): as sample-error, but Inspect scores the failed sample too
  (`score_on_error=True`) with a scorer that marks every answer correct.
- interrupted (.eval): the eval is interrupted (as by Ctrl-C) at its third sample; Inspect leaves
  the log as `started`, with the two samples it finished.
- row-ids (2 epochs, .eval): samples whose ids are no taskIds, `Row 1/B` and `Row 2/B` (a space
  and a slash) and the number 7, given through Inspect's dataset API: the names `ingest` keeps
  beside the taskIds it makes (E-146).

Samples run one at a time (`max_samples=1`), so the scripted answers land on the same epochs on
every run.
"""

from __future__ import annotations

import contextlib
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from inspect_ai import Epochs, Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import (
    Score,
    Target,
    accuracy,
    match,
    mean,
    model_graded_qa,
    scorer,
    stderr,
)
from inspect_ai.solver import Generate, TaskState, generate, solver, use_tools
from inspect_ai.tool import tool

#: the sample whose tool call fails in `tool-error` and whose solver fails in `sample-error`
FAILING = "sum-3"


@tool
def add():  # type: ignore[no-untyped-def]
    async def execute(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: The first number.
            b: The second number.
        """
        if a == 3 and FAILING_TOOL:
            raise RuntimeError("the adder is down")
        return a + b

    return execute


FAILING_TOOL = False


def scripted_model(wrong: dict[str, set[int]]) -> Any:
    """Inspect's mock model with a script: call `add` with the sample's numbers, then answer
    with the tool's result, or with a wrong answer on the epochs `wrong` names for the sample
    (counted per sample, as samples run one at a time)."""
    answers: Counter[str] = Counter()

    def script(messages, tools, tool_choice, config) -> ModelOutput:  # type: ignore[no-untyped-def]
        prompt = next(m for m in messages if m.role == "user").text
        a, b = (int(word) for word in prompt.split()[1:3])
        sample = f"sum-{a}"
        results = [m for m in messages if isinstance(m, ChatMessageTool)]
        if not results:
            output = ModelOutput.for_tool_call(
                model="mockllm/model", tool_name="add", tool_arguments={"a": a, "b": b}
            )
        else:
            answers[sample] += 1
            epoch = answers[sample]
            text = "wrong" if epoch in wrong.get(sample, set()) else results[-1].text
            output = ModelOutput.from_content(model="mockllm/model", content=text)
        tokens_in = 10 * len(messages)
        output.usage = ModelUsage(
            input_tokens=tokens_in,
            output_tokens=5,
            total_tokens=tokens_in + 5,
            total_cost=round(tokens_in * 1e-5 + 5 * 3e-5, 8),
        )
        return output

    return get_model("mockllm/model", custom_outputs=script, memoize=False)


def scripted_judge() -> Any:
    """A mock grader: `GRADE: C` when the answer it is shown is the right sum, else `GRADE: I`;
    each call reports its tokens and a cost, as the model's do."""

    def script(messages, tools, tool_choice, config) -> ModelOutput:  # type: ignore[no-untyped-def]
        grade = "I" if "[Submission]: wrong" in messages[-1].text else "C"
        output = ModelOutput.from_content(model="mockllm/model", content=f"GRADE: {grade}")
        output.usage = ModelUsage(
            input_tokens=100, output_tokens=3, total_tokens=103, total_cost=0.002
        )
        return output

    return get_model("mockllm/model", custom_outputs=script, memoize=False)


def samples() -> list[Sample]:
    return [
        Sample(id=f"sum-{i}", input=f"add {i} {i + 1}", target=str(2 * i + 1)) for i in range(1, 5)
    ]


def row_samples() -> MemoryDataset:
    """Samples named as a spreadsheet names its rows, and one by a number."""
    return MemoryDataset(
        [
            Sample(id="Row 1/B", input="add 1 2", target="3"),
            Sample(id="Row 2/B", input="add 2 3", target="5"),
            Sample(id=7, input="add 3 4", target="7"),
        ],
        name="rows",
    )


@scorer(metrics={"exact": [accuracy(), stderr()], "close": [accuracy()]})
def graded():  # type: ignore[no-untyped-def]
    """A scorer whose value is a dict of scores: `exact` (C/I) and `close` (1, 0.5 or 0)."""

    async def score(state: TaskState, target: Target) -> Score:
        answer = state.output.completion.strip()
        exact = "C" if answer == target.text else "I"
        close = 1.0 if exact == "C" else (0.5 if answer.isdigit() else 0.0)
        return Score(value={"exact": exact, "close": close}, answer=answer)

    return score


@scorer(metrics=[mean(), stderr()])
def closeness():  # type: ignore[no-untyped-def]
    """A numeric scorer: 1.0 for the right sum, 1/3 for any other answer."""

    async def score(state: TaskState, target: Target) -> Score:
        right = state.output.completion.strip() == target.text
        return Score(value=1.0 if right else 1 / 3)

    return score


@solver
def interrupt_at_third():  # type: ignore[no-untyped-def]
    """Interrupts the eval (as Ctrl-C does) when it reaches sample `sum-3`."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if state.sample_id == FAILING:
            raise KeyboardInterrupt
        return state

    return solve


@scorer(metrics=[accuracy()])
def lenient():  # type: ignore[no-untyped-def]
    """Every answer correct, a failed sample's included."""

    async def score(state: TaskState, target: Target) -> Score:
        return Score(value="C")

    return score


def arithmetic(name: str, scorers: list[Any] | None = None, first: list[Any] | None = None) -> Task:
    return Task(
        name=name,
        dataset=samples(),
        solver=[*(first or []), use_tools([add()]), generate()],
        scorer=scorers or match(),
    )


def write_logs(out: Path) -> None:
    global FAILING_TOOL
    wrong = {"sum-3": {1, 2, 3, 4}, "sum-2": {2}}

    def run(task: Task, epochs: int | Epochs, log_format: str = "eval", **options: Any) -> None:
        """One eval of `task`, on the scripted model, its log written into `out`."""
        inspect_eval(
            task,
            model=scripted_model(wrong),
            epochs=epochs,
            log_format=log_format,
            log_dir=str(out),
            display="none",
            max_samples=1,
            **options,
        )

    run(arithmetic("arithmetic"), 3, "eval")
    run(arithmetic("arithmetic"), 3, "json")
    run(arithmetic("arithmetic-pass-at-k"), Epochs(4, ["mean", "pass_at_2"]))
    run(arithmetic("mean-scored", [closeness()]), 3)
    run(arithmetic("best-epoch"), Epochs(2, "max"))
    run(arithmetic("two-scorers", [match(), graded()]), 2)
    run(arithmetic("judged", [model_graded_qa(model=scripted_judge())]), 2)
    solver = [use_tools([add()]), generate()]
    run(Task(name="row-ids", dataset=row_samples(), solver=solver, scorer=match()), 2)
    FAILING_TOOL = True
    try:
        run(arithmetic("tool-error"), 1, fail_on_error=True)
        run(arithmetic("sample-error"), 1, "json", fail_on_error=False)
        run(arithmetic("scored-error", [lenient()]), 1, fail_on_error=False, score_on_error=True)
    finally:
        FAILING_TOOL = False
    # Inspect writes what it had when interrupted: a log left `started`
    with contextlib.suppress(KeyboardInterrupt):
        run(arithmetic("interrupted", first=[interrupt_at_third()]), 1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    write_logs(Path(sys.argv[1]))
