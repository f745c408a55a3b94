-- The rule set of the last alert evaluation, as mart_ratios reads it (issue #13). An evaluation stores the
-- explanations of the series its rules judged (ratio_explanations: those with a month in a level's watch band or
-- above, or with a level recorded); every other rule-read row is "clear", measured against the lowest-ranked level
-- in force, and mart_ratios explains it when read, from these tables,
-- so that a full evaluation does not write millions of rows no rule could move. Rewritten by every evaluation
-- in the transaction that records it.

-- For each rules class × network × program × metric, the rule a row is measured against over a range of months:
-- the first rule of the lowest-ranked level in force.
CREATE TABLE IF NOT EXISTS ratio_rule_picks (
  class VARCHAR NOT NULL,        -- '' for MIDs without an entry of their own in the thresholds file, else 'mid:<mid>'
  network VARCHAR NOT NULL,
  program VARCHAR NOT NULL,
  metric VARCHAR NOT NULL,
  from_month VARCHAR NOT NULL,   -- YYYY-MM, first month of the range ('0000-00': from the start)
  to_month VARCHAR NOT NULL,     -- YYYY-MM, last month of the range ('9999-99': no end)
  level VARCHAR NOT NULL,
  comparison VARCHAR,
  threshold DOUBLE,
  threshold_text VARCHAR,        -- as reasons write it
  certainty VARCHAR,
  certainty_note VARCHAR,
  conditions STRUCT(field VARCHAR, cmp VARCHAR, value DOUBLE, label VARCHAR, value_text VARCHAR)[],
  -- Every rule of the metric in force in these months, as far as meeting its watch band goes: a row not stored that
  -- meets one now changed since the evaluation (a load, or events, after it), and stays unexplained until the next.
  bands STRUCT(comparison VARCHAR, threshold DOUBLE, conditions STRUCT(field VARCHAR, cmp VARCHAR, value DOUBLE)[])[]
);

-- The network × program × metric some enabled rule reads, whatever its region: the
-- rows that have an explanation.
CREATE TABLE IF NOT EXISTS ratio_rule_targets (
  network VARCHAR NOT NULL,
  program VARCHAR NOT NULL,
  metric VARCHAR NOT NULL
);

-- MIDs with a rules class of their own (an entry in the thresholds file), with the region they are evaluated under.
CREATE TABLE IF NOT EXISTS ratio_rule_mids (
  mid VARCHAR NOT NULL,
  class VARCHAR NOT NULL,
  region VARCHAR NOT NULL,
  region_source VARCHAR NOT NULL
);

-- MID × program pairs monitored in a group (judged on the group's sums: their explanations are stored).
CREATE TABLE IF NOT EXISTS ratio_rule_grouped (
  mid VARCHAR NOT NULL,
  program VARCHAR NOT NULL
);

-- The default region of the last evaluation (CBP_DEFAULT_REGION then): the region of MIDs without one; its watch
-- fraction (thresholds file `watch.fraction`).
ALTER TABLE ratio_evaluations ADD COLUMN default_region VARCHAR;
ALTER TABLE ratio_evaluations ADD COLUMN watch_fraction DOUBLE;
