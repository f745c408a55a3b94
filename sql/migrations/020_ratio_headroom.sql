-- Headroom and fee estimates (issue #28): how many more numerator events reach a row's next level, how many fewer
-- would have left the level it meets, on what denominator, and what a level would cost (rules/headroom.ts,
-- rules/fees.ts; docs/ratios.md "Headroom" and "Fees"). Stored with each explanation and in the kept ratio table.
CREATE TYPE ratio_headroom_basis AS ENUM ('closed_month', 'previous_month', 'projected_month');
CREATE TYPE ratio_fee_basis AS ENUM ('events_above_threshold', 'every_counted_event');

ALTER TABLE ratio_explanations ADD COLUMN IF NOT EXISTS headroom_count DOUBLE;
ALTER TABLE ratio_explanations ADD COLUMN IF NOT EXISTS over_by_count DOUBLE;
ALTER TABLE ratio_explanations ADD COLUMN IF NOT EXISTS headroom_basis VARCHAR;
ALTER TABLE ratio_explanations ADD COLUMN IF NOT EXISTS fee_estimate DOUBLE;
ALTER TABLE ratio_explanations ADD COLUMN IF NOT EXISTS fee_currency VARCHAR;
ALTER TABLE ratio_explanations ADD COLUMN IF NOT EXISTS fee_basis VARCHAR;

ALTER TABLE ratio_mart ADD COLUMN IF NOT EXISTS headroom_count DOUBLE;
ALTER TABLE ratio_mart ADD COLUMN IF NOT EXISTS over_by_count DOUBLE;
ALTER TABLE ratio_mart ADD COLUMN IF NOT EXISTS headroom_basis ratio_headroom_basis;
ALTER TABLE ratio_mart ADD COLUMN IF NOT EXISTS fee_estimate DOUBLE;
ALTER TABLE ratio_mart ADD COLUMN IF NOT EXISTS fee_currency VARCHAR;
ALTER TABLE ratio_mart ADD COLUMN IF NOT EXISTS fee_basis ratio_fee_basis;

-- Every month is judged and written again by the next evaluation: the stored explanations have no headroom yet.
DELETE FROM ratio_evaluations;
DELETE FROM ratio_mart_state;
