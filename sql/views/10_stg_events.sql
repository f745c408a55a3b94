-- Typed views over events_raw, one per event type (dbt layer "stg": renaming and typing only, nothing
-- dropped). Every view carries event_guid, event_timestamp, received_at; the typed columns are parsed from
-- the payload with json_extract_string and TRY_CAST, so a malformed field becomes NULL there while the
-- payload in events_raw keeps the text. Date-times are read in both spellings the spec uses
-- (YYYY-MM-DDTHH:MM:SSZ and YYYY-MM-DD HH:MM:SS, both UTC; an explicit offset is converted to UTC).

-- A payload field as text; absent, null and "" all mean "not given" (decision in docs/spec-decisions.md).
CREATE OR REPLACE MACRO stg_events_str(p, f) AS NULLIF(trim(json_extract_string(p, '$.' || f)), '');

-- A date-time text as a UTC TIMESTAMP, the same in every reader's session (the snapshot is read by any DuckDB
-- client, in any TimeZone). A cast through TIMESTAMPTZ alone reads a text without a zone in the session's
-- zone and turns the instant back into the session's wall time: under America/New_York 2026-02-01T03:47:10Z
-- became 2026-01-31 22:47:10. So: a text without a zone is cast to TIMESTAMP as it stands (UTC); one with a
-- zone (Z, +05:30, -0800, " UTC", " America/New_York") is read as TIMESTAMPTZ and converted with
-- timezone('UTC', ...), which does not depend on the session. Both give what the loader's cast gives in its
-- UTC session (store/ingest.ts), so event_timestamp and the typed payload fields agree.
-- The spec's own spelling (2026-02-01T03:47:10Z) goes first, straight to TIMESTAMP without its Z: the same wall
-- time, without the time zone machinery of a TIMESTAMPTZ cast (far costlier, paid on every event a ratio reads).
CREATE OR REPLACE MACRO stg_utc_timestamp(s) AS
  CASE
    WHEN regexp_full_match(s, '\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z') THEN TRY_CAST(left(s, -1) AS TIMESTAMP)
    WHEN regexp_full_match(s, '\s*-?\d+-\d{1,2}-\d{1,2}([T ]\d{1,2}:\d{1,2}(:\d{1,2}(\.\d*)?)?)?\s*') THEN TRY_CAST(s AS TIMESTAMP)
    -- " UTC" appended parses a zone-less spelling the pattern above leaves out; a text with a zone refuses it.
    ELSE coalesce(timezone('UTC', TRY_CAST(trim(s) || ' UTC' AS TIMESTAMPTZ)), timezone('UTC', TRY_CAST(s AS TIMESTAMPTZ)))
  END;

CREATE OR REPLACE MACRO stg_events_ts(p, f) AS stg_utc_timestamp(stg_events_str(p, f));

CREATE OR REPLACE MACRO stg_events_date(p, f) AS TRY_CAST(left(stg_events_str(p, f), 10) AS DATE);

CREATE OR REPLACE MACRO stg_events_amount(p, f) AS TRY_CAST(stg_events_str(p, f) AS DECIMAL(18, 4));

-- card_first_6 is typed a number in one place of the spec: a number loses leading zeros, so pad it back.
CREATE OR REPLACE MACRO stg_events_first6(p) AS
  CASE WHEN regexp_full_match(stg_events_str(p, 'card_first_6'), '\d{1,6}') THEN lpad(stg_events_str(p, 'card_first_6'), 6, '0')
       ELSE stg_events_str(p, 'card_first_6') END;

-- stg_card_brand(s), a card brand as the contract reads it (NULL when unknown), is made from the contract's table
-- before these files (store/migrate.ts generatedViews); the text as sent stays in card_brand_text (and in payload).
CREATE OR REPLACE MACRO stg_events_brand(p) AS stg_card_brand(stg_events_str(p, 'card_brand'));

-- Every event once, with the event type the views go by: chargeback.responded (named by the spec's field
-- descriptions) is chargeback.dnf when it carries dnf_reason/dnf_timestamp, else chargeback.result when
-- it carries result, as contract/events.ts does.
CREATE OR REPLACE VIEW stg_events__all AS
SELECT
  event_guid,
  CASE
    WHEN trim(event_type) = 'chargeback.responded' AND (json_exists(payload, '$.dnf_reason') OR json_exists(payload, '$.dnf_timestamp')) THEN 'chargeback.dnf'
    WHEN trim(event_type) = 'chargeback.responded' AND json_exists(payload, '$.result') THEN 'chargeback.result'
    ELSE trim(event_type)
  END AS event_type,
  event_type AS received_event_type,
  event_timestamp,
  received_at,
  payload,
  segment,
  line,
  loaded_at
FROM events_raw;

