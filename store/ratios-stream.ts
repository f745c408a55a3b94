// `cbp ratios --json` from the kept ratio table, streamed: DuckDB writes each row's JSON and sorts, JS passes chunks
// of lines to stdout, so memory stays flat in the number of rows (10,000 MIDs x 36 months is 5.76 million rows).
// Used when the table is current and was written under the rules configured now; the rows, their order and their
// fields are those ratiosView gives (cli/commands/ratios.ts), one JSON object a line inside one array.
import type { Store } from './db.ts';
import { releaseChunk } from './db-chunks.ts';
import { EXPLAINED_RATIO_FIELDS } from '../contract/ratios.ts';
import { dropTemp } from './sql-text.ts';
import { SCAN_MEMORY } from '../lib/size.ts';
import { storeVersion } from './generation.ts';
import { StoreUnavailableError } from './errors.ts';

export interface StreamQuery {
  /** 'latest': the latest month evaluated, and the one before when it is month to date; 'month'; 'all' */
  scope: 'latest' | 'month' | 'all';
  month?: string;
  mid?: string;
  network?: string;
  /** false: leave out the projections */
  projection?: boolean;
}

/**
 * A series' place in `cbp ratios` (as the report orders its rows): a series at a level first, then by its highest
 * closeness (observed or projected), in one number (slices of a month are ranges of it): at a level in (1, 3), else
 * in [-1, 1). cli/commands/ratios.ts shownRank is the same for the rows it sorts itself.
 */
const SHOWN_RANK = `(CASE WHEN bool_or(state = 'level') THEN 2 ELSE 0 END + max(coalesce(closeness, -1e308)) / (1 + abs(max(coalesce(closeness, -1e308)))))`;

/** The fields of a `cbp ratios --json` row, in its order (ExplainedRatioRow, then the currency). */
const FIELDS: readonly string[] = EXPLAINED_RATIO_FIELDS;

/** The months the scope shows, from the kept table (latest: its newest month, and the one before while it is open). */
async function monthsOf(store: Pick<Store, 'all'>, q: StreamQuery): Promise<{ from: string; to: string } | null> {
  if (q.scope === 'month') return { from: q.month as string, to: q.month as string };
  if (q.scope === 'all') return { from: '0000-00', to: '9999-99' };
  // Two plain reads (the month's zonemaps answer the second): one statement with the month as a subquery was slow.
  const mid = q.mid !== undefined ? 'AND mid = $mid' : '';
  const [r] = await store.all<{ month: string | null }>(
    `SELECT max(month) AS month FROM ratio_mart WHERE TRUE ${mid}`,
    q.mid !== undefined ? { mid: q.mid } : undefined,
  );
  if (!r?.month) return null;
  const month = String(r.month);
  const [p] = await store.all<{ partial: boolean | null }>(`SELECT bool_or(is_partial) AS partial FROM ratio_mart WHERE month = $month ${mid}`,
    q.mid !== undefined ? { month, mid: q.mid } : { month });
  if (!p?.partial) return { from: month, to: month };
  const [y, m] = month.split('-').map(Number);
  const prev = new Date(Date.UTC(y, m - 2, 1)).toISOString().slice(0, 7);
  return { from: prev, to: month };
}

/**
 * Writes the rows as a JSON array, one row a line; returns how many. `write` may return a promise (backpressure).
 * Rows: those a rule in force reads (a state), within each month in SHOWN_RANK's order, as ratiosView sorts them.
 * `ownSession`: the store is the stream's alone (a command's reading session, not locked): its cache is given back
 * first, and it is left at one thread when a month is large (two threads' sorts of one do not fit the default limit).
 * `reopen` gives a new such session once `reopenRows` rows were read in one: DuckDB keeps some state of every row group
 * a session has read until it closes.
 */
