// What the chance of a breach reads and keeps (alerts/forecast.ts computes it): the open months' rows with their recent
// transactions and history size, the daily counts of the series near a level (sql/views/46_ratio_forecast.sql), and
// ratio_forecasts, made again whenever the ratio table was written. docs/ratios.md "The chance of a breach".
import type { Store } from './db.ts';
import { stageRows, type StageType } from './insert-rows.ts';
import type { MonthToDate } from '../contract/ratios.ts';
import { numOrNull, textOrNull } from './nullable.ts';
import { dropTemp, monthStartSql as day, sqlText } from './sql-text.ts';
import { midRanges, midsIn, type MidRange } from './table-slices.ts';
import { judgedRows } from './ratio-refresh.ts';
import { monthIndex } from '../lib/utc.ts';

/** Days of history a forecast reads: six four-week blocks. */
export const HISTORY_DAYS = 168;

/** An open month's observed row (month to date, with a ratio), as a forecast reads it. */
export interface OpenRow extends MonthToDate {
  mid: string;
  network: string;
  program: string;
  month: string;
  /** how the last three closed months' own transactions (of the row's metric) vary: their coefficient of variation; null: fewer than two */
  monthly_cv: number | null;
  /** the history's first day with data (the series' first month), and its total count */
  first_day: string;
  history_total: number;
  /** the closed months of the six before: their numerator counts summed, and their days */
  past_count: number;
  past_days: number;
}

/** One level's forecast of an open month's series: a row of ratio_forecasts. */
export interface KeptForecast {
  mid: string;
  network: string;
  program: string;
  metric: string;
  month: string;
  level: string;
  rank: number;
  rule_id: string;
  is_headline: boolean;
  days_covered: number;
  days_in_month: number;
  count_to_date: number;
  needed_count: number | null;
  chance: number;
  expected: number;
  low80: number;
  high80: number;
  paceDay: number | null;
  met_to_date: boolean;
}

/** The open rows' filter: observed months to date with a ratio to read, judged. */
const OPEN = 'is_partial AND NOT is_projection AND ratio IS NOT NULL AND days_covered > 0 AND state IS NOT NULL';

/** The first and last open months of the ratio table, and every one: each read takes them as literals, to skip the other months' row groups. */
export type OpenMonths = { lo: string; hi: string; all: string[] };

/**
 * The open months, and ranges of MIDs of at most `most` open rows each (an open row reads its month's and the seven
 * before): what the forecasts and early warnings read at a time; null without an open month.
 */
export async function openRanges(store: Store, most = judgedRows(store.memoryLimit) / 8): Promise<{ months: OpenMonths; ranges: MidRange[] } | null> {
  const all = (await store.all<{ month: string }>(`SELECT DISTINCT month FROM ratio_mart WHERE ${OPEN} ORDER BY month`)).map((r) => String(r.month));
  if (!all.length) return null;
  const months = { lo: all[0]!, hi: all.at(-1)!, all };
  return { months, ranges: await midRanges(store, 'ratio_mart', most, `WHERE month BETWEEN ${sqlText(months.lo)} AND ${sqlText(months.hi)} AND ${OPEN}`) };
}

/** The daily counts the open months' forecasts read (ratio_daily_between, HISTORY_DAYS before the first to the last). */
const DAILY = '_cbp_forecast_daily';

/** Stages the daily counts once for every range's openRows and histories (each range read them whole); drop() when done. */
export async function stageDaily(store: Pick<Store, 'run'>, months: OpenMonths): Promise<{ drop: () => Promise<void> }> {
  await store.run(`CREATE OR REPLACE TEMP TABLE ${DAILY} AS
    SELECT * FROM ratio_daily_between((${day(months.lo)} - INTERVAL ${HISTORY_DAYS} DAY)::DATE, ${day(months.hi)})`);
  return { drop: () => store.run(dropTemp('TABLE', DAILY)) };
}

