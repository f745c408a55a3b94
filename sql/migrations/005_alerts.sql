-- Alert state, notice history and the delivery outbox (alerts/engine.ts, alerts/outbox.ts).
-- No rows are ever deleted: the history is the audit trail of what was said, when, and to whom.

-- One state per mid × network × program × level × month: what the level's status is for that month.
CREATE TABLE IF NOT EXISTS alert_states (
  mid VARCHAR NOT NULL,
  network VARCHAR NOT NULL,
  program VARCHAR NOT NULL,
  level VARCHAR NOT NULL,
  month VARCHAR NOT NULL,            -- YYYY-MM (UTC) the chargebacks were received
  status VARCHAR NOT NULL,           -- projected | reached | resolved
  rank INTEGER NOT NULL,
  ratio DOUBLE,
  numerator DOUBLE,
  denominator DOUBLE,
  is_partial BOOLEAN NOT NULL,       -- decided on month-to-date figures
  first_seen_at TIMESTAMP NOT NULL,
  updated_at TIMESTAMP NOT NULL,
  PRIMARY KEY (mid, network, program, level, month)
);

-- One row per notice, ever. notice_id is a stable hash of (kind, mid, network, program, level, month), so
-- evaluating the same data twice yields the same ids and nothing is said twice.
CREATE TABLE IF NOT EXISTS alerts (
  notice_id VARCHAR PRIMARY KEY,
  kind VARCHAR NOT NULL,             -- reached | escalated | resolved | projected
  mid VARCHAR NOT NULL,
  network VARCHAR NOT NULL,
  program VARCHAR NOT NULL,
  level VARCHAR NOT NULL,            -- the level reached / projected; for resolved, the level left
  previous_level VARCHAR,            -- escalated: the level before; resolved: the level now in force (NULL: none)
  month VARCHAR NOT NULL,
  metric VARCHAR,
  rule_id VARCHAR,
  comparison VARCHAR,
  ratio_threshold DOUBLE,
  numerator DOUBLE,
  denominator DOUBLE,
  denominator_month VARCHAR,
  ratio DOUBLE,
  ratio_pct DOUBLE,
  ratio_bps DOUBLE,
  is_projection BOOLEAN NOT NULL,
  is_partial BOOLEAN NOT NULL,
  notify BOOLEAN NOT NULL,           -- false: recorded as history only (a backfilled past month)
  message VARCHAR NOT NULL,
  created_at TIMESTAMP NOT NULL
);

-- One row per notice × notifier. status: pending | sent | failed (gave up after max attempts; re-queued by
-- `cbp alerts requeue`, which sets it back to pending). A notice is never lost and never sent twice
-- by cbp; the notice_id travels as an idempotency key for the receiver's side of a crash window.
CREATE TABLE IF NOT EXISTS alert_outbox (
  notice_id VARCHAR NOT NULL,
  notifier VARCHAR NOT NULL,
  status VARCHAR NOT NULL,
  attempts INTEGER NOT NULL,
  last_error VARCHAR,
  next_attempt_at TIMESTAMP NOT NULL,
  sent_at TIMESTAMP,
  created_at TIMESTAMP NOT NULL,
  PRIMARY KEY (notice_id, notifier)
);
