-- Freshness (issue #10): what the loaded data really covers, and whether the analysts' snapshot is current.

-- The store's generation: +1 in every write transaction that changes data (store/db.ts Store.transaction;
-- the run log is the one exception, see activities/index.ts recordRun). COPY FROM DATABASE carries it into
-- the snapshot, so "snapshot generation < store generation" means the snapshot is behind (store/snapshot.ts).
-- Starts at 1: a store that already held data is ahead of any snapshot published before this migration.
CREATE TABLE IF NOT EXISTS store_generation (
  generation BIGINT NOT NULL,
  changed_at TIMESTAMP NOT NULL          -- wall clock of the last change
);
INSERT INTO store_generation SELECT 1, current_timestamp::TIMESTAMP WHERE NOT EXISTS (SELECT 1 FROM store_generation);

-- Every fetched report window and the service's clock when it answered (the response's Date header, else
-- the local clock). The data of a window is known up to least(its last second, service_time): what
-- `cbp status` reports as covered, whatever range was asked for.
CREATE TABLE IF NOT EXISTS report_fetches (
  kind         VARCHAR NOT NULL,         -- chargebacks, prevention, mid_report
  window_start DATE NOT NULL,            -- inclusive UTC days
  window_end   DATE NOT NULL,
  service_time TIMESTAMP NOT NULL,       -- latest answer's service time (UTC)
  fetched_at   TIMESTAMP NOT NULL,       -- local clock of the latest fetch
  records      BIGINT NOT NULL,
  quarantined  BIGINT NOT NULL,
  run_id       VARCHAR,
  PRIMARY KEY (kind, window_start, window_end)
);

-- A window is done only when the service answered after its last second: that answer time is kept.
ALTER TABLE windows_done ADD COLUMN service_time TIMESTAMP;

-- Done marks recorded before this rule could not have been complete when their window's last day was not
-- over by the local clock: they are dropped, so the next backfill fetches those windows again (the rows
-- they loaded stay; a re-load replaces them). Marks of a service whose clock ran behind ours (a sandbox)
-- cannot be told apart here: `cbp run backfill --force` re-fetches a range.
DELETE FROM windows_done WHERE window_end >= CAST(done_at AS DATE);
