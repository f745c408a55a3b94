-- The rules in force, as the SQL judge reads them (sql/views/43_ratio_judge.sql; store/ratio-rules.ts writes them).
-- A rules class is '' (every MID without an entry of its own) or 'mid:<id>' (a MID's own entry, or a group's):
-- its rules are those rulesFor gives it, region applied, in order. Rewritten whole when the thresholds file changes.
CREATE TABLE IF NOT EXISTS ratio_rules (
  class VARCHAR NOT NULL,
  ord INTEGER NOT NULL,               -- position in the class's list: a level's first rule comes first
  id VARCHAR NOT NULL,
  network VARCHAR NOT NULL,
  program VARCHAR NOT NULL,
  level VARCHAR NOT NULL,
  rank INTEGER NOT NULL,
  metric VARCHAR NOT NULL,
  comparison VARCHAR NOT NULL,
  threshold DOUBLE NOT NULL,
  conditions STRUCT(field VARCHAR, cmp VARCHAR, value DOUBLE)[] NOT NULL,
  months_to_enter INTEGER NOT NULL,
  months_to_leave INTEGER NOT NULL,
  from_month VARCHAR NOT NULL,        -- YYYY-MM, '0000-00': from the start
  to_month VARCHAR NOT NULL,          -- YYYY-MM, '9999-99': no end
  early_warning BOOLEAN NOT NULL,
  step_down BOOLEAN NOT NULL,
  supersedes VARCHAR[] NOT NULL,
  certainty VARCHAR NOT NULL,
  certainty_note VARCHAR
);

-- Who is judged under which class and region: MIDs with an entry of their own, and groups (id: the group id).
CREATE TABLE IF NOT EXISTS ratio_rule_classes (
  id VARCHAR NOT NULL,
  class VARCHAR NOT NULL,
  region VARCHAR NOT NULL,
  region_source VARCHAR NOT NULL
);

-- MIDs monitored as one merchant for a program: their rows are judged as the group's sums.
CREATE TABLE IF NOT EXISTS ratio_rule_groups (
  group_id VARCHAR NOT NULL,
  mid VARCHAR NOT NULL,
  program VARCHAR NOT NULL
);

-- The rule set itself: its hash (another file means every month is judged again), watch band, default region, fees.
CREATE TABLE IF NOT EXISTS ratio_rule_set (
  rules_hash VARCHAR NOT NULL,
  default_region VARCHAR NOT NULL,
  watch_fraction DOUBLE NOT NULL,
  written_at TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS ratio_fees (
  ord INTEGER NOT NULL,               -- of two in force for a level and month, the first is taken
  network VARCHAR NOT NULL,
  program VARCHAR NOT NULL,
  level VARCHAR NOT NULL,
  per_event DOUBLE NOT NULL,
  currency VARCHAR NOT NULL,
  basis VARCHAR NOT NULL,
  from_month VARCHAR NOT NULL,
  to_month VARCHAR NOT NULL
);

-- The judge's runs of every series × level × month (sql/views/43_ratio_judge.sql ratio_level_runs' columns) as of the
-- last refresh: v 0 the observed figures (where a refresh of later months starts from), v 1 the projected months.
CREATE TABLE IF NOT EXISTS ratio_streaks (
  mid VARCHAR NOT NULL,        -- the MID, or the group monitored as one
  network VARCHAR NOT NULL,
  program VARCHAR NOT NULL,
  class VARCHAR NOT NULL,
  v INTEGER NOT NULL,
  month_idx INTEGER NOT NULL,  -- year * 12 + month - 1
  month VARCHAR NOT NULL,
  level VARCHAR NOT NULL,
  rank INTEGER NOT NULL,
  level_ord INTEGER NOT NULL,
  live BOOLEAN NOT NULL,
  hit BOOLEAN NOT NULL,
  hit_ord INTEGER,
  count_ord INTEGER,
  amount_ord INTEGER,
  live_ord INTEGER,
  near BOOLEAN NOT NULL,
  enter INTEGER,
  leave INTEGER,
  met_run INTEGER NOT NULL,
  miss_run INTEGER NOT NULL,
  held BOOLEAN NOT NULL,
  partial BOOLEAN NOT NULL,
  unknown BOOLEAN NOT NULL,
  supersedes VARCHAR[]
);
