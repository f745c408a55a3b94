// Loading a landing file into the store with DuckDB's own readers: one SQL pass reads, types and validates
// every row into a de-duplicated staging table; a few set-based statements then move it into the quarantine,
// the current-state tables and the status histories — all in ONE transaction, so a failed or killed load
// leaves the store as it was. No row ever passes through JavaScript. A chargeback report loaded into an
// empty store skips staging and goes straight into its table (firstLoadChargebacks), same result.
//
// This module runs a load; its parts, by job, are under store/load/: file-checks.ts (what the file is, its CSV
// header, the words for one that cannot be read), read.ts (the SELECT DuckDB reads it through), typing.ts with sql/load/typing.sql (the SQL that types raw
// text), stage.ts (the typing, validating SELECT per report kind), merge.ts (staging into the quarantine,
// state and history tables) and log.ts (the loads log).
import path from 'node:path';
import { statSync } from 'node:fs';
import type { ReportKind } from '../contract/reporting.ts';
import { toIsoUtc } from '../contract/common.ts';
import { UsageError } from '../lib/errors.ts';
import type { Window } from '../lib/utc.ts';
import type { Store } from './db.ts';
import { BadReportFileError } from './errors.ts';
import { metaPath, readMeta, sha256Stream, type LandingMeta } from './landing.ts';
import { otherKind } from './load/columns.ts';
import { logLoad, repeatOf } from './load/log.ts';
import { chargebacksEmpty, firstLoadChargebacks, moveStaged } from './load/merge.ts';
import { readerSql, type Reader } from './load/read.ts';
import { RecordTooBigError, checkNotUtf16, checkReadable, checkUtf8, inferFormat, isBlank, readFailure } from './load/file-checks.ts';
import { stagingFor, type Staging } from './load/stage.ts';
import { typingOnce } from './load/typing.ts';
import { dropTemp } from './sql-text.ts';

export { checkReadable, csvHeader, readFailure } from './load/file-checks.ts';
export type { Window } from '../lib/utc.ts';

export type FileFormat = 'json' | 'csv';

export interface LoadOptions {
  kind: ReportKind;
  /** Inferred from the extension when absent. */
  format?: FileFormat;
  /**
   * The report window, inclusive UTC days `YYYY-MM-DD` (a date-time is cut to its UTC date). Required for
   * mid_report (its records carry no dates); else taken from the sidecar when there is one.
   */
  window?: Window;
  /** When the rows were observed; default: the sidecar's fetched_at, else the window's last second, else the file's mtime. */
  seenAt?: string;
  /** What the caller records of the load, in the load's transaction (a repeat of a load: in the log's). */
  record?: (s: Store, r: LoadResult) => Promise<void>;
  /** Test hook: runs inside the transaction just before COMMIT. */
  beforeCommit?: () => Promise<void> | void;
}

export interface LoadResult {
  file: string;
  kind: ReportKind;
  format: FileFormat;
  window: Window | null;
  seenAt: string;
  sha256: string;
  rowsRead: number;
  rowsLoaded: number;
  quarantined: number;
  /** The same file (sha256, kind, window) had been loaded before; the store is unchanged by design. */
  reloaded: boolean;
}

/** A window's days as `YYYY-MM-DD` (a date-time cut to its UTC date), checked; null for none. */
export function normaliseWindow(w: Window | undefined | null, what = 'window'): Window | null {
  if (!w) return null;
  const day = (v: string, f: string) => {
    const iso = toIsoUtc(String(v), true);
    if (!iso) throw new UsageError(`${what} ${f} must be a date YYYY-MM-DD (UTC), got ${JSON.stringify(v)}`);
    return iso.slice(0, 10);
  };
  const out = { from: day(w.from, 'start'), to: day(w.to, 'end') };
  if (out.from > out.to) throw new UsageError(`${what} start ${out.from} is after its end ${out.to}`);
  return out;
}