/** The open months' rows (month to date, a ratio to read) of the MIDs in `range`, with their series' recent transactions and history size (stageDaily first). */
export async function openRows(store: Pick<Store, 'mapRows'>, months: OpenMonths, range?: MidRange): Promise<OpenRow[]> {
  const [lo, hi] = [sqlText(months.lo), sqlText(months.hi)];
  // One part per open month, its month and index as literals.
  const perMonth = (part: (m: string, i: number) => string) => months.all.map((m) => part(m, monthIndex(m))).join('\n      UNION ALL ');
  return store.mapRows<OpenRow>(`
    WITH o AS (
      SELECT mid, network::VARCHAR AS network, program::VARCHAR AS program, metric::VARCHAR AS metric, month,
        numerator_count, numerator_amount, denominator_count, denominator_amount, month_transaction_count, month_transaction_amount,
        days_covered, days_in_month, ratio_den_prev(program::VARCHAR) AS den_prev
      FROM ratio_mart
      WHERE month BETWEEN ${lo} AND ${hi} AND ${OPEN} ${midsIn(range)}
    ), p AS (
      -- The six closed months before (the last three's transactions vary as the denominator's forecast reads them).
      SELECT p.mid, p.network::VARCHAR AS network, p.program::VARCHAR AS program, p.metric::VARCHAR AS metric,
        ratio_month_idx(p.month) AS m_idx,
        p.numerator_count, p.days_in_month, p.month_transaction_count, p.month_transaction_amount
      FROM ratio_mart p
      WHERE NOT p.is_projection AND NOT p.is_partial AND p.state IS NOT NULL
        AND p.month >= strftime(${day(months.lo)} - INTERVAL 7 MONTH, '%Y-%m') AND p.month < ${hi} ${midsIn(range, 'p.mid')}
    ), past AS ( -- (each series' closed months before each open month, summed before they meet the open rows)
      ${perMonth((m, i) => `SELECT p.mid, p.network, p.program, p.metric, ${sqlText(m)} AS month, min(p.m_idx) AS first_idx,
        sum(p.numerator_count) FILTER (WHERE p.m_idx >= ${i - 6}) AS past_count, sum(p.days_in_month) FILTER (WHERE p.m_idx >= ${i - 6}) AS past_days,
        stddev_samp(p.month_transaction_count) FILTER (WHERE p.m_idx >= ${i - 3} AND p.month_transaction_count > 0)
          / avg(p.month_transaction_count) FILTER (WHERE p.m_idx >= ${i - 3} AND p.month_transaction_count > 0) AS cv_count,
        stddev_samp(p.month_transaction_amount) FILTER (WHERE p.m_idx >= ${i - 3} AND p.month_transaction_amount > 0)
          / avg(p.month_transaction_amount) FILTER (WHERE p.m_idx >= ${i - 3} AND p.month_transaction_amount > 0) AS cv_amount
      FROM p WHERE p.m_idx < ${i} AND p.m_idx >= ${i - 7} GROUP BY ALL`)}
    ), h AS (
      ${perMonth((m) => `SELECT d.mid, d.network, d.program, ${sqlText(m)} AS month, sum(d.n) AS total FROM ${DAILY} d
      WHERE d.day < ${day(m)} AND d.day >= (${day(m)} - INTERVAL ${HISTORY_DAYS} DAY)::DATE ${midsIn(range, 'd.mid')} GROUP BY ALL`)}
    )
    SELECT o.*, p.cv_count, p.cv_amount,
      coalesce(ratio_idx_month(p.first_idx), o.month) || '-01' AS first_day,
      coalesce(h.total, 0) AS history_total, coalesce(p.past_count, 0) AS past_count, coalesce(p.past_days, 0) AS past_days
    FROM o
    LEFT JOIN past p USING (mid, network, program, metric, month)
    LEFT JOIN h USING (mid, network, program, month)`, undefined, (col) => {
    const [mid, network, program, metric, month, nc, na, dc, da, mc, ma, cov, dim, prev, cvc, cva, first, total, pc, pd] = ['mid', 'network', 'program',
      'metric', 'month', 'numerator_count', 'numerator_amount', 'denominator_count', 'denominator_amount', 'month_transaction_count',
      'month_transaction_amount', 'days_covered', 'days_in_month', 'den_prev', 'cv_count', 'cv_amount', 'first_day', 'history_total', 'past_count', 'past_days'].map(col);
    return (i) => ({
      mid: String(mid![i]), network: String(network![i]), program: String(program![i]), metric: metric![i] as 'count' | 'amount', month: String(month![i]),
      numerator_count: Number(nc![i] ?? 0), numerator_amount: Number(na![i] ?? 0), denominator_count: numOrNull(dc![i]), denominator_amount: numOrNull(da![i]),
      month_transaction_count: numOrNull(mc![i]), month_transaction_amount: numOrNull(ma![i]), days_covered: Number(cov![i]), days_in_month: Number(dim![i]),
      den_prev: prev![i] === true, monthly_cv: numOrNull(metric![i] === 'count' ? cvc![i] : cva![i]),
      first_day: String(first![i]), history_total: Number(total![i]), past_count: Number(pc![i]), past_days: Number(pd![i]),
    });
  });
}

