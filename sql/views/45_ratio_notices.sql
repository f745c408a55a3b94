-- The judged months notices are made from (alerts/engine.ts): of every series at a level, in a watch band, or with a
-- level recorded since first_month, each month of runs (ratio_streaks' rows: observed from the month before
-- first_month, projected from it), with the rule it is told by, the row it reads and that row's headroom, over-by and
-- fee against that rule. rows: the ratio rows of those months (ratio_mart's columns).
CREATE OR REPLACE MACRO ratio_notice_months(runs, rows, first_month) AS TABLE
WITH sl AS (SELECT * FROM ratio_series_levels(runs)), hot AS (
  SELECT DISTINCT mid, network, program FROM sl WHERE level IS NOT NULL OR (v = 0 AND watch IS NOT NULL)
  UNION
  SELECT DISTINCT mid, network, program FROM alert_states WHERE status = 'reached' AND month >= first_month
), m AS (
  SELECT sl.*, coalesce(c.class, '') AS class,
    CASE WHEN h.hit THEN h.hit_ord ELSE h.live_ord END AS rule_ord, w.live_ord AS watch_ord
  FROM sl
  SEMI JOIN hot ON hot.mid = sl.mid AND hot.network = sl.network AND hot.program = sl.program
  LEFT JOIN ratio_rule_classes c ON c.id = sl.mid
  LEFT JOIN query_table(runs) h ON h.mid = sl.mid AND h.network = sl.network AND h.program = sl.program AND h.v = sl.v
                               AND h.month_idx = sl.month_idx AND h.level = sl.level
  LEFT JOIN query_table(runs) w ON w.mid = sl.mid AND w.network = sl.network AND w.program = sl.program AND w.v = sl.v
                               AND w.month_idx = sl.month_idx AND w.level = sl.watch
), hr AS ( -- (these series' rows alone, before a group's are summed: the month's others are most of them)
  SELECT r.* FROM query_table(rows) r LEFT JOIN ratio_rule_groups g ON g.mid = r.mid AND g.program = r.program
  SEMI JOIN (SELECT DISTINCT mid, network, program FROM m) k ON k.mid = coalesce(g.group_id, r.mid) AND k.network = r.network AND k.program = r.program
), jh AS (
  SELECT j.*, j.is_projection::INTEGER AS v, unnest(ratio_headroom_inputs(j.program, j.is_projection, j.is_partial, j.days_covered, j.days_in_month))
  FROM ratio_judged_rows('hr') j SEMI JOIN m USING (mid, network, program, month)
), jr AS (
  SELECT j.*, CASE WHEN j.den_prev THEN j.denominator_count ELSE j.denominator_count * j.hf END AS den_h,
    CASE WHEN j.metric = 'count' THEN j.numerator_count ELSE j.numerator_amount END AS numerator,
    CASE WHEN j.metric = 'count' THEN j.denominator_count ELSE j.denominator_amount END AS denominator,
    CASE WHEN j.den_prev THEN strftime(strptime(j.month || '-01', '%Y-%m-%d') - INTERVAL 1 MONTH, '%Y-%m') ELSE j.month END AS denominator_month
  FROM jh j
), t AS (
  SELECT m.*, ru AS ru, wr AS wr,
    -- (the row told: the level rule's metric, else the count row, else any; a month's missing sources: its first row's
    -- of a metric the series' rules read, as the judge reads them)
    (SELECT arg_min(x, CASE WHEN x.metric = ru.metric THEN 0 WHEN x.metric = 'count' THEN 1 ELSE 2 END)
       FROM jr x WHERE x.mid = m.mid AND x.network = m.network AND x.program = m.program AND x.month = m.month AND x.v = m.v) AS x,
    (SELECT arg_min(x.missing_sources, x.metric) FROM jr x WHERE x.mid = m.mid AND x.network = m.network AND x.program = m.program
        AND x.month = m.month AND x.v = 0 AND m.v = 0 AND x.missing_sources IS NOT NULL
        AND x.metric IN (SELECT ru.metric FROM ratio_rules ru WHERE ru.class = m.class AND ru.network = m.network AND ru.program = m.program)) AS missing_sources
  FROM m
  LEFT JOIN int_ratio_rules ru ON ru.class = m.class AND ru.ord = m.rule_ord
  LEFT JOIN int_ratio_rules wr ON wr.class = m.class AND wr.ord = m.watch_ord
)
SELECT t.mid, t.network, t.program, t.month, t.v, t.level, t.rank, t.met, t.watch, t.superseded_by, t.partial OR t.v = 1 AS is_partial,
  t.missing_sources,
  t.ru.id AS rule_id, t.ru.level AS rule_level, t.ru.metric AS rule_metric, t.ru.comparison AS comparison, t.ru.threshold AS ratio_threshold,
  t.wr.id AS watch_rule_id, t.wr.level AS watch_rule_level, t.wr.metric AS watch_rule_metric, t.wr.comparison AS watch_comparison,
  t.wr.threshold AS watch_threshold,
  t.x.metric, t.x.numerator, t.x.denominator, t.x.denominator_month, t.x.ratio, t.x.days_covered, t.x.days_in_month,
  t.x.basis AS headroom_basis,
  CASE WHEN t.wr.id IS NOT NULL THEN ratio_headroom(t.wr, t.x) END AS watch_headroom,
  CASE WHEN t.ru.id IS NOT NULL THEN ratio_over_by(t.ru, t.x) END AS over_by_count,
  CASE WHEN t.ru.id IS NOT NULL THEN ratio_fee(f.f, t.ru, t.x) END AS fee_estimate,
  CASE WHEN t.ru.id IS NOT NULL AND ratio_fee(f.f, t.ru, t.x) IS NOT NULL THEN f.f.currency END AS fee_currency,
  CASE WHEN t.ru.id IS NOT NULL AND ratio_fee(f.f, t.ru, t.x) IS NOT NULL THEN f.f.basis END AS fee_basis
FROM t
LEFT JOIN ratio_fees_in(rows) f ON f.network = t.network AND f.program = t.program AND f.level = t.ru.level AND f.month = t.month;
