// cbp load <kind> FILE: loads a report file the user already has (e.g. exported from the service's portal)
// through the same path as a fetched one: copied into landing as received, loaded, snapshot published.
import { existsSync, rmSync } from 'node:fs';
import { configuredStore } from '../../store/lake.ts';
import path from 'node:path';
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { firstQuarantineReason, outsideWindow, unknownMidsOf } from '../../store/load/findings.ts';
import { judgeAfterWrite } from '../after-write.ts';
import { NotFoundError, UsageError, ValidationError } from '../../lib/errors.ts';
import { BadReportFileError } from '../../store/errors.ts';
import { importReport, metaPath } from '../../store/landing.ts';
import { checkReadable, loadReport, normaliseWindow, type FileFormat, type LoadResult, type Window } from '../../store/load.ts';
import { REPORT_KINDS, type ReportKind } from '../../contract/reporting.ts';

interface LoadOpts {
  format?: string;
  from?: string;
  to?: string;
  json?: boolean;
}

/**
 * What `cbp load` prints: the load's result, its window as `{start, end}` (the sidecar's and the loads table's
 * names, and what this command has always printed), and the snapshot.
 */
type Printed = Omit<LoadResult, 'window'> & { window: { start: string; end: string } | null; snapshot: string };

/** Where a load's quarantined rows are read. */
const quarantineHint = (kind: string) => `see them with: cbp sql "SELECT reason, raw FROM quarantine WHERE kind = '${kind}'"`;

function human(r: Printed): string {
  const w = r.window ? ` for ${r.window.start}..${r.window.end}` : '';
  return [
    `loaded ${r.kind}${w} from ${r.file}: ${r.rowsRead} rows read, ${r.rowsLoaded} loaded, ${r.quarantined} quarantined` +
      (r.reloaded ? ' (same file loaded before: nothing changed)' : ''),
    r.quarantined ? `  ${quarantineHint(r.kind)}` : '',
    `snapshot published: ${r.snapshot}`,
  ]
    .filter(Boolean)
    .join('\n');
}

/** Checks the arguments before anything touches landing or the store. */
export function parseLoadArgs(kind: string, file: string, o: LoadOpts): { kind: ReportKind; format: FileFormat; window: Window | null } {
  if (!(REPORT_KINDS as readonly string[]).includes(kind)) {
    throw new UsageError(`unknown report kind ${JSON.stringify(kind)}: expected one of ${REPORT_KINDS.join(', ')}`);
  }
  let format: FileFormat;
  if (o.format) {
    const f = o.format.trim().toLowerCase();
    if (f !== 'json' && f !== 'csv') throw new UsageError(`--format must be json or csv, got ${JSON.stringify(o.format)}`);
    format = f;
  } else {
    const ext = path.extname(file).toLowerCase();
    if (ext !== '.json' && ext !== '.csv') throw new UsageError(`cannot tell the format of ${file} from its extension: pass --format json or --format csv`);
    format = ext === '.json' ? 'json' : 'csv';
  }
  if (Boolean(o.from) !== Boolean(o.to)) throw new UsageError('give both --from and --to (inclusive UTC days, YYYY-MM-DD), or neither');
  const window = o.from && o.to ? normaliseWindow({ from: o.from, to: o.to }, 'the window (--from/--to)') : null;
  if (kind === 'mid_report' && !window) {
    throw new UsageError('a MID report\'s records carry no dates: give its window with --from YYYY-MM-DD --to YYYY-MM-DD (inclusive, UTC)');
  }
  return { kind: kind as ReportKind, format, window };
}

