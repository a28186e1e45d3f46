-- name: explain_calls
-- reads: trial_calls, tool_called_events
-- Every agent.tool-called inside a trial's bracket, for `evalbatch explain`: the rows of
-- trial_calls (§2.2; call_pos is the position the fixture replay walks, §3.3) with the calling
-- agent (D-2: agentId | agent.agentId; null when the call names none, E-13).
SELECT
    c.run_id,
    c.segment_no,
    c.call_pos,
    c.sequence,
    e.agent_id,
    c.by_target
FROM trial_calls AS c
LEFT JOIN tool_called_events AS e ON e.run_id = c.run_id AND e.sequence = c.sequence