export async function streamRatiosJson<S extends Pick<Store, 'all' | 'run' | 'conn' | 'releaseMemory' | 'capMemory'>>(
  store: S, q: StreamQuery, write: (text: string) => unknown,
  opts: { sliceRows?: number; ownSession?: boolean; reopen?: () => Promise<S>; reopenRows?: number } = {},
): Promise<number> {
  // The months' sizes under the cap too: a count over every month's rows cached them up to the store's limit.
  const sizes = await store.capMemory(SCAN_MEMORY, async () => {
    const span = await monthsOf(store, q);
    return span === null ? [] : monthSizes(store, span);
  }, { rerun: true });
  // The months each session reads: a new one after reopenRows rows.
  const sessions: string[][] = [];
  let rows = Infinity;
  for (const m of sizes) {
    if (sessions.length === 0 || (opts.reopen && rows >= (opts.reopenRows ?? REOPEN_ROWS))) { sessions.push([]); rows = 0; }
    sessions.at(-1)!.push(m.month);
    rows += m.n;
  }
  await write('[');
  let n = 0;
  for (const [i, months] of sessions.entries()) {
    if (i > 0) store = await opts.reopen!();
    if (opts.ownSession) {
      await store.releaseMemory();
      if (sizes.some((m) => m.n > ONE_THREAD_ROWS)) await store.run('SET threads = 1');
    }
    // A month at a time, each in slices (see streamMonths), each scanning its month's blocks once: DuckDB's cache is
    // kept small, and given back after each slice (not in a locked session).
    const s = store;
    n += await s.capMemory(SCAN_MEMORY, () => streamMonths(s, q, months, write, { start: n, afterSlice: () => s.releaseMemory('all'), sliceRows: opts.sliceRows }));
  }
  await write(n === 0 ? ']\n' : '\n]\n');
  return n;
}

/**
 * streamRatiosJson's `reopen` where the store names its version (not a lake): closes `held.store`, opens another with
 * `open` and holds it, refused unless it reads the same version (a write or a new snapshot may have come in between,
 * and the rows before were read from the first). Undefined where there is no version to hold to.
 */
export async function sameVersionReopen<S extends Store>(held: { store: S }, open: () => Promise<S>): Promise<(() => Promise<S>) | undefined> {
  const version = held.store.lake ? null : await storeVersion(held.store);
  if (version?.generation == null) return undefined;
  return async () => {
    held.store.close();
    held.store = await open();
    const now = await storeVersion(held.store);
    if (now.generation !== version.generation || now.storeId !== version.storeId) {
      throw new StoreUnavailableError('The store changed while `cbp ratios --json` was writing its rows (a write, or a new snapshot, came between two months): the rows printed are incomplete. Run the command again.');
    }
    return held.store;
  };
}

/** The kept table's months in a span, with their rows. */
async function monthSizes(store: Pick<Store, 'all'>, span: { from: string; to: string }): Promise<Array<{ month: string; n: number }>> {
  return (await store.all<{ month: string; n: number }>(
    'SELECT month, count(*)::INTEGER AS n FROM ratio_mart WHERE month >= $from AND month <= $to GROUP BY month ORDER BY month', span,
  )).map((r) => ({ month: String(r.month), n: Number(r.n) }));
}

/** Kept-table rows of a month above which its sort needs a session of one thread. */
const ONE_THREAD_ROWS = 400_000;

/** Kept-table rows a reading session streams before `reopen` gives a new one (about a month of 100,000 MIDs). */
const REOPEN_ROWS = 1_500_000;

/** DuckDB's memory while a month's series are ranked: the aggregate and its sort spill rather than raise the process's peak. */
const RANK_MEMORY = 32e6;

/** Rows a slice of a month's stream holds (the series whose rows make up about this many). */
const SLICE_ROWS = 7_500;
/** Lines a write takes: about 40 KB of JSON, a young object for V8. */
const PIECE_LINES = 32;

