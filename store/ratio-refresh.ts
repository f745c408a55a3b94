// Keeps ratio_mart current: the months from the earliest whose sources or rules changed are judged again in SQL
// (sql/views/43_ratio_judge.sql, 44_ratio_explain.sql), each series from its runs of the month before (docs/ratios.md).
import type { Store } from './db.ts';
import { addMonths, monthIndex } from '../lib/utc.ts';
import { CAPTURE_MONTH, insertMarks, readMarks, type SourceMark } from './source-marks.ts';
import { refreshRatioInputs, touchedMonths } from './ratio-inputs.ts';
import { keptRulesHash, writeRuleTables } from './ratio-rules.ts';
import type { RuleTables } from '../contract/rule-tables.ts';
import { sizeBytes } from '../lib/size.ts';
import { dropTemp, monthStartSql, sqlText } from './sql-text.ts';
import { ConfigError, isOutOfMemory } from '../lib/errors.ts';
import { log } from '../lib/log.ts';
import { deletableRows, deleteInSlices } from './table-slices.ts';

/** Ratio rows a rule reads judged in one transaction, for a store of this memory limit. */
export function judgedRows(memoryLimit: string): number {
  const mb = sizeBytes(memoryLimit) / 1e6;
  return Number.isFinite(mb) ? Math.max(40_000, Math.min(4_000_000, Math.round((mb - 64) * 10_000))) : 1_280_000;
}

export interface RatioRefresh {
  fromMonth: string | null | undefined; // the first month judged again; null: every month; undefined: nothing had changed
  rows: number; // ratio rows written
  why?: string; // why every month was judged, when it was
  replaced?: string; written?: string; // the whole table's write this one replaced, and this one's (ratio_mart_state.written_at)
}

/**
 * Brings the kept inputs and the ratio table up to date with the sources and the rules `t`: every month when the rules
 * changed, the table was never written whole, or `full`; else from the earliest month whose sources changed, if any.
 */
export async function refreshRatioTable(store: Store, t: RuleTables, opts: { full?: boolean; judgedRows?: number } = {}): Promise<RatioRefresh> {
  return store.exclusive(async () => {
    const rulesChanged = (await keptRulesHash(store)) !== t.hash;
    const inputs = await refreshRatioInputs(store, { all: opts.full });
    const [state] = await store.all<{ complete: boolean }>('SELECT complete FROM ratio_mart_state LIMIT 1');
    const touched = touchedMonths(await readMarks(store, 'ratio_source_marks'), inputs.marks);
    const why = opts.full ? 'asked for' : rulesChanged ? 'the rules changed' : !state ? 'never written' : !state.complete ? 'the last write did not finish'
      : inputs.full ? 'the inputs were computed again' : touched.includes(CAPTURE_MONTH) ? 'events were first captured at another day' : undefined;
    if (why === undefined && touched.length === 0) return { fromMonth: undefined, rows: 0 };
    const fromMonth = why === undefined ? touched[0] : null;
    const from = fromMonth ?? '0000-01';
    const replaced = await store.transaction(async (s) => {
      if (rulesChanged) await writeRuleTables(s, t);
      const [prev] = await s.all<{ at: string }>('SELECT written_at::VARCHAR AS at FROM ratio_mart_state WHERE complete');
      await s.run('DELETE FROM ratio_mart_state');
      await s.run('INSERT INTO ratio_mart_state VALUES (now()::TIMESTAMP, $1, FALSE)', [fromMonth]);
      return prev?.at;
    });
    // The tiles' runs commit to the log, not checkpointed (a checkpoint each cost more than its tile); one before the rows' write takes them.
    const [{ threshold }] = await store.all<{ threshold: string }>("SELECT current_setting('checkpoint_threshold') AS threshold");
    const reset = `SET checkpoint_threshold = '${threshold.replace(/[^\w. ]/g, '')}'`;
    try {
      await store.run("SET checkpoint_threshold = '1TB'");
      // Every month judged again (what other rules left goes too), or more rows than a transaction can delete: a slice a commit.
      const sliced = fromMonth === null || (!store.lake && deletableRows(store.memoryLimit) < Number((await store.all<{ n: number }>(
        'SELECT count(*)::DOUBLE AS n FROM ratio_mart WHERE month >= $1', [from]))[0]!.n));
      if (fromMonth === null) await deleteInSlices(store, 'ratio_streaks', judgedRows(store.memoryLimit));
      if (sliced) await deleteInSlices(store, 'ratio_mart', judgedRows(store.memoryLimit), `month >= ${sqlText(from)}`);
      const most = opts.judgedRows ?? judgedRows(store.memoryLimit);
      await judgeAll(store, t.watchFraction, await tiles(store, from, most));
      return { fromMonth, ...(await writeMart(store, from, most, sliced, inputs.marks, reset)), ...(why ? { why } : { replaced }) };
    } finally {
      await store.run(reset);
    }
  });
}

