-- name: dispatch_events
-- reads: events
-- One row per event that names child runs (E-102: delegated and fanned-out work runs as child
-- runs): node.dispatched and workflow-chain.event by their childRunId, dispatch.joined by its
-- mergeOrder (the children in the order their results were merged). `readable` is false when the
-- payload is not JSON, a node.dispatched names no string childRunId, a workflow-chain.event's
-- childRunId is not a string, or a mergeOrder is not an array of strings: such an event hides
-- which children ran, so a trial that includes delegates cannot show its path. Read from `events`.
SELECT
    run_id,
    sequence,
    type = 'dispatch.joined' AS joined,
    CASE
        WHEN f IS NULL THEN false
        WHEN type = 'node.dispatched' THEN json_string(f[1]) IS NOT NULL
        WHEN type = 'workflow-chain.event' THEN f[1] IS NULL OR json_string(f[1]) IS NOT NULL
        ELSE coalesce(json_type(f[1]) = 'ARRAY', false) AND coalesce(
            list_bool_and(
                list_transform(json_extract(f[1], '$[*]'), lambda x: json_type(x) = 'VARCHAR')
            ),
            true  -- an empty mergeOrder names no child
        )
    END AS readable,
    CASE
        WHEN type = 'dispatch.joined' AND json_type(f[1]) = 'ARRAY'
        THEN list_transform(json_extract(f[1], '$[*]'), lambda x: json_string(x))
        WHEN f IS NOT NULL AND json_string(f[1]) IS NOT NULL THEN [json_string(f[1])]
        ELSE []
    END AS children
FROM events
WHERE type IN ('node.dispatched', 'workflow-chain.event', 'dispatch.joined')
