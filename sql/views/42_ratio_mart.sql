-- The text of reasons (figures and percentages as people read them), and mart_ratios, a plain read of the kept table
-- ratio_mart (store/ratio-refresh.ts writes it; docs/ratios.md "When the table is current").

-- Text of reasons (the oracle's, test/oracle/explain.ts, writes the same): a fraction as a percentage rounded half up through whole
-- hundredths (0.0131 -> '1.31 %'); a figure with thousands separators and up to 2 decimals, trailing zeros dropped
-- (1500 -> '1,500', 1234.5 -> '1,234.5'); a negative one with its sign before the figure of its magnitude. The
-- rounded value is a BIGINT where it fits (HUGEINT arithmetic makes these texts much slower), and a whole
-- number below 10^13 (every count) is written as it is.
CREATE OR REPLACE MACRO cbp_hundredths_text(c) AS ((c // 100)::VARCHAR || '.' || lpad((c % 100)::VARCHAR, 2, '0'));

CREATE OR REPLACE MACRO cbp_percent_abs(x) AS (
  CASE WHEN x < 9e14 THEN cbp_hundredths_text(round(x * 10000)::BIGINT) ELSE cbp_hundredths_text(round(x * 10000)::HUGEINT) END || ' %'
);
CREATE OR REPLACE MACRO cbp_percent(x) AS (CASE WHEN x < 0 THEN '-' ELSE '' END || cbp_percent_abs(abs(x)));

-- c: a figure in hundredths (round(x * 100)), x >= 0.
CREATE OR REPLACE MACRO cbp_cents_text(c) AS (
  format('{:,}', c // 100)
  || CASE WHEN c % 100 = 0 THEN '' WHEN c % 10 = 0 THEN '.' || ((c % 100) // 10)::VARCHAR ELSE '.' || lpad((c % 100)::VARCHAR, 2, '0') END
);

CREATE OR REPLACE MACRO cbp_figure_abs(x) AS (
  CASE WHEN x < 1e13 AND x = trunc(x) THEN format('{:,}', x::BIGINT)
       WHEN x < 9e16 THEN cbp_cents_text(round(x * 100)::BIGINT)
       ELSE cbp_cents_text(round(x * 100)::HUGEINT) END
);

CREATE OR REPLACE MACRO cbp_figure(x) AS (CASE WHEN x < 0 THEN '-' ELSE '' END || cbp_figure_abs(abs(x)));

-- A ratio row's figure a rule's condition reads (thresholds file: conditions[].field).
CREATE OR REPLACE MACRO cbp_condition_value(field, numerator_count, numerator_amount, denominator_count, denominator_amount,
                                            month_transaction_count, month_transaction_amount) AS (
  CASE field WHEN 'numerator_count' THEN numerator_count WHEN 'numerator_amount' THEN numerator_amount
             WHEN 'denominator_count' THEN denominator_count WHEN 'denominator_amount' THEN denominator_amount
             WHEN 'month_transaction_count' THEN month_transaction_count WHEN 'month_transaction_amount' THEN month_transaction_amount END
);

-- A rule condition's text when the row fails it (its figure v not in the data, or not meeting it), else NULL. k: an
-- element of int_ratio_rules.conds (NULL: no such condition). Each text is written once here and in cbp_figure and
-- cbp_percent: a macro's argument is copied wherever it is used, and the judge passes expressions.
CREATE OR REPLACE MACRO cbp_failed_condition(k, v) AS (
  CASE WHEN k IS NULL THEN NULL
       WHEN v IS NULL THEN k.label || ' not in the data'
       WHEN (k.cmp = '>=' AND NOT (v >= k.value)) OR (k.cmp = '>' AND NOT (v > k.value))
         THEN k.label || ' ' || cbp_figure(v) || CASE WHEN k.cmp = '>=' THEN ' < ' || k.value_text || ' minimum' ELSE ' not above ' || k.value_text END END
);

-- The ratio mart analysts read (mart_ratios), of kept rows (`mart`: ratio_mart, or rows of its columns): closed sets as
-- text, columns derived in plain expressions, an open month's chance of a breach (ratio_forecasts' headline).
CREATE OR REPLACE MACRO mart_ratios_of(mart) AS TABLE
SELECT m.mid, m.network::VARCHAR AS network, m.program::VARCHAR AS program, m.metric::VARCHAR AS metric, m.month,
  CASE WHEN m.metric = 'count' THEN m.numerator_count ELSE m.numerator_amount END AS numerator,
  CASE WHEN m.metric = 'count' THEN m.denominator_count ELSE m.denominator_amount END AS denominator,
  CASE WHEN ratio_den_prev(m.program::VARCHAR) THEN strftime(strptime(m.month || '-01', '%Y-%m-%d') - INTERVAL 1 MONTH, '%Y-%m') ELSE m.month END
    AS denominator_month,
  m.ratio, m.ratio * 100 AS ratio_pct, m.ratio * 10000 AS ratio_bps, m.no_ratio_reason, m.is_projection, m.is_partial, m.days_covered,
  m.days_in_month, m.numerator_count, m.numerator_amount, m.denominator_count, m.denominator_amount, m.month_transaction_count,
  m.month_transaction_amount, m.tc40_observed_from, m.numerator_complete, m.missing_sources, m.numerator_floor, m.level,
  m.state::VARCHAR AS state, m.next_level, m.next_threshold, m.closeness, m.reason, m.region, m.region_source::VARCHAR AS region_source,
  coalesce(m.monitored_as, m.mid) AS monitored_as, m.superseded_by, m.certainty::VARCHAR AS certainty, m.certainty_note,
  m.judged_at AS explained_at, m.headroom_count, m.over_by_count, m.headroom_basis::VARCHAR AS headroom_basis, m.fee_estimate, m.fee_currency,
  m.fee_basis::VARCHAR AS fee_basis,
  f.chance, f.level AS chance_level, f.expected_count, f.low80_count AS expected_low80, f.high80_count AS expected_high80, f.pace_day
FROM query_table(mart) m
-- Each key compared on both sides, of one type (migration 024): else a nested-loop join, or every mart row cast.
LEFT JOIN (SELECT *, FALSE AS of_projection FROM ratio_forecasts WHERE is_headline) f ON f.of_projection = m.is_projection AND f.mid = m.mid
  AND f.network = m.network AND f.program = m.program AND f.metric = m.metric AND f.month = m.month;
CREATE OR REPLACE VIEW mart_ratios AS SELECT * FROM mart_ratios_of('ratio_mart');

-- The mart's rows of a range of months (first days of the first and the last month).
CREATE OR REPLACE MACRO mart_ratios_between(first_day, last_day) AS TABLE
SELECT * FROM mart_ratios WHERE month >= strftime(first_day, '%Y-%m') AND month <= strftime(last_day, '%Y-%m');