// A tile: the months from..to (runs carried from the month before) of every MID (n ruled rows), or of the MIDs lo..hi
// not in a group; grouped: of every grouped MID; gap: months without inputs, whose runs go. Judged in month order.
type Tile = { from: string; to: string; n: number; lo?: string; hi?: string; grouped?: true; gap?: true };

/** Ruled rows of the inputs from `start` to `end` (of t's MIDs), per month or per MID. */
async function ruledRows(store: Store, by: 'month' | 'mid', start: string, end: string, t?: Tile): Promise<Array<{ k: string; n: number }>> {
  const mids = t?.lo === undefined ? '' : `AND i.mid >= ${sqlText(t.lo)} AND i.mid <= ${sqlText(t.hi!)}`;
  return (await store.all<{ k: string; n: number }>(`WITH w AS (SELECT network, count(DISTINCT (program, metric)) AS n FROM ratio_rules GROUP BY network)
    SELECT i.${by} AS k, coalesce(sum(w.n), 0)::INTEGER AS n FROM ratio_month_inputs i LEFT JOIN w ON w.network = i.network
    WHERE i.month >= $1 AND i.month <= $2 ${mids} GROUP BY k ORDER BY k`, [start, end])).map((r) => ({ k: String(r.k), n: Number(r.n) }));
}

/** Whether the rules monitor any MIDs as a group. */
const anyGroup = async (s: Store) => (await s.all<{ g: boolean }>('SELECT count(*) > 0 AS g FROM ratio_rule_groups'))[0]!.g;

/** Counted keys packed in order into runs of at most `most` rows (a key of more alone). */
const pack = (rows: Array<{ k: string; n: number }>, most: number) => rows.reduce<Array<{ first: string; last: string; n: number }>>((out, { k, n }) => {
  const cur = out.at(-1);
  if (cur && cur.n + n <= most) Object.assign(cur, { last: k, n: cur.n + n });
  else out.push({ first: k, last: k, n });
  return out;
}, []);

/** Tiles of at most `most` ruled rows over every month from `from` (within: of that tile) on; grouped MIDs after MID ranges (a group is never split). */
async function tiles(store: Store, from: string, most: number, within?: Tile): Promise<Tile[]> {
  const [start, end] = [within?.from ?? from, within?.to ?? '9999-12'];
  const grouped = within?.lo === undefined && !within?.grouped && (await anyGroup(store));
  const out: Tile[] = [];
  let next = start;
  const add = (to: string, ts: Tile[]) => { out.push(...ts, ...(grouped && ts.some((t) => t.lo !== undefined) ? [{ from: next, to, n: 0, grouped: true as const }] : [])); next = addMonths(to, 1); };
  for (const r of pack(await ruledRows(store, 'month', start, end, within), most)) {
    if (r.n <= most) { add(r.last, [{ from: next, to: r.last, n: r.n }]); continue; }
    // A month of more: its MIDs in ranges, after the months before it that have no inputs.
    const mids = pack(await ruledRows(store, 'mid', r.first, r.first, within), most).map((m) => ({ from: r.first, to: r.first, lo: m.first, hi: m.last, n: m.n }));
    add(r.first, [...(next < r.first ? [{ from: next, to: addMonths(r.first, -1), n: 0, gap: true as const }] : []), ...mids]);
  }
  if (next <= end) add(end, [{ from: next, to: end, n: 0, gap: true }]);
  return out;
}

