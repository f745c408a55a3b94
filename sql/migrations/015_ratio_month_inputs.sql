-- The ratio inputs of every mid x network x month, kept for the alert evaluation (issue #13: a full evaluation
-- without the sources read again). Rows are exactly sql/views/40_ratios.sql ratio_month_inputs_between's, as of the sources'
-- fingerprints in ratio_input_marks: store/ratio-inputs.ts refreshRatioInputs computes again only the months
-- whose fingerprints changed (and the month after each, which reads its transactions), and everything when the
-- SQL that computes them changed (ratio_input_logic). A cache: the views analysts read (mart_ratios) compute from the
-- sources, never from here. A month whose rows are all gone is computed again by the next evaluation; `cbp alerts
-- evaluate --full` computes every month again.
CREATE TABLE IF NOT EXISTS ratio_month_inputs (
  mid VARCHAR NOT NULL,
  network VARCHAR NOT NULL,
  month VARCHAR NOT NULL,              -- YYYY-MM
  month_idx INTEGER NOT NULL,          -- year * 12 + month - 1
  prev_month VARCHAR NOT NULL,         -- YYYY-MM of the month before
  window_start DATE,
  window_end DATE,
  days_covered INTEGER,
  days_in_month INTEGER,
  is_partial BOOLEAN,
  chargeback_count BIGINT,
  chargeback_amount DECIMAL(18, 4),
  transaction_count BIGINT,
  transaction_amount DECIMAL(18, 4),
  previous_month_transaction_count BIGINT,
  previous_month_transaction_amount DECIMAL(18, 4),
  prev_transaction_count BIGINT,
  prev_transaction_amount DECIMAL(18, 4),
  fraud_count BIGINT,
  fraud_amount DECIMAL(38, 4),
  vamp_dispute_count BIGINT,
  vamp_dispute_amount DECIMAL(38, 4),
  tc40_count BIGINT,
  tc40_amount DECIMAL(38, 4)
);

-- The sources' fingerprints the rows of ratio_month_inputs were computed from.
CREATE TABLE IF NOT EXISTS ratio_input_marks (
  source VARCHAR NOT NULL,
  month VARCHAR NOT NULL,
  fingerprint VARCHAR NOT NULL,
  row_count BIGINT NOT NULL,
  PRIMARY KEY (source, month)
);

-- A hash of the SQL that computed them (the macros and views ratio_month_inputs_between reads): a cbp whose SQL
-- differs computes every month again.
CREATE TABLE IF NOT EXISTS ratio_input_logic (
  logic_hash VARCHAR NOT NULL,
  refreshed_at TIMESTAMP NOT NULL
);
