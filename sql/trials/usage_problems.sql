-- name: usage_problems
-- reads: span_usage
-- provider.usage events whose tokens or cost cannot be used as they stand (§2.2, D-14), with the
-- segment they sit in; the grading stage keeps only those in counted trials.
SELECT run_id, segment_no, sequence, 'usage-tokens-invalid' AS code
FROM span_usage
WHERE input_tokens IS NULL OR output_tokens IS NULL
UNION ALL
SELECT run_id, segment_no, sequence, 'cost-invalid'
FROM span_usage
WHERE cost_state = 'invalid'
UNION ALL
SELECT run_id, segment_no, sequence, 'non-usd-cost'
FROM span_usage
WHERE cost_state = 'ok' AND NOT currency_usd
ORDER BY run_id, sequence, code
