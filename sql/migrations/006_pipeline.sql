-- The orchestration's own state (activities/index.ts): what ran, which report windows a backfill finished,
-- and what was pushed of each merchant order. Small tables; the pipeline's resumability lives here.

-- One row per workflow run (nightly, backfill, ingestEvents, reconcileSubscriptions, pushOrders). A run
-- recorded twice (an activity retried after its write) keeps the last record.
CREATE TABLE IF NOT EXISTS runs (
  run_id      VARCHAR PRIMARY KEY,
  workflow    VARCHAR NOT NULL,
  status      VARCHAR NOT NULL,          -- ok | failed
  started_at  TIMESTAMP NOT NULL,
  finished_at TIMESTAMP NOT NULL,
  as_of       TIMESTAMP,                 -- the nominal time the run covers (nightly: its schedule time)
  summary     JSON NOT NULL,             -- counts and ids, never secrets
  error       VARCHAR
);

-- Report windows a backfill finished: later runs of an overlapping backfill skip them.
CREATE TABLE IF NOT EXISTS windows_done (
  kind         VARCHAR NOT NULL,         -- chargebacks, prevention, mid_report
  window_id    VARCHAR NOT NULL,         -- YYYY-MM-DD..YYYY-MM-DD (inclusive UTC days)
  window_start DATE NOT NULL,
  window_end   DATE NOT NULL,
  records      BIGINT NOT NULL,
  quarantined  BIGINT NOT NULL,
  landing_file VARCHAR,
  run_id       VARCHAR,
  done_at      TIMESTAMP NOT NULL,
  PRIMARY KEY (kind, window_id)
);

-- The last push of each merchant order: the content hash decides whether a later run pushes it again.
CREATE TABLE IF NOT EXISTS order_pushes (
  order_id    VARCHAR PRIMARY KEY,
  hash        VARCHAR NOT NULL,          -- sha256 of the order's canonical JSON
  status      VARCHAR NOT NULL,          -- pushed | rejected
  service_id  VARCHAR,                   -- the {id} the order data interface answered
  http_status INTEGER,                   -- rejected: the service's status (400 / 422)
  last_error  VARCHAR,                   -- rejected: the service's message, naming the fields
  pushed_at   TIMESTAMP NOT NULL,
  run_id      VARCHAR
);

-- Lines of an order file that failed validation, per run, with the field named: what an operator fixes.
CREATE TABLE IF NOT EXISTS order_rejects (
  source      VARCHAR NOT NULL,
  line        INTEGER NOT NULL,
  order_id    VARCHAR,
  message     VARCHAR NOT NULL,
  seen_at     TIMESTAMP NOT NULL,
  PRIMARY KEY (source, line)
);
