// cbp report: the analyst's report, one self-contained HTML file (report/) from the published snapshot: at risk
// now, trends against the thresholds in force, the portfolio heat map, disputes and data quality. Writes only
// its --out file (atomically: a temp file beside it, then a rename), and replaces an existing file only when it
// is a previous cbp report (its generator marker) or --force says so.
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { configuredLake } from '../../store/lake.ts';
import path from 'node:path';
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { NotFoundError, UsageError } from '../../lib/errors.ts';
import { processAlive } from '../../lib/file-lock.ts';
import { loadRules } from '../../rules/thresholds.ts';
import type { Config } from '../../lib/config.ts';
import type { Store } from '../../store/db.ts';
import { scopeText, type ShownMonth } from '../../report/months.ts';
import type { SectionRead } from '../report-source.ts';
import type { ReportData } from '../../report/html.ts';

/** MIDs read and explained at once by cbp report (bench/report.bench.ts weighs time against peak memory). */
/** The report's "due soon" section: cases due within this many days of the service's day (and every overdue one). */
const DUE_WITHIN_DAYS = 7;

export interface ReportSummary {
  out: string;
  bytes: number;
  /** the last month shown (the latest in the data, or --month) */
  month: string;
  /** the months the at-risk section shows, and how they were chosen (report/months.ts) */
  shown: ShownMonth[];
  /** the sentence naming them ("Latest complete month 2026-03, and 2026-04 month to date (17 of 30 days)") */
  scope: string;
  months: string[];
  mids: number;
  at_level: number;
  on_watch: number;
  trends: number;
  trends_left_out: number;
  charts: number;
  /** why the ratio table is behind the data or the rules, and what to run; null when current */
  ratios_behind: string | null;
}

const MARKER = 'content="cbp report"';

/** Whether the file at p is a report cbp wrote (its first 4 KiB hold the generator marker). */
function isCbpReport(p: string): boolean {
  const fd = openSync(p, 'r');
  try {
    const buf = Buffer.alloc(4096);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n).toString('utf8').includes(MARKER);
  } finally {
    closeSync(fd);
  }
}

/** Refuses (exit 2) an --out that is a folder, or a file that is not a previous cbp report, unless forced. */
export function checkOut(out: string, force: boolean): void {
  if (!existsSync(out)) return;
  const st = statSync(out);
  if (st.isDirectory()) throw new UsageError(`--out ${out} is a folder: name the HTML file to write, e.g. --out ${path.join(out, 'report.html')}`);
  if (!force && !isCbpReport(out)) {
    throw new UsageError(`--out ${out} exists and is not a report cbp wrote: cbp will not overwrite it. Name another file, or add --force to replace it.`);
  }
}

/** The temp files of reports to this file that a killed cbp report left (their process is gone): removed. */
function removeLeftovers(file: string): void {
  const prefix = `.${path.basename(file)}.cbp-report-`;
  let names: string[];
  try {
    names = readdirSync(path.dirname(file));
  } catch {
    return;
  }
  for (const n of names) {
    const pid = n.startsWith(prefix) && n.endsWith('.tmp') ? Number(n.slice(prefix.length).split('-')[0]) : NaN;
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && !processAlive(pid)) rmSync(path.join(path.dirname(file), n), { force: true });
  }
}

/**
 * Writes text to file through a temp file in the same folder and a rename: a reader sees the old file or the
 * new one. A temp file a killed run left beside it is removed first.
 */
