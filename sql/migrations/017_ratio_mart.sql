-- The ratio mart as a table the pipeline keeps current (issue #26): every row mart_ratios shows, with its state, next
-- level, closeness, region and reason stored. Written by each rule evaluation (store/ratio-mart.ts) for the months it
-- judged, after it recorded them; mart_ratios is a plain read of it (sql/views/40_ratios.sql). docs/ratios.md says
-- when it is written and how a reader knows it is behind the data.
CREATE TABLE IF NOT EXISTS ratio_mart (
  mid VARCHAR NOT NULL,
  network VARCHAR NOT NULL,
  program VARCHAR NOT NULL,
  metric VARCHAR NOT NULL,
  month VARCHAR NOT NULL,
  numerator DOUBLE,
  denominator DOUBLE,
  denominator_month VARCHAR,
  ratio DOUBLE,
  ratio_pct DOUBLE,
  ratio_bps DOUBLE,
  no_ratio_reason VARCHAR,
  is_projection BOOLEAN NOT NULL,
  is_partial BOOLEAN,
  days_covered INTEGER,
  days_in_month INTEGER,
  numerator_count DOUBLE,
  numerator_amount DOUBLE,
  denominator_count DOUBLE,
  denominator_amount DOUBLE,
  month_transaction_count DOUBLE,
  month_transaction_amount DOUBLE,
  tc40_observed_from DATE,
  numerator_complete BOOLEAN,
  missing_sources VARCHAR,        -- what this row's figures need that is not loaded for its month, and what to run
  numerator_floor BOOLEAN,        -- the MID report's chargeback count was used as the numerator's floor
  level VARCHAR,
  state VARCHAR,                  -- level | watch | clear | unknown (NULL: no rule reads the row)
  next_level VARCHAR,
  next_threshold DOUBLE,
  closeness DOUBLE,
  reason VARCHAR,
  region VARCHAR,
  region_source VARCHAR,
  monitored_as VARCHAR,
  superseded_by VARCHAR,
  certainty VARCHAR,
  certainty_note VARCHAR,
  explained_at TIMESTAMP,         -- NULL on a row explained from the saved rules: mart_ratios shows the last evaluation's time
  explained_cold BOOLEAN NOT NULL -- explained from the saved rules (no level near), not stored by the evaluation
);

-- What the kept mart reflects: one row, written with the mart's last rows (complete) or before its first (not).
CREATE TABLE IF NOT EXISTS ratio_mart_state (
  written_at TIMESTAMP NOT NULL,  -- wall clock
  from_month VARCHAR,             -- the first month the last write replaced (NULL: every month)
  complete BOOLEAN NOT NULL       -- false while a write is under way, or after one cut short
);

-- The kept ratio inputs carry the chargeback report's own count and whether VAMP's disputes took the MID report's
-- count as their floor (sql/views/40_ratios.sql ratio_month_inputs_between). Another SQL: the next refresh computes
-- every month again (ratio_input_logic), which fills them.
ALTER TABLE ratio_month_inputs ADD COLUMN IF NOT EXISTS vamp_floor BOOLEAN;
ALTER TABLE ratio_month_inputs ADD COLUMN IF NOT EXISTS report_chargeback_count BIGINT;
