-- Status changes observed in the last 30 days of loads (from -> to), most frequent first.
-- Run: cbp sql --file sql/queries/status_changes.sql
SELECT coalesce(from_status, '(first seen)') AS from_status, to_status, count(*) AS cases
FROM fct_chargeback_status_changes
WHERE seen_at >= (SELECT max(seen_at) FROM chargeback_status_history) - INTERVAL 30 DAY
GROUP BY ALL
ORDER BY cases DESC, from_status, to_status;
