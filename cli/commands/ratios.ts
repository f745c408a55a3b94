// cbp ratios: what a person asks first. With no flags: the latest complete month and the month to date, the
// programs in force only, MIDs at risk first (closeness: ratio ÷ the threshold of the next level), each row
// with its state (clear / watch / the level in CAPITALS), the region it was evaluated under, its marks (month
// to date, projection, TC40s not yet captured) and why it did not reach the next level; amounts with their
// currency. --json gives every column, unrounded. Reads the published snapshot, else the store read-only.
import type { Command } from 'commander';
import { renderRatios, TABLE_WIDTH } from '../ratios-text.ts';
import { configuredLake } from '../../store/lake.ts';
import type { Ctx } from '../context.ts';
import { UsageError } from '../../lib/errors.ts';
import { addMonths } from '../../lib/utc.ts';
import { NETWORKS } from '../../contract/common.ts';
import type { Store } from '../../store/db.ts';
import { midCurrencies } from '../../store/currency.ts';
import { martRowsBetween, latestMartMonth } from '../../store/ratios-shown.ts';
import { toRatioRow } from '../../store/ratios.ts';
import type { ShownMonth } from '../../store/ratios-stream.ts';
import { keptTableCheck, refreshBeforeReading } from '../kept-table.ts';

export { renderRatios, TABLE_WIDTH } from '../ratios-text.ts';
import type { ExplainedRatioRow, RatioRow } from '../../contract/ratios.ts';
import { METRICS, PROGRAMS, loadRules, type LoadedRules, type Rule, type RuleSet } from '../../rules/thresholds.ts';
import { numOrNull, textOrNull } from '../../store/nullable.ts';

/**
 * The snapshot when one is published (or named), else the store itself, read-only; either way opened as an
 * analyst session (store/analyst.ts: no file or network access, configuration locked).
 */
export async function openForReading(ctx: Ctx, snapshot?: string, threads?: number, ownStatementsOnly?: boolean): Promise<Store> {
  const cfg = ctx.config();
  const analyst = await import('../../store/analyst.ts');
  return analyst.openReadingSession({ snapshotPath: cfg.snapshotPath, dbPath: cfg.dbPath, lake: configuredLake(cfg), memoryLimit: cfg.storeMemoryLimit, threads, ownStatementsOnly }, snapshot);
}

/** One row of `cbp ratios --json`: the ratio row, its explanation, and the currency of its MID's amounts. */
export type RatioOutRow = ExplainedRatioRow & {
  /** ISO 4217 code of the MID's amounts (from its chargebacks: the MID report names none); null: unknown or mixed */
  currency: string | null;
  /** every code the MID's chargebacks carry (more than one: mixed) */
  currencies: string[];
};

export interface RatiosQuery {
  month?: string;
  all?: boolean;
  mid?: string;
  network?: string;
  program?: string;
  metric?: string;
  allPrograms?: boolean;
  projection?: boolean;
}

/** What `cbp ratios` shows: the rows, and what the human view says around them. */
export interface RatiosView {
  rows: RatioOutRow[];
  /**
   * The months shown, in order, with what each is: complete, or month to date (days covered of the month); with the
   * month's counts when fewer of its rows are shown (--limit)
   */
  months: Array<{ month: string; kind: 'complete' | 'month_to_date'; days_covered: number | null; days_in_month: number | null; rows?: number; levels?: number; watch?: number }>;
  /** 'latest' (no flags), 'month' (--month), 'all' (--all) */
  scope: 'latest' | 'month' | 'all';
  defaultRegion: string;
  defaultRegionFrom: string;
  /** MIDs shown that have no region of their own (evaluated under defaultRegion) */
  midsWithoutRegion: string[];
  /** MIDs shown whose amounts' currency is not known (no chargeback names one) or mixed */
  midsWithoutCurrency: string[];
  allPrograms: boolean;
  /** why the ratio table is behind the data or the rules, and what to run (cli/kept-table.ts); null when it is current */
  behind: string | null;
}

/**
 * Whether some enabled rule for this MID reads this network × program (× metric, unless anyMetric) in this
 * month: the programs in force. Retired programs (VDMP, VFMP after 2025-03) and programs no rule reads
 * (monthly) are not.
 */
export function inForceFor(rules: RuleSet, r: { mid: string; network: string; program: string; metric: string; month: string }, anyMetric = false): boolean {
  const o = rules.mids[r.mid];
  const all: Rule[] = o ? [...rules.rules.filter((x) => !o.disable.includes(x.id)), ...o.rules] : rules.rules;
  return all.some(
    (x) =>
      x.enabled && x.network === r.network && x.program === r.program && (anyMetric || x.metric === r.metric) &&
      !(x.effective_from && x.effective_from > `${r.month}-31`) && !(x.effective_to && x.effective_to < `${r.month}-01`),
  );
}

