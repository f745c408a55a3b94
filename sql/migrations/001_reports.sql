-- The report side of the store: current state and status history of chargebacks and prevention alerts,
-- the quarantine of rows that failed validation, and the log of loads. All times are UTC (TIMESTAMP
-- without zone holds UTC wall time). No primary keys: DuckDB's ART index made a 1M-row load ~4x slower;
-- store/load.ts keeps keys unique itself (de-duplicated staging, delete-then-insert in one transaction).
-- Likewise the big tables carry no NOT NULL constraints (checking them made bulk inserts ~2x slower): the
-- load's validation guarantees the key, status, amount and *_seen_at columns are never NULL.
-- Their text columns name their compression (USING COMPRESSION): left to choose, DuckDB tries dictionary
-- and FSST on every segment of every column, and that trial was a quarter of a 1M-row load's time. A
-- column of few distinct values (status, brand, mid, file) takes dictionary; one of mostly unique values
-- (case number, ARN, order id) is stored uncompressed: FSST made a 1M-row CSV load ~20% slower. The file
-- is larger for it, and a column whose data defies the choice only compresses less. Storage only: readers see the same values.

-- Current state of each chargeback case, key (mid, case_number): case numbers come from the acquirer /
-- processor of one merchant account, so only the pair is safe as an identity. One row per key; a later
-- observation (last_seen_at) replaces an earlier one, never the reverse.
CREATE TABLE chargebacks (
  mid              VARCHAR USING COMPRESSION dictionary,
  case_number      VARCHAR USING COMPRESSION uncompressed,
  status           VARCHAR USING COMPRESSION dictionary, -- Lost, New, Pending, Won, Did Not Fight, Pre-Arbitration, Result Unobtainable
  arn              VARCHAR USING COMPRESSION uncompressed,
  card_number      VARCHAR USING COMPRESSION uncompressed, -- masked, as received
  card_type        VARCHAR USING COMPRESSION dictionary, -- normalised brand: visa, mastercard, american_express, discover, ...
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

-- chargeback_status_history (a view, below): one row per observed change of a case's status:
-- (mid, case_number, status) first seen at seen_at. Re-observing the same status adds nothing; an
-- observation older than the history is merged in order.
--
-- It is stored in two parts so that a first load of a big report writes each case once, not twice (the
-- second 1M-row write was a third of the load's time):
--   * chargeback_status_log: the history rows written by store/load.ts;
--   * a case that has no row in the log, and whose chargebacks row still holds the observation of a load
--     listed in chargeback_initial_loads (same landing_file and last_seen_at), has exactly one history row:
--     its status at that observation. Such loads are loads into an empty store (store/load.ts fast path).
-- Before a later load touches such a case, store/load.ts copies its implied row into the log, so the log
-- alone then holds the case's history, and the view shows the same rows as one table would.
CREATE TABLE chargeback_status_log (
  mid          VARCHAR USING COMPRESSION dictionary,
  case_number  VARCHAR USING COMPRESSION uncompressed,
  status       VARCHAR USING COMPRESSION dictionary,
  seen_at      TIMESTAMP,
  landing_file VARCHAR USING COMPRESSION dictionary
);

CREATE TABLE chargeback_initial_loads (
  landing_file VARCHAR NOT NULL,
  seen_at      TIMESTAMP NOT NULL
);

CREATE VIEW chargeback_status_history AS
SELECT mid, case_number, status, seen_at, landing_file FROM chargeback_status_log
UNION ALL
SELECT c.mid, c.case_number, c.status, c.last_seen_at AS seen_at, c.landing_file
FROM chargebacks c
WHERE EXISTS (SELECT 1 FROM chargeback_initial_loads i WHERE i.landing_file = c.landing_file AND i.seen_at = c.last_seen_at)
  AND NOT EXISTS (SELECT 1 FROM chargeback_status_log l WHERE l.mid = c.mid AND l.case_number = c.case_number);

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
