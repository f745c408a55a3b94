-- The kept ratio table narrower (issue #26): writing it was the slow part of every evaluation, each text column a
-- large share of it. Closed sets are ENUMs (one byte a value;
-- declared in byte order, as 007_enum_columns.sql's), and the columns mart_ratios derives from others in a plain
-- expression are not stored: numerator and denominator (the metric's count or amount), ratio_pct and ratio_bps,
-- denominator_month (the month, or the one before for a previous-month program), monitored_as where it is the MID
-- itself (monitored_self). mart_ratios (sql/views/42_ratio_mart.sql) shows the same columns, as text, as before.
-- test/store-db.test.ts checks these lists against the contract's. A new program, state, region source or
-- certainty needs a migration that rebuilds this table (it is a cache: the next evaluation writes it again).
CREATE TYPE ratio_network AS ENUM ('american_express', 'discover', 'mastercard', 'visa');
CREATE TYPE ratio_program AS ENUM ('amex_excessive', 'discover_excessive', 'ecp', 'efm', 'monthly', 'vamp', 'vdmp', 'vfmp');
CREATE TYPE ratio_metric AS ENUM ('amount', 'count');
CREATE TYPE ratio_state AS ENUM ('clear', 'level', 'unknown', 'watch');
CREATE TYPE ratio_region_source AS ENUM ('default', 'mid');
CREATE TYPE ratio_certainty AS ENUM ('approximate', 'exact', 'unconfirmed');

DROP TABLE IF EXISTS ratio_mart;
CREATE TABLE ratio_mart (
  mid VARCHAR NOT NULL,
  network ratio_network NOT NULL,
  program ratio_program NOT NULL,
  metric ratio_metric NOT NULL,
  month VARCHAR NOT NULL,
  ratio DOUBLE,
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
  state ratio_state,              -- NULL: no rule reads the row
  next_level VARCHAR,
  next_threshold DOUBLE,
  closeness DOUBLE,
  reason VARCHAR,
  region VARCHAR,
  region_source ratio_region_source,
  monitored_as VARCHAR,           -- the group a row is monitored in; NULL where it is the MID itself (monitored_self)
  monitored_self BOOLEAN,
  superseded_by VARCHAR,
  certainty ratio_certainty,
  certainty_note VARCHAR,
  explained_at TIMESTAMP,         -- NULL on a row explained from the saved rules: mart_ratios shows the last evaluation's time
  explained_cold BOOLEAN NOT NULL -- explained from the saved rules (no level near), not stored by the evaluation
);
-- Written again in full by the next evaluation (a missing state row reads "behind" until then).
DELETE FROM ratio_mart_state;
