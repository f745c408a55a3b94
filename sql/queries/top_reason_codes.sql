-- Top chargeback reason codes: how many cases, how much money, and how many were won once decided.
-- Run: cbp sql --file sql/queries/top_reason_codes.sql
SELECT
  reason_code,
  any_value(reason)                                   AS reason,
  count(*)                                            AS cases,
  sum(amount)                                         AS amount,
  count(*) FILTER (WHERE status = 'Won')              AS won,
  count(*) FILTER (WHERE status = 'Lost')             AS lost,
  round(100.0 * count(*) / sum(count(*)) OVER (), 1)  AS pct_of_cases
FROM chargebacks
GROUP BY reason_code
ORDER BY cases DESC, reason_code
LIMIT 20;