/** Judges the tiles in turn; after one judged in halves, the rest at the size that fitted (returned: ruled rows). */
async function judgeAll(store: Store, watchFraction: number, parts: Tile[], within?: Tile): Promise<number | undefined> {
  let out: number | undefined;
  for (let i = 0; i < parts.length; i++) {
    const fit = await judgeFitting(store, watchFraction, parts[i]!);
    if (!fit) continue;
    out = Math.min(out ?? fit, fit);
    // Planned again at that size: this month's other MIDs, then, after its grouped tile, the months after.
    const cur = parts[i]!, rest = parts.slice(i + 1), later = rest.filter((p) => p.from > cur.to);
    const same = rest.filter((p) => p.lo !== undefined && p.from === cur.from), kept = rest.filter((p) => !later.includes(p) && !same.includes(p));
    parts = [...parts.slice(0, i + 1), ...(same.length ? await tiles(store, cur.from, out, { ...cur, lo: same[0]!.lo, hi: same.at(-1)!.hi }) : []), ...kept,
      ...(later.length ? await tiles(store, later[0]!.from, out, within && { ...within, from: later[0]!.from }) : [])];
  }
  return out;
}

/** judgeTile; a tile DuckDB ran out of memory on (its transaction rolled back) is judged in halves: by months, else by MIDs. */
async function judgeFitting(store: Store, watchFraction: number, tile: Tile): Promise<number | undefined> {
  try {
    return void (await judgeTile(store, watchFraction, tile));
  } catch (e) {
    if (!isOutOfMemory(e)) throw e;
    const half = tile.grouped ? 0 : Math.ceil(tile.n / 2), halves = half ? await tiles(store, tile.from, half, tile) : [];
    if (halves.length < 2) throw tooSmall(store, `${tile.grouped ? 'the grouped MIDs' : tile.lo === undefined ? 'every MID' : tile.lo === tile.hi ? `MID ${tile.lo}` : `MIDs ${tile.lo} to ${tile.hi}`} in ${tile.from === tile.to ? tile.from : `${tile.from} to ${tile.to}`}`);
    log().warn({ months: `${tile.from}..${tile.to}`, mids: tile.grouped ? 'grouped' : tile.lo === undefined ? 'all' : `${tile.lo}..${tile.hi}`, memoryLimit: store.memoryLimit },
      'the ratio judge ran out of memory on these rows and judges them again in halves; a larger CBP_STORE_MEMORY_LIMIT is faster');
    return Math.min((await judgeAll(store, watchFraction, halves, tile)) ?? Infinity, half);
  }
}

// A setting to raise, not a moment to wait for: a retry under the same limit fails the same way.
const tooSmall = (store: Store, what: string) => new ConfigError([`CBP_STORE_MEMORY_LIMIT (${store.memoryLimit}) is too small to judge the ratios of ${what}: raise it, then run cbp alerts evaluate to bring the ratio table up to date`]);

