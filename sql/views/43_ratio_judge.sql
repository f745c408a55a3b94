-- The judge: levels, streaks and watch bands of every series (mid × network × program) over the rules in force (ratio_rules),
-- as docs/ratios.md "Levels" states them; test/ratio-judge.test.ts holds it equal to test/oracle/evaluate.ts.

CREATE OR REPLACE MACRO ratio_field_label(field) AS (
  CASE field WHEN 'numerator_count' THEN 'count' WHEN 'numerator_amount' THEN 'amount' WHEN 'denominator_count' THEN 'transactions'
             WHEN 'denominator_amount' THEN 'transaction amount' WHEN 'month_transaction_count' THEN 'transactions in the month'
             WHEN 'month_transaction_amount' THEN 'transaction amount in the month' END
);

-- A YYYY-MM month as a number of months, and back.
CREATE OR REPLACE MACRO ratio_month_idx(m) AS (left(m, 4)::INTEGER * 12 + right(m, 2)::INTEGER - 1);
CREATE OR REPLACE MACRO ratio_idx_month(i) AS (printf('%04d-%02d', i // 12, i % 12 + 1));

-- Each rule with its level's rank, order and early-warning flag, and its conditions as minimums per field.
CREATE OR REPLACE VIEW int_ratio_rules AS
SELECT r.*,
  max(rank) OVER l AS level_rank,
  min(ord) OVER l AS level_ord,
  bool_or(early_warning) OVER l AS level_early,
  ratio_month_idx(from_month) AS from_idx,
  CASE WHEN to_month = '9999-99' THEN 2147483647 ELSE ratio_month_idx(to_month) END AS to_idx,
  cbp_percent(threshold) AS threshold_text,
  [{'field': c.field, 'cmp': c.cmp, 'value': c.value, 'label': ratio_field_label(c.field), 'value_text': cbp_figure(c.value)} FOR c IN conditions] AS conds,
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

-- The rows judged: grouped MIDs' rows of their group's programs summed as the group's (mid: the group id); grouped :=
-- FALSE reads rows of no group as they are, without keeping them first.
CREATE OR REPLACE MACRO ratio_judged_rows(rows, grouped := TRUE) AS TABLE
WITH x AS (
  SELECT r.*, g.group_id FROM query_table(rows) r LEFT JOIN ratio_rule_groups g ON g.mid = r.mid AND g.program = r.program
)
SELECT mid, network, program, metric, month, is_projection, is_partial, missing_sources, ratio,
  numerator_count, numerator_amount, denominator_count, denominator_amount, month_transaction_count, month_transaction_amount,
  days_covered, days_in_month
FROM (SELECT * FROM x WHERE grouped AND group_id IS NULL UNION ALL BY NAME SELECT * FROM query_table(rows) WHERE NOT grouped)
UNION ALL
SELECT group_id, network, program, metric, month, is_projection, bool_or(is_partial),
  nullif(string_agg(CASE WHEN missing_sources IS NOT NULL THEN mid || ': ' || missing_sources END, '; ' ORDER BY mid), ''),
  CASE WHEN metric = 'count' THEN sum(numerator_count) ELSE sum(numerator_amount) END / nullif(CASE WHEN metric = 'count' THEN sum(denominator_count) ELSE sum(denominator_amount) END, 0),
  sum(numerator_count), sum(numerator_amount), sum(denominator_count), sum(denominator_amount),
  sum(month_transaction_count), sum(month_transaction_amount), min(days_covered), any_value(days_in_month)
FROM x WHERE grouped AND group_id IS NOT NULL GROUP BY group_id, network, program, metric, month, is_projection;

-- One row per judged series × month × level, of the series with a state (hot, below; one left out has no level, watch
-- or run; cand: those that may be, kept first), for one reading v: 0 the observed figures; 1 each projected month
-- judged as closed on the observed runs before it. Months, runs, entries and leavings as docs/ratios.md
-- "How a month is read" says. seeds (ratio_streaks): runs kept of earlier months; a series starts from its latest one before
-- its first month in rows (none: no runs), so a refresh judges only the months that changed.
CREATE OR REPLACE MACRO ratio_level_runs(rows, watch_fraction, v := 0, seeds := 'ratio_streaks', grouped := TRUE) AS TABLE
WITH j AS MATERIALIZED (SELECT * FROM ratio_judged_rows(rows, grouped := grouped)), cand AS (
  SELECT mid, network, program FROM j WHERE ratio >= (SELECT min(threshold) FROM ratio_rules) * watch_fraction
  UNION SELECT k.mid, k.network, k.program FROM query_table(seeds) k WHERE k.v = 0 AND (k.met_run > 0 OR k.held)
  UNION SELECT mid, network, program FROM alert_states WHERE status = 'reached'
), r AS (
  -- (fig: the figures a rule reads, as one value; a macro given a row's alias packs every column per use)
  SELECT j.*, ratio_month_idx(j.month) AS month_idx, {'ratio': ratio, 'numerator_count': numerator_count, 'numerator_amount': numerator_amount,
    'denominator_count': denominator_count, 'denominator_amount': denominator_amount, 'month_transaction_count': month_transaction_count,
    'month_transaction_amount': month_transaction_amount} AS fig
  FROM j SEMI JOIN cand c ON c.mid = j.mid AND c.network = j.network AND c.program = j.program
), x AS ( -- (v = 1: the projected rows, as closed months)
  SELECT r.* REPLACE (r.is_partial AND v = 0 AS is_partial, CASE WHEN v = 0 THEN r.missing_sources END AS missing_sources) FROM r WHERE r.is_projection = (v = 1)
), series AS (
  -- each series with a rule in some month (the others have no level), numbered so that the windows below sort integers;
  -- with v = 1 one per projected month, so each is judged on the observed runs before it
  SELECT s.*, row_number() OVER () AS sid
  FROM (SELECT mid, network, program, coalesce(c.class, '') AS class, min(month_idx) AS lo, max(month_idx) AS hi
          FROM x LEFT JOIN ratio_rule_classes c ON c.id = x.mid GROUP BY mid, network, program, coalesce(c.class, ''), CASE WHEN v = 1 THEN month_idx END) s
  SEMI JOIN ratio_rules ru ON ru.class = s.class AND ru.network = s.network AND ru.program = s.program
), seed AS (
  SELECT s.sid, k.level, max(k.month_idx) AS month_idx, arg_max(k.met_run, k.month_idx) AS met_run, arg_max(k.miss_run, k.month_idx) AS miss_run,
         arg_max(k.held, k.month_idx) AS held
  FROM query_table(seeds) k JOIN series s ON s.mid = k.mid AND s.network = k.network AND s.program = k.program AND k.v = 0 AND k.month_idx < s.lo GROUP BY ALL
), near AS MATERIALIZED ( -- rows in some rule's band by their ratio alone, with their series (kept: the rules join the few)
  SELECT s.sid, s.class, x.network, x.program, x.metric, x.month_idx, x.ratio, x.fig FROM x JOIN series s ON s.mid = x.mid
    AND s.network = x.network AND s.program = x.program AND x.month_idx BETWEEN s.lo AND s.hi WHERE x.ratio >= (SELECT min(threshold) FROM ratio_rules) * watch_fraction
), hot AS (
  -- the series judged below: near a level in some month (its ratio tested first), seeded with a met run or a level held,
  -- or recorded at a level (notices read its months); the others have no met month, so no runs (a miss run needs a level)
  SELECT DISTINCT x.sid FROM near x
  JOIN (SELECT *, ratio_rule_figures(i) AS k FROM int_ratio_rules i) ru ON ru.class = x.class AND ru.network = x.network
    AND ru.program = x.program AND ru.metric = x.metric AND ru.from_idx <= x.month_idx AND x.month_idx <= ru.to_idx
  WHERE x.ratio >= coalesce(ru.ratio_ge, ru.ratio_gt) * watch_fraction AND coalesce(ratio_meets(ru.k, x.fig, watch_fraction), FALSE)
  UNION
  SELECT sid FROM seed WHERE met_run > 0 OR held
  UNION
  SELECT sid FROM series s SEMI JOIN alert_states a ON a.mid = s.mid AND a.network = s.network AND a.program = s.program AND a.status = 'reached'
), sm AS (
  -- a hot series' month: its flags, and each metric's figures (the first row of each, as the oracle reads them)
  SELECT s.sid, x.month_idx, bool_or(x.is_partial) AS partial, bool_or(x.missing_sources IS NOT NULL) AS unknown,
    any_value(x.fig) FILTER (WHERE metric = 'count') AS c, any_value(x.fig) FILTER (WHERE metric = 'amount') AS a
  FROM x JOIN series s ON s.mid = x.mid AND s.network = x.network AND s.program = x.program AND x.month_idx BETWEEN s.lo AND s.hi SEMI JOIN hot ON hot.sid = s.sid
  GROUP BY s.sid, x.month_idx
), rules AS (
  -- (only the columns read below: this CTE is kept whole, and the rules' texts would be copied to every series)
  SELECT s.sid, ru.level, ru.level_rank, ru.level_ord, ru.level_early, ru.ord, ru.metric, ru.months_to_enter, ru.months_to_leave, ru.step_down, ru.supersedes,
    ru.from_idx, ru.to_idx, ru.ratio_ge, ru.ratio_gt, ru.nc_ge, ru.nc_gt, ru.na_ge, ru.na_gt, ru.dc_ge, ru.dc_gt, ru.da_ge, ru.da_gt, ru.mc_ge, ru.mc_gt, ru.ma_ge, ru.ma_gt
  FROM series s SEMI JOIN hot USING (sid) JOIN int_ratio_rules ru ON ru.class = s.class AND ru.network = s.network AND ru.program = s.program
), grid AS (
  -- (v = 1: its month alone; a seed before the month before has no met run or level, else v = 0 would have runs up to it)
  SELECT s.sid, unnest(range(CASE WHEN v = 1 THEN s.lo ELSE coalesce((SELECT max(month_idx) FROM seed WHERE seed.sid = s.sid) + 1, s.lo) END, s.hi + 1))::INTEGER AS month_idx
  FROM series s SEMI JOIN hot USING (sid)
), gm AS (
  SELECT g.sid, g.month_idx, y.c, y.a, coalesce(y.partial, FALSE) AS partial, coalesce(y.unknown, FALSE) AS unknown
  FROM grid g LEFT JOIN sm y ON y.sid = g.sid AND y.month_idx = g.month_idx
), rm AS (
  SELECT g.sid, g.month_idx, g.partial, g.unknown, ru.level, ru.level_rank, ru.level_ord, ru.level_early, ru.ord, ru.metric, ru.months_to_enter, ru.months_to_leave,
    ru.step_down, ru.supersedes, ru.from_idx <= g.month_idx AND g.month_idx <= ru.to_idx AS live,
    CASE WHEN ru.metric = 'count' THEN g.c ELSE g.a END AS f,
    -- (a level met is in its band too: thresholds are at least 0 and the fraction at most 1, rules/thresholds.ts)
    coalesce(ratio_meets(ru, f, 1.0), FALSE) AS meets, coalesce(ratio_meets(ru, f, watch_fraction), FALSE) AS band
  FROM gm g JOIN rules ru ON ru.sid = g.sid
), lm AS (
  SELECT sid, month_idx, level_ord, any_value(partial) AS partial, any_value(unknown) AS unknown, any_value(level) AS level, any_value(level_rank) AS rank, any_value(level_early) AS early,
    bool_or(live) AS live,
    bool_or(live AND meets) AS hit,
    min(ord) FILTER (WHERE live AND meets) AS hit_ord,
    min(ord) FILTER (WHERE live AND metric = 'count') AS count_ord,
    min(ord) FILTER (WHERE live AND metric = 'amount') AS amount_ord,
    min(ord) FILTER (WHERE live) AS live_ord,
    bool_or(live AND band) AS near,
    greatest(1, max(months_to_enter) FILTER (WHERE live)) AS enter,
    greatest(1, max(months_to_leave) FILTER (WHERE live)) AS leave,
    coalesce(bool_or(step_down) FILTER (WHERE live), FALSE) AS step_down,
    flatten(list(supersedes) FILTER (WHERE live)) AS supersedes
  FROM rm GROUP BY sid, month_idx, level_ord
), c AS (
  -- the windows below read narrow rows (a window materializes every column it is given); lm's other columns join after
  SELECT sid, month_idx, level_ord, rank, enter, leave, step_down,
    CASE WHEN NOT live THEN 'R' WHEN hit THEN 'H' WHEN partial OR unknown THEN 'N' ELSE 'M' END AS cls,
    min(CASE WHEN hit AND NOT early THEN rank END) OVER (PARTITION BY sid, month_idx) AS low_hit_rank,
    NULL::INTEGER AS seed_met, NULL::INTEGER AS seed_miss, NULL::BOOLEAN AS seed_held FROM lm
  UNION ALL BY NAME
  SELECT k.sid, k.month_idx, r.level_ord, 'S' AS cls, k.met_run AS seed_met, k.miss_run AS seed_miss, k.held AS seed_held
  FROM seed k JOIN (SELECT DISTINCT sid, level, level_ord FROM rules) r ON r.sid = k.sid AND r.level = k.level
), cum AS (
  -- running counts of met (H) and closed missed (M) months; a seed brings its runs
  SELECT *,
    sum(CASE cls WHEN 'H' THEN 1 WHEN 'S' THEN seed_met ELSE 0 END) OVER w AS cum_met,
    sum(CASE cls WHEN 'M' THEN 1 WHEN 'S' THEN seed_miss ELSE 0 END) OVER w AS cum_miss
  FROM c WINDOW w AS (PARTITION BY sid, level_ord ORDER BY month_idx ROWS UNBOUNDED PRECEDING)
), runs AS (
  -- a run is the count since its last break: cum_met as of the last M or R, cum_miss as of the last H or R
  SELECT *,
    (cum_met - coalesce(max(CASE WHEN cls IN ('M', 'R') THEN cum_met END) OVER w, 0))::INTEGER AS met_run,
    (cum_miss - coalesce(max(CASE WHEN cls IN ('H', 'R') THEN cum_miss END) OVER w, 0))::INTEGER AS miss_run
  FROM cum WINDOW w AS (PARTITION BY sid, level_ord ORDER BY month_idx ROWS UNBOUNDED PRECEDING)
), ev AS (
  SELECT *,
    (cls = 'H' AND met_run >= enter) OR (cls = 'S' AND seed_held) AS enters,
    cls = 'R' OR (cls = 'M' AND (miss_run >= leave OR (step_down AND coalesce(low_hit_rank < rank, FALSE)))) OR (cls = 'S' AND NOT seed_held) AS leaves
  FROM runs
), st AS (
  SELECT *,
    coalesce(max(CASE WHEN enters THEN month_idx END) OVER w > coalesce(max(CASE WHEN leaves THEN month_idx END) OVER w, -1), FALSE) AS held
  FROM ev WINDOW w AS (PARTITION BY sid, level_ord ORDER BY month_idx ROWS UNBOUNDED PRECEDING)
)
SELECT s.mid, s.network, s.program, s.class, v::INTEGER AS v, lm.month_idx, ratio_idx_month(lm.month_idx) AS month, lm.level, lm.rank, lm.level_ord,
  lm.live, lm.hit, lm.hit_ord, lm.count_ord, lm.amount_ord, lm.live_ord, lm.near, lm.enter, lm.leave, coalesce(st.met_run, 0) AS met_run,
  CASE WHEN st.held THEN st.miss_run ELSE 0 END AS miss_run, coalesce(st.held, FALSE) AS held, lm.partial, lm.unknown, lm.supersedes
FROM lm LEFT JOIN (SELECT * FROM st WHERE cls <> 'S') st ON st.sid = lm.sid AND st.month_idx = lm.month_idx AND st.level_ord = lm.level_ord
JOIN series s ON s.sid = lm.sid;

-- Each series' month: the level held (the highest rank; of equal ranks the first in the rules' order), else the watch
-- band it is in, and the level that supersedes it that month (EFM over ECP: a level met whose rules name its program).
CREATE OR REPLACE MACRO ratio_series_levels(runs) AS TABLE
WITH s AS (
  SELECT mid, network, program, v, month_idx, any_value(month) AS month,
    arg_max(level, rank::BIGINT * 1000000 - level_ord) FILTER (WHERE held) AS level,
    max(rank) FILTER (WHERE held) AS rank,
    arg_max(level, rank::BIGINT * 1000000 - level_ord) FILTER (WHERE live AND near) AS near_level,
    [e.l FOR e IN list_sort(list({'o': level_ord, 'l': level}) FILTER (WHERE hit))] AS met, -- (an ordered aggregate is several times slower)
    bool_or(partial) AS partial, bool_or(unknown) AS unknown
  FROM query_table(runs) GROUP BY ALL
), sup AS (
  -- (of two levels superseding one program, the later in the rules' order)
  SELECT mid, network, v, month_idx, sup_program AS program, arg_max(superseded_by, (program, level_ord)) AS superseded_by
  FROM (SELECT mid, network, program, v, month_idx, level_ord, unnest(supersedes) AS sup_program, level AS superseded_by
          FROM query_table(runs) WHERE hit AND len(supersedes) > 0)
  GROUP BY mid, network, v, month_idx, sup_program
)
SELECT s.* EXCLUDE (near_level), CASE WHEN s.level IS NULL THEN s.near_level END AS watch,
  CASE WHEN s.level IS NOT NULL THEN sup.superseded_by END AS superseded_by
FROM s LEFT JOIN sup USING (mid, network, v, month_idx, program);
