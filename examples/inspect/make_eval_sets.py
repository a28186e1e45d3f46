"""Two Inspect eval sets, written by Inspect's own `eval_set`, for E-143 and E-144.

    python examples/inspect/make_eval_sets.py OUT_DIR      # needs evalbatch[inspect]

Writes `OUT_DIR/base/` and `OUT_DIR/cand/`, each an eval-set log directory as Inspect leaves it
(its `.eval` logs and the index files beside them: `eval-set.json`, `logs.json`,
`.eval-set-id`). Each set runs two tasks of eight additions, two epochs each, on Inspect's mock
model scripted as in make_logs.py (it calls `add`, then answers with the result):

- arithmetic, scored by `match`: in `base` the model answers `sum-5`..`sum-8` wrong in every
  epoch; in `cand` it answers every sample right.
- mean-scored, scored by a numeric scorer (1 for the right sum, 1/3 otherwise) with the same
  answers.

data/samples/inspect-regress/base.eval and cand.eval are the two `arithmetic` logs.
"""

from __future__ import annotations

import sys
from pathlib import Path

from inspect_ai import Task, eval_set
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate, use_tools

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_logs import add, closeness, scripted_model  # noqa: E402

#: the samples the baseline's model answers wrong, in every epoch
WRONG_IN_BASE = ("sum-5", "sum-6", "sum-7", "sum-8")
EPOCHS = 2


def samples() -> list[Sample]:
    return [
        Sample(id=f"sum-{i}", input=f"add {i} {i + 1}", target=str(2 * i + 1)) for i in range(1, 9)
    ]


def tasks() -> list[Task]:
    return [
        Task(
            name=name,
            dataset=samples(),
            solver=[use_tools([add()]), generate()],
            scorer=scorer,
        )
        for name, scorer in (("arithmetic", match()), ("mean-scored", closeness()))
    ]


def write_set(out: Path, wrong: tuple[str, ...]) -> None:
    """One eval set of `tasks()` into `out`, the model answering `wrong` wrong."""
    done, _ = eval_set(
        tasks(),
        log_dir=str(out),
        model=scripted_model(dict.fromkeys(wrong, set(range(1, 2 * EPOCHS + 1)))),
        epochs=EPOCHS,
        display="none",
        max_samples=1,
    )
    if not done:
        sys.exit(f"the eval set in {out} did not finish")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    write_set(Path(sys.argv[1]) / "base", WRONG_IN_BASE)
    write_set(Path(sys.argv[1]) / "cand", ())
