-- The ratio mart (issue #26): the text of reasons as rules/explain.ts writes it, the rows the mart is written from
-- (ratio_mart_rows_between, over sql/views/40_ratios.sql's ratio rows), and mart_ratios, a plain read of the kept table
-- ratio_mart (store/ratio-mart.ts writes it with each evaluation; docs/ratios.md "The kept ratio table").

-- Text of reasons, as rules/explain.ts writes it: a fraction as a percentage rounded half up through whole
-- hundredths (0.0131 -> '1.31 %'); a figure with thousands separators and up to 2 decimals, trailing zeros dropped
-- (1500 -> '1,500', 1234.5 -> '1,234.5'); a negative one with its sign before the figure of its magnitude. The
-- rounded value is a BIGINT where it fits (in HUGEINT arithmetic these texts took 3 to 6 times as long), and a whole
-- number below 10^13 (every count) is written as it is.
CREATE OR REPLACE MACRO cbp_hundredths_text(c) AS ((c // 100)::VARCHAR || '.' || lpad((c % 100)::VARCHAR, 2, '0'));

CREATE OR REPLACE MACRO cbp_percent_abs(x) AS (
  CASE WHEN x < 9e14 THEN cbp_hundredths_text(round(x * 10000)::BIGINT) ELSE cbp_hundredths_text(round(x * 10000)::HUGEINT) END || ' %'
);

CREATE OR REPLACE MACRO cbp_percent(x) AS (CASE WHEN x < 0 THEN '-' || cbp_percent_abs(-x) ELSE cbp_percent_abs(x) END);

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

CREATE OR REPLACE MACRO cbp_figure(x) AS (CASE WHEN x < 0 THEN '-' || cbp_figure_abs(-x) ELSE cbp_figure_abs(x) END);

-- A ratio row's figure a rule's condition reads (thresholds file: conditions[].field).
CREATE OR REPLACE MACRO cbp_condition_value(field, numerator_count, numerator_amount, denominator_count, denominator_amount,
                                            month_transaction_count, month_transaction_amount) AS (
  CASE field WHEN 'numerator_count' THEN numerator_count WHEN 'numerator_amount' THEN numerator_amount
             WHEN 'denominator_count' THEN denominator_count WHEN 'denominator_amount' THEN denominator_amount
             WHEN 'month_transaction_count' THEN month_transaction_count WHEN 'month_transaction_amount' THEN month_transaction_amount END
);

-- A rule condition's text when the row fails it (its figure v not in the data, or not meeting it), else NULL: as
-- rules/explain.ts writes it. k: an element of ratio_rule_picks.conditions (NULL: no such condition). v is a column
-- (cbp_condition_value computed before): a macro's argument is copied wherever it is used, and the nested figure
-- macros made the mart's plan take 0.9 s to build when it was the whole expression.
CREATE OR REPLACE MACRO cbp_failed_condition(k, v) AS (
  CASE WHEN k IS NULL THEN NULL
       WHEN v IS NULL THEN k.label || ' not in the data'
       WHEN k.cmp = '>=' AND NOT (v >= k.value) THEN k.label || ' ' || cbp_figure(v) || ' < ' || k.value_text || ' minimum'
       WHEN k.cmp = '>' AND NOT (v > k.value) THEN k.label || ' ' || cbp_figure(v) || ' not above ' || k.value_text END
);

-- What one condition k of a level adds to a row's headroom (rules/headroom.ts headroomCount): the more numerator events
-- a count minimum needs, 0 for a condition met, 'inf' for one no event can meet. v: the row's figure k reads (a column),
-- hf: an open month's projection factor for same-month figures, den_prev: the denominator is the previous month's.
CREATE OR REPLACE MACRO cbp_headroom_condition(k, v, num, hf, den_prev) AS (
  CASE WHEN k IS NULL THEN 0::DOUBLE
       WHEN k.field = 'numerator_count'
         THEN greatest(0, CASE WHEN k.cmp = '>=' THEN ceil(round(k.value - num, 9)) ELSE floor(round(k.value - num, 9)) + 1 END)::DOUBLE
       WHEN v IS NULL THEN 'inf'::DOUBLE
       WHEN (k.cmp = '>=' AND v * CASE WHEN k.field LIKE 'month_transaction_%' OR (NOT den_prev AND k.field LIKE 'denominator_%') THEN hf ELSE 1 END >= k.value)
         OR (k.cmp = '>' AND v * CASE WHEN k.field LIKE 'month_transaction_%' OR (NOT den_prev AND k.field LIKE 'denominator_%') THEN hf ELSE 1 END > k.value)
         THEN 0::DOUBLE
       ELSE 'inf'::DOUBLE END
);

-- The ratio mart: the ratio rows of a range of months, their TC40 coverage, and the last evaluation's explanation
-- (rules as configured then; docs/ratios.md "Columns"). A row of a series the rules judged has the explanation the
-- evaluation stored (ratio_explanations). Any other row a rule reads, in a month up to the one evaluated, never
-- came near a level (no month in a level's watch band, no level recorded): it is "clear", measured against the
-- lowest-ranked level in force for its metric, and its reason (the conditions it fails) is written here from the
-- evaluation's rules (ratio_rule_picks, sql/migrations/014_ratio_rules.sql), exactly as rules/explain.ts would.
-- Rows no rule reads, and months after the last evaluation, have no explanation (NULL). kept: as ratio_rows_between's
-- (store/ratio-mart.ts passes a temp table of some MIDs' kept inputs to write only their rows).
CREATE OR REPLACE MACRO ratio_mart_rows_between(first_day, last_day, cached := FALSE, kept := 'ratio_month_inputs') AS TABLE
WITH e AS (
WITH ev AS (
  SELECT as_of_month, default_region, evaluated_at, least(1.0, coalesce(watch_fraction, 1.0)) AS band
    FROM ratio_evaluations ORDER BY evaluated_at DESC LIMIT 1
), targets AS (
  SELECT DISTINCT network, program, metric FROM ratio_rule_targets
), r AS (
  SELECT r.*,
    x.mid IS NOT NULL AS stored,
    x.mid IS NULL AND t.network IS NOT NULL AND g.mid IS NULL AND r.month <= ev.as_of_month AS cold,
    x.level AS x_level, x.state AS x_state, x.next_level AS x_next_level, x.next_threshold AS x_next_threshold,
    x.closeness AS x_closeness, x.reason AS x_reason, x.region AS x_region, x.region_source AS x_region_source,
    x.monitored_as AS x_monitored_as, x.superseded_by AS x_superseded_by, x.certainty AS x_certainty,
    x.certainty_note AS x_certainty_note, x.explained_at AS x_explained_at,
    x.headroom_count AS x_headroom_count, x.over_by_count AS x_over_by_count, x.headroom_basis AS x_headroom_basis,
    x.fee_estimate AS x_fee_estimate, x.fee_currency AS x_fee_currency, x.fee_basis AS x_fee_basis,
    coalesce(c.class, '') AS rules_class,
    coalesce(c.region, ev.default_region) AS cold_region,
    coalesce(c.region_source, 'default') AS cold_region_source,
    ev.evaluated_at, ev.band
  FROM ratio_rows_covered_between(first_day, last_day, cached := cached, kept := kept) r
  -- The explanations of the months asked for only: the hash table of every month's (1.15 million rows at 100,000 MIDs x
  -- 36 months) did not fit the store's 192MB.
  LEFT JOIN ratio_explanations x
    ON x.mid = r.mid AND x.network = r.network AND x.program = r.program AND x.metric = r.metric
   AND x.month = r.month AND x.is_projection = r.is_projection
   AND x.month >= strftime(first_day, '%Y-%m') AND x.month <= strftime(last_day, '%Y-%m')
  LEFT JOIN ev ON TRUE
  LEFT JOIN targets t ON t.network = r.network AND t.program = r.program AND t.metric = r.metric
  LEFT JOIN ratio_rule_grouped g ON g.mid = r.mid AND g.program = r.program
  LEFT JOIN ratio_rule_mids c ON c.mid = r.mid
), jp AS (
  SELECT r.*,
         p.level AS p_level, p.comparison AS p_comparison, p.threshold AS p_threshold, p.threshold_text AS p_threshold_text,
         p.certainty AS p_certainty, p.certainty_note AS p_certainty_note, p.conditions AS p_conditions,
         -- The figures the pick's first four conditions read (their text below); any further ones through a lambda.
         cbp_condition_value(p.conditions[1].field, r.numerator_count, r.numerator_amount, r.denominator_count, r.denominator_amount, r.month_transaction_count, r.month_transaction_amount) AS v1,
         cbp_condition_value(p.conditions[2].field, r.numerator_count, r.numerator_amount, r.denominator_count, r.denominator_amount, r.month_transaction_count, r.month_transaction_amount) AS v2,
         cbp_condition_value(p.conditions[3].field, r.numerator_count, r.numerator_amount, r.denominator_count, r.denominator_amount, r.month_transaction_count, r.month_transaction_amount) AS v3,
         cbp_condition_value(p.conditions[4].field, r.numerator_count, r.numerator_amount, r.denominator_count, r.denominator_amount, r.month_transaction_count, r.month_transaction_amount) AS v4,
         CASE WHEN len(p.conditions) > 4 THEN nullif(array_to_string(list_transform(p.conditions[5:], lambda k:
           cbp_failed_condition(k, cbp_condition_value(k.field, r.numerator_count, r.numerator_amount, r.denominator_count, r.denominator_amount,
                                                       r.month_transaction_count, r.month_transaction_amount))), '; '), '') END AS p_failed_more,
         -- Headroom to the pick (rules/headroom.ts): an open month's same-month figures projected to its end (hf).
         ratio_den_prev(r.program) AS h_prev,
         CASE WHEN NOT r.is_projection AND r.is_partial AND r.days_covered > 0 THEN r.days_in_month::DOUBLE / r.days_covered ELSE 1.0 END AS hf,
         CASE WHEN h_prev THEN r.denominator_count ELSE r.denominator_count * hf END AS h_den,
         CASE WHEN len(p.conditions) > 4 THEN list_max(list_transform(p.conditions[5:], lambda k: cbp_headroom_condition(k,
           cbp_condition_value(k.field, r.numerator_count, r.numerator_amount, r.denominator_count, r.denominator_amount, r.month_transaction_count,
                               r.month_transaction_amount), r.numerator_count, hf, h_prev))) ELSE 0 END AS h_more
  FROM r
  LEFT JOIN ratio_rule_picks p
    ON p.class = r.rules_class AND p.network = r.network AND p.program = r.program AND p.metric = r.metric
   AND r.month >= p.from_month AND r.month <= p.to_month
), j AS (
  -- The pick's conditions this row fails, as text (cbp_failed_condition), as list elements: a lambda over the list took
  -- 2 s of 1.15 million rows.
  SELECT jp.* EXCLUDE (p_conditions, v1, v2, v3, v4, p_failed_more, h_prev, hf, h_den, h_more),
         nullif(concat_ws('; ', cbp_failed_condition(p_conditions[1], v1), cbp_failed_condition(p_conditions[2], v2),
                          cbp_failed_condition(p_conditions[3], v3), cbp_failed_condition(p_conditions[4], v4), p_failed_more), '') AS p_failed,
         CASE WHEN metric = 'count' AND numerator_count IS NOT NULL AND h_den > 0 THEN nullif(greatest(
           greatest(0, CASE WHEN p_comparison = '>=' THEN ceil(round(p_threshold * h_den - numerator_count, 9))
                            ELSE floor(round(p_threshold * h_den - numerator_count, 9)) + 1 END)::DOUBLE,
           cbp_headroom_condition(p_conditions[1], v1, numerator_count, hf, h_prev), cbp_headroom_condition(p_conditions[2], v2, numerator_count, hf, h_prev),
           cbp_headroom_condition(p_conditions[3], v3, numerator_count, hf, h_prev), cbp_headroom_condition(p_conditions[4], v4, numerator_count, hf, h_prev),
           h_more), 'inf'::DOUBLE) END AS p_headroom,
         CASE WHEN h_prev THEN 'previous_month' WHEN is_projection OR hf <> 1.0 THEN 'projected_month' ELSE 'closed_month' END AS p_headroom_basis
  FROM jp
)
SELECT
  j.* EXCLUDE (stored, cold, x_level, x_state, x_next_level, x_next_threshold, x_closeness, x_reason, x_region, x_region_source,
               x_monitored_as, x_superseded_by, x_certainty, x_certainty_note, x_explained_at, rules_class, cold_region,
               cold_region_source, evaluated_at, band, p_level, p_comparison, p_threshold, p_threshold_text, p_certainty,
               p_certainty_note, p_failed, x_headroom_count, x_over_by_count, x_headroom_basis, x_fee_estimate, x_fee_currency,
               x_fee_basis, p_headroom, p_headroom_basis),
  CASE WHEN stored THEN x_level END AS level,
  CASE WHEN stored THEN x_state WHEN cold AND p_level IS NOT NULL THEN 'clear' END AS state,
  CASE WHEN stored THEN x_next_level WHEN cold THEN p_level END AS next_level,
  CASE WHEN stored THEN x_next_threshold WHEN cold THEN p_threshold END AS next_threshold,
  CASE WHEN stored THEN x_closeness WHEN cold AND ratio IS NOT NULL AND p_threshold > 0 THEN ratio / p_threshold END AS closeness,
  CASE WHEN stored THEN x_reason WHEN cold AND p_level IS NOT NULL THEN nullif(concat_ws('; ',
    CASE WHEN ratio IS NULL OR NOT isfinite(ratio) THEN 'no ratio (' || coalesce(no_ratio_reason, 'no figures') || ')'
         WHEN p_comparison = '>=' AND NOT (ratio >= p_threshold) THEN 'ratio ' || cbp_percent(ratio) || ' < ' || p_threshold_text
         WHEN p_comparison = '>' AND NOT (ratio > p_threshold) THEN 'ratio ' || cbp_percent(ratio) || ' not above ' || p_threshold_text END,
    p_failed), '') END AS reason0,
  CASE WHEN stored THEN x_region WHEN cold THEN cold_region END AS region,
  CASE WHEN stored THEN x_region_source WHEN cold THEN cold_region_source END AS region_source,
  CASE WHEN stored THEN x_monitored_as WHEN cold THEN mid END AS monitored_as,
  CASE WHEN stored THEN x_superseded_by END AS superseded_by,
  CASE WHEN stored THEN x_certainty WHEN cold THEN p_certainty END AS certainty,
  CASE WHEN stored THEN x_certainty_note WHEN cold THEN p_certainty_note END AS certainty_note,
  CASE WHEN stored THEN x_explained_at END AS explained_at,
  CASE WHEN stored THEN x_headroom_count WHEN cold AND p_level IS NOT NULL THEN p_headroom END AS headroom_count,
  CASE WHEN stored THEN x_over_by_count END AS over_by_count,
  CASE WHEN stored THEN x_headroom_basis WHEN cold AND p_level IS NOT NULL AND p_headroom IS NOT NULL THEN p_headroom_basis END AS headroom_basis,
  CASE WHEN stored THEN x_fee_estimate END AS fee_estimate,
  CASE WHEN stored THEN x_fee_currency END AS fee_currency,
  CASE WHEN stored THEN x_fee_basis END AS fee_basis,
  -- Explained from the saved rules: mart_ratios shows the last evaluation's time (it changes with every evaluation).
  cold AS explained_cold
FROM j
)
-- Never "clear" on missing data: a row explained here whose figures miss a source is "unknown", its reason first says
-- what is missing and what to run (rules/explain.ts withMissing, which the stored explanations went through).
SELECT e.* EXCLUDE (state, reason0),
  CASE WHEN explained_cold AND state = 'clear' AND missing_sources IS NOT NULL THEN 'unknown' ELSE state END AS state,
  CASE WHEN NOT explained_cold OR state IS NULL THEN reason0
       ELSE nullif(concat_ws('; ', missing_sources,
              CASE WHEN numerator_floor THEN 'disputes counted from the MID report (the chargeback report lists fewer)' END, reason0), '') END AS reason
FROM e;

-- The rows as the kept table stores them (migration 018): what mart_ratios derives in a plain expression is left out.
CREATE OR REPLACE MACRO ratio_mart_stored_between(first_day, last_day, kept := 'ratio_month_inputs') AS TABLE
SELECT mid, network, program, metric, month, ratio, no_ratio_reason, is_projection, is_partial, days_covered, days_in_month,
  numerator_count, numerator_amount, denominator_count, denominator_amount, month_transaction_count, month_transaction_amount,
  tc40_observed_from, numerator_complete, missing_sources, numerator_floor, level, state, next_level, next_threshold, closeness,
  reason, region, region_source, CASE WHEN monitored_as <> mid THEN monitored_as END AS monitored_as, monitored_as = mid AS monitored_self,
  superseded_by, certainty, certainty_note, explained_at, explained_cold, headroom_count, over_by_count, headroom_basis,
  fee_estimate, fee_currency, fee_basis
FROM ratio_mart_rows_between(first_day, last_day, cached := TRUE, kept := kept);

-- The ratio mart analysts read: the table each rule evaluation keeps current (store/ratio-mart.ts), its columns as
-- ratio_mart_rows_between gives them: closed sets as text, the derived ones computed as ratio_rows_between does. A row
-- explained from the saved rules shows the last evaluation's time.
CREATE OR REPLACE VIEW mart_ratios AS
SELECT m.mid, m.network::VARCHAR AS network, m.program::VARCHAR AS program, m.metric::VARCHAR AS metric, m.month,
  CASE WHEN m.metric = 'count' THEN m.numerator_count ELSE m.numerator_amount END AS numerator,
  CASE WHEN m.metric = 'count' THEN m.denominator_count ELSE m.denominator_amount END AS denominator,
  CASE WHEN ratio_den_prev(m.program::VARCHAR) THEN strftime(strptime(m.month || '-01', '%Y-%m-%d') - INTERVAL 1 MONTH, '%Y-%m') ELSE m.month END
    AS denominator_month,
  m.ratio, m.ratio * 100 AS ratio_pct, m.ratio * 10000 AS ratio_bps, m.no_ratio_reason, m.is_projection, m.is_partial, m.days_covered,
  m.days_in_month, m.numerator_count, m.numerator_amount, m.denominator_count, m.denominator_amount, m.month_transaction_count,
  m.month_transaction_amount, m.tc40_observed_from, m.numerator_complete, m.missing_sources, m.numerator_floor, m.level,
  m.state::VARCHAR AS state, m.next_level, m.next_threshold, m.closeness, m.reason, m.region, m.region_source::VARCHAR AS region_source,
  CASE WHEN m.monitored_self THEN m.mid ELSE m.monitored_as END AS monitored_as, m.superseded_by, m.certainty::VARCHAR AS certainty,
  m.certainty_note,
  CASE WHEN m.explained_cold THEN (SELECT max(evaluated_at) FROM ratio_evaluations) ELSE m.explained_at END AS explained_at,
  m.headroom_count, m.over_by_count, m.headroom_basis::VARCHAR AS headroom_basis, m.fee_estimate, m.fee_currency,
  m.fee_basis::VARCHAR AS fee_basis
FROM ratio_mart m;

-- The mart's rows of a range of months (first days of the first and the last month).
CREATE OR REPLACE MACRO mart_ratios_between(first_day, last_day) AS TABLE
SELECT * FROM mart_ratios WHERE month >= strftime(first_day, '%Y-%m') AND month <= strftime(last_day, '%Y-%m');
