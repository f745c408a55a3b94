-- Each ratio row explained from its series' judged month (sql/views/43_ratio_judge.sql): state, the next level and how
-- close, why not reached, region, certainty, headroom, over-by and fee. docs/ratios.md "Columns" defines each.

CREATE OR REPLACE MACRO ratio_level_name(level) AS (CASE WHEN level IN ('ecm', 'hecm', 'efm') THEN upper(level) ELSE level END);

-- What of rule ru row x fails, as texts: its ratio ("ratio 1.31 % < 1.50 %"), else NULL; a condition c ("count 43 <
-- 1,500 minimum"), else NULL; every condition joined ('' or NULL when none fails). A rule's first three conditions are
-- fields of ru (c1..c3): no lambda per row, unless a rule has more.
CREATE OR REPLACE MACRO ratio_failed_ratio(ru, x) AS (
  CASE WHEN x.ratio IS NULL OR NOT isfinite(x.ratio) THEN 'no ratio (' || coalesce(x.no_ratio_reason, 'no figures') || ')'
       WHEN (ru.comparison = '>=' AND NOT (x.ratio >= ru.threshold)) OR (ru.comparison = '>' AND NOT (x.ratio > ru.threshold))
         THEN 'ratio ' || cbp_percent(x.ratio) || CASE WHEN ru.comparison = '>=' THEN ' < ' ELSE ' not above ' END || ru.threshold_text END
);
CREATE OR REPLACE MACRO ratio_failed_condition(c, x) AS (cbp_failed_condition(c, cbp_condition_value(c.field, x.numerator_count,
  x.numerator_amount, x.denominator_count, x.denominator_amount, x.month_transaction_count, x.month_transaction_amount)));
CREATE OR REPLACE MACRO ratio_failed_conditions(ru, x) AS (CASE WHEN len(ru.conds) <= 3
  THEN concat_ws('; ', ratio_failed_condition(ru.c1, x), ratio_failed_condition(ru.c2, x), ratio_failed_condition(ru.c3, x))
  ELSE array_to_string([ratio_failed_condition(c, x) FOR c IN ru.conds], '; ') END);

-- The fewest more events k >= 0 making every condition of rule ru hold for row x (count rows and rules only); NULL where
-- none can: a condition on amounts or transactions not met (same-month figures of an open month projected, x.hf).
CREATE OR REPLACE MACRO ratio_up_to(target, cmp, num) AS (
  greatest(0, CASE WHEN cmp = '>=' THEN ceil(round(target - num, 9)) ELSE floor(round(target - num, 9)) + 1 END)::DOUBLE
);
CREATE OR REPLACE MACRO ratio_headroom(ru, x) AS (
  CASE WHEN x.metric <> 'count' OR ru.metric <> 'count' OR x.numerator_count IS NULL OR NOT coalesce(x.den_h > 0, FALSE) THEN NULL
       WHEN NOT (ratio_holds(x.numerator_amount, ru.na_ge, ru.na_gt, 1)
                 AND ratio_holds(x.denominator_count * CASE WHEN x.den_prev THEN 1 ELSE x.hf END, ru.dc_ge, ru.dc_gt, 1)
                 AND ratio_holds(x.denominator_amount * CASE WHEN x.den_prev THEN 1 ELSE x.hf END, ru.da_ge, ru.da_gt, 1)
                 AND ratio_holds(x.month_transaction_count * x.hf, ru.mc_ge, ru.mc_gt, 1)
                 AND ratio_holds(x.month_transaction_amount * x.hf, ru.ma_ge, ru.ma_gt, 1)) THEN NULL
       ELSE greatest(ratio_up_to(ru.threshold * x.den_h, ru.comparison, x.numerator_count),
                     CASE WHEN ru.nc_ge IS NULL THEN 0 ELSE ratio_up_to(ru.nc_ge, '>=', x.numerator_count) END,
                     CASE WHEN ru.nc_gt IS NULL THEN 0 ELSE ratio_up_to(ru.nc_gt, '>', x.numerator_count) END) END
);

-- The fewest events m >= 1 fewer that would have left the row below ru's ratio or one of its count minimums.
CREATE OR REPLACE MACRO ratio_down_to(target, cmp, num) AS (
  greatest(1, CASE WHEN cmp = '>=' THEN floor(round(num - target, 9)) + 1 ELSE ceil(round(num - target, 9)) END)::DOUBLE
);
CREATE OR REPLACE MACRO ratio_over_by(ru, x) AS (
  CASE WHEN x.metric <> 'count' OR x.numerator_count IS NULL OR NOT coalesce(x.den_h > 0, FALSE) THEN NULL
       ELSE least(ratio_down_to(ru.threshold * x.den_h, ru.comparison, x.numerator_count),
                  CASE WHEN ru.nc_ge IS NULL THEN 'inf' ELSE ratio_down_to(ru.nc_ge, '>=', x.numerator_count) END,
                  CASE WHEN ru.nc_gt IS NULL THEN 'inf' ELSE ratio_down_to(ru.nc_gt, '>', x.numerator_count) END) END
);

-- What headroom reads of a row: whether its denominator is the previous month's, an open month's factor to its end
-- (hf: the month's own figures are projected, a previous month's denominator is not), and the basis that makes.
CREATE OR REPLACE MACRO ratio_headroom_inputs(program, is_projection, is_partial, days_covered, days_in_month) AS (
  {'den_prev': ratio_den_prev(program),
   'hf': CASE WHEN NOT is_projection AND is_partial AND coalesce(days_covered, 0) <> 0
                   AND coalesce(days_in_month, 0) <> 0 THEN days_in_month::DOUBLE / days_covered ELSE 1.0 END,
   'basis': CASE WHEN ratio_den_prev(program) THEN 'previous_month'
                 WHEN is_projection OR (is_partial AND coalesce(days_covered, 0) <> 0 AND coalesce(days_in_month, 0) <> 0) THEN 'projected_month'
                 ELSE 'closed_month' END}
);

-- The fee of a count row x at rule ru's level (f: the fee in force, per_event × every counted event or those above the
-- threshold's count), rounded to cents; NULL without a fee or figures.
CREATE OR REPLACE MACRO ratio_fee(f, ru, x) AS (
  CASE WHEN f IS NULL OR x.metric <> 'count' OR x.numerator_count IS NULL THEN NULL
       WHEN f.basis = 'events_above_threshold' AND x.denominator_count IS NULL THEN NULL
       ELSE round((CASE WHEN f.basis = 'events_above_threshold' THEN greatest(0, x.numerator_count - floor(round(ru.threshold * x.denominator_count, 9)))
                        ELSE x.numerator_count END) * f.per_event * 100) / 100 END
);

-- The fee in force for each network × program × level and month (of two, the first in the thresholds file).
CREATE OR REPLACE MACRO ratio_fees_in(months) AS TABLE
SELECT f.network, f.program, f.level, m.month, arg_min({'per_event': f.per_event, 'currency': f.currency, 'basis': f.basis}, f.ord) AS f
FROM ratio_fees f JOIN (SELECT DISTINCT month FROM query_table(months)) m ON f.from_month <= m.month AND m.month <= f.to_month
GROUP BY ALL;

-- The rule figures the macros above read (ru), narrow: a whole joined row passed to a macro is packed per use.
CREATE OR REPLACE MACRO ratio_rule_figures(r) AS (
  struct_pack(comparison := r.comparison, threshold := r.threshold, threshold_text := r.threshold_text, metric := r.metric,
    conds := r.conds, c1 := r.conds[1], c2 := r.conds[2], c3 := r.conds[3],
    ratio_ge := r.ratio_ge, ratio_gt := r.ratio_gt, nc_ge := r.nc_ge, nc_gt := r.nc_gt, na_ge := r.na_ge, na_gt := r.na_gt, dc_ge := r.dc_ge,
    dc_gt := r.dc_gt, da_ge := r.da_ge, da_gt := r.da_gt, mc_ge := r.mc_ge, mc_gt := r.mc_gt, ma_ge := r.ma_ge, ma_gt := r.ma_gt)
);

-- Ratio rows with what monitors them: the id judged (a group's, or the MID), its class and region, and whether a rule
-- of the row's metric applies to the series in any month (ruled: else it has no level, state or reason).
CREATE OR REPLACE MACRO ratio_monitored(rows) AS TABLE
SELECT r.*, coalesce(g.group_id, r.mid) AS judged_as, coalesce(rc.class, '') AS class,
  coalesce(rc.region, (SELECT default_region FROM ratio_rule_set LIMIT 1)) AS region,
  CASE WHEN rc.region IS NOT NULL THEN rc.region_source ELSE 'default' END AS region_source,
  ru.metric IS NOT NULL AS ruled
FROM query_table(rows) r
LEFT JOIN ratio_rule_groups g ON g.mid = r.mid AND g.program = r.program
LEFT JOIN ratio_rule_classes rc ON rc.id = coalesce(g.group_id, r.mid)
LEFT JOIN (SELECT DISTINCT class, network, program, metric FROM ratio_rules) ru
  ON ru.class = coalesce(rc.class, '') AND ru.network = r.network AND ru.program = r.program AND ru.metric = r.metric;

-- Of monitored rows (ratio_monitored's), the ruled ones: what the judge (ratio_level_runs) reads.
CREATE OR REPLACE MACRO ratio_ruled(monitored) AS TABLE SELECT * FROM query_table(monitored) WHERE ruled;

-- What ratio_explain joins to rows, each made before it (inside, their hash tables take a second thread's memory).
-- Per series, reading and month: the level held and the next above it for each metric (c count, a amount), each with
-- its first rule in force of the metric.
CREATE OR REPLACE MACRO ratio_run_levels(runs) AS TABLE
WITH sl AS (SELECT * FROM ratio_series_levels(runs))
SELECT ru.mid, ru.network, ru.program, ru.v, ru.month_idx,
  any_value(sl.level) AS level, any_value(sl.watch) AS watch, any_value(sl.superseded_by) AS superseded_by,
  any_value(sl.partial OR ru.v = 1) AS partial,
  bool_or(ru.count_ord IS NOT NULL) AS mine_c, bool_or(ru.amount_ord IS NOT NULL) AS mine_a,
  any_value({'c': ru.count_ord, 'a': ru.amount_ord, 'hit': ru.hit, 'leave': ru.leave, 'miss_run': ru.miss_run}) FILTER (WHERE ru.level = sl.level) AS cur,
  arg_min({'level': ru.level, 'ord': ru.count_ord, 'hit': ru.hit, 'held': ru.held, 'enter': ru.enter, 'met_run': ru.met_run},
          ru.rank::BIGINT * 1000000 + ru.level_ord) FILTER (WHERE ru.count_ord IS NOT NULL AND ru.rank > coalesce(sl.rank, -2147483648)) AS nxt_c,
  arg_min({'level': ru.level, 'ord': ru.amount_ord, 'hit': ru.hit, 'held': ru.held, 'enter': ru.enter, 'met_run': ru.met_run},
          ru.rank::BIGINT * 1000000 + ru.level_ord) FILTER (WHERE ru.amount_ord IS NOT NULL AND ru.rank > coalesce(sl.rank, -2147483648)) AS nxt_a
FROM query_table(runs) ru
JOIN sl ON sl.mid = ru.mid AND sl.network = ru.network AND sl.program = ru.program AND sl.v = ru.v AND sl.month_idx = ru.month_idx
GROUP BY ru.mid, ru.network, ru.program, ru.v, ru.month_idx;

-- The same of a series without runs (no level, no met month, no run) per class and month: its lowest level in force.
CREATE OR REPLACE MACRO ratio_class_levels(months) AS TABLE
SELECT class, network, program, month_idx, bool_or(count_ord IS NOT NULL) AS mine_c, bool_or(amount_ord IS NOT NULL) AS mine_a,
  arg_min({'level': level, 'ord': count_ord, 'hit': FALSE, 'held': FALSE, 'enter': enter, 'met_run': 0}, k) FILTER (WHERE count_ord IS NOT NULL) AS nxt_c,
  arg_min({'level': level, 'ord': amount_ord, 'hit': FALSE, 'held': FALSE, 'enter': enter, 'met_run': 0}, k) FILTER (WHERE amount_ord IS NOT NULL) AS nxt_a
FROM (SELECT class, network, program, m.month_idx, level, any_value(level_rank)::BIGINT * 1000000 + level_ord AS k,
        min(ord) FILTER (WHERE metric = 'count') AS count_ord, min(ord) FILTER (WHERE metric = 'amount') AS amount_ord, greatest(1, max(months_to_enter)) AS enter
      FROM int_ratio_rules JOIN (SELECT DISTINCT ratio_month_idx(month) AS month_idx FROM query_table(months)) m ON from_idx <= m.month_idx AND m.month_idx <= to_idx
      GROUP BY class, network, program, m.month_idx, level, level_ord) GROUP BY ALL;

-- The rules' figures and texts the rows are explained by, by class and order.
CREATE OR REPLACE VIEW int_ratio_rule_figures AS
SELECT class, ord, level, threshold, certainty, certainty_note, ratio_rule_figures(int_ratio_rules) AS k FROM int_ratio_rules;

-- Monitored rows explained by tables of ratio_run_levels (of their runs), ratio_class_levels, int_ratio_rule_figures and
-- ratio_fees_in (store/ratio-refresh.ts explainFrom). A row not ruled has every judged column NULL.
CREATE OR REPLACE MACRO ratio_explain(rows, levels, class_levels, rules, fees) AS TABLE
WITH x0 AS (
  SELECT r.* EXCLUDE (ruled), r.is_projection::INTEGER AS v, ratio_month_idx(r.month) AS month_idx,
    unnest(ratio_headroom_inputs(r.program, r.is_projection, r.is_partial, r.days_covered, r.days_in_month))
  FROM query_table(rows) r
), x AS (
  SELECT x1.*, struct_pack(ratio, no_ratio_reason, metric, numerator_count, numerator_amount, denominator_count, denominator_amount,
    month_transaction_count, month_transaction_amount, den_h, den_prev, hf) AS xk
  FROM (SELECT x0.*, CASE WHEN den_prev THEN denominator_count ELSE denominator_count * hf END AS den_h FROM x0) x1
), xl AS (
  SELECT x.*, lv.level AS s_level, lv.watch, lv.superseded_by AS s_superseded_by, lv.partial AS s_partial,
    coalesce(CASE WHEN x.metric = 'count' THEN lv.mine_c ELSE lv.mine_a END, CASE WHEN x.metric = 'count' THEN lc.mine_c ELSE lc.mine_a END, FALSE) AS mine,
    lv.cur, CASE WHEN x.metric = 'count' THEN lv.cur.c ELSE lv.cur.a END AS cur_ord,
    CASE WHEN lv.mid IS NULL AND x.metric = 'count' THEN lc.nxt_c WHEN lv.mid IS NULL THEN lc.nxt_a WHEN x.metric = 'count' THEN lv.nxt_c ELSE lv.nxt_a END AS nxt
  FROM x
  LEFT JOIN query_table(levels) lv ON lv.mid = x.judged_as AND lv.network = x.network AND lv.program = x.program AND lv.v = x.v AND lv.month_idx = x.month_idx
  LEFT JOIN query_table(class_levels) lc ON lc.class = x.class AND lc.network = x.network AND lc.program = x.program AND lc.month_idx = x.month_idx
), e AS (
  -- everything read of the rules here, where they are joined: cr the level held's rule of the row's metric, nr the next's
  SELECT x.* EXCLUDE (den_prev, s_superseded_by, cur_ord), CASE WHEN mine THEN s_superseded_by END AS superseded_by,
    cr.ord IS NOT NULL AS has_cr, nr.threshold AS next_threshold,
    CASE WHEN cr.ord IS NOT NULL THEN cr.certainty WHEN nxt IS NOT NULL THEN nr.certainty END AS certainty,
    CASE WHEN cr.ord IS NOT NULL THEN cr.certainty_note WHEN nxt IS NOT NULL THEN nr.certainty_note END AS certainty_note,
    CASE WHEN nxt IS NOT NULL THEN nr.threshold WHEN cr.ord IS NOT NULL THEN cr.threshold END AS measured_threshold,
    CASE WHEN nxt IS NOT NULL THEN ratio_failed_ratio(nr.k, x.xk) END AS failed_ratio,
    CASE WHEN nxt IS NOT NULL THEN ratio_failed_conditions(nr.k, x.xk) END AS failed_conds,
    CASE WHEN nxt IS NOT NULL THEN ratio_headroom(nr.k, x.xk) END AS headroom_count,
    CASE WHEN cr.ord IS NOT NULL AND ratio_meets(cr.k, x.xk, 1.0) THEN ratio_over_by(cr.k, x.xk) END AS over_by_count,
    CASE WHEN cr.ord IS NOT NULL AND s_superseded_by IS NULL THEN ratio_fee(fee.f, cr.k, x.xk) END AS fee_estimate, fee.f AS fee
  FROM xl x
  LEFT JOIN query_table(rules) cr ON cr.class = x.class AND cr.ord = x.cur_ord
  LEFT JOIN query_table(rules) nr ON nr.class = x.class AND nr.ord = x.nxt.ord
  LEFT JOIN query_table(fees) fee ON fee.network = x.network AND fee.program = x.program AND fee.level = cr.level AND fee.month = x.month
), t AS (
  SELECT e.*, CASE WHEN mine THEN s_level END AS level,
    concat_ws('; ', CASE WHEN superseded_by IS NOT NULL THEN 'assessed as ' || ratio_level_name(superseded_by) END,
      CASE WHEN mine AND s_level IS NOT NULL AND NOT cur.hit AND NOT s_partial
           THEN ratio_level_name(s_level) || ' kept until ' || cur.leave || ' consecutive months below (' || cur.miss_run || ' so far)' END,
      failed_ratio, nullif(failed_conds, ''),
      CASE WHEN failed_ratio IS NULL AND coalesce(failed_conds, '') = '' AND nxt IS NOT NULL AND NOT nxt.held THEN 'needs ' || nxt.enter || ' consecutive months (' || nxt.met_run || ' so far)' END,
      CASE WHEN certainty = 'unconfirmed' AND certainty_note IS NOT NULL AND (s_level IS NOT NULL OR coalesce(nxt.hit, FALSE)) THEN certainty_note END) AS reason_text,
    CASE WHEN NOT mine THEN NULL WHEN s_level IS NOT NULL THEN 'level' WHEN watch IS NOT NULL THEN 'watch' ELSE 'clear' END AS state0
  FROM e
)
SELECT t.* EXCLUDE (xk, class, month_idx, judged_as, v, hf, basis, den_h, mine, s_level, watch, s_partial, cur, nxt, has_cr, next_threshold, certainty, certainty_note,
                    measured_threshold, failed_ratio, failed_conds, headroom_count, over_by_count, fee_estimate, fee, level, reason_text, state0, superseded_by),
  level,
  CASE WHEN state0 = 'clear' AND missing_sources IS NOT NULL THEN 'unknown' ELSE state0 END AS state,
  CASE WHEN mine THEN nxt.level END AS next_level,
  CASE WHEN mine THEN next_threshold END AS next_threshold,
  CASE WHEN mine AND ratio IS NOT NULL AND measured_threshold > 0 THEN ratio / measured_threshold END AS closeness,
  CASE WHEN state0 IS NULL THEN NULL
       ELSE nullif(concat_ws('; ', missing_sources, CASE WHEN numerator_floor THEN 'disputes counted from the MID report (the chargeback report lists fewer)' END,
                             nullif(reason_text, '')), '') END AS reason,
  judged_as AS monitored_as,
  superseded_by,
  CASE WHEN mine THEN certainty END AS certainty,
  CASE WHEN mine THEN certainty_note END AS certainty_note,
  CASE WHEN mine THEN headroom_count END AS headroom_count,
  CASE WHEN mine THEN over_by_count END AS over_by_count,
  CASE WHEN mine AND (headroom_count IS NOT NULL OR over_by_count IS NOT NULL) THEN basis END AS headroom_basis,
  CASE WHEN mine THEN fee_estimate END AS fee_estimate,
  CASE WHEN mine AND fee_estimate IS NOT NULL THEN fee.currency END AS fee_currency,
  CASE WHEN mine AND fee_estimate IS NOT NULL THEN fee.basis END AS fee_basis
FROM t;
