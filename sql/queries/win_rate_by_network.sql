-- Win rate by card network: won / (won + lost); cases still open, not fought or unobtainable are counted
-- apart and left out of the rate.
-- Run: cbp sql --file sql/queries/win_rate_by_network.sql
SELECT
  coalesce(card_type, '(unknown)')                                             AS network,
  count(*)                                                                     AS cases,
  count(*) FILTER (WHERE status = 'Won')                                       AS won,
  count(*) FILTER (WHERE status = 'Lost')                                      AS lost,
  count(*) FILTER (WHERE status IN ('New', 'Pending', 'Pre-Arbitration'))      AS open,
  count(*) FILTER (WHERE status IN ('Did Not Fight', 'Result Unobtainable'))   AS not_decided,
  round(count(*) FILTER (WHERE status = 'Won')
        / NULLIF(count(*) FILTER (WHERE status IN ('Won', 'Lost')), 0)::DOUBLE, 3) AS win_rate
FROM chargebacks
GROUP BY ALL
ORDER BY cases DESC;
