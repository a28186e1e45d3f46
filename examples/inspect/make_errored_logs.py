"""Two Inspect eval logs with errored samples, written by Inspect itself, for E-147.

    python examples/inspect/make_errored_logs.py OUT_DIR      # needs evalbatch[inspect]

Writes `OUT_DIR/base.eval` and `OUT_DIR/cand.eval`: the task `flaky-adder`, six additions, five
epochs, on Inspect's mock model scripted as in make_logs.py (it calls `add`, then answers with the
result). The adder fails on the (sample, epoch) pairs `ERRORS` names, and the eval goes on
(`fail_on_error=False`): Inspect marks each such sample errored, scores it not at all and leaves
it out of its own figures. The model answers `WRONG` wrong.

- base: `sum-2` errors in epochs 2 and 4, `sum-5` in every epoch (a sample with no score at
  all); `sum-3` is answered wrong in epochs 1 and 3.
- cand: `sum-2` errors in epoch 1; `sum-3` is answered wrong in epoch 1.
"""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from pathlib import Path

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import tool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_logs import scripted_model  # noqa: E402

EPOCHS = 5
#: per log, the epochs (from 1) in which the adder fails for a sample
ERRORS = {
    "base": {"sum-2": {2, 4}, "sum-5": set(range(1, EPOCHS + 1))},
    "cand": {"sum-2": {1}},
}
#: per log, the epochs in which the model answers a sample wrong
WRONG = {"base": {"sum-3": {1, 3}}, "cand": {"sum-3": {1}}}


def flaky_add(fails: dict[str, set[int]]):  # type: ignore[no-untyped-def]
    """The `add` tool, failing on the epochs `fails` names for a sample (counted per sample, as
    samples run one at a time)."""
    calls: Counter[str] = Counter()

    @tool(name="add")
    def add():  # type: ignore[no-untyped-def]
        async def execute(a: int, b: int) -> int:
            """Add two numbers.

            Args:
                a: The first number.
                b: The second number.
            """
            sample = f"sum-{a}"
            calls[sample] += 1
            if calls[sample] in fails.get(sample, set()):
                raise RuntimeError("the adder is down")
            return a + b

        return execute

    return add


def write_log(out: Path, name: str) -> None:
    """One eval of `flaky-adder` into `out/<name>.eval`."""
    scratch = out / f".{name}"
    task = Task(
        name="flaky-adder",
        dataset=[
            Sample(id=f"sum-{i}", input=f"add {i} {i + 1}", target=str(2 * i + 1))
            for i in range(1, 7)
        ],
        solver=[use_tools([flaky_add(ERRORS[name])()]), generate()],
        scorer=match(),
    )
    inspect_eval(
        task,
        model=scripted_model(WRONG[name]),
        epochs=EPOCHS,
        log_dir=str(scratch),
        display="none",
        max_samples=1,
        fail_on_error=False,
    )
    (written,) = scratch.glob("*.eval")
    shutil.move(written, out / f"{name}.eval")
    shutil.rmtree(scratch)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    for log in ERRORS:
        write_log(target, log)