export const seriesKey = (r: { mid: string; network: string; program: string; month: string }) => `${r.mid}\u0000${r.network}\u0000${r.program}\u0000${r.month}`;

/** Daily counts of the series asked for (of the MIDs in `range`), HISTORY_DAYS before each one's month, zero-filled from its first day with data (stageDaily first). */
export async function histories(store: Pick<Store, 'columns' | 'run' | 'conn'>, rows: OpenRow[], range?: MidRange): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>();
  const wanted = [...new Map(rows.map((r) => [seriesKey(r), r])).values()];
  if (!wanted.length) return out;
  const from = wanted.reduce((a, r) => (r.month < a ? r.month : a), '9999-99');
  const to = wanted.reduce((a, r) => (r.month > a ? r.month : a), '0000-00');
  // Each series' open months (one, as a rule), by MID, network and program.
  const months = new Map<string, OpenRow[]>();
  for (const r of wanted) {
    const k = `${r.mid}\u0000${r.network}\u0000${r.program}`;
    months.set(k, [...(months.get(k) ?? []), r]);
    out.set(seriesKey(r), Array(HISTORY_DAYS).fill(0) as number[]);
  }
  // The series asked for staged by the appender, their days read column by column.
  await store.run('CREATE OR REPLACE TEMP TABLE _cbp_forecast_series (mid VARCHAR, network VARCHAR, program VARCHAR)');
  let c: Awaited<ReturnType<Store['columns']>>;
  try {
    await stageRows(store, '_cbp_forecast_series', ['text', 'text', 'text'], [...months.keys()], (k, i) => k.split('\u0000')[i]);
    c = await store.columns(`
      SELECT d.mid, d.network, d.program, datediff('day', DATE '1970-01-01', d.day)::INTEGER AS d, d.n
      FROM ${DAILY} d SEMI JOIN _cbp_forecast_series s ON s.mid = d.mid AND s.network = d.network AND s.program = d.program
      WHERE d.day >= (strptime($from || '-01', '%Y-%m-%d') - INTERVAL ${HISTORY_DAYS} DAY)::DATE AND d.day <= strptime($to || '-01', '%Y-%m-%d')::DATE
        ${midsIn(range, 'd.mid')}`, { from, to });
  } finally {
    await store.run(dropTemp('TABLE', '_cbp_forecast_series'));
  }
  const [mid, network, program, d, n] = ['mid', 'network', 'program', 'd', 'n'].map((x) => c.column(x));
  const dayOf = (month: string) => Date.parse(`${month}-01T00:00:00Z`) / 86_400_000;
  for (let i = 0; i < mid!.length; i++) {
    for (const r of months.get(`${mid![i]}\u0000${network![i]}\u0000${program![i]}`) ?? []) {
      const at = HISTORY_DAYS - (dayOf(r.month) - Number(d![i]));
      if (at >= 0 && at < HISTORY_DAYS) out.get(seriesKey(r))![at] += Number(n![i]);
    }
  }
  // Days before the series' first month are not zeros: they are not known.
  for (const r of wanted) {
    const known = Math.round((Date.parse(`${r.month}-01`) - Date.parse(r.first_day)) / 86_400_000);
    if (known < HISTORY_DAYS) out.set(seriesKey(r), out.get(seriesKey(r))!.slice(HISTORY_DAYS - Math.max(0, known)));
  }
  return out;
}