function checkChoice(flag: string, value: string | undefined, valid: readonly string[]): void {
  if (value !== undefined && !valid.includes(value)) throw new UsageError(`${flag}: unknown ${flag.slice(2)} ${JSON.stringify(value)}; expected one of ${valid.join(', ')}`);
}

/** Validates the flags: exit 2, naming the valid values. */
export function checkRatiosQuery(q: RatiosQuery): void {
  if (q.month !== undefined && !/^\d{4}-(0[1-9]|1[0-2])$/.test(q.month)) throw new UsageError(`--month must be YYYY-MM, got ${JSON.stringify(q.month)}`);
  if (q.month !== undefined && q.all) throw new UsageError('give --month or --all, not both');
  checkChoice('--network', q.network, NETWORKS);
  checkChoice('--program', q.program, PROGRAMS);
  checkChoice('--metric', q.metric, METRICS);
}

const NULL_LAST = -Infinity;

/** MIDs read and judged at once: their every month is held as rows and levels while judged (memory grows with it). */
export const RATIOS_BATCH_MIDS = 200;

/** store/ratios-stream.ts SHOWN_RANK: at a level first, then by the highest closeness. */
const shownRank = (level: boolean, top: number) => (level ? 2 : 0) + (top === NULL_LAST ? -1 : top / (1 + Math.abs(top)));

/** The rows of one month, MIDs at risk first: each series at a level first, then by its highest closeness (observed or projected), its observed row before its projection. */
function sortMonth(rows: RatioOutRow[]): RatioOutRow[] {
  const series = (r: RatioOutRow) => `${r.mid}\u0000${r.network}\u0000${r.program}\u0000${r.metric}`;
  const top = new Map<string, number>();
  const level = new Set<string>();
  for (const r of rows) {
    top.set(series(r), Math.max(top.get(series(r)) ?? NULL_LAST, r.closeness ?? NULL_LAST));
    if (r.state === 'level') level.add(series(r));
  }
  const rank = new Map([...top].map(([k, t]) => [k, shownRank(level.has(k), t)]));
  return [...rows].sort((a, b) => {
    const ta = rank.get(series(a))!;
    const tb = rank.get(series(b))!;
    if (ta !== tb) return tb - ta;
    const ka = series(a);
    const kb = series(b);
    if (ka !== kb) return ka < kb ? -1 : 1;
    return Number(a.is_projection) - Number(b.is_projection);
  });
}

function storedRow(r: Record<string, unknown>): ExplainedRatioRow {
  const row = toRatioRow(r);
  return {
    ...row,
    level: textOrNull(r.level), state: textOrNull(r.state) as ExplainedRatioRow['state'], next_level: textOrNull(r.next_level), next_threshold: numOrNull(r.next_threshold),
    closeness: numOrNull(r.closeness), reason: textOrNull(r.reason), region: textOrNull(r.region), region_source: textOrNull(r.region_source) as ExplainedRatioRow['region_source'],
    monitored_as: textOrNull(r.monitored_as), tc40_observed_from: row.tc40_observed_from, numerator_complete: row.numerator_complete,
    superseded_by: textOrNull(r.superseded_by), certainty: textOrNull(r.certainty) as ExplainedRatioRow['certainty'], certainty_note: textOrNull(r.certainty_note),
    headroom_count: numOrNull(r.headroom_count), over_by_count: numOrNull(r.over_by_count), headroom_basis: textOrNull(r.headroom_basis) as ExplainedRatioRow['headroom_basis'],
    fee_estimate: numOrNull(r.fee_estimate), fee_currency: textOrNull(r.fee_currency), fee_basis: textOrNull(r.fee_basis) as ExplainedRatioRow['fee_basis'],
    chance: numOrNull(r.chance), chance_level: textOrNull(r.chance_level), expected_count: numOrNull(r.expected_count), expected_low80: numOrNull(r.expected_low80),
    expected_high80: numOrNull(r.expected_high80), pace_day: numOrNull(r.pace_day),
  };
}

