-- The event side of the store. events_raw keeps every pushed event as received (raw first): the payload is
-- the body's bytes exactly as the service sent them, so the typed stg_events__* views can be rebuilt at any
-- time. All times are UTC (TIMESTAMP without zone holds UTC wall time).

-- One row per event_guid: the service may deliver an event more than once (it re-sends anything not
-- answered 200), and only the first delivery received is kept. The key is enforced (events are few
-- compared with report rows, and a duplicate here would double-count).
CREATE TABLE events_raw (
  event_guid      VARCHAR PRIMARY KEY,
  event_type      VARCHAR NOT NULL,    -- as received (chargeback.responded is told apart in the views)
  event_timestamp TIMESTAMP,           -- NULL when missing or not a date-time; the payload keeps the text
  received_at     TIMESTAMP NOT NULL,  -- when the receiver got it (its clock)
  payload         JSON NOT NULL,       -- the request body as received
  segment         VARCHAR NOT NULL,    -- journal segment file it was loaded from
  line            INTEGER NOT NULL,    -- 1-based line in that segment
  loaded_at       TIMESTAMP NOT NULL
);

-- One row per journal segment loaded: what it held, and how often it was (re)loaded (a crash between
-- commit and archiving makes the next run load it again, which adds nothing).
CREATE TABLE event_loads (
  segment        VARCHAR PRIMARY KEY,
  sha256         VARCHAR NOT NULL,
  lines          BIGINT NOT NULL,
  loaded         BIGINT NOT NULL,      -- new events inserted
  duplicates     BIGINT NOT NULL,      -- events already in events_raw, or repeated within the segment
  quarantined    BIGINT NOT NULL,
  loaded_at      TIMESTAMP NOT NULL,
  last_loaded_at TIMESTAMP NOT NULL,
  load_count     INTEGER NOT NULL
);

-- Details fetched for matched events with the events interface's lookups, kept as received. found = false
-- records a lookup the service answered "does not exist", so it is not asked again on every run.
CREATE TABLE enriched_chargebacks (
  chargeback_guid VARCHAR PRIMARY KEY,
  found           BOOLEAN NOT NULL,
  payload         JSON,                -- NULL when not found
  error           VARCHAR,             -- the service's answer when not found
  fetched_at      TIMESTAMP NOT NULL
);

CREATE TABLE enriched_preventions (
  prevention_guid VARCHAR PRIMARY KEY,
  found           BOOLEAN NOT NULL,
  payload         JSON,
  error           VARCHAR,
  fetched_at      TIMESTAMP NOT NULL
);

CREATE TABLE enriched_order_validations (
  order_validation_guid VARCHAR PRIMARY KEY,
  found                 BOOLEAN NOT NULL,
  payload               JSON,
  error                 VARCHAR,
  fetched_at            TIMESTAMP NOT NULL
);

CREATE TABLE enriched_orders (
  order_guid VARCHAR PRIMARY KEY,
  found      BOOLEAN NOT NULL,
  payload    JSON,
  error      VARCHAR,
  fetched_at TIMESTAMP NOT NULL
);
