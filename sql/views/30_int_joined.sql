-- Report rows joined with the events about the same case (dbt layer "int"). Events may arrive more than
-- once and change over time, so each side takes the latest event per case (event_timestamp, then
-- received_at, then event_guid for a stable tie-break). LEFT JOINs from the report: the views work, and
-- return every report row, when events_raw is empty. Join keys and why: docs/spec-decisions.md "## Store".

-- Chargebacks: the report has no chargeback_guid, the events carry mid + case_number, so the pair is the
-- key (a case number is the acquirer's, unique only within a merchant account); the guid comes from the events.
CREATE OR REPLACE VIEW int_chargebacks_joined AS
WITH
n AS (SELECT * FROM stg_events__chargeback_new
      QUALIFY row_number() OVER (PARTITION BY mid, case_number ORDER BY event_timestamp DESC NULLS LAST, received_at DESC, event_guid) = 1),
m AS (SELECT * FROM stg_events__chargeback_match
      QUALIFY row_number() OVER (PARTITION BY mid, case_number ORDER BY event_timestamp DESC NULLS LAST, received_at DESC, event_guid) = 1),
r AS (SELECT * FROM stg_events__chargeback_result
      QUALIFY row_number() OVER (PARTITION BY mid, case_number ORDER BY event_timestamp DESC NULLS LAST, received_at DESC, event_guid) = 1),
d AS (SELECT * FROM stg_events__chargeback_dnf
      QUALIFY row_number() OVER (PARTITION BY mid, case_number ORDER BY event_timestamp DESC NULLS LAST, received_at DESC, event_guid) = 1)
SELECT
  c.mid, c.case_number, c.status, c.arn, c.card_number, c.card_type, c.amount, c.currency, c.reason_code,
  c.reason AS reason, c.date_received, c.transaction_date,
  coalesce(c.order_id, m.order_id)                                         AS order_id,
  c.name, c.tracking_number, c.first_seen_at, c.last_seen_at,
  coalesce(m.chargeback_guid, n.chargeback_guid, r.chargeback_guid, d.chargeback_guid) AS chargeback_guid,
  m.order_guid,
  m.crm_account_guid,
  coalesce(m.due_date, n.due_date)                                         AS due_date,
  coalesce(m.chargeback_date, n.chargeback_date)                           AS chargeback_date,
  coalesce(m.reason_description, n.reason_description)                     AS reason_description,
  coalesce(m.processor_transaction_id, n.processor_transaction_id)         AS processor_transaction_id,
  coalesce(m.alternate_transaction_id, n.alternate_transaction_id)         AS alternate_transaction_id,
  coalesce(m.processor_transaction_date, n.processor_transaction_date)     AS processor_transaction_date,
  coalesce(m.auth_code, n.auth_code)                                       AS auth_code,
  r.result,
  r.event_timestamp                                                        AS result_at,
  d.dnf_reason,
  d.dnf_timestamp,
  n.event_guid IS NOT NULL                                                 AS has_new_event,
  m.event_guid IS NOT NULL                                                 AS has_match_event,
  r.event_guid IS NOT NULL                                                 AS has_result_event,
  d.event_guid IS NOT NULL                                                 AS has_dnf_event,
  (n.event_guid IS NOT NULL OR m.event_guid IS NOT NULL OR r.event_guid IS NOT NULL OR d.event_guid IS NOT NULL) AS has_events
FROM chargebacks c
LEFT JOIN n ON n.mid = c.mid AND n.case_number = c.case_number
LEFT JOIN m ON m.mid = c.mid AND m.case_number = c.case_number
LEFT JOIN r ON r.mid = c.mid AND r.case_number = c.case_number
LEFT JOIN d ON d.mid = c.mid AND d.case_number = c.case_number;

-- Prevention alerts: the events' prevention_case_number is the report's alert_case_id (the case id the
-- service gives an alert on both interfaces); the report's mid is empty until matched, so it is no key.
CREATE OR REPLACE VIEW int_prevention_alerts_joined AS
WITH
n AS (SELECT * FROM stg_events__prevention_new
      QUALIFY row_number() OVER (PARTITION BY prevention_case_number ORDER BY event_timestamp DESC NULLS LAST, received_at DESC, event_guid) = 1),
m AS (SELECT * FROM stg_events__prevention_match
      QUALIFY row_number() OVER (PARTITION BY prevention_case_number ORDER BY event_timestamp DESC NULLS LAST, received_at DESC, event_guid) = 1)
SELECT
  p.alert_case_id, p.status, p.statuses, p.arn, coalesce(p.mid, m.mid, n.mid) AS mid, p.merchant_descriptor,
  p.source_partner, p.bin, p.last_four, p.amount, p.currency, p.date_received, p.transaction_date,
  coalesce(p.order_id, m.order_id)                     AS order_id,
  p.name, p.first_seen_at, p.last_seen_at,
  coalesce(m.prevention_guid, n.prevention_guid)       AS prevention_guid,
  coalesce(m.prevention_type, n.prevention_type)       AS prevention_type,
  coalesce(m.prevention_timestamp, n.prevention_timestamp) AS prevention_timestamp,
  m.order_guid,
  m.crm_account_guid,
  n.event_guid IS NOT NULL                             AS has_new_event,
  m.event_guid IS NOT NULL                             AS has_match_event,
  (n.event_guid IS NOT NULL OR m.event_guid IS NOT NULL) AS has_events
FROM prevention_alerts p
LEFT JOIN n ON n.prevention_case_number = p.alert_case_id
LEFT JOIN m ON m.prevention_case_number = p.alert_case_id;

-- RDR cases exist only as events: rdr.new and rdr.match of one case share rdr_guid (the service's id of
-- the case; rdr_case_number is also carried and kept).
CREATE OR REPLACE VIEW int_rdr_cases_joined AS
WITH
n AS (SELECT * FROM stg_events__rdr_new
      QUALIFY row_number() OVER (PARTITION BY rdr_guid ORDER BY event_timestamp DESC NULLS LAST, received_at DESC, event_guid) = 1),
m AS (SELECT * FROM stg_events__rdr_match
      QUALIFY row_number() OVER (PARTITION BY rdr_guid ORDER BY event_timestamp DESC NULLS LAST, received_at DESC, event_guid) = 1)
SELECT
  coalesce(m.rdr_guid, n.rdr_guid)                         AS rdr_guid,
  coalesce(m.rdr_case_number, n.rdr_case_number)           AS rdr_case_number,
  coalesce(m.rdr_date, n.rdr_date)                         AS rdr_date,
  coalesce(m.rdr_resolution, n.rdr_resolution)             AS rdr_resolution,
  coalesce(m.transaction_date, n.transaction_date)         AS transaction_date,
  coalesce(m.amount, n.amount)                             AS amount,
  coalesce(m.currency, n.currency)                         AS currency,
  coalesce(m.arn, n.arn)                                   AS arn,
  coalesce(m.auth_code, n.auth_code)                       AS auth_code,
  coalesce(m.card_first_6, n.card_first_6)                 AS card_first_6,
  coalesce(m.card_last_4, n.card_last_4)                   AS card_last_4,
  coalesce(m.merchant_descriptor, n.merchant_descriptor)   AS merchant_descriptor,
  m.order_guid, m.order_id, m.crm_account_guid,
  n.event_guid IS NOT NULL                                 AS has_new_event,
  m.event_guid IS NOT NULL                                 AS has_match_event
FROM n FULL JOIN m ON m.rdr_guid = n.rdr_guid;

-- Order validations: .new and .match share order_validation_guid.
CREATE OR REPLACE VIEW int_order_validations_joined AS
WITH
n AS (SELECT * FROM stg_events__order_validation_new
      QUALIFY row_number() OVER (PARTITION BY order_validation_guid ORDER BY event_timestamp DESC NULLS LAST, received_at DESC, event_guid) = 1),
m AS (SELECT * FROM stg_events__order_validation_match
      QUALIFY row_number() OVER (PARTITION BY order_validation_guid ORDER BY event_timestamp DESC NULLS LAST, received_at DESC, event_guid) = 1)
SELECT
  coalesce(m.order_validation_guid, n.order_validation_guid)           AS order_validation_guid,
  coalesce(m.order_validation_type, n.order_validation_type)           AS order_validation_type,
  coalesce(m.order_validation_timestamp, n.order_validation_timestamp) AS order_validation_timestamp,
  coalesce(m.transaction_timestamp, n.transaction_timestamp)           AS transaction_timestamp,
  coalesce(m.amount, n.amount)                                         AS amount,
  coalesce(m.currency, n.currency)                                     AS currency,
  coalesce(m.card_brand, n.card_brand)                                 AS card_brand,
  coalesce(m.card_first_6, n.card_first_6)                             AS card_first_6,
  coalesce(m.card_last_4, n.card_last_4)                               AS card_last_4,
  coalesce(m.arn, n.arn)                                               AS arn,
  coalesce(m.auth_code, n.auth_code)                                   AS auth_code,
  m.order_guid, m.order_id, m.crm_account_guid, m.mid,
  n.event_guid IS NOT NULL                                             AS has_new_event,
  m.event_guid IS NOT NULL                                             AS has_match_event
FROM n FULL JOIN m ON m.order_validation_guid = n.order_validation_guid;