/** The ratio table's last complete write when the forecasts are not of it (they are to be made again), else null. */
export async function staleForecasts(store: Pick<Store, 'all'>): Promise<string | null> {
  const [state] = await store.all<{ mart: string | null; kept: string | null }>(
    `SELECT (SELECT max(written_at)::VARCHAR FROM ratio_mart_state WHERE complete) AS mart,
            (SELECT max(mart_written_at)::VARCHAR FROM ratio_forecast_state) AS kept`);
  return !state?.mart || state.mart === state.kept ? null : state.mart;
}

/**
 * Stamps the kept forecasts as of the write `written` when it is still the last, judged only from `from` on, they were of
 * the write it replaced, and no month they forecast nor open month is at or after `from`. False: they are made again.
 */
export async function keepForecasts(store: Store, o: { from: string; replaced: string; written: string }): Promise<boolean> {
  return store.transaction(async (s) => {
    const [r] = await s.all<{ kept: boolean | null }>(`SELECT (SELECT max(mart_written_at)::VARCHAR FROM ratio_forecast_state) = $1
      AND (SELECT max(written_at)::VARCHAR FROM ratio_mart_state WHERE complete) = $3
      AND coalesce((SELECT max(month) FROM ratio_forecasts) < $2, TRUE)
      AND coalesce((SELECT max(month) FROM ratio_mart WHERE is_partial AND NOT is_projection) < $2, TRUE) AS kept`, [o.replaced, o.from, o.written]);
    if (!r?.kept) return false;
    await s.run('DELETE FROM ratio_forecast_state');
    await s.run('INSERT INTO ratio_forecast_state VALUES ($1::TIMESTAMP)', [o.written]);
    return true;
  });
}

/** The staged columns in ratio_forecasts' order, each with its type beside its value. */
const FORECAST_COLS: Array<[StageType, (f: KeptForecast) => unknown]> = [
  ['text', (f) => f.mid], ['text', (f) => f.network], ['text', (f) => f.program], ['text', (f) => f.metric], ['text', (f) => f.month],
  ['text', (f) => f.level], ['integer', (f) => f.rank], ['text', (f) => f.rule_id], ['boolean', (f) => f.is_headline],
  ['integer', (f) => f.days_covered], ['integer', (f) => f.days_in_month], ['double', (f) => f.count_to_date], ['double', (f) => f.needed_count],
  ['double', (f) => f.chance], ['double', (f) => f.expected], ['double', (f) => f.low80], ['double', (f) => f.high80],
  ['integer', (f) => f.paceDay], ['boolean', (f) => f.met_to_date],
];

/**
 * Replaces the kept forecasts with those `ranges` gives, made of the ratio table's write `mart` (staleForecasts); how
 * many. Each range is staged as it comes (the appender), so memory holds one range's (and the next's open rows); the write is one commit.
 */
