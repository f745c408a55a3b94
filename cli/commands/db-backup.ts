// cbp db backup / restore / retention: a consistent copy of the store and the journal's unsealed state, putting one
// back, and the opt-in removal of old raw files (store/backup.ts, store/retention.ts; docs/operations.md).
import type { Command } from 'commander';
import { UsageError } from '../../lib/errors.ts';
import { configuredStore } from '../../store/lake.ts';
import type { Ctx } from '../context.ts';
import type { BackupManifest, RestoreResult } from '../../store/backup.ts';

function humanBackup(r: BackupManifest & { path: string; note?: string }): string {
  const rows = Object.values(r.tables).reduce((a, b) => a + b, 0);
  return [
    `backed up the ${r.source === 'store' ? 'store' : 'published snapshot'} to ${r.path}: ${rows} rows in ${Object.keys(r.tables).length} tables (generation ${r.generation ?? '-'})`,
    `journal: ${r.journal.segments.length} segments not yet in the store (${r.journal.openLines} lines of the open one${r.journal.fromArchive ? `, ${r.journal.fromArchive} archived` : ''})`,
    r.thresholds ? `thresholds: ${r.thresholds}, copied as thresholds.json` : 'thresholds: the built-in rules (no CBP_THRESHOLDS_FILE)',
    'not in a backup: the settings (.env, the config file) and their secrets; keep them with it',
    ...(r.note ? [`note: ${r.note}`] : []),
    `put it back with: cbp db restore ${r.path}`,
  ].join('\n');
}

function humanRestore(r: RestoreResult): string {
  const rows = Object.values(r.tables).reduce((a, b) => a + b, 0);
  const segs = r.journalSegments.length + r.requeued.length;
  return [
    `restored ${r.restored} from ${r.from}: ${rows} rows${r.replacedRows ? ` (replacing a store of ${r.replacedRows} rows)` : ''}`,
    segs ? `${segs} journal segments queued for ingest (${r.journalSegments.length} from the backup, ${r.requeued.length} archived ones the backup had not loaded): run \`cbp run ingest\`, or let the worker` : 'journal: nothing to put back',
    ...(r.backupThresholds
      ? [`the ratios were judged again by the rules in force here; the backup's thresholds file differs: to judge by it, set CBP_THRESHOLDS_FILE=${r.backupThresholds} (or copy it in place) and run cbp alerts evaluate`]
      : []),
    'the next run republishes the snapshot (or: cbp db snapshot)',
  ].join('\n');
}

export function registerBackup(db: Command, ctx: Ctx): void {
  db.command('backup')
    .description('Write a consistent copy of the store and the journal\'s unsealed state into a new folder, safe while the receiver and the pipeline run (while a worker holds the store, its published snapshot is copied, with the journal segments it has not loaded)')
    .requiredOption('--out <dir>', 'a new (or empty) folder for the backup')
    .option('--wait-seconds <n>', 'how long to wait for a run that holds the store before copying the snapshot instead', '10')
    .option('--json', 'print the result as JSON')
    .action(async (o: { out: string; waitSeconds: string; json?: boolean }) => {
      if (!/^\d+$/.test(o.waitSeconds)) throw new UsageError(`--wait-seconds must be a whole number, got ${JSON.stringify(o.waitSeconds)}`);
      const { backup } = await import('../../store/backup.ts');
      const cfg = ctx.config();
      const r = await backup({ store: { ...configuredStore(cfg), lockWaitMs: Number(o.waitSeconds) * 1000 }, snapshotPath: cfg.snapshotPath, journalDir: cfg.journalDir, out: o.out, thresholdsFile: cfg.thresholdsFile });
      ctx.out(r, humanBackup, o.json);
    });
  db.command('restore')
    .description('Put a backup back in place of the store, and its journal segments back for ingest. Refuses a store that holds data unless --force; refuses one a running worker holds')
    .argument('<dir>', 'a folder `cbp db backup --out` wrote')
    .option('--force', 'replace a store that is not empty')
    .option('--json', 'print the result as JSON')
    .action(async (dir: string, o: { force?: boolean; json?: boolean }) => {
      const { restore } = await import('../../store/backup.ts');
      const cfg = ctx.config();
      const r = await restore({ store: configuredStore(cfg), journalDir: cfg.journalDir, from: dir, force: o.force, thresholdsFile: cfg.thresholdsFile });
      // The restored ratio table judged by the rules in force here (the backup's may have been others).
      const { openStore } = await import('../../store/db.ts');
      const { refreshAfterWrite } = await import('../after-write.ts');
      const store = await openStore(configuredStore(cfg));
      try {
        await refreshAfterWrite(store, cfg);
      } finally {
        store.close();
      }
      ctx.out(r, humanRestore, o.json);
    });
}