function seenAtFor(opts: LoadOptions, meta: LandingMeta | undefined, w: Window | null, file: string): string {
  const pick = opts.seenAt ?? meta?.fetched_at;
  if (pick) {
    const iso = toIsoUtc(pick, true);
    if (!iso) throw new UsageError(`seenAt must be a UTC date-time, got ${JSON.stringify(pick)}`);
    // Its milliseconds kept (an import's fetched_at): two files loaded within one second keep their order.
    const ms = /\.(\d{1,3})\d*Z$/.exec(pick.trim());
    return ms ? iso.replace(/Z$/, `.${ms[1].padEnd(3, '0')}Z`) : iso;
  }
  if (w) return `${w.to}T23:59:59Z`;
  return new Date(Math.floor(statSync(file).mtimeMs / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Loads one report file (usually a landing file) in one transaction. Safe to repeat. A load holds the
 * connection's lane from start to end (Store.exclusive): its staging tables are the connection's temp tables,
 * and no other caller's statements may run inside its transaction.
 */
export function loadReport(store: Store, file: string, opts: LoadOptions): Promise<LoadResult> {
  return store.exclusive(() => loadOne(store, file, opts));
}

async function loadOne(store: Store, file: string, opts: LoadOptions): Promise<LoadResult> {
  const { kind } = opts;
  const format = opts.format ?? inferFormat(file);
  if (!format) throw new UsageError(`Cannot tell the format of ${file} from its extension: pass --format json or --format csv`);
  checkReadable(file, file, format, kind);
  const meta = readMeta(file);
  const w = normaliseWindow(opts.window ?? (meta?.start && meta?.end ? { from: meta.start, to: meta.end } : null));
  if (kind === 'mid_report' && !w) {
    throw new UsageError('A MID report needs its window (its records carry no dates): give --from YYYY-MM-DD --to YYYY-MM-DD (inclusive, UTC)');
  }
  // Another window would count days a month's own report counts again, in every sum over mid_stats.
  if (kind === 'mid_report' && w && (!w.from.endsWith('-01') || w.to.slice(0, 7) !== w.from.slice(0, 7))) {
    throw new UsageError(
      `A MID report's window is one calendar month from its first day (the whole month, or the month to date); ${w.from}..${w.to} is not, and its figures would be counted again beside that month's own report. Load each month's report on its own: --from ${w.from.slice(0, 7)}-01 --to <its last day, or today>.`,
    );
  }
  const seen = seenAtFor(opts, meta, w, file);
  // Hashing a big file is no small part of the cost of reading it into DuckDB: it overlaps the read instead.
  // The sidecar's digest holds while the file is as landed: same size, not modified after its sidecar was written.
  const st = statSync(file);
  const digest = meta?.sha256 && meta.bytes === st.size && st.mtimeMs <= statSync(metaPath(file)).mtimeMs ? meta.sha256 : undefined;
  const sha256Pending = digest ? Promise.resolve(digest) : sha256Stream(file);
  sha256Pending.catch(() => undefined);
  const landing = path.resolve(file);
  const run = { store, file, landing, kind, format, w, seen, sha256Pending, sizeZero: false, record: opts.record, beforeCommit: opts.beforeCommit };
  // On a lake every statement outside a transaction reads a catalog snapshot of its own: there the whole load (the
  // repeat check, staging, writes) is one transaction. The typing macros come first: a rollback would drop them.
  const step = <T>(fn: () => Promise<T>) => (store.lake ? store.transaction(fn) : fn());
  if (store.lake) await typingOnce(store);
  const load = async (longJson: boolean) => {
    // The same landing file, bytes and observation loaded before (a retried activity, a re-run backfill): one
    // load already left the store as this one would, so only the log is touched. Known only when the sidecar
    // gives the digest; a bare file is loaded in full (same result, just slower).
    const prior = digest && !longJson ? await repeatOf(store, { landing, kind, format, window: w, seen, sha256: digest }, opts.record) : undefined;
    if (prior?.again) return prior.again;
    if (!longJson) {
      checkNotUtf16(file, file);
      await checkUtf8(file, file);
      run.sizeZero = isBlank(file);
    }
    return loadWith(run, longJson, prior?.loadedBefore);
  };
  try {
    return await step(() => load(false));
  } catch (e) {
    // DuckDB's JSON reader refused a record for its size (where it gives up depends on where the record lies):
    // again, with cbp reading the long records itself. Nothing was stored by the first try.
    if (!(e instanceof RecordTooBigError) || format !== 'json') throw e;
    return await step(() => load(true));
  }
}

async function loadWith(
  run: {
    store: Store; file: string; landing: string; kind: ReportKind; format: FileFormat; w: Window | null; seen: string;
    sha256Pending: Promise<string>; sizeZero: boolean; record?: LoadOptions['record']; beforeCommit?: () => Promise<void> | void;
  },
  longJson: boolean,
  loadedBefore?: boolean, // what repeatOf read of the log in this load, when the file's digest was known first
): Promise<LoadResult> {
  const { store, file, landing, kind, format, w, seen, sha256Pending, sizeZero } = run;
  let rowsRead = 0;
  let rowsLoaded = 0;
  let quarantined = 0;
  let stagedBad = 0;
  let staging: Staging | undefined;
  let reader: Reader | undefined;
  let threw = false;
  const failed = (e: unknown) => readFailure(e, { shown: file, paths: reader?.paths, format, kind });
  if (!sizeZero) {
    await typingOnce(store);
    reader = await readerSql(store, landing, file, kind, format, longJson);
    staging = stagingFor(kind, reader.sql);
  }
  const stage = async (st: Staging) => {
    try {
      await store.run(st.create);
    } catch (e) {
      throw failed(e);
    }
    const [c] = await store.all<{ read: string; good: string; bad: string; sig: string; keys: string }>(st.stats);
    rowsRead = Number(c.read);
    quarantined = stagedBad = Number(c.bad);
    rowsLoaded = Number(c.keys);
    if (rowsRead > 0 && Number(c.sig) === 0) {
      await store.run(dropTemp('TABLE', '_stg'));
      throw new BadReportFileError(otherKind(file, kind, c.read));
    }
    if (Number(c.keys) < Number(c.good)) await store.run(st.dedupe);
  };
  try {
    // A chargeback report loaded into an empty store goes straight into its table (firstLoadChargebacks).
    const firstLoad = staging !== undefined && kind === 'chargebacks' && (await chargebacksEmpty(store));
    // Otherwise staging is a temp table (never part of the store), so a failure or a kill there changes nothing. On a
    // file it is read before the write transaction, which stays short; on a lake the whole load is one transaction.
    if (staging && !firstLoad) await stage(staging);
    return await store.transaction(async (s) => {
      // The store was empty when this load began; if another write came first (on a file), stage as usual.
      const direct = firstLoad && (await chargebacksEmpty(s));
      if (firstLoad && !direct) await stage(staging!);
      if (direct) {
        let r: Awaited<ReturnType<typeof firstLoadChargebacks>>;
        try {
          r = await firstLoadChargebacks(s, staging!.select, landing, file, seen, sha256Pending);
        } catch (e) {
          throw failed(e);
        }
        rowsRead = r.read;
        quarantined = r.bad;
        rowsLoaded = r.keys;
      }
      const sha256 = await sha256Pending;
      if (reader) {
        // Rows no reader could take as rows: one quarantine row (and one row read) each.
        const rejected = await reader.quarantineRejects(s, kind, landing, sha256);
        rowsRead += rejected;
        quarantined += rejected;
      }
      if (!direct && !sizeZero) await moveStaged(s, kind, w, seen, landing, sha256, stagedBad > 0);
      const reloaded = await logLoad(s, { landing, kind, format, window: w, seen, sha256, rowsRead, rowsLoaded, quarantined }, loadedBefore);
      const result = { file: landing, kind, format, window: w, seenAt: seen, sha256, rowsRead, rowsLoaded, quarantined, reloaded };
      await run.record?.(s, result);
      await run.beforeCommit?.();
      return result;
    });
  } catch (e) {
    threw = true;
    throw e;
  } finally {
    // After a failure the statements may meet an aborted transaction (a lake's load is one): the failure is what
    // counts, and the reader's temp copy goes whatever the DROP met.
    const cleanup = async () => {
      try {
        await store.run(dropTemp('TABLE', '_stg'));
      } finally {
        await reader?.dispose();
      }
    };
    await (threw ? cleanup().catch(() => undefined) : cleanup());
  }
}