export function register(program: Command, ctx: Ctx): void {
  program
    .command('load')
    .description('Load a report file you already have (chargebacks, prevention or mid_report) into the store')
    .argument('<kind>', `report kind: ${REPORT_KINDS.join(', ')}`)
    .argument('<file>', 'the report file, JSON (an array of records) or CSV (with a header)')
    .option('--format <format>', 'json or csv (default: from the file extension)')
    .option('--from <date>', 'first day of the report window, YYYY-MM-DD UTC (required for mid_report)')
    .option('--to <date>', 'last day of the report window, inclusive')
    .option('--json', 'print the result as JSON')
    .action(async (kindArg: string, file: string, o: LoadOpts) => {
      const { kind, format, window } = parseLoadArgs(kindArg, file, o);
      if (!existsSync(file)) throw new NotFoundError(`report file ${file} does not exist`);
      const { openStore } = await import('../../store/db.ts');
      const { publishSnapshot } = await import('../../store/snapshot.ts');
      // A folder or a file cbp may not read: said so, before anything is copied into landing.
      checkReadable(file, file, format, kind);
      const cfg = ctx.config();
      const imported = await importReport(cfg.dataDir, kind, file, { format, window });
      const store = await openStore(configuredStore(cfg));
      try {
        let r: LoadResult;
        try {
          r = await loadReport(store, imported.path, { kind, format, window: window ?? undefined });
        } catch (e) {
          // A file that is not a report of this kind is not kept in landing either: nothing stored. (The same
          // bytes can never have loaded before, so this copy is not one a past load relies on.)
          if (e instanceof BadReportFileError) {
            rmSync(imported.path, { force: true });
            rmSync(metaPath(imported.path), { force: true });
            // The store names the landing copy by its absolute path: shown as the file the user typed.
            throw new BadReportFileError(e.message.split(path.resolve(imported.path)).join(file).split(imported.path).join(file), { cause: e });
          }
          // Any other failure (the store out of memory, the disk full) names the file as typed too.
          if (e instanceof Error) e.message = e.message.split(path.resolve(imported.path)).join(file).split(imported.path).join(file);
          throw e;
        }
        await judgeAfterWrite(store, cfg);
        const snap = await publishSnapshot(store, { snapshotPath: cfg.snapshotPath });
        const printed: Printed = { ...r, window: r.window && { start: r.window.from, end: r.window.to }, snapshot: snap.path };
        ctx.out(printed, human, o.json);
        if (kind !== 'mid_report' && r.rowsLoaded > 0) {
          const unknown = unknownMidsText(await unknownMidsOf(store, kind, r.file));
          if (unknown) process.stderr.write(`cbp: ${unknown}\n`);
          const out = r.window ? await outsideWindow(store, kind, r.file, r.window) : { count: 0, first: null };
          if (out.count) {
            process.stderr.write(`cbp: ${out.count} case${out.count === 1 ? ' was' : 's were'} received outside ${r.window!.from}..${r.window!.to} (the first: ${out.first}): loaded by their own dates; check --from/--to\n`);
          }
        }
        // Rows read and none loaded is a failed load, though the quarantine keeps them.
        if (r.rowsRead > 0 && r.rowsLoaded === 0 && !r.reloaded) {
          const first = await firstQuarantineReason(store, r.file);
          throw new ValidationError(file, [
            `no row could be loaded: all ${r.rowsRead} were quarantined${first ? `, the first because ${first}` : ''}`,
            `fix the file and load it again; the rows are kept in the quarantine: ${quarantineHint(kind)}`,
          ]);
        }
      } finally {
        store.close();
      }
    });
}

/** What to say of the MIDs of a loaded file that no MID report names; null when every one is named. */
function unknownMidsText(u: { count: number; first: string | null; anyMidReport: boolean }): string | null {
  const n = u.count;
  if (n === 0) return null;
  const which = `${n} MID${n === 1 ? '' : 's'} of this file (${u.first}${n > 1 ? ', …' : ''})`;
  return !u.anyMidReport
    ? `${which}: no MID report is loaded yet, so no ratio counts these cases: load one (cbp load mid_report FILE --from YYYY-MM-01 --to YYYY-MM-DD)`
    : `${which} ${n === 1 ? 'is' : 'are'} in no MID report loaded: their cases count in no ratio until a MID report names ${n === 1 ? 'it' : 'them'} (a typo in the file, or a MID report not loaded yet?)`;
}
