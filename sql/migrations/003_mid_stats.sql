-- mid_stats: the MID report's figures, one row per mid x report window x network.
--
--   mid                  VARCHAR    the merchant account (MID record `mid`)
--   window_start         DATE       first day of the report window (inclusive, UTC)
--   window_end           DATE       last day of the report window (inclusive, UTC); a calendar-month window
--                                   (YYYY-MM-01 .. last day) gives that month's figures
--   network              VARCHAR    'all' (the record's top-level figures, every network together), or
--                                   visa, mastercard, discover, american_express (from the record's
--                                   visa, master_card, discover, amex objects; cbp's network names)
--   chargeback_count     BIGINT     chargebacks in the window
--   chargeback_amount    DECIMAL    their amount (major units)
--   transaction_count    BIGINT     transactions in the window
--   transaction_amount   DECIMAL    their amount
--   chargeback_ratio     DOUBLE     as reported: chargeback_count / transaction_count; NULL when the service
--                                   gave none (no transactions) — never 0
--   chargeback_amount_ratio DOUBLE  as reported: chargeback_amount / transaction_amount; NULL likewise
--   previous_month_transaction_count  BIGINT   mastercard rows only (master_card object): the previous month's
--   previous_month_transaction_amount DECIMAL  transactions, Mastercard's ratio denominator; NULL elsewhere
--   seen_at              TIMESTAMP  when these figures were observed (report fetched_at, else window end)
--   landing_file         VARCHAR    the file they came from
--
-- Key (mid, window_start, window_end, network): reloading a window replaces its rows. A network object
-- absent from the record gives no row (no figures), never a row of zeros.
CREATE TABLE mid_stats (
  mid                               VARCHAR NOT NULL,
  window_start                      DATE NOT NULL,
  window_end                        DATE NOT NULL,
  network                           VARCHAR NOT NULL,
  chargeback_count                  BIGINT NOT NULL,
  chargeback_amount                 DECIMAL(18, 4) NOT NULL,
  transaction_count                 BIGINT NOT NULL,
  transaction_amount                DECIMAL(18, 4) NOT NULL,
  chargeback_ratio                  DOUBLE,
  chargeback_amount_ratio           DOUBLE,
  previous_month_transaction_count  BIGINT,
  previous_month_transaction_amount DECIMAL(18, 4),
  seen_at                           TIMESTAMP NOT NULL,
  landing_file                      VARCHAR NOT NULL
);

-- The merchant accounts named by MID reports: alias and gateways as last reported.
CREATE TABLE mids (
  mid          VARCHAR NOT NULL,
  alias        VARCHAR,
  gateways     VARCHAR[],
  last_seen_at TIMESTAMP NOT NULL,
  landing_file VARCHAR NOT NULL
);
