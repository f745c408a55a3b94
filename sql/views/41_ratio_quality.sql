-- Data quality: chargebacks counted from the chargeback report (by date_received month) against the MID
-- report's chargeback_count of the same mid x network x calendar month. A difference is not necessarily
-- an error (the two reports may date a case differently, or one was fetched earlier); it is shown so the
-- ratios' numerators can be trusted or questioned.
CREATE OR REPLACE VIEW dq_chargeback_counts AS
SELECT
  coalesce(s.mid, c.mid) AS mid,
  coalesce(s.network, c.network) AS network,
  coalesce(s.month, c.month) AS month,
  c.chargeback_count AS report_count,
  s.chargeback_count AS mid_report_count,
  coalesce(c.chargeback_count, 0) - coalesce(s.chargeback_count, 0) AS difference,
  coalesce(c.chargeback_count, 0) = coalesce(s.chargeback_count, 0) AS agrees,
  s.is_partial AS mid_report_partial,
  CASE
    WHEN s.mid IS NULL THEN 'no MID report for the month'
    WHEN c.mid IS NULL AND s.chargeback_count > 0 THEN 'no chargebacks in the chargeback report'
    WHEN coalesce(c.chargeback_count, 0) <> s.chargeback_count THEN 'counts differ'
  END AS note
FROM int_mid_stats__monthly s
FULL OUTER JOIN int_chargebacks__monthly c ON c.mid = s.mid AND c.network = s.network AND c.month = s.month;