export async function writeForecasts(store: Store, ranges: AsyncIterable<KeptForecast[]>, mart: string, now = new Date()): Promise<number> {
  const stage = '_cbp_forecast_stage';
  await store.run(`CREATE OR REPLACE TEMP TABLE ${stage} AS SELECT * EXCLUDE (forecast_at)
    REPLACE (network::VARCHAR AS network, program::VARCHAR AS program, metric::VARCHAR AS metric) FROM ratio_forecasts LIMIT 0`);
  try {
    let n = 0;
    for await (const rows of ranges) {
      await stageRows(store, stage, FORECAST_COLS.map((c) => c[0]), rows, (f, i) => FORECAST_COLS[i][1](f));
      n += rows.length;
    }
    await store.transaction(async (s) => {
      await s.run('DELETE FROM ratio_forecasts; DELETE FROM ratio_forecast_state');
      await s.run(`INSERT INTO ratio_forecasts SELECT *, $1::TIMESTAMP FROM ${stage}`, [now.toISOString()]);
      await s.run('INSERT INTO ratio_forecast_state VALUES ($1::TIMESTAMP)', [mart]);
    });
    return n;
  } finally {
    await store.run(dropTemp('TABLE', stage));
  }
}

/** A kept forecast an early warning may be made of, with its observed row's figures. */
export interface WarningCandidate {
  mid: string; network: string; program: string; metric: string; month: string; level: string; rule_id: string;
  chance: number; count_to_date: number; days_covered: number; days_in_month: number;
  expected_count: number; low80_count: number; high80_count: number; needed_count: number | null; pace_day: number | null;
  numerator: number | null; denominator: number | null; denominator_month: string | null; ratio: number | null;
}

/**
 * The kept forecasts (of the MIDs in `range`; made of the open `months`) not met to date with a chance, of levels above the one the series holds in
 * the month, each with its observed row's figures (what an early warning says).
 */
export async function warningCandidates(store: Pick<Store, 'all'>, months: OpenMonths, range?: MidRange): Promise<WarningCandidate[]> {
  const rows = await store.all<Record<string, unknown>>(`
    SELECT f.mid, f.network::VARCHAR AS network, f.program::VARCHAR AS program, f.metric::VARCHAR AS metric, f.month, f.level, f.rule_id, f.chance, f.count_to_date, f.days_covered, f.days_in_month,
      f.expected_count, f.low80_count, f.high80_count, f.needed_count, f.pace_day, m.numerator, m.denominator, m.denominator_month, m.ratio
    FROM ratio_forecasts f
    -- (the mart's rows of the open months only: the view's join over every month cost more than all the rest)
    LEFT JOIN (SELECT * FROM mart_ratios WHERE month BETWEEN ${sqlText(months.lo)} AND ${sqlText(months.hi)} ${midsIn(range)}) m
      ON m.mid = f.mid AND m.network = f.network AND m.program = f.program AND m.metric = f.metric AND m.month = f.month AND NOT m.is_projection
    LEFT JOIN ratio_forecasts held ON held.mid = f.mid AND held.network = f.network AND held.program = f.program AND held.metric = f.metric
      AND held.month = f.month AND held.level = m.level
    WHERE NOT f.met_to_date AND f.chance > 0 AND (held.rank IS NULL OR held.rank < f.rank) ${midsIn(range, 'f.mid')}
    ORDER BY f.mid, f.network, f.program, f.month, f.rank`);
  return rows.map((r) => ({
    mid: String(r.mid), network: String(r.network), program: String(r.program), metric: String(r.metric), month: String(r.month), level: String(r.level),
    rule_id: String(r.rule_id), chance: Number(r.chance), count_to_date: Number(r.count_to_date), days_covered: Number(r.days_covered),
    days_in_month: Number(r.days_in_month), expected_count: Number(r.expected_count), low80_count: Number(r.low80_count), high80_count: Number(r.high80_count),
    needed_count: numOrNull(r.needed_count), pace_day: numOrNull(r.pace_day), numerator: numOrNull(r.numerator), denominator: numOrNull(r.denominator),
    denominator_month: textOrNull(r.denominator_month), ratio: numOrNull(r.ratio),
  }));
}
