-- How well the reports and the pushed events find each other: the share of report rows with at least one
-- event about the same case, and the share of event cases with a report row.
-- Run: cbp sql --file sql/queries/match_rates.sql
SELECT entity, report_rows, report_rows_matched, round(report_match_rate, 3) AS report_match_rate,
       event_cases, event_cases_matched, round(event_match_rate, 3) AS event_match_rate
FROM mart_event_match_rates
ORDER BY entity;
