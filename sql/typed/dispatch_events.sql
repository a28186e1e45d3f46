-- name: dispatch_events
-- reads: events
-- One row per event that names child runs (E-102: delegated and fanned-out work runs as child
-- runs): node.dispatched and workflow-chain.event by their childRunId, dispatch.joined by its
-- mergeOrder (the children in the order their results were merged). `readable` is false when the
-- payload is not JSON, a node.dispatched names no string childRunId, a workflow-chain.event's
-- childRunId is not a string, or a mergeOrder is not an array of strings: such an event hides
-- which children ran, so a trial that includes delegates cannot show its path. Read from `events`.
WITH named AS (
    SELECT
        run_id,
        sequence,
        type,
        f,
        -- the one field each of these types reads, by name (E-134)
        CASE type
            WHEN 'node.dispatched' THEN dispatched_field(f, 'childRunId')
            WHEN 'workflow-chain.event' THEN chain_field(f, 'childRunId')
        END AS child_run_id,
        CASE WHEN type = 'dispatch.joined' THEN joined_field(f, 'mergeOrder') END AS merge_order
    FROM events
    WHERE type IN ('node.dispatched', 'workflow-chain.event', 'dispatch.joined')
)
SELECT
    run_id,
    sequence,
    type = 'dispatch.joined' AS joined,
    CASE
        WHEN f IS NULL THEN false
        WHEN type = 'node.dispatched' THEN json_string(child_run_id) IS NOT NULL
        WHEN type = 'workflow-chain.event'
        THEN child_run_id IS NULL OR json_string(child_run_id) IS NOT NULL
        ELSE coalesce(json_type(merge_order) = 'ARRAY', false) AND coalesce(
            list_bool_and(
                list_transform(json_extract(merge_order, '$[*]'), lambda x: json_type(x) = 'VARCHAR')
            ),
            true  -- an empty mergeOrder names no child
        )
    END AS readable,
    CASE
        WHEN type = 'dispatch.joined' AND json_type(merge_order) = 'ARRAY'
        THEN list_transform(json_extract(merge_order, '$[*]'), lambda x: json_string(x))
        -- a childRunId, or a mergeOrder that is one string (the field of the row's type)
        WHEN f IS NOT NULL AND json_string(coalesce(child_run_id, merge_order)) IS NOT NULL
        THEN [json_string(coalesce(child_run_id, merge_order))]
        ELSE []
    END AS children
FROM named
