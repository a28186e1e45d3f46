-- name: trial_calls
-- One row per agent.tool-called inside a trial's bracket, in sequence order (§2.2): the calls the
-- fixture replay walks (all agents, §3.3) and, filtered to the target agent unless
-- includeDelegates, the observed trajectory (§3.1). A call naming no agent is nobody's target.
SELECT
    t.run_id,
    t.segment_no,
    (row_number() OVER (PARTITION BY t.run_id, t.segment_no ORDER BY c.sequence) - 1)::INTEGER
        AS call_pos,
    c.sequence,
    c.tool_name,
    coalesce(c.agent_id = t.target_agent_id, false) AS by_target,
    c.inputs,
    c.exact_payload
FROM trial_segments AS t
JOIN span_calls AS c
    ON c.run_id = t.run_id
    AND c.segment_no = t.segment_no
    AND c.sequence > t.bracket_start_seq
    AND c.sequence < t.bracket_end_seq
