-- name: tool_called_events
-- One row per agent.tool-called (§2.2): the agent (agentId | agent.agentId), the tool (toolName |
-- toolId) and the input (inputs | arguments; absent reads as {}, an explicit null stays null: D-2),
-- with the payload text kept where a number could lose digits (D-7). Read from `event_scan`,
-- which reads the typed fields off each payload's one parse.
SELECT
    run_id,
    sequence,
    agent_id,
    tool_name,
    inputs,
    exact_payload
FROM event_scan
WHERE type = 'agent.tool-called'
