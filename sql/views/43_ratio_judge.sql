-- The judge: levels, streaks and watch bands of every series (mid × network × program), in SQL over the rules in force
-- (ratio_rules, migration 021). docs/ratios.md "Levels" states the rules this implements; test/ratio-judge.test.ts
-- holds it equal to the oracle (test/oracle/evaluate.ts) on random series.

-- Each rule with its level's rank, order and early-warning flag, and its conditions as minimums per field.
CREATE OR REPLACE VIEW int_ratio_rules AS
SELECT r.*,
  max(rank) OVER l AS level_rank,
  min(ord) OVER l AS level_ord,
  bool_or(early_warning) OVER l AS level_early,
  (year(strptime(CASE WHEN from_month = '0000-00' THEN '0001-01' ELSE from_month END || '-01', '%Y-%m-%d')) * 12
    + month(strptime(CASE WHEN from_month = '0000-00' THEN '0001-01' ELSE from_month END || '-01', '%Y-%m-%d')) - 1)::INTEGER AS from_idx,
  CASE WHEN to_month = '9999-99' THEN 2147483647
       ELSE (left(to_month, 4)::INTEGER * 12 + right(to_month, 2)::INTEGER - 1) END AS to_idx,
  CASE WHEN comparison = '>=' THEN threshold END AS ratio_ge,
  CASE WHEN comparison = '>' THEN threshold END AS ratio_gt,
  list_max([c.value FOR c IN conditions IF c.field = 'numerator_count' AND c.cmp = '>=']) AS nc_ge,
  list_max([c.value FOR c IN conditions IF c.field = 'numerator_count' AND c.cmp = '>']) AS nc_gt,
  list_max([c.value FOR c IN conditions IF c.field = 'numerator_amount' AND c.cmp = '>=']) AS na_ge,
  list_max([c.value FOR c IN conditions IF c.field = 'numerator_amount' AND c.cmp = '>']) AS na_gt,
  list_max([c.value FOR c IN conditions IF c.field = 'denominator_count' AND c.cmp = '>=']) AS dc_ge,
  list_max([c.value FOR c IN conditions IF c.field = 'denominator_count' AND c.cmp = '>']) AS dc_gt,
  list_max([c.value FOR c IN conditions IF c.field = 'denominator_amount' AND c.cmp = '>=']) AS da_ge,
  list_max([c.value FOR c IN conditions IF c.field = 'denominator_amount' AND c.cmp = '>']) AS da_gt,
  list_max([c.value FOR c IN conditions IF c.field = 'month_transaction_count' AND c.cmp = '>=']) AS mc_ge,
  list_max([c.value FOR c IN conditions IF c.field = 'month_transaction_count' AND c.cmp = '>']) AS mc_gt,
  list_max([c.value FOR c IN conditions IF c.field = 'month_transaction_amount' AND c.cmp = '>=']) AS ma_ge,
  list_max([c.value FOR c IN conditions IF c.field = 'month_transaction_amount' AND c.cmp = '>']) AS ma_gt
FROM ratio_rules r
WINDOW l AS (PARTITION BY class, network, program, level);

-- x holds against a minimum (ge: at least, gt: above), each scaled by f (1, or the watch fraction); NULL x fails.
CREATE OR REPLACE MACRO ratio_holds(x, ge, gt, f) AS (
  (ge IS NULL OR coalesce(x >= ge * f, FALSE)) AND (gt IS NULL OR coalesce(x > gt * f, FALSE))
);

-- Rule ru meets row x at fraction f: a finite ratio over the threshold, and every condition.
CREATE OR REPLACE MACRO ratio_meets(ru, x, f) AS (
  x.ratio IS NOT NULL AND isfinite(x.ratio) AND ratio_holds(x.ratio, ru.ratio_ge, ru.ratio_gt, f)
  AND ratio_holds(x.numerator_count, ru.nc_ge, ru.nc_gt, f) AND ratio_holds(x.numerator_amount, ru.na_ge, ru.na_gt, f)
  AND ratio_holds(x.denominator_count, ru.dc_ge, ru.dc_gt, f) AND ratio_holds(x.denominator_amount, ru.da_ge, ru.da_gt, f)
  AND ratio_holds(x.month_transaction_count, ru.mc_ge, ru.mc_gt, f) AND ratio_holds(x.month_transaction_amount, ru.ma_ge, ru.ma_gt, f)
);

