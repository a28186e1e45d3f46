-- name: delegate_log_faults
-- reads: events
-- The child runs whose logs cannot be read whole (E-102), as an eval run's would not be (D-3,
-- E-3, E-80): a row with an unusable sequence or no type, or a payload that is not JSON on an
-- event a delegated trajectory reads (agent.tool-called, the dispatch events, eval.started).
-- Read from `events` over the child runs being read.
SELECT DISTINCT run_id
FROM events
WHERE NOT sequence_ok
    OR type IS NULL
    OR (
        NOT payload_json
        AND type IN (
            'agent.tool-called', 'node.dispatched', 'workflow-chain.event', 'dispatch.joined',
            'eval.started'
        )
    )
