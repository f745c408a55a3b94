-- Facts, dimensions and marts for analysts.

-- Every observed status change, with the status before it (NULL for a case's first observation).
CREATE OR REPLACE VIEW fct_chargeback_status_changes AS
SELECT mid, case_number,
       lag(status) OVER (PARTITION BY mid, case_number ORDER BY seen_at, status) AS from_status,
       status AS to_status, seen_at, landing_file
FROM chargeback_status_history;

CREATE OR REPLACE VIEW fct_prevention_status_changes AS
SELECT alert_case_id,
       lag(status) OVER (PARTITION BY alert_case_id ORDER BY seen_at, status) AS from_status,
       status AS to_status, seen_at, landing_file
FROM prevention_status_history;

-- Merchant accounts named by MID reports, chargebacks or prevention alerts.
CREATE OR REPLACE VIEW dim_mids AS
WITH ids AS (
  SELECT mid FROM mids
  UNION SELECT DISTINCT mid FROM chargebacks
  UNION SELECT DISTINCT mid FROM prevention_alerts WHERE mid IS NOT NULL
)
SELECT ids.mid, m.alias, m.gateways, m.last_seen_at
FROM ids LEFT JOIN mids m USING (mid);

-- The chargeback mart: one row per case with what the events add, and the ages analysts slice by.
CREATE OR REPLACE VIEW mart_chargebacks AS
SELECT j.*,
       date_diff('day', j.transaction_date, j.date_received) AS order_age_days,
       CASE WHEN j.status IN ('Won', 'Lost') THEN j.status = 'Won' END AS won
FROM int_chargebacks_joined j;

-- How well reports and events find each other: the share of report rows with at least one event, and of
-- event cases (distinct keys across the entity's event types) with a report row.
CREATE OR REPLACE VIEW mart_event_match_rates AS
WITH
cb_events AS (
  SELECT mid, case_number FROM stg_events__chargeback_new
  UNION SELECT mid, case_number FROM stg_events__chargeback_match
  UNION SELECT mid, case_number FROM stg_events__chargeback_result
  UNION SELECT mid, case_number FROM stg_events__chargeback_dnf
),
pv_events AS (
  SELECT prevention_case_number FROM stg_events__prevention_new
  UNION SELECT prevention_case_number FROM stg_events__prevention_match
),
cb AS (
  SELECT
    (SELECT count(*) FROM chargebacks) AS report_rows,
    (SELECT count(*) FROM chargebacks c WHERE EXISTS (SELECT 1 FROM cb_events e WHERE e.mid = c.mid AND e.case_number = c.case_number)) AS report_rows_matched,
    (SELECT count(*) FROM cb_events) AS event_cases,
    (SELECT count(*) FROM cb_events e WHERE EXISTS (SELECT 1 FROM chargebacks c WHERE e.mid = c.mid AND e.case_number = c.case_number)) AS event_cases_matched
),
pv AS (
  SELECT
    (SELECT count(*) FROM prevention_alerts) AS report_rows,
    (SELECT count(*) FROM prevention_alerts p WHERE EXISTS (SELECT 1 FROM pv_events e WHERE e.prevention_case_number = p.alert_case_id)) AS report_rows_matched,
    (SELECT count(*) FROM pv_events) AS event_cases,
    (SELECT count(*) FROM pv_events e WHERE EXISTS (SELECT 1 FROM prevention_alerts p WHERE e.prevention_case_number = p.alert_case_id)) AS event_cases_matched
)
SELECT 'chargebacks' AS entity, report_rows, report_rows_matched,
       report_rows_matched / NULLIF(report_rows, 0)::DOUBLE AS report_match_rate,
       event_cases, event_cases_matched,
       event_cases_matched / NULLIF(event_cases, 0)::DOUBLE AS event_match_rate
FROM cb
UNION ALL
SELECT 'prevention', report_rows, report_rows_matched, report_rows_matched / NULLIF(report_rows, 0)::DOUBLE,
       event_cases, event_cases_matched, event_cases_matched / NULLIF(event_cases, 0)::DOUBLE
FROM pv;
