// Landing files: every report exactly as received, under <dataDir>/landing/<kind>/, each with a sidecar
// <file>.meta.json saying what it is and when it was fetched. Loads read only from here, so any table can be
// rebuilt from landing, and the sidecar's fetched_at is when its rows were observed.
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import type { ReportKind } from '../contract/reporting.ts';
import { toIsoUtc } from '../contract/common.ts';
import { UsageError } from '../lib/errors.ts';
import type { Window } from '../lib/utc.ts';

export type LandingFormat = 'json' | 'csv';

export interface LandingMeta {
  kind: ReportKind;
  /** Window days, inclusive, UTC (YYYY-MM-DD); null for an imported file given without a window. */
  start: string | null;
  end: string | null;
  mids: string[] | null;
  format: LandingFormat;
  bytes: number;
  fetched_at: string;
  sha256: string;
  /**
   * The service's clock when it answered (the response's HTTP Date header, ISO UTC); absent when it sent
   * none, and for imported files. The file holds the data known up to this instant.
   */
  service_time?: string;
  /** For `cbp load`: the path the user gave. */
  source?: string;
}

export interface DownloadArgs {
  kind: ReportKind;
  start: string;
  end: string;
  mids?: string[];
  format?: 'JSON' | 'CSV' | 'json' | 'csv';
  dest: string;
  signal?: AbortSignal;
}
export type DownloadFn = (args: DownloadArgs) => Promise<{ path: string; bytes: number; fetchedAt: string; empty: boolean; status: number; serviceTime?: string }>;

/** The reporting client, structurally (client/reporting.ts names it fetchReport; downloadReport accepted too). */
export type ReportDownloader = { fetchReport: DownloadFn } | { downloadReport: DownloadFn };

export interface LandingDeps {
  client: ReportDownloader;
  dataDir: string;
}

export interface FetchWindow {
  /** First day, inclusive, UTC (YYYY-MM-DD; a date-time is cut to its date). */
  start: string;
  /** Last day, inclusive. */
  end: string;
  mids?: string[];
  format?: LandingFormat;
}

export const metaPath = (file: string) => `${file}.meta.json`;

export function readMeta(file: string): LandingMeta | undefined {
  const p = metaPath(file);
  if (!existsSync(p)) return undefined;
  try {
    return JSON.parse(readFileSync(p, 'utf8')) as LandingMeta;
  } catch {
    return undefined;
  }
}

function writeMeta(file: string, meta: LandingMeta): void {
  const p = metaPath(file);
  writeFileSync(`${p}.part`, JSON.stringify(meta, null, 2) + '\n');
  renameSync(`${p}.part`, p);
}

export function midsHash(mids: string[] | undefined | null): string | undefined {
  if (!mids || mids.length === 0) return undefined;
  return createHash('sha256').update([...new Set(mids)].sort().join(',')).digest('hex').slice(0, 12);
}

function day(v: string, what: string): string {
  const iso = toIsoUtc(String(v), true);
  if (!iso) throw new UsageError(`${what} must be a date YYYY-MM-DD (UTC), got ${JSON.stringify(v)}`);
  return iso.slice(0, 10);
}

export function landingPath(dataDir: string, kind: ReportKind, w: { start: string; end: string; mids?: string[] | null }, format: LandingFormat): string {
  const h = midsHash(w.mids);
  const name = `${day(w.start, 'start')}_${day(w.end, 'end')}${h ? `_${h}` : ''}.${format}`;
  return path.join(dataDir, 'landing', kind, name);
}

/**
 * A file's sha256, read in 1 MiB chunks into one reused buffer: a stream's fresh chunk per read held memory
 * until collected. Used by landing, loads and journal ingestion alike.
 */
export async function sha256Stream(file: string): Promise<string> {
  const h = createHash('sha256');
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      h.update(buf.subarray(0, bytesRead));
    }
  } finally {
    await fh.close();
  }
  return h.digest('hex');
}

/** Downloads one report window into landing (the client writes `<dest>.part`, then renames) and writes its sidecar. */
export async function fetchReport(deps: LandingDeps, kind: ReportKind, w: FetchWindow): Promise<{ path: string; meta: LandingMeta }> {
  const format = w.format ?? 'json';
  const start = day(w.start, 'window start');
  const end = day(w.end, 'window end');
  if (start > end) throw new UsageError(`window start ${start} is after its end ${end}`);
  const dest = landingPath(deps.dataDir, kind, { start, end, mids: w.mids }, format);
  mkdirSync(path.dirname(dest), { recursive: true });
  // Inclusive days: the whole of the last day, to its final second.
  const c = deps.client;
  const download: DownloadFn = 'fetchReport' in c ? c.fetchReport.bind(c) : c.downloadReport.bind(c);
  const dl = await download({
    kind,
    start: `${start}T00:00:00Z`,
    end: `${end}T23:59:59Z`,
    ...(w.mids?.length ? { mids: w.mids } : {}),
    format: format === 'csv' ? 'CSV' : 'JSON',
    dest,
  });
  const file = dl.path ?? dest;
  // An empty 200 is still a landed report (no data for the window): keep an empty file so the load records it.
  if (!existsSync(file)) writeFileSync(file, '');
  const meta: LandingMeta = {
    kind,
    start,
    end,
    mids: w.mids?.length ? [...w.mids] : null,
    format,
    bytes: statSync(file).size,
    fetched_at: toIsoUtc(dl.fetchedAt) ?? new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    sha256: await sha256Stream(file),
    ...(dl.serviceTime && toIsoUtc(dl.serviceTime) ? { service_time: toIsoUtc(dl.serviceTime) as string } : {}),
  };
  writeMeta(file, meta);
  return { path: file, meta };
}

/**
 * Copies a report file the user already has into landing, kept as received, with a sidecar. The name carries
 * the content's hash, so importing the same file twice lands it once and keeps its first fetched_at.
 */
export async function importReport(
  dataDir: string,
  kind: ReportKind,
  source: string,
  opts: { format: LandingFormat; window?: Window | null; now?: () => Date },
): Promise<{ path: string; meta: LandingMeta }> {
  const sha256 = await sha256Stream(source);
  const tag = `import-${sha256.slice(0, 12)}`;
  const base = opts.window ? `${day(opts.window.from, 'start')}_${day(opts.window.to, 'end')}_${tag}` : tag;
  const dest = path.join(dataDir, 'landing', kind, `${base}.${opts.format}`);
  const prior = readMeta(dest);
  if (prior && prior.sha256 === sha256 && existsSync(dest)) return { path: dest, meta: prior };
  mkdirSync(path.dirname(dest), { recursive: true });
  copyFileSync(source, `${dest}.part`);
  renameSync(`${dest}.part`, dest);
  const meta: LandingMeta = {
    kind,
    start: opts.window ? day(opts.window.from, 'start') : null,
    end: opts.window ? day(opts.window.to, 'end') : null,
    mids: null,
    format: opts.format,
    bytes: statSync(dest).size,
    // To the millisecond: two files loaded within one second are observations in the order they came.
    fetched_at: (opts.now?.() ?? new Date()).toISOString(),
    sha256,
    source: path.resolve(source),
  };
  writeMeta(dest, meta);
  return { path: dest, meta };
}