-- A YYYY-MM month as a number of months, and back.
CREATE OR REPLACE MACRO ratio_month_idx(m) AS (left(m, 4)::INTEGER * 12 + right(m, 2)::INTEGER - 1);
CREATE OR REPLACE MACRO ratio_idx_month(i) AS (printf('%04d-%02d', i // 12, i % 12 + 1));

-- The rows judged: grouped MIDs' rows of their group's programs summed as the group's (mid: the group id).
CREATE OR REPLACE MACRO ratio_judged_rows(rows) AS TABLE
WITH x AS (
  SELECT r.*, g.group_id FROM query_table(rows) r LEFT JOIN ratio_rule_groups g ON g.mid = r.mid AND g.program = r.program
)
SELECT mid, network, program, metric, month, is_projection, is_partial, missing_sources, ratio,
  numerator_count, numerator_amount, denominator_count, denominator_amount, month_transaction_count, month_transaction_amount
FROM x WHERE group_id IS NULL
UNION ALL
SELECT group_id, network, program, metric, month, is_projection, bool_or(is_partial),
  nullif(string_agg(CASE WHEN missing_sources IS NOT NULL THEN mid || ': ' || missing_sources END, '; ' ORDER BY mid), ''),
  CASE WHEN metric = 'count' THEN sum(numerator_count) ELSE sum(numerator_amount) END
    / nullif(CASE WHEN metric = 'count' THEN sum(denominator_count) ELSE sum(denominator_amount) END, 0),
  sum(numerator_count), sum(numerator_amount), sum(denominator_count), sum(denominator_amount),
  sum(month_transaction_count), sum(month_transaction_amount)
FROM x WHERE group_id IS NOT NULL
GROUP BY group_id, network, program, metric, month, is_projection;

-- One row per judged series × reading × month × level: the level's hit, streaks and standing that month. Reading v 0 is
-- the observed figures; v 1, for a series with a projection, its projected months judged as closed on that history.
-- A month is H (a rule of the level in force is met), M (a closed month, none met), N (month to date, or a source
-- missing: neither) or R (no rule of the level in force: the streaks reset). The met run counts H since the last M or R,
-- the miss run M since the last H or R; a level is entered at an H whose met run reaches months_to_enter, left at an R,
-- at an M whose miss run reaches months_to_leave, or at an M that meets a lower level (step_down); it is held while the
-- last entry is later than the last leaving.
CREATE OR REPLACE MACRO ratio_level_runs(rows, watch_fraction) AS TABLE
WITH r AS (
  SELECT j.*, ratio_month_idx(j.month) AS month_idx FROM ratio_judged_rows(rows) j
), proj AS (
  SELECT DISTINCT mid, network, program, month_idx FROM r WHERE is_projection
), v AS (
  SELECT r.*, 0 AS v FROM r WHERE NOT is_projection
  UNION ALL
  SELECT r.* REPLACE (r.is_partial AND NOT r.is_projection AS is_partial, CASE WHEN NOT r.is_projection THEN r.missing_sources END AS missing_sources), 1
  FROM r
  SEMI JOIN (SELECT DISTINCT mid, network, program FROM proj) s ON s.mid = r.mid AND s.network = r.network AND s.program = r.program
  ANTI JOIN (SELECT * FROM proj) p ON NOT r.is_projection AND p.mid = r.mid AND p.network = r.network AND p.program = r.program AND p.month_idx = r.month_idx
), sm AS (
  SELECT mid, network, program, v, month_idx, bool_or(is_partial) AS partial, bool_or(missing_sources IS NOT NULL) AS unknown
  FROM v GROUP BY ALL
), grid AS (
  SELECT b.*, coalesce(c.class, '') AS class
  FROM (SELECT mid, network, program, v, unnest(range(min(month_idx), max(month_idx) + 1)) AS month_idx FROM sm GROUP BY ALL) b
  LEFT JOIN ratio_rule_classes c ON c.id = b.mid
), rm AS (
  SELECT g.mid, g.network, g.program, g.v, g.month_idx, ru.level, ru.level_rank, ru.level_ord, ru.level_early, ru.ord,
    ru.months_to_enter, ru.months_to_leave, ru.step_down, ru.supersedes,
    ru.from_idx <= g.month_idx AND g.month_idx <= ru.to_idx AS live,
    coalesce(ratio_meets(ru, x, 1.0), FALSE) AS meets,
    coalesce(ratio_meets(ru, x, watch_fraction), FALSE) AS band
  FROM grid g
  JOIN int_ratio_rules ru ON ru.class = g.class AND ru.network = g.network AND ru.program = g.program
  LEFT JOIN v x ON x.mid = g.mid AND x.network = g.network AND x.program = g.program AND x.v = g.v
               AND x.month_idx = g.month_idx AND x.metric = ru.metric
), lm AS (
  SELECT mid, network, program, v, month_idx, level,
    any_value(level_rank) AS rank, any_value(level_ord) AS level_ord, any_value(level_early) AS early,
    bool_or(live) AS live,
    bool_or(live AND meets) AS hit,
    min(ord) FILTER (WHERE live AND meets) AS hit_ord,
    bool_or(live AND (meets OR band)) AS near,
    greatest(1, max(months_to_enter) FILTER (WHERE live)) AS enter,
    greatest(1, max(months_to_leave) FILTER (WHERE live)) AS leave,
    coalesce(bool_or(step_down) FILTER (WHERE live), FALSE) AS step_down,
    flatten(list(supersedes) FILTER (WHERE live)) AS supersedes
  FROM rm GROUP BY mid, network, program, v, month_idx, level
), c AS (
  SELECT lm.*, coalesce(sm.partial, FALSE) AS partial, coalesce(sm.unknown, FALSE) AS unknown,
    CASE WHEN NOT lm.live THEN 'R' WHEN lm.hit THEN 'H' WHEN coalesce(sm.partial OR sm.unknown, FALSE) THEN 'N' ELSE 'M' END AS cls,
    min(CASE WHEN lm.hit AND NOT lm.early THEN lm.rank END) OVER (PARTITION BY lm.mid, lm.network, lm.program, lm.v, lm.month_idx) AS low_hit_rank
  FROM lm LEFT JOIN sm USING (mid, network, program, v, month_idx)
), g AS (
  SELECT *,
    count_if(cls IN ('M', 'R')) OVER w AS met_group,
    count_if(cls IN ('H', 'R')) OVER w AS miss_group
  FROM c WINDOW w AS (PARTITION BY mid, network, program, v, level ORDER BY month_idx ROWS UNBOUNDED PRECEDING)
), runs AS (
  SELECT *,
    count_if(cls = 'H') OVER (PARTITION BY mid, network, program, v, level, met_group ORDER BY month_idx ROWS UNBOUNDED PRECEDING) AS met_run,
    count_if(cls = 'M') OVER (PARTITION BY mid, network, program, v, level, miss_group ORDER BY month_idx ROWS UNBOUNDED PRECEDING) AS miss_run
  FROM g
), ev AS (
  SELECT *,
    cls = 'H' AND met_run >= enter AS enters,
    cls = 'R' OR (cls = 'M' AND (miss_run >= leave OR (step_down AND coalesce(low_hit_rank < rank, FALSE)))) AS leaves
  FROM runs
)
SELECT mid, network, program, v, month_idx, ratio_idx_month(month_idx) AS month, level, rank, level_ord, live, hit, hit_ord, near,
  enter, leave, met_run, miss_run, partial, unknown, supersedes,
  coalesce(max(CASE WHEN enters THEN month_idx END) OVER w > coalesce(max(CASE WHEN leaves THEN month_idx END) OVER w, -1), FALSE) AS held
FROM ev WINDOW w AS (PARTITION BY mid, network, program, v, level ORDER BY month_idx ROWS UNBOUNDED PRECEDING);

-- Each series' month: the level held (the highest rank; of equal ranks the first in the rules' order), else the watch
-- band it is in, and the level that supersedes it that month (EFM over ECP: a level met whose rules name its program).
CREATE OR REPLACE MACRO ratio_series_levels(runs) AS TABLE
WITH s AS (
  SELECT mid, network, program, v, month_idx, any_value(month) AS month,
    arg_max(level, rank::BIGINT * 1000000 - level_ord) FILTER (WHERE held) AS level,
    max(rank) FILTER (WHERE held) AS rank,
    arg_max(level, rank::BIGINT * 1000000 - level_ord) FILTER (WHERE live AND near) AS near_level,
    list(level ORDER BY level_ord) FILTER (WHERE hit) AS met,
    bool_or(partial) AS partial, bool_or(unknown) AS unknown
  FROM query_table(runs) GROUP BY ALL
), sup AS (
  SELECT mid, network, v, month_idx, program, max(superseded_by) AS superseded_by
  FROM (SELECT mid, network, v, month_idx, unnest(supersedes) AS program, level AS superseded_by
          FROM query_table(runs) WHERE hit AND len(supersedes) > 0)
  GROUP BY ALL
)
SELECT s.* EXCLUDE (near_level), CASE WHEN s.level IS NULL THEN s.near_level END AS watch,
  CASE WHEN s.level IS NOT NULL THEN sup.superseded_by END AS superseded_by
FROM s LEFT JOIN sup USING (mid, network, v, month_idx, program);