/** Reads, explains, filters and sorts the ratio rows as `cbp ratios` shows them. */
export async function ratiosView(store: Pick<Store, 'all' | 'run' | 'columns' | 'mapRows'>, rules: LoadedRules, q: RatiosQuery): Promise<RatiosView> {
  checkRatiosQuery(q);
  const scope: RatiosView['scope'] = q.month ? 'month' : q.all ? 'all' : 'latest';
  const currencies = await midCurrencies(store, { mid: q.mid });
  let kept: RatioOutRow[] = [];
  let latest = '';
  const partialIn = new Set<string>();
  // Levels need each MID's earlier months, so whole MIDs are read (in batches) and cut to the months shown after.
  /** Whether a row can be shown under the flags (the months aside). */
  const wanted = (r: RatioRow): boolean =>
    (!q.network || r.network === q.network) &&
    (!q.program || r.program === q.program) &&
    (!q.metric || r.metric === q.metric) &&
    !(q.projection === false && r.is_projection) &&
    // Programs in force only, unless asked: --program names one (retired or not), --metric asks for a metric
    // of the programs in force that no rule may read (ECP amounts).
    (q.allPrograms || q.program !== undefined || inForceFor(rules, r, q.metric !== undefined));
  const pick = (rows: RatioRow[]): RatioRow[] => {
    for (const r of rows) {
      if (r.month > latest) latest = r.month;
      if (r.is_partial && !r.is_projection) partialIn.add(r.month);
    }
    return rows.filter((r) => (scope !== 'latest' || r.month >= addMonths(latest, -1)) && wanted(r));
  };
  const take = (rows: ExplainedRatioRow[]) => {
    for (const r of rows) {
      if (scope === 'latest' && r.month < addMonths(latest, -1)) continue;
      const codes = currencies.get(r.mid) ?? [];
      kept.push({ ...r, currency: codes.length === 1 ? codes[0] : null, currencies: codes });
    }
    // Keep memory to the months that can still be shown.
    if (scope === 'latest') kept = kept.filter((r) => r.month >= addMonths(latest, -1));
  };
  // Every row is in the kept table, judged by the rules in force (the caller made it current when it could).
  const newest = q.month ?? (await latestMartMonth(store, q.mid));
  if (newest !== null) {
    const from = scope === 'all' ? '0000-00' : scope === 'latest' ? addMonths(newest, -1) : newest;
    const rows = (await martRowsBetween(store, { from, to: scope === 'all' ? '9999-99' : newest, mid: q.mid })).map(storedRow);
    take(pick(rows) as ExplainedRatioRow[]);
  }
  // No flags: the latest month, and the one before when the latest is month to date.
  const shownMonths =
    scope === 'latest' ? (latest === '' ? [] : partialIn.has(latest) ? [addMonths(latest, -1), latest] : [latest])
      : [...new Set(kept.map((r) => r.month))].sort();
  if (scope === 'latest') kept = kept.filter((r) => shownMonths.includes(r.month));
  const months = shownMonths.map((m) => {
    const inMonth = kept.filter((r) => r.month === m && !r.is_projection);
    const partial = inMonth.some((r) => r.is_partial) || (scope === 'latest' && m === latest && partialIn.has(m));
    const covered = inMonth.filter((r) => r.is_partial).map((r) => r.days_covered ?? 0);
    return {
      month: m,
      kind: partial ? ('month_to_date' as const) : ('complete' as const),
      days_covered: partial && covered.length ? Math.max(...covered) : null,
      days_in_month: partial ? (inMonth.find((r) => r.days_in_month !== null)?.days_in_month ?? null) : null,
    };
  });
  const rows = months.flatMap((m) => sortMonth(kept.filter((r) => r.month === m.month)));
  const mids = [...new Set(rows.map((r) => r.mid))];
  return {
    rows,
    months,
    scope,
    defaultRegion: rules.defaultRegion,
    defaultRegionFrom: rules.defaultRegionFrom,
    midsWithoutRegion: [...new Set(rows.filter((r) => r.region_source === 'default').map((r) => r.mid))],
    midsWithoutCurrency: mids.filter((m) => (currencies.get(m) ?? []).length !== 1),
    allPrograms: q.allPrograms === true,
    behind: (await keptTableCheck(store, rules)).behind,
  };
}

/** A view of the kept table's rows (shownRatios): the last evaluation's explanations, each month's counts beside. */
function keptView(rules: LoadedRules, scope: RatiosView['scope'], rows: RatioOutRow[], months: ShownMonth[]): RatiosView {
  return {
    rows, months, scope, defaultRegion: rules.defaultRegion, defaultRegionFrom: rules.defaultRegionFrom,
    midsWithoutRegion: [...new Set(rows.filter((r) => r.region_source === 'default').map((r) => r.mid))],
    midsWithoutCurrency: [...new Set(rows.filter((r) => r.currencies.length !== 1).map((r) => r.mid))],
    allPrograms: false, behind: null,
  };
}

/** Each month's first `limit` rows (0: all), the month's counts kept beside when some are cut. */
export function limitView(v: RatiosView, limit: number): RatiosView {
  if (limit === 0) return v;
  const rows: RatioOutRow[] = [];
  const months = v.months.map((m) => {
    const all = v.rows.filter((r) => r.month === m.month);
    rows.push(...all.slice(0, limit));
    if (all.length <= limit) return m;
    const observed = all.filter((r) => !r.is_projection);
    return { ...m, rows: all.length, levels: observed.filter((r) => r.state === 'level').length, watch: observed.filter((r) => r.state === 'watch').length };
  });
  return { ...v, rows, months };
}

