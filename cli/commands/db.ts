// cbp db: the store's schema (migrations and views) and its published snapshot.
import type { Command } from 'commander';
import { UsageError } from '../../lib/errors.ts';
import { configuredLake, configuredStore, lakeLabel } from '../../store/lake.ts';
import type { Ctx } from '../context.ts';
import { refreshAfterWrite } from '../after-write.ts';
import type { MigrateResult } from '../../store/migrate.ts';
import type { SnapshotResult } from '../../store/snapshot.ts';
import { registerBackup } from './db-backup.ts';

function humanMigrate(r: MigrateResult & { dbPath: string }): string {
  const lines = [
    r.applied.length
      ? `applied ${r.applied.length} migration${r.applied.length > 1 ? 's' : ''} to ${r.dbPath}: ${r.applied.map((m) => `${String(m.version).padStart(3, '0')}_${m.name}`).join(', ')}`
      : `${r.dbPath} is up to date (${r.alreadyApplied} migrations applied before)`,
    `views: ${r.views.length} (re)created`,
  ];
  for (const s of r.skippedViews) lines.push(`  view skipped: ${s.file} statement ${s.statement}: ${s.reason}`);
  return lines.join('\n');
}

export function register(program: Command, ctx: Ctx): void {
  const db = program.command('db').description('The analytics store: schema migrations and the published snapshot');
  db.command('migrate')
    .description('Apply pending sql/migrations (once each, checksummed) and make sql/views again')
    .option('--json', 'print the result as JSON')
    .action(async (o: { json?: boolean }) => {
      const { openStore } = await import('../../store/db.ts');
      const cfg = ctx.config();
      const store = await openStore({ ...configuredStore(cfg), remakeViews: true });
      try {
        const r = { dbPath: store.dbPath, ...store.migration! };
        ctx.out(r, humanMigrate, o.json);
        if (r.skippedViews.length) process.exitCode = 1;
      } finally {
        store.close();
      }
    });
  db.command('maintain')
    .description('Upkeep of the store, safe beside workers and readers. A lake: merges small files, expires snapshots older than --keep-days, and deletes files no kept snapshot lists; nothing younger than --grace-hours is expired or deleted. A DuckDB file: a checkpoint. Either: with CBP_RETENTION_DAYS set (opt-in), deletes loaded landing files and archived journal segments older than that, and reports them')
    .option('--keep-days <n>', 'snapshots younger than this are kept (time travel)', '7')
    .option('--grace-hours <n>', 'nothing younger is expired or deleted, 1 or more (longer than any step runs: a step still on an older snapshot needs it)', '24')
    .option('--flush-inlined', 'also write rows an older cbp kept in the lake\'s catalog (inlined) out to Parquet; only with every other cbp process stopped')
    .option('--json', 'print the result as JSON')
    .action(async (o: { keepDays: string; graceHours: string; flushInlined?: boolean; json?: boolean }) => {
      if (!/^\d+$/.test(o.keepDays)) throw new UsageError(`--keep-days must be a whole number, 0 or more, got ${JSON.stringify(o.keepDays)}`);
      // Under an hour, a worker or reader still on an older snapshot could find its files gone.
      if (!/^\d+$/.test(o.graceHours) || Number(o.graceHours) < 1) throw new UsageError(`--grace-hours must be a whole number of hours, 1 or more (a reader or writer still on an older snapshot needs its files), got ${JSON.stringify(o.graceHours)}`);
      const { openStore } = await import('../../store/db.ts');
      const { maintainStore } = await import('../../store/lake-maintain.ts');
      const { applyRetention, retentionLine } = await import('../../store/retention.ts');
      const cfg = ctx.config();
      const store = await openStore(configuredStore(cfg));
      try {
        const m = await maintainStore(store, { keepDays: Number(o.keepDays), graceHours: Number(o.graceHours), flushInlined: o.flushInlined });
        // Opt-in (CBP_RETENTION_DAYS): loaded raw files past the age; reported either way.
        const retention = await applyRetention(store, { days: cfg.retentionDays, dataDir: cfg.dataDir, journalDir: cfg.journalDir });
        const r = { ...m, retention };
        ctx.out(r, (x: typeof r) => `${x.lake
          ? `${x.store}: ${o.flushInlined ? `${x.flushedTables} tables' inlined rows written out, ` : ''}${x.mergedFiles} files merged, ${x.expiredSnapshots} snapshots expired, ${x.deletedFiles + x.deletedOrphans} files deleted; ${x.dataFiles} data files now`
          : `${x.store}: checkpointed (a DuckDB file needs nothing more)`}\n${retentionLine(x.retention)}`, o.json);
      } finally {
        store.close();
      }
    });
  registerBackup(db, ctx);
  db.command('import-file')
    .description('Move a DuckDB file store into the lake CBP_STORE names: every table copied in one commit (all or nothing); the file is only read. The lake must be new.')
    .argument('<file>', 'the DuckDB file of the store (CBP_DB_PATH of the file setup, by default data/cbp.duckdb)')
    .option('--json', 'print the result as JSON')
    .action(async (file: string, o: { json?: boolean }) => {
      const { openStore } = await import('../../store/db.ts');
      const { importFileStore } = await import('../../store/lake-import.ts');
      const cfg = ctx.config();
      const store = await openStore(configuredStore(cfg));
      try {
        const r = await importFileStore(store, file);
        await refreshAfterWrite(store, cfg);
        ctx.out(r, (x) => `${x.rows} rows of ${x.tables.length} tables moved from ${x.from} into ${x.into}`, o.json);
      } finally {
        store.close();
      }
    });
  db.command('snapshot')
    .description('Publish a consistent read-only copy of the store for `cbp sql` and analysts')
    .option('--json', 'print the result as JSON')
    .action(async (o: { json?: boolean }) => {
      const { openStore } = await import('../../store/db.ts');
      const { publishSnapshot } = await import('../../store/snapshot.ts');
      const cfg = ctx.config();
      const lake = configuredLake(cfg);
      if (lake) throw new UsageError(`the store is a lake (${lakeLabel(lake)}), which has no snapshot file: analysts read the lake itself, each read one committed snapshot of it (cbp sql, cbp report, any DuckDB client; docs/lake.md)`);
      const store = await openStore(configuredStore(cfg));
      try {
        const r = await publishSnapshot(store, { snapshotPath: cfg.snapshotPath });
        ctx.out(r, (x: SnapshotResult) => `published ${x.path} (${x.bytes} bytes)`, o.json);
      } finally {
        store.close();
      }
    });
}
