"""Why one eval run's trials graded as they did, call by call.

`run_explanation.explain_paths` reads and grades the run into an `explanation.Explanation`;
`text_rendering.render_text` shows it for a terminal and `json_shape.to_json` as JSON. The
findings come from `trajectory_findings` (§3.2) and `fixture_replay` (§3.3), each call as
`observed_calls` shows it, arguments as `call_args` compares them. Asked, `sample_text` adds what
each trial's Inspect sample said, read from its log (E-150).
"""

from evalbatch.explain.explanation import Explanation
from evalbatch.explain.json_shape import to_json
from evalbatch.explain.run_explanation import UnknownRun, UnknownSelection, explain_paths
from evalbatch.explain.text_rendering import render_text

__all__ = [
    "Explanation",
    "UnknownRun",
    "UnknownSelection",
    "explain_paths",
    "render_text",
    "to_json",
]
