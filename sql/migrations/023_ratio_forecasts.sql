-- The chance of a breach (issue #39): each open month's series forecast against each level in force, written after
-- every refresh of the ratio table (store/forecast.ts; docs/ratios.md "The chance of a breach").
CREATE TABLE IF NOT EXISTS ratio_forecasts (
  mid VARCHAR NOT NULL,
  network VARCHAR NOT NULL,
  program VARCHAR NOT NULL,
  metric VARCHAR NOT NULL,
  month VARCHAR NOT NULL,
  level VARCHAR NOT NULL,
  rank INTEGER NOT NULL,
  rule_id VARCHAR NOT NULL,
  -- the level the series' rows show (the highest level as likely as not, else the lowest)
  is_headline BOOLEAN NOT NULL,
  days_covered INTEGER NOT NULL,
  days_in_month INTEGER NOT NULL,
  count_to_date DOUBLE NOT NULL,
  needed_count DOUBLE,
  chance DOUBLE NOT NULL,
  expected_count DOUBLE NOT NULL,
  low80_count DOUBLE NOT NULL,
  high80_count DOUBLE NOT NULL,
  pace_day INTEGER,
  met_to_date BOOLEAN NOT NULL,
  forecast_at TIMESTAMP NOT NULL
);

-- Which write of the ratio table the forecasts are of (ratio_mart_state.written_at): another means they are made again.
CREATE TABLE IF NOT EXISTS ratio_forecast_state (
  mart_written_at TIMESTAMP NOT NULL
);
