-- The report side of the store: current state and status history of chargebacks and prevention alerts,
-- the quarantine of rows that failed validation, and the log of loads. All times are UTC (TIMESTAMP
-- without zone holds UTC wall time). No primary keys: DuckDB's ART index made a 1M-row load ~4x slower;
-- store/load.ts keeps keys unique itself (de-duplicated staging, delete-then-insert in one transaction).
-- Likewise the big tables carry no NOT NULL constraints (checking them made bulk inserts ~2x slower): the
-- load's validation guarantees the key, status, amount and *_seen_at columns are never NULL.

-- Current state of each chargeback case, key (mid, case_number): case numbers come from the acquirer /
-- processor of one merchant account, so only the pair is safe as an identity. One row per key; a later
-- observation (last_seen_at) replaces an earlier one, never the reverse.
CREATE TABLE chargebacks (
  mid              VARCHAR,
  case_number      VARCHAR,
  status           VARCHAR, -- Lost, New, Pending, Won, Did Not Fight, Pre-Arbitration, Result Unobtainable
  arn              VARCHAR,
  card_number      VARCHAR, -- masked, as received
  card_type        VARCHAR, -- normalised brand: visa, mastercard, american_express, discover, ...
  amount           DECIMAL(18, 4),
  currency         VARCHAR, -- ISO 4217, upper case
  reason_code      VARCHAR,
  reason           VARCHAR,
  date_received    TIMESTAMP, -- a bare date in the report is midnight UTC
  transaction_date TIMESTAMP,
  order_id         VARCHAR, -- empty until matched
  name             VARCHAR,
  tracking_number  VARCHAR,
  first_seen_at    TIMESTAMP, -- earliest observation (report fetched_at, else window end)
  last_seen_at     TIMESTAMP, -- observation this row's values come from
  landing_file     VARCHAR -- landing file of that observation
);

-- One row per observed change of a case's status: (mid, case_number, status) first seen at seen_at.
-- Re-observing the same status adds nothing; an observation older than the history is merged in order.
CREATE TABLE chargeback_status_history (
  mid          VARCHAR,
  case_number  VARCHAR,
  status       VARCHAR,
  seen_at      TIMESTAMP,
  landing_file VARCHAR
);

-- Current state of each prevention alert, key alert_case_id (the service's own case id, unique per alert).
-- status is the last element of statuses (the service lists an alert's statuses in order).
CREATE TABLE prevention_alerts (
  alert_case_id       VARCHAR,
  status              VARCHAR, -- New, Pending, Complete; NULL when statuses is empty
  statuses            VARCHAR[],
  arn                 VARCHAR,
  mid                 VARCHAR, -- empty until matched
  merchant_descriptor VARCHAR,
  source_partner      VARCHAR, -- Ethoca or Verifi
  bin                 VARCHAR,
  last_four           VARCHAR,
  amount              DECIMAL(18, 4),
  currency            VARCHAR,
  date_received       TIMESTAMP,
  transaction_date    TIMESTAMP,
  order_id            VARCHAR,
  name                VARCHAR,
  first_seen_at       TIMESTAMP,
  last_seen_at        TIMESTAMP,
  landing_file        VARCHAR
);

CREATE TABLE prevention_status_history (
  alert_case_id VARCHAR,
  status        VARCHAR, -- NULL stands for "no status listed"
  seen_at       TIMESTAMP,
  landing_file  VARCHAR
);

-- Rows that failed validation, kept as received (raw row as JSON text) with every failing field named.
-- De-duplicated on (kind, raw, reason): reloading a file does not repeat its bad rows.
CREATE TABLE quarantine (
  kind         VARCHAR NOT NULL,       -- chargebacks, prevention, mid_report
  raw          VARCHAR NOT NULL,       -- the row as read, JSON object text
  reason       VARCHAR NOT NULL,       -- "field: expectation, got value" joined by "; "
  landing_file VARCHAR NOT NULL,
  sha256       VARCHAR NOT NULL,       -- of the landing file
  loaded_at    TIMESTAMP NOT NULL
);

-- One row per distinct (sha256, kind, window): reloading the same file bumps load_count and
-- last_loaded_at only, so the audit log stays one line per file received.
CREATE TABLE loads (
  landing_file   VARCHAR NOT NULL,
  kind           VARCHAR NOT NULL,
  format         VARCHAR NOT NULL,     -- json or csv
  window_start   DATE,                 -- inclusive UTC days; NULL when the load had no window
  window_end     DATE,
  seen_at        TIMESTAMP NOT NULL,   -- observation time given to the rows (fetched_at, else window end)
  rows_read      BIGINT NOT NULL,
  rows_loaded    BIGINT NOT NULL,      -- valid rows after de-duplication
  quarantined    BIGINT NOT NULL,
  sha256         VARCHAR NOT NULL,
  loaded_at      TIMESTAMP NOT NULL,   -- first load
  last_loaded_at TIMESTAMP NOT NULL,
  load_count     INTEGER NOT NULL
);
