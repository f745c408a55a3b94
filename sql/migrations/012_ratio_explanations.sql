-- ratio_explanations (issue #13): what the last rule evaluation said about each rule-judged ratio row, under
-- the rules configured then (alerts/engine.ts evaluateAlerts writes it; mart_ratios joins it). One row per
-- mid × network × program × metric × month × is_projection; docs/ratios.md "Columns" says what each means.
-- Rewritten for the months an evaluation judges (every month, or those a nightly's loads touched and what
-- streaks need), so it is never older than the figures the last evaluation saw.
CREATE TABLE IF NOT EXISTS ratio_explanations (
  mid VARCHAR NOT NULL,
  network VARCHAR NOT NULL,
  program VARCHAR NOT NULL,
  metric VARCHAR NOT NULL,
  month VARCHAR NOT NULL,
  is_projection BOOLEAN NOT NULL,
  level VARCHAR,              -- level in force after streaks, or NULL
  state VARCHAR,              -- clear | watch | level
  next_level VARCHAR,         -- the level the row is measured against (NULL at the top)
  next_threshold DOUBLE,      -- its ratio threshold (fraction)
  closeness DOUBLE,           -- ratio ÷ threshold of next_level (at the top: of level)
  reason VARCHAR,             -- why next_level was not reached, the stopping condition(s)
  region VARCHAR,
  region_source VARCHAR,      -- mid | default
  monitored_as VARCHAR,       -- the VAMP group id, else the MID
  superseded_by VARCHAR,      -- 'efm' on an ECP row in a month Mastercard assesses EFM instead
  certainty VARCHAR,          -- exact | approximate | unconfirmed
  certainty_note VARCHAR,
  explained_at TIMESTAMP NOT NULL
);