export function writeAtomically(file: string, text: string): number {
  mkdirSync(path.dirname(file), { recursive: true });
  removeLeftovers(file);
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.cbp-report-${process.pid}-${Date.now()}.tmp`);
  const data = Buffer.from(text, 'utf8');
  try {
    const fd = openSync(tmp, 'w', 0o644);
    try {
      let off = 0;
      while (off < data.length) off += writeSync(fd, data, off, data.length - off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  return data.length;
}

export interface BuildReportOptions {
  /** the settings read: the data folder (default --out), the snapshot, the store, the rules */
  config: Pick<Config, 'dataDir' | 'snapshotPath' | 'dbPath' | 'storeMemoryLimit' | 'thresholdsFile' | 'defaultRegion' | 'store' | 'lakeDataPath' | 'lakeExtensionsDir' | 'lakeStatementTimeout'>;
  out?: string;
  month?: string;
  mids?: string[];
  snapshot?: string;
  force?: boolean;
  /** the clock (tests) */
  now?: Date;
}

/** What cbp report reads: as `cbp ratios` does (store/analyst.ts openReadingSession). */
async function openReading(cfg: BuildReportOptions['config'], snapshot?: string): Promise<Store> {
  const analyst = await import('../../store/analyst.ts');
  return analyst.openReadingSession({ snapshotPath: cfg.snapshotPath, dbPath: cfg.dbPath, lake: configuredLake(cfg), memoryLimit: cfg.storeMemoryLimit }, snapshot);
}

/** A path as the page shows it: relative to the working folder when it lies under it, else as it is. */
function shown(p: string): string {
  const rel = path.relative(process.cwd(), p);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : p;
}

/** Builds and writes the report; what `cbp report` and the demo run. */
export async function writeReport(o: BuildReportOptions): Promise<ReportSummary> {
  if (o.month !== undefined && !/^\d{4}-(0[1-9]|1[0-2])$/.test(o.month)) throw new UsageError(`--month must be YYYY-MM, got ${JSON.stringify(o.month)}`);
  const cfg = o.config;
  const out = path.resolve(o.out ?? path.join(cfg.dataDir, 'report.html'));
  checkOut(out, o.force ?? false);
  const mids = [...new Set((o.mids ?? []).flatMap((m) => m.split(',')).map((m) => m.trim()).filter(Boolean))];
  const rules = loadRules(cfg.thresholdsFile, { defaultRegion: cfg.defaultRegion });
  const [q, { readRatioSection }] = await Promise.all([import('../../store/report.ts'), import('../report-source.ts')]);
  const snapshot = o.snapshot ?? cfg.snapshotPath;
  const { refreshBeforeReading } = await import('../kept-table.ts');
  const kept = await refreshBeforeReading(cfg, rules, o.snapshot, true);
  const store = kept ?? (await openReading(cfg, o.snapshot));
  const { onOneSnapshot } = await import('../../store/analyst.ts');
  let read!: SectionRead;
  let data!: ReportData;
  try {
    // One version read throughout: a lake's reads in one transaction (a file store's session reads one already).
    await onOneSnapshot(store, async () => {
      const volume = await q.reportVolume(store);
      if (volume.mid_stats === 0 && volume.chargebacks === 0) {
        throw new NotFoundError(
          `Nothing to report: ${existsSync(snapshot) ? `the snapshot ${snapshot}` : 'the store'} holds no MID report figures and no chargebacks yet. ` +
            'Load reports first (`cbp run nightly`, or `cbp load mid_report FILE` and `cbp load chargebacks FILE`), then run cbp report again.',
        );
      }
      await q.checkKnownMids(store, mids);
      // No --month: the months `cbp ratios` shows with no flags (the latest, and the one before while it is open).
      const month = o.month ?? (volume.latest_month as string);
      // The kept ratio table: only the rows the page shows are read (cli/report-source.ts).
      read = await readRatioSection(store, { month, scope: o.month ? 'month' : 'latest', rules, picked: mids, judgedHere: kept !== undefined });
      const section = read.section;
      const scope = { from: section.months[0], to: month, mids: mids.length ? mids : undefined };
      const made = o.now ?? new Date();
      const generatedAt = made.toISOString().replace(/\.\d{3}Z$/, 'Z');
      const [{ serviceClock }, out6] = await Promise.all([import('../../store/status.ts'), import('../../store/report-outcomes.ts')]);
      const [reasonCodes, winRates, statuses, orderAge, matchRates, quarantine, freshness, service, due, prevention, vintage] = await Promise.all([
        q.reasonCodes(store, scope), q.winRates(store, scope), q.statusesByMonth(store, scope), q.disputesByOrderAge(store, scope),
        q.matchRates(store), q.quarantineByReason(store), q.freshness(store), serviceClock(store, made),
        out6.dueSoon(store, scope, { within: DUE_WITHIN_DAYS, now: made }), out6.preventionByPartner(store, scope), out6.vintage(store, scope),
      ]);
      data = {
        meta: {
          generatedAt,
          serviceNow: service?.now ?? null,
          snapshot: shown(existsSync(snapshot) ? snapshot : cfg.dbPath),
          snapshotModifiedAt: existsSync(snapshot) ? statSync(snapshot).mtime.toISOString().replace(/\.\d{3}Z$/, 'Z') : null,
          mids,
          thresholds: cfg.thresholdsFile ? shown(cfg.thresholdsFile) : 'the reference programs (rules/defaults.json)',
          ratiosBehind: read.check.behind,
        },
        ratios: section,
        disputes: { reasonCodes, winRates, statuses, statusNames: q.REPORT_STATUSES, orderAge },
        quality: { matchRates, quarantine, freshness },
        outcomes: { due, prevention, vintage },
      };
    });
  } finally {
    store.close();
  }
  // Rendered once the store is closed: the charting code (large once loaded) and the page's text do not sit beside DuckDB's memory.
  const { renderReport } = await import('../../report/html.ts');
  const html = renderReport(data);
  // Checked again: another process may have put a file there while the report was being built.
  checkOut(out, o.force ?? false);
  const bytes = writeAtomically(out, html);
  const section = read.section;
  return {
    out, bytes, month: section.month, shown: section.shown, scope: scopeText(section.shown, section.scope), months: section.months, mids: section.mids,
    // MID × programs, once each whichever month shown puts them there
    at_level: new Set(section.atRisk.filter((r) => r.state === 'level').map((r) => `${r.mid} ${r.network} ${r.program}`)).size,
    on_watch: new Set(section.atRisk.filter((r) => r.state === 'watch').map((r) => `${r.mid} ${r.network} ${r.program}`)).size,
    trends: section.trends.length, trends_left_out: section.trendsLeftOut,
    charts: (html.match(/<figure class="chart"/g) ?? []).length,
    ratios_behind: read.check.behind,
  };
}

function human(s: ReportSummary): string {
  return [
    `wrote ${s.out} (${(s.bytes / 1024).toFixed(0)} KiB, ${s.charts} charts): ${s.scope}; ${s.mids} MID${s.mids === 1 ? '' : 's'}, ` +
      `${s.at_level} MID × program${s.at_level === 1 ? '' : 's'} at a level, ${s.on_watch} on watch, ${s.trends} trend${s.trends === 1 ? '' : 's'}` +
      (s.trends_left_out ? ` (${s.trends_left_out} more left out: --mid picks MIDs)` : ''),
    `open it in any browser; it needs no network`,
  ].join('\n');
}

/** `cbp report --email`: the digest (alerts/digest.ts) read as the report reads, and sent. */
async function emailDigest(cfg: Config, snapshot?: string) {
  const digest = await import('../../alerts/digest.ts');
  const mail = digest.digestMailOptions(cfg);
  const rules = loadRules(cfg.thresholdsFile, { defaultRegion: cfg.defaultRegion });
  const store = await openReading(cfg, snapshot);
  let d;
  try {
    d = await digest.buildDigest(store, rules, { now: new Date(), dueWithin: cfg.digestDueDays });
  } finally {
    store.close();
  }
  return digest.sendDigest(d, mail);
}

export function register(program: Command, ctx: Ctx): void {
  program
    .command('report')
    .description('Write the analyst\'s report: one self-contained HTML file of charts and tables from the published snapshot')
    .option('--out <file>', 'HTML file to write (default <CBP_DATA_DIR>/report.html); an existing file is replaced only if cbp wrote it')
    .option('--month <YYYY-MM>', 'the month the report is about (default: as `cbp ratios` with no flags, the latest complete month and the month to date); trends cover the 13 months to it')
    .option('--mid <mid...>', 'only these MIDs (repeat, or separate with commas): every program of theirs gets a trend')
    .option('--snapshot <file>', 'snapshot to read (default CBP_SNAPSHOT_PATH; the store read-only when none exists)')
    .option('--force', 'replace --out even when it is not a report cbp wrote')
    .option('--email', 'send the digest instead: the at-risk rows with headroom and fees, the cases due soon and two trend charts, as one e-mail to CBP_ALERT_EMAIL_TO (writes the HTML file only with --out)')
    .option('--json', 'print what was written as JSON')
    .addHelpText('after', [
      '',
      'Without --month the report shows the months `cbp ratios` shows with no flags: the latest month in the data,',
      'and the month before it while the latest is month to date; its header names them ("Latest complete month',
      '2026-03, and 2026-04 month to date (17 of 30 days)").',
      'Sections: 1 at risk now (each MID x program in force, by closeness to its threshold; a level held below',
      'it says until when; unknown: a source not loaded), 2 trends (up to 13 months, from the first with figures,',
      'thresholds in force each month, the month-to-date projection dashed), 3 portfolio heat map (a month to',
      'date hatched and marked MTD; a ratio over whose count or amount condition is not met in a colour of its',
      'own), 4 disputes (reason codes, win rate with few decided cases marked, statuses, order age), 5 data',
      'quality (match rates, quarantine, freshness), 6 due soon (open cases by representment deadline, 7 days),',
      '7 prevention outcomes per partner, 8 vintage (disputes by month of sale).',
      'The file has no script to run and fetches nothing; its figures are also in <script type="application/json"',
      'id="cbp-report-data">. An empty store is refused (exit 1) with what to load first.',
    ].join('\n'))
    .action(async (o: { out?: string; month?: string; mid?: string[]; snapshot?: string; force?: boolean; json?: boolean; email?: boolean }) => {
      if (o.email) {
        const sent = await emailDigest(ctx.config(), o.snapshot);
        ctx.out(sent, (await import('../../alerts/digest.ts')).digestSentText, o.json);
        if (!o.out) return;
      }
      const s = await writeReport({ config: ctx.config(), out: o.out, month: o.month, mids: o.mid, snapshot: o.snapshot, force: o.force });
      // Only when an evaluation has run (a store that never ran one says so in the page's header alone).
      if (s.ratios_behind) process.stderr.write(`cbp: the ratio table is behind: ${s.ratios_behind}\n`);
      ctx.out(s, human, o.json);
    });
}
