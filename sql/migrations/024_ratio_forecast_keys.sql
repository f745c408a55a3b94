-- The kept forecasts keyed as the ratio table is (its ENUMs; VARCHAR on a lake), so that mart_ratios joins them
-- without casting every row of the table. They are a cache: the next write of the ratio table makes them again.
-- Made anew, not altered: DuckDB 1.5.5 cannot replay an ALTER COLUMN ... TYPE to an ENUM from its log after a crash.
DROP TABLE IF EXISTS ratio_forecasts;
CREATE TABLE ratio_forecasts (
  mid VARCHAR NOT NULL,
  network ratio_network NOT NULL,
  program ratio_program NOT NULL,
  metric ratio_metric NOT NULL,
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
DELETE FROM ratio_forecast_state;
