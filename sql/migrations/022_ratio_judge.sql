-- The ratio table judged in SQL (issue #35): written by every command that changes a source (store/ratio-refresh.ts),
-- from the kept inputs and the rules in force (021). What the JS judge kept beside it goes.
DROP TABLE IF EXISTS ratio_explanations;
DROP TABLE IF EXISTS ratio_evaluations;
DROP TABLE IF EXISTS ratio_rule_picks;
DROP TABLE IF EXISTS ratio_rule_targets;
DROP TABLE IF EXISTS ratio_rule_mids;
DROP TABLE IF EXISTS ratio_rule_grouped;

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
  missing_sources VARCHAR,
  numerator_floor BOOLEAN,
  level VARCHAR,
  state ratio_state,
  next_level VARCHAR,
  next_threshold DOUBLE,
  closeness DOUBLE,
  reason VARCHAR,
  region VARCHAR,
  region_source ratio_region_source,
  monitored_as VARCHAR,           -- the group a row is monitored in; NULL where it is the MID itself
  superseded_by VARCHAR,
  certainty ratio_certainty,
  certainty_note VARCHAR,
  headroom_count DOUBLE,
  over_by_count DOUBLE,
  headroom_basis ratio_headroom_basis,
  fee_estimate DOUBLE,
  fee_currency VARCHAR,
  fee_basis ratio_fee_basis,
  judged_at TIMESTAMP NOT NULL
);

-- Judged again whole by the next command.
DELETE FROM ratio_mart_state;
DELETE FROM ratio_source_marks;
