-- Chargeback status and card brand are closed sets (the spec's seven statuses; the brands store/load.ts
-- normalises to, contract/common.ts CARD_BRANDS): stored as ENUMs, one byte a value instead of text. A load writes
-- each text column at the cost of keeping string statistics for every value; an ENUM column costs a fraction of
-- that.
-- Readers see text: an ENUM compares with text (with 'Won', and with a spelling that is no value at all, which
-- matches nothing), concatenates, groups and unions like text, and its values are declared in the order text
-- sorts them (byte order), so ORDER BY, min, max and window orderings rank them exactly as they ranked text.
-- test/store-db.test.ts checks these lists against the contract's, and that order.
-- A new status or brand needs a migration that rebuilds these tables the same way.
-- A column's type cannot change while it names a text compression, so the two tables are rebuilt (same
-- columns, same order, rows copied) and take their old names back.
CREATE TYPE chargeback_status AS ENUM ('Did Not Fight', 'Lost', 'New', 'Pending', 'Pre-Arbitration', 'Result Unobtainable', 'Won');
CREATE TYPE card_brand AS ENUM ('american_express', 'diners', 'discover', 'elo', 'jcb', 'mastercard', 'paypal', 'visa');

CREATE TABLE chargebacks_007 (
  mid              VARCHAR USING COMPRESSION dictionary,
  case_number      VARCHAR USING COMPRESSION uncompressed,
  status           chargeback_status, -- Lost, New, Pending, Won, Did Not Fight, Pre-Arbitration, Result Unobtainable
  arn              VARCHAR USING COMPRESSION uncompressed,
  card_number      VARCHAR USING COMPRESSION uncompressed, -- masked, as received
  card_type        card_brand, -- normalised brand: visa, mastercard, american_express, discover, ...
  amount           DECIMAL(18, 4),
  currency         VARCHAR USING COMPRESSION dictionary, -- ISO 4217, upper case
  reason_code      VARCHAR USING COMPRESSION dictionary,
  reason           VARCHAR USING COMPRESSION dictionary,
  date_received    TIMESTAMP, -- a bare date in the report is midnight UTC
  transaction_date TIMESTAMP,
  order_id         VARCHAR USING COMPRESSION uncompressed, -- empty until matched
  name             VARCHAR USING COMPRESSION uncompressed,
  tracking_number  VARCHAR USING COMPRESSION uncompressed,
  first_seen_at    TIMESTAMP, -- earliest observation (report fetched_at, else window end)
  last_seen_at     TIMESTAMP, -- observation this row's values come from
  landing_file     VARCHAR USING COMPRESSION dictionary -- landing file of that observation
);
INSERT INTO chargebacks_007 SELECT * FROM chargebacks;
DROP TABLE chargebacks;
ALTER TABLE chargebacks_007 RENAME TO chargebacks;

CREATE TABLE chargeback_status_log_007 (
  mid          VARCHAR USING COMPRESSION dictionary,
  case_number  VARCHAR USING COMPRESSION uncompressed,
  status       chargeback_status,
  seen_at      TIMESTAMP,
  landing_file VARCHAR USING COMPRESSION dictionary
);
INSERT INTO chargeback_status_log_007 SELECT * FROM chargeback_status_log;
DROP TABLE chargeback_status_log;
ALTER TABLE chargeback_status_log_007 RENAME TO chargeback_status_log;