/** Writes to stdout, waiting while its buffer is full. */
function writeOut(text: string): Promise<void> | void {
  if (process.stdout.write(text)) return;
  return new Promise((resolve) => process.stdout.once('drain', () => resolve()));
}

// --- the table ------------------------------------------------------------------------------------------

export function register(program: Command, ctx: Ctx): void {
  program
    .command('ratios')
    .description('Chargeback ratios: the latest complete month and the month to date, programs in force, MIDs at risk first, each with its state, why it did not reach the next level and an open month\'s chance of ending at one')
    .option('--month <YYYY-MM>', 'only this month (levels still use the months before it)')
    .option('--all', 'every month, not only the latest complete one and the month to date')
    .option('--mid <mid>', 'only this MID')
    .option('--network <network>', `only this network (${NETWORKS.join(', ')})`)
    .option('--program <program>', `only this program (${PROGRAMS.join(', ')}); shown even when retired`)
    .option('--metric <metric>', `only this metric (${METRICS.join(', ')})`)
    .option('--all-programs', 'also programs not in force: retired ones (VDMP, VFMP) and ones no enabled rule reads (monthly)')
    .option('--no-projection', 'leave out the projected rows of open months')
    .option('--snapshot <file>', 'snapshot to read (default CBP_SNAPSHOT_PATH; the store read-only when none exists)')
    .option('--limit <n>', 'the table shows each month\'s n rows most at risk (0: every row; --json gives every row)', '100')
    .option('--json', 'print an array of rows with every column (ratio as an unrounded fraction)')
    .action(async (o: { month?: string; all?: boolean; mid?: string; network?: string; program?: string; metric?: string; allPrograms?: boolean; projection: boolean; snapshot?: string; limit: string; json?: boolean }) => {
      if (!/^\d+$/.test(o.limit)) throw new UsageError(`--limit must be a whole number of rows (0: every row), got ${JSON.stringify(o.limit)}`);
      const limit = Number(o.limit);
      const q: RatiosQuery = { month: o.month, all: o.all, mid: o.mid, network: o.network, program: o.program, metric: o.metric, allPrograms: o.allPrograms, projection: o.projection };
      checkRatiosQuery(q);
      const cfg = ctx.config();
      const rules = loadRules(cfg.thresholdsFile, { defaultRegion: cfg.defaultRegion });
      const kept = await refreshBeforeReading(cfg, rules, o.snapshot, true);
      // (its own statements only, so not locked: the stream below sets its threads and memory in it)
      let store = kept ?? (await openForReading(ctx, o.snapshot, undefined, true));
      const { onOneSnapshot } = await import('../../store/analyst.ts');
      let view: RatiosView | undefined;
      try {
        // One version read throughout: a lake's reads in one transaction (a file store's session reads one already).
        view = await onOneSnapshot(store, async () => {
          if (q.mid !== undefined) await (await import('../../store/report.ts')).checkKnownMids(store, [q.mid]);
          // Every row of the kept table as it is, streamed (memory flat in the rows), when it holds what ratiosView would
          // judge: current, and written under these rules, for the rows a rule in force reads.
          // Loaded when the command runs: the stream reads DuckDB's chunks (store/db-chunks.ts), which --help must not load.
          const { sameVersionReopen, shownRatios, streamRatiosJson } = await import('../../store/ratios-stream.ts');
          const keptHolds = !q.allPrograms && q.metric === undefined && q.program === undefined && (await keptTableCheck(store, rules, kept !== undefined)).holds;
          const stream = { scope: q.month ? 'month' : q.all ? 'all' : 'latest', month: q.month, mid: q.mid, network: q.network, projection: q.projection } as const;
          // The table's rows most at risk, and each month's counts, from the kept table (SQL sorts and cuts them).
          if (!o.json && keptHolds) {
            const shown = await shownRatios(store, stream, limit);
            return keptView(rules, stream.scope, shown.rows as RatioOutRow[], shown.months);
          }
          if (o.json && keptHolds) {
            const held = { store };
            try {
              await streamRatiosJson(store, stream, writeOut, { ownSession: true, reopen: await sameVersionReopen(held, () => openForReading(ctx, o.snapshot, undefined, true)) });
            } finally {
              store = held.store;
            }
            return undefined;
          }
          return limitView(await ratiosView(store, rules, q), o.json ? 0 : limit);
        });
      } finally {
        store.close();
      }
      if (!view) return; // streamed
      if (view.behind) process.stderr.write(`cbp: the ratio table is behind the data: ${view.behind}\n`);
      if (o.json) ctx.out(view.rows, undefined, true);
      // The note of what is not modelled is the configured rules' (the defaults' and the thresholds file's).
      else ctx.out(view, (v: RatiosView) => renderRatios(v, TABLE_WIDTH, rules.notModelled ?? []));
    });
}
