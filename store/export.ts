// cbp export: the analyst-facing marts and facts of the published snapshot as Parquet or CSV files, for
// tools that do not open DuckDB files. It reads the snapshot, never the working store, so it never blocks
// the pipeline. The statements are cbp's own; the session is an analyst session (store/analyst.ts) whose
// one writable folder is a staging folder beside --out, so DuckDB can write nowhere else.
//
// Layout: OUT/<table>/month=YYYY-MM/data_0.parquet for tables with a date (Hive partitioning: DuckDB,
// pandas/pyarrow, Spark and Polars read the folder back with a month column), OUT/<table>/data.parquet for
// the others, and OUT/cbp-export.json, the manifest: what was exported, from which snapshot, and every file
// written. A non-empty --out is used only when it holds a previous export and nothing else (the manifest
// lists every file); the new export is built in the staging folder and swapped in whole, so a reader sees
// the old export or the new one, and cbp never deletes a file it did not write.
//
// Staging (`.<out>.cbp-export-XXXXXX`) and the replaced export (`.<out>.cbp-old-XXXXXX`) sit beside --out and
// carry a marker file naming the process that made them until they are renamed or removed (the marker goes
// last), so what an export killed mid-way leaves is recognised and removed by the next export of that --out.
import {
  chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, rmdirSync,
  statSync, writeFileSync,
} from 'node:fs';
import os from 'node:os';
import type { LakeOptions } from './lake.ts';
import path from 'node:path';
import { NotFoundError, UsageError } from '../lib/errors.ts';
import { onOneSnapshot, openLakeAnalystSession, openSnapshotSession } from './analyst.ts';
import type { Store } from './db.ts';
import { NoSnapshotError } from './errors.ts';
import { martFreshness } from './ratio-mart.ts';
import { EXPORT_TABLES, type ExportTable } from './export-tables.ts';

export { EXPORT_TABLES, type ExportTable };

export type ExportFormat = 'parquet' | 'csv';

export const MANIFEST = 'cbp-export.json';

export interface ExportOptions {
  snapshotPath: string;
  outDir: string;
  format: ExportFormat;
  /** Table names (default: all of EXPORT_TABLES). */
  tables?: string[];
  /** Inclusive UTC days YYYY-MM-DD (validated by the caller). */
  from?: string;
  to?: string;
  /** The working store, which is refused as a snapshot (a reader would hold its lock). */
  workingStore?: string;
  memoryLimit?: string;
  /** The store is this lake: its latest committed snapshot is read in place (snapshotPath unused). */
  lake?: LakeOptions;
}

export interface ExportedTable {
  name: string;
  rows: number;
  partitionedBy: 'month' | null;
  /** Paths relative to the export folder. */
  files: string[];
}

export interface ExportManifest {
  cbpExport: 1;
  format: ExportFormat;
  snapshot: string;
  snapshotModifiedAt: string;
  exportedAt: string;
  from: string | null;
  to: string | null;
  tables: ExportedTable[];
}

export interface ExportResult extends ExportManifest {
  outDir: string;
  /** why the exported mart_ratios is older than the data, and what to run; null when current or not exported */
  ratiosBehind: string | null;
  /** True when a previous export in --out was replaced. */
  replaced: boolean;
}

const isoSeconds = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;
const text = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** The tables asked for, by name, in EXPORT_TABLES order; a usage error names the unknown ones. */
export function pickTables(names?: string[]): ExportTable[] {
  if (!names || names.length === 0) return [...EXPORT_TABLES];
  const wanted = new Set(names.flatMap((n) => n.split(',')).map((n) => n.trim()).filter(Boolean));
  const unknown = [...wanted].filter((n) => !EXPORT_TABLES.some((t) => t.name === n));
  if (unknown.length) {
    throw new UsageError(`--table: unknown ${unknown.map((n) => JSON.stringify(n)).join(', ')}; expected one or more of ${EXPORT_TABLES.map((t) => t.name).join(', ')}`);
  }
  return EXPORT_TABLES.filter((t) => wanted.has(t.name));
}

/** Every file under dir, relative to it, with / separators; directories only as the paths to those files. */
function listFiles(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) {
      const inner = listFiles(dir, r);
      // An empty folder counts as an entry of its own: nothing in a manifest names it.
      out.push(...(inner.length ? inner : [`${r}/`]));
    } else out.push(r);
  }
  return out.sort();
}

