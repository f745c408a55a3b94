-- Representment deadlines, prevention outcomes and dispute vintages (issue #28). The rules each view follows,
-- and why, are in docs/spec-decisions.md ("## Disputes: due dates, prevention outcomes, vintage").

-- Chargeback cases still open: no result and no did-not-fight event, and a New or Pending status in the latest
-- report. due_date comes from the chargeback.new / .match events (NULL when none was received). How many days are
-- left depends on the day asked about, so `cbp disputes due` computes it (store/due.ts).
CREATE OR REPLACE VIEW mart_disputes_open AS
SELECT mid, case_number, status, card_type, amount, currency, reason_code, reason, date_received, transaction_date,
       order_id, chargeback_guid, due_date
FROM int_chargebacks_joined
WHERE result IS NULL AND NOT has_dnf_event AND status IN ('New', 'Pending');

-- Every alert of every partner, one row each: Ethoca and Verifi CDRN (prevention report rows, and prevention
-- events the report does not hold yet), RDR cases and order validations (events only). TC40 fraud reports are
-- no alert a merchant answers and are left out. mid: as given, else that of a chargeback on the same transaction,
-- else that of the only MID using the alert's merchant descriptor (RDR cases carry no MID; report rows none until matched).
CREATE OR REPLACE VIEW int_prevention_cases_unioned AS
WITH
pe AS (
  SELECT prevention_case_number, prevention_type, mid, arn, NULL::VARCHAR AS order_id, merchant_descriptor, prevention_timestamp, event_timestamp, received_at, event_guid
    FROM stg_events__prevention_new
  UNION ALL
  SELECT prevention_case_number, prevention_type, mid, arn, order_id, merchant_descriptor, prevention_timestamp, event_timestamp, received_at, event_guid
    FROM stg_events__prevention_match
),
pe_latest AS (
  SELECT * FROM pe WHERE prevention_case_number IS NOT NULL
  QUALIFY row_number() OVER (PARTITION BY prevention_case_number ORDER BY event_timestamp DESC NULLS LAST, received_at DESC, event_guid) = 1
),
descriptor_mids AS (
  SELECT merchant_descriptor, any_value(mid) AS descriptor_mid FROM int_prevention_alerts_joined
   WHERE mid IS NOT NULL AND merchant_descriptor IS NOT NULL
   GROUP BY merchant_descriptor HAVING count(DISTINCT mid) = 1
),
alerts AS (
  SELECT CASE lower(coalesce(p.source_partner, p.prevention_type)) WHEN 'ethoca' THEN 'Ethoca' WHEN 'verifi' THEN 'Verifi CDRN' END AS partner,
         p.alert_case_id AS alert_id, NULLIF(p.mid, '') AS mid, NULLIF(p.arn, '') AS arn, NULLIF(p.order_id, '') AS order_id,
         coalesce(p.date_received, p.prevention_timestamp) AS alerted_at, coalesce(p.status = 'Complete', false) AS completed,
         p.merchant_descriptor
    FROM int_prevention_alerts_joined p
  UNION ALL
  SELECT CASE e.prevention_type WHEN 'ethoca' THEN 'Ethoca' WHEN 'verifi' THEN 'Verifi CDRN' END,
         e.prevention_case_number, e.mid, e.arn, e.order_id, e.prevention_timestamp, false, e.merchant_descriptor
    FROM pe_latest e
   WHERE NOT EXISTS (SELECT 1 FROM prevention_alerts p WHERE p.alert_case_id = e.prevention_case_number)
  UNION ALL
  SELECT 'RDR', coalesce(r.rdr_case_number, r.rdr_guid), NULL, r.arn, r.order_id, r.rdr_date::TIMESTAMP, coalesce(r.rdr_resolution = 'Accepted', false), r.merchant_descriptor
    FROM int_rdr_cases_joined r
  UNION ALL
  SELECT 'Order validation', o.order_validation_guid, o.mid, o.arn, o.order_id, o.order_validation_timestamp, o.has_match_event, NULL
    FROM int_order_validations_joined o
),
-- The first chargeback on the alert's transaction received on or after the alert's day: by ARN where both carry
-- one, else by order_id (in the alert's MID when it has one); matched_on says which (ARN first on the same day).
-- An accepted RDR case's chargeback on its ARN is the dispute RDR resolved (VAMP leaves it out the same way): it
-- gives the case its MID, not a charge-back.
-- (Two joins on equal keys, ARN then order_id: one join on either would compare every alert with every chargeback.)
matches AS (
  SELECT a.partner, a.alert_id, c.date_received, c.mid, 'arn' AS matched_on,
         a.partner = 'RDR' AND a.completed AS resolved_by_rdr
    FROM alerts a JOIN int_chargebacks_joined c ON c.arn = a.arn
   WHERE c.date_received::DATE >= a.alerted_at::DATE AND c.arn <> ''
  UNION ALL
  SELECT a.partner, a.alert_id, c.date_received, c.mid, 'order_id',
         a.partner = 'RDR' AND a.completed AND a.arn IS NOT NULL AND c.arn = a.arn
    FROM alerts a JOIN int_chargebacks_joined c ON c.order_id = a.order_id
   WHERE c.date_received::DATE >= a.alerted_at::DATE AND (a.arn IS NULL OR NULLIF(c.arn, '') IS NULL) AND (a.mid IS NULL OR c.mid = a.mid)
),
followed AS (
  SELECT partner, alert_id,
         min(date_received) FILTER (WHERE NOT resolved_by_rdr) AS charged_back_at,
         arg_min(matched_on, {'at': date_received, 'on': matched_on}) FILTER (WHERE NOT resolved_by_rdr) AS matched_on,
         arg_min(mid, date_received) AS cb_mid
    FROM matches
   GROUP BY partner, alert_id
)
SELECT a.partner, a.alert_id, coalesce(a.mid, f.cb_mid, d.descriptor_mid) AS mid, a.arn, a.order_id, a.alerted_at,
       strftime(a.alerted_at, '%Y-%m') AS month, a.completed,
       f.charged_back_at IS NOT NULL AS charged_back, f.charged_back_at, f.matched_on,
       -- an earlier alert (any partner) named the same transaction: ARN, else order_id
       CASE WHEN coalesce(a.arn, a.order_id) IS NULL THEN false
            ELSE row_number() OVER (PARTITION BY CASE WHEN a.arn IS NOT NULL THEN 'arn:' || a.arn ELSE 'order:' || a.order_id END
                                    ORDER BY a.alerted_at NULLS LAST, a.partner, a.alert_id) > 1 END AS duplicate
FROM alerts a LEFT JOIN followed f USING (partner, alert_id) LEFT JOIN descriptor_mids d USING (merchant_descriptor)
WHERE a.partner IS NOT NULL;

-- Do the prevention alerts work? Per MID, partner and month the alert arrived: alerts, those completed, those
-- followed by a chargeback on the same transaction (and of those, the completed ones: refunded, then charged back
-- all the same), duplicates, and the deflection rate (completed and not charged back, over alerts).
CREATE OR REPLACE VIEW mart_prevention_outcomes AS
SELECT mid, partner, month,
       count(*) AS alerts,
       count(*) FILTER (WHERE completed) AS completed,
       count(*) FILTER (WHERE charged_back) AS charged_back,
       count(*) FILTER (WHERE completed AND charged_back) AS completed_charged_back,
       count(*) FILTER (WHERE duplicate) AS duplicates,
       count(*) FILTER (WHERE completed AND NOT charged_back) AS deflected,
       count(*) FILTER (WHERE completed AND NOT charged_back) / count(*)::DOUBLE AS deflection_rate
FROM int_prevention_cases_unioned
GROUP BY mid, partner, month;

-- Disputes by the month of the sale (transaction_month) crossed with the month they were received: counts,
-- amounts (per currency) and the delay from transaction to dispute in days. months_after: whole calendar months
-- from the one to the other. A chargeback without a transaction date has NULL transaction_month and delays.
CREATE OR REPLACE VIEW mart_disputes_by_vintage AS
SELECT mid,
       strftime(transaction_date, '%Y-%m') AS transaction_month,
       strftime(date_received, '%Y-%m') AS received_month,
       date_diff('month', date_trunc('month', transaction_date), date_trunc('month', date_received)) AS months_after,
       currency,
       count(*) AS disputes,
       sum(amount) AS amount,
       avg(date_diff('day', transaction_date::DATE, date_received::DATE)) AS avg_delay_days,
       median(date_diff('day', transaction_date::DATE, date_received::DATE)) AS median_delay_days,
       max(date_diff('day', transaction_date::DATE, date_received::DATE)) AS max_delay_days
FROM chargebacks
WHERE date_received IS NOT NULL
GROUP BY ALL;
