"""The fixture replay of one trial, call by call: which toolResponses entry served each call and
why a call was missed (§3.3, D-9).

The grader's `trial_grading.fixture_detail` keeps, call by call, what `count_fixture_misses`
counts, with the same joins and the same `match` functions; this reads one trial of it and says
why each miss is one: no entry for the tool, every matching entry already served, or the
arguments differ (E-57: the first same-tool entry not yet used is the one compared with).
"""

from __future__ import annotations

from typing import Any

from evalbatch.explain.call_args import diff_words, display_text, implied_diff
from evalbatch.explain.explanation import FailedCheck, FixtureCall, FixtureEntry, Fixtures
from evalbatch.explain.trial_detail import pairing_of, rows_of
from evalbatch.explain.wording import position_names
from evalbatch.grade import trial_grading
from evalbatch.options import GradeOptions


def explain_fixtures(
    row: dict[str, Any],
    trial: dict[str, Any],
    detail: trial_grading.FixtureDetail,
    options: GradeOptions,
) -> Fixtures:
    """The trial's entries and calls, which entry served each call, and why each miss is one."""
    declared = trial["on_miss"]
    applied = trial_grading.on_miss_applied(declared, options)
    if trial["live_shadow"]:
        return Fixtures(
            fixtured=False,
            note="not replayed: the run's modes contain live-shadow (§3.3)",
            on_miss=applied,
            on_miss_declared=declared,
            misses=0,
            failed_closed=False,
            entries=[],
            calls=[],
        )
    key = trial["trial_key"]
    entries = rows_of(detail.entries, key)
    calls = rows_of(detail.calls, key)
    pairs = rows_of(detail.pairs, key)
    served = pairing_of(detail.served, key, "o_idx", "f_pos")
    served_by_entry = {f: o for o, f in served.items()}
    ok = {(p["f_pos"], p["o_idx"]) for p in pairs if p["ok"]}
    out_calls = []
    for c in calls:
        miss = None
        if c["o_idx"] not in served:
            miss = _fixture_miss(c, entries, ok, served_by_entry)
        out_calls.append(
            FixtureCall(
                call_pos=c["o_idx"],
                sequence=c["sequence"],
                tool=c["tool_name"],
                inputs=display_text(c["inputs"], c["exact_payload"]),
                entry_pos=served.get(c["o_idx"]),
                miss=miss,
            )
        )
    return Fixtures(
        fixtured=True,
        note=None,
        on_miss=applied,
        on_miss_declared=declared,
        misses=int(row["fixture_misses"]),
        failed_closed=bool(row["failed_closed"]),
        entries=[
            FixtureEntry(
                e["f_pos"], e["tool"], e["args_mode"], e["args"], served_by_entry.get(e["f_pos"])
            )
            for e in entries
        ],
        calls=out_calls,
    )


def _fixture_miss(
    call: dict[str, Any],
    entries: list[dict[str, Any]],
    ok: set[tuple[int, int]],
    served_by_entry: dict[int, int],
) -> FailedCheck:
    """Why no toolResponses entry served this call (§3.3)."""
    pos, tool = call["o_idx"], call["tool_name"]
    name = f"call {pos} {tool}"
    same_tool = [e for e in entries if e["tool"] == tool]
    if not same_tool:
        return FailedCheck(
            trial_grading.FIXTURE_MISS_REASON,
            "no-entry",
            f"{name}: no toolResponses entry for this tool",
            None,
            pos,
            tool,
        )
    matching = [e["f_pos"] for e in same_tool if (e["f_pos"], pos) in ok]
    if matching:
        users = [served_by_entry[f] for f in matching if f in served_by_entry]
        return FailedCheck(
            trial_grading.FIXTURE_MISS_REASON,
            "consumed",
            f"{name}: every entry that matches it ({position_names(matching, 'F')}) was served "
            f"to an earlier call ({position_names(users, 'call ')}); an entry serves one call",
            matching[0],
            pos,
            tool,
        )
    unused = [e for e in same_tool if e["f_pos"] not in served_by_entry]
    entry = (unused or same_tool)[0]
    diff = implied_diff(entry["args_mode"], entry["args"], call["inputs"], call["exact_payload"])
    return FailedCheck(
        trial_grading.FIXTURE_MISS_REASON,
        "args-differ",
        f"{name}: no entry with matching args; F{entry['f_pos']} ({entry['args_mode']}) differs "
        f"at {diff_words(diff)}",
        entry["f_pos"],
        pos,
        tool,
        diff,
    )