-- The fields chargeback.new and chargeback.match share; each view picks its event type.
CREATE OR REPLACE MACRO stg_events__chargeback_fields(t) AS TABLE
SELECT
  payload,
  event_guid, event_timestamp, received_at,
  stg_events_str(payload, 'chargeback_guid')            AS chargeback_guid,
  stg_events_str(payload, 'case_number')                AS case_number,
  stg_events_str(payload, 'mid')                        AS mid,
  stg_events_amount(payload, 'amount')                  AS amount,
  upper(stg_events_str(payload, 'currency'))            AS currency,
  stg_events_str(payload, 'arn')                        AS arn,
  stg_events_str(payload, 'auth_code')                  AS auth_code,
  stg_events_brand(payload)                             AS card_brand,
  stg_events_str(payload, 'card_brand')                 AS card_brand_text,
  stg_events_first6(payload)                            AS card_first_6,
  stg_events_str(payload, 'card_last_4')                AS card_last_4,
  stg_events_date(payload, 'chargeback_date')           AS chargeback_date,
  stg_events_date(payload, 'date_received')             AS date_received,
  stg_events_date(payload, 'due_date')                  AS due_date,
  stg_events_str(payload, 'reason_code')                AS reason_code,
  stg_events_str(payload, 'reason_description')         AS reason_description,
  stg_events_str(payload, 'alternate_transaction_id')   AS alternate_transaction_id,
  stg_events_str(payload, 'processor_transaction_id')   AS processor_transaction_id,
  stg_events_str(payload, 'processor_transaction_date') AS processor_transaction_date_text,
  stg_events_ts(payload, 'processor_transaction_date')  AS processor_transaction_date
FROM stg_events__all WHERE event_type = t;

CREATE OR REPLACE VIEW stg_events__chargeback_new AS
SELECT * EXCLUDE (payload) FROM stg_events__chargeback_fields('chargeback.new');

CREATE OR REPLACE VIEW stg_events__chargeback_match AS
SELECT
  * EXCLUDE (payload),
  stg_events_str(payload, 'order_guid')                 AS order_guid,
  stg_events_str(payload, 'order_id')                   AS order_id,
  stg_events_str(payload, 'crm_account_guid')           AS crm_account_guid
FROM stg_events__chargeback_fields('chargeback.match');

CREATE OR REPLACE VIEW stg_events__chargeback_result AS
SELECT
  event_guid, event_timestamp, received_at,
  stg_events_str(payload, 'chargeback_guid') AS chargeback_guid,
  stg_events_str(payload, 'case_number')     AS case_number,
  stg_events_str(payload, 'mid')             AS mid,
  stg_events_str(payload, 'arn')             AS arn,
  -- won, lost, pre-arbitration (spelling tolerated: "Pre Arbitration", "pre_arbitration")
  regexp_replace(lower(stg_events_str(payload, 'result')), '[\s_]+', '-', 'g') AS result,
  received_event_type
FROM stg_events__all WHERE event_type = 'chargeback.result';

CREATE OR REPLACE VIEW stg_events__chargeback_dnf AS
SELECT
  event_guid, event_timestamp, received_at,
  stg_events_str(payload, 'chargeback_guid') AS chargeback_guid,
  stg_events_str(payload, 'case_number')     AS case_number,
  stg_events_str(payload, 'mid')             AS mid,
  stg_events_str(payload, 'arn')             AS arn,
  stg_events_str(payload, 'dnf_reason')      AS dnf_reason,
  stg_events_ts(payload, 'dnf_timestamp')    AS dnf_timestamp,
  received_event_type
FROM stg_events__all WHERE event_type = 'chargeback.dnf';

-- The fields prevention.new and prevention.match share; each view picks its event type.
CREATE OR REPLACE MACRO stg_events__prevention_fields(t) AS TABLE
SELECT
  payload,
  event_guid, event_timestamp, received_at,
  stg_events_str(payload, 'prevention_guid')        AS prevention_guid,
  stg_events_str(payload, 'prevention_case_number') AS prevention_case_number,
  lower(stg_events_str(payload, 'prevention_type')) AS prevention_type,
  stg_events_ts(payload, 'prevention_timestamp')    AS prevention_timestamp,
  stg_events_ts(payload, 'transaction_timestamp')   AS transaction_timestamp,
  stg_events_str(payload, 'mid')                    AS mid,
  stg_events_amount(payload, 'amount')              AS amount,
  upper(stg_events_str(payload, 'currency'))        AS currency,
  stg_events_str(payload, 'arn')                    AS arn,
  stg_events_first6(payload)                        AS card_first_6,
  stg_events_str(payload, 'card_last_4')            AS card_last_4,
  stg_events_str(payload, 'merchant_descriptor')    AS merchant_descriptor
FROM stg_events__all WHERE event_type = t;

CREATE OR REPLACE VIEW stg_events__prevention_new AS
SELECT * EXCLUDE (payload) FROM stg_events__prevention_fields('prevention.new');

