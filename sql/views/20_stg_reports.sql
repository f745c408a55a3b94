-- Staging over the report tables (dbt layer "stg": one per raw source, renaming and typing only). The
-- tables are already typed by store/load.ts; these give analysts the layer's names and a stable surface
-- should the tables change.

CREATE OR REPLACE VIEW stg_reports__chargebacks AS
SELECT mid, case_number, status, arn, card_number, card_type, amount, currency, reason_code,
       reason AS reason_description, date_received, transaction_date, order_id, name AS customer_name,
       tracking_number, first_seen_at, last_seen_at, landing_file
FROM chargebacks;

CREATE OR REPLACE VIEW stg_reports__prevention_alerts AS
SELECT alert_case_id, status, statuses, arn, mid, merchant_descriptor, source_partner, bin AS card_first_6,
       last_four AS card_last_4, amount, currency, date_received, transaction_date, order_id, name AS customer_name,
       first_seen_at, last_seen_at, landing_file
FROM prevention_alerts;

CREATE OR REPLACE VIEW stg_reports__mid_stats AS
SELECT * FROM mid_stats;