/**
 * Each month's rows, sorted, as JSON lines after the '[' (returns how many). Each series' place in the month (SHOWN_RANK,
 * then its key) is kept once a month in a temp table; without a limit, the month is streamed in slices of sliceRows
 * rows: each query sorts a slice, and each chunk's memory is given back as soon as it is read (releaseChunk).
 */
async function streamMonths(
  store: Pick<Store, 'all' | 'run' | 'conn' | 'capMemory'>, q: StreamQuery, months: string[], write: (text: string) => unknown,
  { limit = 0, afterSlice, sliceRows = SLICE_ROWS, start = 0 }: { limit?: number; afterSlice?: () => Promise<unknown>; sliceRows?: number; start?: number } = {},
): Promise<number> {
  const [cur, top, slice] = ['cbp_stream_currencies', 'cbp_stream_top', 'cbp_stream_slice'];
  await store.run(`CREATE OR REPLACE TEMP TABLE ${cur} AS SELECT mid, list_sort(list(DISTINCT currency)) AS codes FROM chargebacks WHERE currency IS NOT NULL GROUP BY mid`);
  try {
    let n = 0;
    for (const month of months) {
      const where = ['m.state IS NOT NULL', 'm.month = $month'];
      const params: Record<string, string> = { month };
      if (q.mid !== undefined) { where.push('m.mid = $mid'); params.mid = q.mid; }
      if (q.network !== undefined) { where.push('m.network = $network'); params.network = q.network; }
      if (q.projection === false) where.push('NOT m.is_projection');
      // Sorted on the rows' own columns, the JSON made after the sort (a sort of the JSON texts held them all); each
      // series' place from an aggregate, once (a window over the months shown did not fit the store's memory), and its
      // slice: places in order, sliceRows rows each (a month to date has two rows a series).
      await store.capMemory(RANK_MEMORY, () => store.run(`CREATE OR REPLACE TEMP TABLE ${top} AS SELECT mid, network, program, metric, row_number() OVER w - 1 AS pos,
          (sum(n) OVER w - 1) // ${Math.max(1, Math.floor(sliceRows))} AS slice
        FROM (SELECT mid, network, program, metric, ${SHOWN_RANK} AS top, count(*) AS n FROM ratio_mart m WHERE ${where.join(' AND ')} GROUP BY ALL)
        WINDOW w AS (ORDER BY top DESC, mid, network, program, metric)`, params), { rerun: true });
      const slices = Number((await store.all<{ n: number }>(`SELECT coalesce(max(slice) + 1, 0)::INTEGER AS n FROM ${top}`))[0]!.n);
      // An open month's forecasts (mart_ratios_of) are joined to each slice's kept rows, staged first: else DuckDB hashes
      // them all for every slice. A closed month has none: its slices are read in place.
      const open = Number((await store.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM ratio_forecasts WHERE month = $month', { month }))[0]!.n) > 0;
      // With a limit, one slice of the first `limit` places: every series has a row in the month, so they hold the rows.
      for (let k = 0; k < (limit > 0 ? Math.min(slices, 1) : slices); k++) {
        const cut = limit > 0 ? `t.pos < ${Math.floor(limit)}` : `t.slice = ${k}`;
        if (open) {
          await store.run(`CREATE OR REPLACE TEMP TABLE ${slice} AS SELECT m.* FROM ratio_mart m
            SEMI JOIN (SELECT * FROM ${top} t WHERE ${cut}) t USING (mid, network, program, metric) WHERE ${where.join(' AND ')}`, params);
        }
        const result = await store.conn.stream(
          `WITH sorted AS (
             SELECT m.*, t.pos, c.codes FROM mart_ratios_of('${open ? slice : 'ratio_mart'}') m JOIN (SELECT * FROM ${top} t WHERE ${cut}) t USING (mid, network, program, metric)
               LEFT JOIN ${cur} c ON c.mid = m.mid
              ${open ? '' : `WHERE ${where.join(' AND ')}`}
              ORDER BY t.pos, m.is_projection ${limit > 0 ? `LIMIT ${Math.floor(limit)}` : ''})
           SELECT to_json({${FIELDS.map((f) => `${f}: m.${f}`).join(', ')}, currency: CASE WHEN len(m.codes) = 1 THEN m.codes[1] END, currencies: coalesce(m.codes, []::VARCHAR[])})::VARCHAR AS j
             FROM sorted m`,
          open ? undefined : params,
        );
        for (;;) {
          const chunk = await result.fetchChunk();
          if (!chunk || chunk.rowCount === 0) break;
          const rows = chunk.rowCount;
          const vector = chunk.getColumnVector(0);
          const lines: string[] = new Array(rows);
          for (let i = 0; i < rows; i++) lines[i] = String(vector.getItem(i));
          releaseChunk(chunk);
          // In pieces of a few lines: a text of a whole chunk is a large object, which V8 collects late.
          for (let i = 0; i < rows; i += PIECE_LINES) {
            await write(`${start + n + i === 0 ? '\n' : ',\n'}${lines.slice(i, i + PIECE_LINES).join(',\n')}`);
          }
          n += rows;
        }
        await afterSlice?.();
      }
    }
    return n;
  } finally {
    await store.run(dropTemp('TABLE', cur, top, slice));
  }
}

/** A month `cbp ratios` shows, with its rows' counts (those shown may be fewer). */
export interface ShownMonth {
  month: string;
  kind: 'complete' | 'month_to_date';
  days_covered: number | null;
  days_in_month: number | null;
  /** rows in the month; of the observed ones, at a level and in a watch band */
  rows: number;
  levels: number;
  watch: number;
}

/**
 * The rows `cbp ratios` prints, from the kept table: each month's `limit` rows most at risk (0: every row), in the order
 * and with the fields of `cbp ratios --json`, and each month's counts. Built in SQL: a terminal's table of a large
 * portfolio built in JS was slow and held much memory.
 */
export async function shownRatios(store: Pick<Store, 'all' | 'run' | 'conn' | 'capMemory'>, q: StreamQuery, limit: number): Promise<{ rows: unknown[]; months: ShownMonth[] }> {
  const span = await monthsOf(store, q);
  if (span === null) return { rows: [], months: [] };
  const where = ['state IS NOT NULL', 'month >= $from', 'month <= $to'];
  const params: Record<string, string> = { ...span };
  if (q.mid !== undefined) { where.push('mid = $mid'); params.mid = q.mid; }
  if (q.network !== undefined) { where.push('network = $network'); params.network = q.network; }
  if (q.projection === false) where.push('NOT is_projection');
  const counts = await store.all<{ month: string; n: number; levels: number; watch: number; partial: boolean | null; dc: number | null; dim: number | null }>(
    `SELECT month, count(*)::INTEGER AS n, count(*) FILTER (WHERE NOT is_projection AND state = 'level')::INTEGER AS levels,
            count(*) FILTER (WHERE NOT is_projection AND state = 'watch')::INTEGER AS watch,
            bool_or(is_partial) FILTER (WHERE NOT is_projection) AS partial,
            max(days_covered) FILTER (WHERE NOT is_projection AND is_partial) AS dc,
            max(days_in_month) FILTER (WHERE NOT is_projection) AS dim
       FROM mart_ratios WHERE ${where.join(' AND ')} GROUP BY month ORDER BY month`, params);
  const lines: string[] = [];
  await streamMonths(store, q, counts.map((c) => String(c.month)), (text) => { lines.push(text); }, { limit });
  const rows = lines.length ? (JSON.parse(`[${lines.join('')}]`) as unknown[]) : [];
  const months = counts.map((c): ShownMonth => {
    const partial = c.partial === true;
    return {
      month: String(c.month), kind: partial ? 'month_to_date' : 'complete', days_covered: partial ? c.dc : null, days_in_month: partial ? c.dim : null,
      rows: Number(c.n), levels: Number(c.levels), watch: Number(c.watch),
    };
  });
  return { rows, months };
}
