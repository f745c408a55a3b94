// cbp db: the store's schema (migrations and views) and its published snapshot.
import type { Command } from 'commander';
import { configuredStore } from '../../store/lake.ts';
import type { Ctx } from '../context.ts';
import type { MigrateResult } from '../../store/migrate.ts';
import type { SnapshotResult } from '../../store/snapshot.ts';

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
    .description('Apply pending sql/migrations (once each, checksummed) and recreate sql/views')
    .option('--json', 'print the result as JSON')
    .action(async (o: { json?: boolean }) => {
      const { openStore } = await import('../../store/db.ts');
      const cfg = ctx.config();
      const store = await openStore(configuredStore(cfg));
      try {
        const r = { dbPath: store.dbPath, ...store.migration! };
        ctx.out(r, humanMigrate, o.json);
        if (r.skippedViews.length) process.exitCode = 1;
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
      const store = await openStore(configuredStore(cfg));
      try {
        const r = await publishSnapshot(store, { snapshotPath: cfg.snapshotPath });
        ctx.out(r, (x: SnapshotResult) => `published ${x.path} (${x.bytes} bytes)`, o.json);
      } finally {
        store.close();
      }
    });
}
