-- The kept forecasts keyed as the ratio table is (its ENUMs; VARCHAR on a lake), so that mart_ratios joins them
-- without casting every row of the table. They are a cache: the next write of the ratio table makes them again.
DELETE FROM ratio_forecasts;
DELETE FROM ratio_forecast_state;
ALTER TABLE ratio_forecasts ALTER COLUMN network SET DATA TYPE ratio_network;
ALTER TABLE ratio_forecasts ALTER COLUMN program SET DATA TYPE ratio_program;
ALTER TABLE ratio_forecasts ALTER COLUMN metric SET DATA TYPE ratio_metric;
