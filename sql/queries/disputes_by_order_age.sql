-- Disputes by order age: days from the transaction to the chargeback's receipt, in buckets, with the
-- share won. Cases without both dates are counted under "(unknown)".
-- Run: cbp sql --file sql/queries/disputes_by_order_age.sql
WITH aged AS (
  SELECT *, date_diff('day', transaction_date, date_received) AS age_days FROM chargebacks
)
SELECT
  CASE
    WHEN age_days IS NULL THEN '(unknown)'
    WHEN age_days < 8 THEN '0-7 days'
    WHEN age_days < 31 THEN '8-30 days'
    WHEN age_days < 61 THEN '31-60 days'
    WHEN age_days < 121 THEN '61-120 days'
    ELSE 'over 120 days'
  END                                                   AS order_age,
  min(coalesce(age_days, 1e9))                          AS sort_key,
  count(*)                                              AS cases,
  sum(amount)                                           AS amount,
  round(count(*) FILTER (WHERE status = 'Won')
        / NULLIF(count(*) FILTER (WHERE status IN ('Won', 'Lost')), 0)::DOUBLE, 3) AS win_rate
FROM aged
GROUP BY 1
ORDER BY sort_key;