function readManifest(outDir: string): ExportManifest | undefined {
  try {
    const m = JSON.parse(readFileSync(path.join(outDir, MANIFEST), 'utf8')) as ExportManifest;
    return m && m.cbpExport === 1 && Array.isArray(m.tables) ? m : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What in dir a cbp export's manifest does not account for. An empty folder under a table's own folder counts
 * as the export's: earlier versions left one for a dated table with no rows (DuckDB's partitioned COPY of 0 rows).
 */
function strangersOf(files: string[], manifest: ExportManifest): string[] {
  const known = new Set([MANIFEST, ...manifest.tables.flatMap((t) => t.files)]);
  const tables = new Set(manifest.tables.map((t) => t.name));
  return files.filter((f) => !known.has(f) && !(f.endsWith('/') && tables.has(f.split('/')[0])));
}

/** The folder --out names: a symbolic link to a folder is followed, so the export goes where it points. */
function realOut(outDir: string): string {
  let link = false;
  try {
    link = lstatSync(outDir).isSymbolicLink();
  } catch {
    return outDir;
  }
  if (!link) return outDir;
  if (!existsSync(outDir)) {
    throw new UsageError(`--out ${outDir} is a symbolic link to ${readlinkSync(outDir)}, which does not exist: create that folder, or give another --out.`);
  }
  return realpathSync(outDir);
}

/** 'new' (absent), 'empty', or 'previous' (a cbp export and nothing else); anything else is refused. */
function checkOut(outDir: string): 'new' | 'empty' | 'previous' {
  if (!existsSync(outDir)) return 'new';
  if (!statSync(outDir).isDirectory()) throw new UsageError(`--out ${outDir} is a file, not a folder: give a folder for the export.`);
  const files = listFiles(outDir);
  if (files.length === 0) return 'empty';
  const manifest = readManifest(outDir);
  const advice = 'choose a new or empty folder (cbp never deletes files it did not write).';
  if (!manifest) throw new UsageError(`--out ${outDir} is not empty and holds no cbp export (no ${MANIFEST}): ${advice}`);
  const strangers = strangersOf(files, manifest);
  if (strangers.length) {
    throw new UsageError(
      `--out ${outDir} holds a cbp export and also files cbp did not write (${strangers.slice(0, 5).join(', ')}${strangers.length > 5 ? ', …' : ''}): ` +
        `move them out, or ${advice}`,
    );
  }
  return 'previous';
}

function whereClause(t: ExportTable, from?: string, to?: string): string {
  const conds: string[] = [];
  if (t.day) {
    if (from) conds.push(`(${t.day}) >= DATE ${text(from)}`);
    if (to) conds.push(`(${t.day}) <= DATE ${text(to)}`);
  } else if (t.monthly) {
    if (from) conds.push(`month >= ${text(from.slice(0, 7))}`);
    if (to) conds.push(`month <= ${text(to.slice(0, 7))}`);
  }
  return conds.length ? ` WHERE ${conds.join(' AND ')}` : '';
}

/**
 * `*` of a table or view as exported: DECIMAL columns (amounts) as DOUBLE, since pandas and Polars read a Parquet
 * DECIMAL as Python Decimal objects, which sum and plot poorly (docs/spec-decisions.md, "Export").
 */
export async function exportedColumns(store: Pick<Store, 'conn'>, table: string): Promise<string> {
  const cols = (await store.conn.runAndReadAll(`DESCRIBE SELECT * FROM ${ident(table)}`)).getRowObjectsJson() as Array<{ column_name: string; column_type: string }>;
  const money = cols.filter((c) => /^DECIMAL\b/i.test(c.column_type)).map((c) => `CAST(${ident(c.column_name)} AS DOUBLE) AS ${ident(c.column_name)}`);
  return money.length ? `* REPLACE (${money.join(', ')})` : '*';
}

async function copyTable(store: Store, t: ExportTable, stage: string, format: ExportFormat, from?: string, to?: string): Promise<ExportedTable> {
  const where = whereClause(t, from, to);
  const fmt = format === 'csv' ? 'FORMAT csv, HEADER true' : 'FORMAT parquet, COMPRESSION zstd';
  const target = path.join(stage, t.name);
  const partitioned = Boolean(t.day || t.monthly);
  const cols = await exportedColumns(store, t.name);
  const select = t.day ? `SELECT ${cols}, strftime(${t.day}, '%Y-%m') AS month FROM ${ident(t.name)}` : `SELECT ${cols} FROM ${ident(t.name)}`;
  let sql: string;
  if (partitioned) {
    sql = `COPY (${select}${where}) TO ${text(target)} (${fmt}, PARTITION_BY (month))`;
  } else {
    mkdirSync(target);
    sql = `COPY (${select}${where}) TO ${text(path.join(target, `data.${format}`))} (${fmt})`;
  }
  const rows = Number((await store.conn.runAndReadAll(sql)).getRowsJson()[0]?.[0] ?? 0);
  let files = existsSync(target) ? listFiles(target) : [];
  if (partitioned && files.every((f) => f.endsWith('/'))) {
    // A partitioned COPY of no rows leaves no file: one file of no rows instead, with the columns (month among
    // them), so a reader of the folder (pd.read_parquet, read_parquet('<table>/**/*.parquet')) gets an empty table.
    rmSync(target, { recursive: true, force: true });
    mkdirSync(target);
    await store.conn.run(`COPY (${select} LIMIT 0) TO ${text(path.join(target, `data.${format}`))} (${fmt})`);
    files = listFiles(target);
  }
  return { name: t.name, rows, partitionedBy: partitioned ? 'month' : null, files: files.map((f) => `${t.name}/${f}`) };
}

/** In a staging or replaced-export folder, from its creation until it is renamed into place or removed. */
const MARKER = '.cbp-export-staging';

interface Marker {
  cbpExportStaging: 1;
  pid: number;
  host: string;
}

function writeMarker(dir: string): void {
  const marker: Marker = { cbpExportStaging: 1, pid: process.pid, host: os.hostname() };
  writeFileSync(path.join(dir, MARKER), JSON.stringify(marker) + '\n');
}

function readMarker(dir: string): Marker | undefined {
  try {
    const m = JSON.parse(readFileSync(path.join(dir, MARKER), 'utf8')) as Marker;
    return m?.cbpExportStaging === 1 && Number.isInteger(m.pid) ? m : undefined;
  } catch {
    return undefined;
  }
}

/** Removes a marked folder with its marker last, so a removal cut short still carries it. */
function removeMarked(dir: string): void {
  for (const e of readdirSync(dir)) if (e !== MARKER) rmSync(path.join(dir, e), { recursive: true, force: true });
  rmSync(path.join(dir, MARKER), { force: true });
  rmdirSync(dir);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Removes what an export of the same --out killed mid-way left beside it: folders named as cbp names its
 * staging and replaced-export folders (`.<out>.cbp-export-XXXXXX`, `.<out>.cbp-old-XXXXXX`) that hold cbp's
 * marker of a process no longer running on this machine (or of another machine), or, once --out exists, a
 * whole cbp export and nothing else (a staging folder finished but not yet renamed, a replaced export).
 * Anything else of that name is left alone. Returns the folders removed.
 */
function removeStale(outDir: string): string[] {
  const parent = path.dirname(outDir);
  const name = new RegExp(`^\\.${escapeRe(path.basename(outDir))}\\.cbp-(?:export|old)-[A-Za-z0-9]{6}$`);
  let entries;
  try {
    entries = readdirSync(parent, { withFileTypes: true });
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const e of entries) {
    if (!e.isDirectory() || !name.test(e.name)) continue; // a symbolic link is not followed
    const dir = path.join(parent, e.name);
    const marker = readMarker(dir);
    if (marker) {
      if (marker.host === os.hostname() && marker.pid !== process.pid && alive(marker.pid)) continue; // an export under way
    } else {
      const manifest = readManifest(dir);
      if (!manifest || !existsSync(outDir) || strangersOf(listFiles(dir), manifest).length) continue;
      writeMarker(dir);
    }
    removeMarked(dir);
    removed.push(dir);
  }
  return removed;
}

/** A folder made as mkdir would make it (mkdtemp makes it private), marked as cbp's staging folder. */
function makeStaging(outDir: string): string {
  const parent = path.dirname(outDir);
  mkdirSync(parent, { recursive: true });
  const stage = mkdtempSync(path.join(parent, `.${path.basename(outDir)}.cbp-export-`));
  const umask = process.umask();
  chmodSync(stage, 0o777 & ~umask);
  writeMarker(stage);
  return stage;
}

/** Exports the tables asked for from the snapshot into outDir; see the file's head for the layout and guarantees. */
export async function exportSnapshot(opts: ExportOptions): Promise<ExportResult> {
  const tables = pickTables(opts.tables);
  const shownOut = path.resolve(opts.outDir);
  const outDir = realOut(shownOut);
  const state = checkOut(outDir);
  removeStale(outDir);
  if (!opts.lake && !existsSync(opts.snapshotPath)) {
    throw new NoSnapshotError(`No snapshot at ${opts.snapshotPath} yet: run a load first (e.g. \`cbp load chargebacks FILE\`), which publishes one.`);
  }
  const snapshotModifiedAt = isoSeconds(opts.lake ? new Date() : statSync(opts.snapshotPath).mtime);
  const stage = makeStaging(outDir);
  try {
    const exported: ExportedTable[] = [];
    let ratiosBehind: string | null = null;
    const store = opts.lake
      ? await openLakeAnalystSession(opts.lake, { writableDir: stage, memoryLimit: opts.memoryLimit })
      : await openSnapshotSession(opts.snapshotPath, { writableDir: stage, workingStore: opts.workingStore, memoryLimit: opts.memoryLimit });
    try {
      // One version read throughout: a lake's tables in one transaction (a snapshot file is one version).
      await onOneSnapshot(store, async () => {
        const present = new Set(
          (await store.all<{ name: string }>(
            `SELECT table_name AS name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'
             UNION ALL SELECT view_name FROM duckdb_views() WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal`,
          )).map((r) => r.name),
        );
        const missing = tables.filter((t) => !present.has(t.name)).map((t) => t.name);
        if (missing.length) {
          throw new NotFoundError(
            `The snapshot ${opts.snapshotPath} has no ${missing.join(', ')}: it was published by an older cbp or from another database. ` +
              'Republish it with `cbp db snapshot`.',
          );
        }
        for (const t of tables) exported.push(await copyTable(store, t, stage, opts.format, opts.from, opts.to));
        // The ratio table is kept: written out older than the data (after a crash, or a worker's refresh to come), it says so.
        if (tables.some((t) => t.name === 'mart_ratios')) ratiosBehind = (await martFreshness(store).catch(() => null))?.behind ?? null;
      });
    } finally {
      store.close();
    }
    // Empty means no rows in the tables that hold data (a summary always has its rows); with --from/--to, in
    // the tables the days select from (the others are exported whole).
    const spec = (name: string) => tables.find((t) => t.name === name)!;
    const holding = exported.filter((e) => !spec(e.name).summary);
    const dated = holding.filter((e) => spec(e.name).day || spec(e.name).monthly);
    const counted = (opts.from || opts.to) && dated.length ? dated : holding;
    if (counted.length && counted.every((e) => e.rows === 0)) {
      const names = counted.map((e) => e.name).join(', ');
      throw new NotFoundError(
        opts.from || opts.to
          ? `No rows ${opts.from ? `from ${opts.from} ` : ''}${opts.to ? `to ${opts.to} ` : ''}in ${names} of the snapshot ${opts.snapshotPath}: nothing was written.`
          : `The snapshot ${opts.snapshotPath} holds no rows in ${names} yet: load reports first (\`cbp load KIND FILE\` or \`cbp run\`), which publishes them. Nothing was written.`,
      );
    }
    const manifest: ExportManifest = {
      cbpExport: 1,
      format: opts.format,
      snapshot: path.resolve(opts.snapshotPath),
      snapshotModifiedAt,
      exportedAt: isoSeconds(new Date()),
      from: opts.from ?? null,
      to: opts.to ?? null,
      tables: exported,
    };
    writeFileSync(path.join(stage, MANIFEST), JSON.stringify(manifest, null, 2) + '\n');
    // From here the manifest names the folder as a whole export; the marker must not move into --out.
    rmSync(path.join(stage, MARKER));
    // Checked again just before the swap: a file the user put there meanwhile stops it.
    const now = checkOut(outDir);
    if (now === 'new') renameSync(stage, outDir);
    else if (now === 'empty') {
      for (const e of readdirSync(stage)) renameSync(path.join(stage, e), path.join(outDir, e));
      rmdirSync(stage);
    } else {
      // Every file there is the previous export's (just checked): swap the new one in whole, then drop the old.
      const old = mkdtempSync(path.join(path.dirname(outDir), `.${path.basename(outDir)}.cbp-old-`));
      rmdirSync(old);
      renameSync(outDir, old);
      renameSync(stage, outDir);
      writeMarker(old);
      removeMarked(old);
    }
    return { ...manifest, outDir: shownOut, replaced: state === 'previous' || now === 'previous', ratiosBehind };
  } finally {
    if (existsSync(stage)) removeMarked(stage);
  }
}
