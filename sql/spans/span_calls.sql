-- name: span_calls
-- The agent.tool-called events (tool_called_events) inside each eval's span, each with the trial
-- segment it sits in (§2.1, E-2; the rule is the span_events macro of sql/macros.sql).
SELECT * FROM span_events('tool_called_events')