/** Judges one tile: replaces its series' runs (ratio_streaks), in one transaction. */
async function judgeTile(store: Store, watchFraction: number, tile: Tile): Promise<void> {
  const isGrouped = tile.grouped === true, grouped = (t: string) => `EXISTS (SELECT 1 FROM ratio_rule_groups g WHERE g.mid = ${t}.mid AND g.program = ${t}.program)`;
  // A tile's judged series in the kept runs and its rows: a MID range's but the groups', the groups', or every MID's.
  const mids = (t: string) => `${t}.mid >= ${sqlText(tile.lo!)} AND ${t}.mid <= ${sqlText(tile.hi!)}`, ids = 'SELECT group_id FROM ratio_rule_groups';
  const runsOf = (t: string) => (tile.lo !== undefined ? `${mids(t)} AND ${t}.mid NOT IN (${ids})` : isGrouped ? `${t}.mid IN (${ids})` : 'TRUE');
  const where = (t: string) => (tile.lo !== undefined ? `${mids(t)} AND NOT ${grouped(t)}` : isGrouped ? grouped(t) : 'TRUE');
  const [lo, hi] = [monthIndex(tile.from), monthIndex(tile.to)];
  try {
    await store.transaction(async (s) => {
      await s.run(`DELETE FROM ratio_streaks k WHERE k.month_idx >= ${lo} AND k.month_idx <= ${hi} AND ${runsOf('k')}`);
      if (tile.gap) return; // months without inputs
      // The tile's rows with what monitors them, streamed from the kept inputs; those a rule applies to are what the judge reads.
      await s.run(`CREATE OR REPLACE TEMP VIEW _ratio_tile AS SELECT * FROM ratio_rows_covered_between(${day(tile.from)}, ${day(tile.to)}, cached := TRUE) r WHERE ${where('r')};
        CREATE OR REPLACE TEMP VIEW _ratio_monitored AS SELECT * FROM ratio_monitored('_ratio_tile');
        CREATE OR REPLACE TEMP VIEW _ratio_rows AS SELECT * FROM ratio_ruled('_ratio_monitored')`);
      // The runs this tile starts from: those kept before its months (the macro takes each series' latest).
      await s.run(`CREATE OR REPLACE TEMP TABLE _ratio_seeds AS SELECT * FROM ratio_streaks k WHERE k.v = 0 AND k.month_idx < ${lo} AND ${runsOf('k')}`);
      // A range of MIDs has no grouped rows to sum (nor has any tile when no group is set).
      const g = tile.lo === undefined && (await anyGroup(s));
      const judge = (v: number) => `ratio_level_runs('_ratio_rows', ${watchFraction}, v := ${v}, seeds := '_ratio_seeds', grouped := ${g})`;
      await s.run(`CREATE OR REPLACE TEMP TABLE _ratio_runs AS SELECT * FROM ${judge(0)}; INSERT INTO ratio_streaks BY NAME SELECT * FROM _ratio_runs`);
      // Projections judged as closed months, on the observed runs before them (months without any have none to judge).
      const [p] = await s.all<{ any: boolean | null }>(`SELECT bool_or(ratio_projected(is_partial, days_covered)) AS any FROM ratio_month_inputs WHERE month_idx BETWEEN ${lo} AND ${hi}`);
      if (p?.any) await s.run(`INSERT INTO _ratio_seeds BY NAME SELECT * FROM _ratio_runs; INSERT INTO ratio_streaks BY NAME SELECT * FROM ${judge(1)}`);
    });
  } finally {
    await store.run([dropTemp('VIEW', '_ratio_rows', '_ratio_monitored', '_ratio_tile'), dropTemp('TABLE', '_ratio_runs', '_ratio_seeds')].join('; '));
  }
}

/** A month's first day in SQL ('0000-01', every month: the first a DATE holds). */
const day = (m: string) => monthStartSql(m === '0000-01' ? '0001-01' : m);

/** Replaces the ratio rows of every month from `from`, streamed from the kept inputs and explained by the tiles' runs, in
 * inserts of months of at most `most` ruled rows: in one transaction, or one each when those months were emptied (`whole`).
 * The last records the sources' fingerprints and that the table is whole. How many rows, and when. */