CREATE OR REPLACE VIEW stg_events__prevention_match AS
SELECT
  * EXCLUDE (payload),
  stg_events_str(payload, 'order_guid')             AS order_guid,
  stg_events_str(payload, 'order_id')               AS order_id,
  stg_events_str(payload, 'crm_account_guid')       AS crm_account_guid
FROM stg_events__prevention_fields('prevention.match');

-- The fields rdr.new and rdr.match share; each view picks its event type.
CREATE OR REPLACE MACRO stg_events__rdr_fields(t) AS TABLE
SELECT
  payload,
  event_guid, event_timestamp, received_at,
  stg_events_str(payload, 'rdr_guid')             AS rdr_guid,
  stg_events_str(payload, 'rdr_case_number')      AS rdr_case_number,
  stg_events_date(payload, 'rdr_date')            AS rdr_date,
  -- Accepted or Declined, whatever the case it came in
  CASE lower(stg_events_str(payload, 'rdr_resolution')) WHEN 'accepted' THEN 'Accepted' WHEN 'declined' THEN 'Declined'
       ELSE stg_events_str(payload, 'rdr_resolution') END AS rdr_resolution,
  lower(stg_events_str(payload, 'prevention_type')) AS prevention_type,
  stg_events_date(payload, 'transaction_date')    AS transaction_date,
  stg_events_amount(payload, 'amount')            AS amount,
  upper(stg_events_str(payload, 'currency'))      AS currency,
  stg_events_str(payload, 'arn')                  AS arn,
  stg_events_str(payload, 'auth_code')            AS auth_code,
  stg_events_first6(payload)                      AS card_first_6,
  stg_events_str(payload, 'card_last_4')          AS card_last_4,
  stg_events_str(payload, 'merchant_descriptor')  AS merchant_descriptor
FROM stg_events__all WHERE event_type = t;

CREATE OR REPLACE VIEW stg_events__rdr_new AS
SELECT * EXCLUDE (payload) FROM stg_events__rdr_fields('rdr.new');

CREATE OR REPLACE VIEW stg_events__rdr_match AS
SELECT
  * EXCLUDE (payload),
  stg_events_str(payload, 'order_guid')           AS order_guid,
  stg_events_str(payload, 'order_id')             AS order_id,
  stg_events_str(payload, 'crm_account_guid')     AS crm_account_guid
FROM stg_events__rdr_fields('rdr.match');

-- The fields order_validation.new and order_validation.match share; each view picks its event type.
CREATE OR REPLACE MACRO stg_events__order_validation_fields(t) AS TABLE
SELECT
  payload,
  event_guid, event_timestamp, received_at,
  stg_events_str(payload, 'order_validation_guid')        AS order_validation_guid,
  stg_events_str(payload, 'order_validation_type')        AS order_validation_type,
  stg_events_ts(payload, 'order_validation_timestamp')    AS order_validation_timestamp,
  stg_events_ts(payload, 'transaction_timestamp')         AS transaction_timestamp,
  stg_events_amount(payload, 'amount')                    AS amount,
  upper(stg_events_str(payload, 'currency'))              AS currency,
  stg_events_first6(payload)                              AS card_first_6,
  stg_events_str(payload, 'card_last_4')                  AS card_last_4,
  stg_events_str(payload, 'arn')                          AS arn,
  stg_events_str(payload, 'auth_code')                    AS auth_code,
  stg_events_brand(payload)                               AS card_brand,
  stg_events_str(payload, 'card_brand')                   AS card_brand_text
FROM stg_events__all WHERE event_type = t;

CREATE OR REPLACE VIEW stg_events__order_validation_new AS
SELECT * EXCLUDE (payload) FROM stg_events__order_validation_fields('order_validation.new');

CREATE OR REPLACE VIEW stg_events__order_validation_match AS
SELECT
  * EXCLUDE (payload),
  stg_events_str(payload, 'order_guid')                   AS order_guid,
  stg_events_str(payload, 'order_id')                     AS order_id,
  stg_events_str(payload, 'crm_account_guid')             AS crm_account_guid,
  stg_events_str(payload, 'mid')                          AS mid
FROM stg_events__order_validation_fields('order_validation.match');

CREATE OR REPLACE VIEW stg_events__registration_new AS
SELECT
  event_guid, event_timestamp, received_at,
  event_guid                                    AS subscription_guid,
  stg_events_str(payload, 'subscribed_event_type') AS subscribed_event_type
FROM stg_events__all WHERE event_type = 'registration.new';

-- Event types cbp does not know (older order.refund, announced chargeback.error, ...): kept, not rejected.
CREATE OR REPLACE VIEW stg_events__unknown AS
SELECT
  event_guid, event_timestamp, received_at,
  received_event_type AS event_type,
  payload
FROM stg_events__all
WHERE event_type NOT IN (
  'chargeback.new', 'chargeback.match', 'chargeback.result', 'chargeback.dnf',
  'order_validation.new', 'order_validation.match', 'prevention.new', 'prevention.match',
  'rdr.new', 'rdr.match', 'registration.new'
);