async function writeMart(store: Store, from: string, most: number, whole: boolean, marks: SourceMark[], reset: string): Promise<{ rows: number; written: string }> {
  // Commits in the log alone would hold memory the insert needs (a lake's CHECKPOINT is its upkeep; one refused, as
  // while another transaction runs, only leaves that memory held).
  if (!store.lake) await store.run('CHECKPOINT').catch((e: unknown) => log().debug({ err: String(e) }, 'no checkpoint before the ratio rows'));
  const [{ off, threads, buffered }] = await store.all<{ off: string; threads: number; buffered: number }>(`SELECT current_setting('disabled_optimizers') AS off,
    current_setting('threads')::INTEGER AS threads, current_setting('write_buffer_row_group_count')::INTEGER AS buffered`);
  // (the rows probe the small rule and run tables; each thread holds its rows until it has this many row groups to write)
  await store.run(`SET disabled_optimizers = ${sqlText([off, 'build_side_probe_side'].filter(Boolean).join(','))}; SET write_buffer_row_group_count = 1`);
  // The rows of the months lo..hi, in one insert, explained by tables of those months (a hot series' levels of every month
  // would fill the memory a month's insert needs).
  const insert = async (s: Store, lo: string, hi: string) => {
    await s.run(`CREATE OR REPLACE TEMP VIEW _ratio_all AS SELECT * FROM ratio_rows_covered_between(${day(lo)}, ${day(hi)}, cached := TRUE);
      CREATE OR REPLACE TEMP VIEW _ratio_all_monitored AS SELECT * FROM ratio_monitored('_ratio_all');
      CREATE OR REPLACE TEMP VIEW _ratio_all_runs AS SELECT * FROM ratio_streaks WHERE month_idx >= ${monthIndex(lo)} AND month_idx <= ${monthIndex(hi)};
      CREATE OR REPLACE TEMP VIEW _ratio_all_months AS SELECT DISTINCT month FROM ratio_month_inputs WHERE month >= '${lo}' AND month <= '${hi}'`);
    const explained = await explainFrom(s, '_ratio_all_runs', '_ratio_all_months');
    const [r] = await s.all<{ Count: number | bigint }>(`INSERT INTO ratio_mart BY NAME SELECT * EXCLUDE (monitored_as, numerator, denominator, denominator_month, ratio_pct,
      ratio_bps), CASE WHEN monitored_as <> mid THEN monitored_as END AS monitored_as, now()::TIMESTAMP AS judged_at FROM ${explained('_ratio_all_monitored')}`);
    return Number(r?.Count ?? 0);
  };
  const inserts = async (s: Store, parts: Array<{ first: string; last: string }>) => { let rows = 0; for (const r of parts) rows += await insert(s, r.first, r.last); return rows; };
  // The fingerprints of the sources written, and the table whole.
  const finish = async (s: Store, rows: number) => {
    await s.run(`${reset}; DELETE FROM ratio_source_marks; UPDATE ratio_mart_state SET complete = TRUE, written_at = now()::TIMESTAMP`);
    await insertMarks(s, 'ratio_source_marks', marks);
    const [w] = await s.all<{ at: string }>('SELECT max(written_at)::VARCHAR AS at FROM ratio_mart_state');
    return { rows, written: w!.at };
  };
  // A transaction writing months in parts on n threads (a lake's also hold a Parquet row group each); out of memory,
  // again on one, then a month a part (the later transactions start at the threads that fitted).
  let n = Math.max(1, Math.min(threads, Math.floor((sizeBytes(store.memoryLimit) / 1e6 - 64) / (store.lake ? 96 : 64)) || 1));
  const fitting = <T>(write: (s: Store, parts: Array<{ first: string; last: string }>) => Promise<T>, months: Array<{ k: string; n: number }>, monthly = false): Promise<T> =>
    store.transaction(async (s) => {
      await s.run(`SET threads = ${n}`);
      return write(s, monthly ? months.map(({ k }) => ({ first: k, last: k })) : pack(months, most));
    }).catch((e: unknown) => {
      if (!isOutOfMemory(e)) throw e;
      if (monthly) throw tooSmall(store, from === '0000-01' ? 'every MID' : `every MID from ${from}`);
      log().warn({ threads: n, memoryLimit: store.memoryLimit }, `writing the ratio rows ran out of memory and is done again ${n > 1 ? 'on one thread' : 'a month at a time'}; a larger CBP_STORE_MEMORY_LIMIT is faster`);
      const again = n === 1;
      n = 1;
      return fitting(write, months, again);
    });
  try {
    const months = await ruledRows(store, 'month', from, '9999-12');
    if (!whole) return await fitting(async (s, parts) => { await s.run(`DELETE FROM ratio_mart WHERE month >= '${from}'`); return finish(s, await inserts(s, parts)); }, months);
    let rows = 0;
    for (const r of pack(months, most)) rows += await fitting(inserts, months.filter(({ k }) => k >= r.first && k <= r.last));
    return await store.transaction((s) => finish(s, rows));
  } finally {
    await store.run([`SET disabled_optimizers = ${sqlText(off)}`, `SET threads = ${threads}`, `SET write_buffer_row_group_count = ${buffered}`,
      dropTemp('VIEW', '_ratio_all_runs', '_ratio_all_monitored', '_ratio_all_months', '_ratio_all'), dropTemp('TABLE', ...EXPLAIN_TABLES)].join('; '));
  }
}

const EXPLAIN_TABLES = ['_ratio_levels', '_ratio_class_levels', '_ratio_rule_figures', '_ratio_fees'];

/** Makes what ratio_explain joins to rows as temp tables, of the judged runs `runs` and the months in `months` (at least
 * the rows'); rows explained (a table's name), as a FROM item. */
export async function explainFrom(s: Store, runs: string, months: string): Promise<(rows: string) => string> {
  const from = [`ratio_run_levels(${sqlText(runs)})`, `ratio_class_levels(${sqlText(months)})`, 'int_ratio_rule_figures', `ratio_fees_in(${sqlText(months)})`];
  await s.run(EXPLAIN_TABLES.map((t, i) => `CREATE OR REPLACE TEMP TABLE ${t} AS SELECT * FROM ${from[i]}`).join('; '));
  return (rows) => `ratio_explain(${[rows, ...EXPLAIN_TABLES].map(sqlText).join(', ')})`;
}
