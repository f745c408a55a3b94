// cbp export: the published snapshot's marts and facts as Parquet or CSV files for other tools (store/export.ts).
// `cbp sql` cannot write files; this is where files come from.
import type { Command } from 'commander';
import { configuredLake } from '../../store/lake.ts';
import type { Ctx } from '../context.ts';
import { UsageError } from '../../lib/errors.ts';
import { dayOption } from '../options.ts';
import type { ExportResult } from '../../store/export.ts';
import { EXPORT_TABLES } from '../../store/export-tables.ts';

function human(r: ExportResult): string {
  const width = Math.max(...r.tables.map((t) => t.name.length));
  const lines = [
    `${r.replaced ? 'replaced the export in' : 'exported to'} ${r.outDir} (${r.format}) from ${r.snapshot}` +
      (r.from || r.to ? `, ${r.from ?? '…'} to ${r.to ?? '…'}` : ''),
    ...r.tables.map(
      (t) => `  ${t.name.padEnd(width)}  ${String(t.rows).padStart(9)} rows  ${t.files.length} file${t.files.length === 1 ? '' : 's'}${t.partitionedBy ? ' (by month)' : ''}`,
    ),
    `manifest: ${r.outDir}/cbp-export.json`,
  ];
  return lines.join('\n');
}

export function register(program: Command, ctx: Ctx): void {
  program
    .command('export')
    .description('Write the published snapshot\'s marts and facts as Parquet or CSV files (tables with a date partitioned by month)')
    .requiredOption('--out <dir>', 'folder to write (new, empty, or a previous cbp export, which is replaced)')
    .option('--format <format>', 'parquet or csv', 'parquet')
    .option('--table <name...>', 'only these tables (repeat, or separate with commas; default: all below)')
    .option('--from <YYYY-MM-DD>', 'only rows dated on or after this UTC day (monthly tables: months from this one)', dayOption('--from'))
    .option('--to <YYYY-MM-DD>', 'only rows dated on or before this UTC day (monthly tables: months up to this one)', dayOption('--to'))
    .option('--snapshot <file>', 'snapshot to export (default CBP_SNAPSHOT_PATH)')
    .option('--json', 'print the manifest as JSON')
    .addHelpText(
      'after',
      [
        '',
        'Tables (the snapshot\'s names; each in its own folder, OUT/<table>/month=YYYY-MM/… when it has a date):',
        ...EXPORT_TABLES.map((t) => `  ${t.name.padEnd(30)} ${t.about}`),
        '',
        'Tables without a date are exported whole even with --from/--to. OUT/cbp-export.json lists every file.',
        'Read back: duckdb -c "SELECT * FROM read_parquet(\'OUT/mart_chargebacks/**/*.parquet\')"',
      ].join('\n'),
    )
    .action(async (o: { out: string; format: string; table?: string[]; from?: string; to?: string; snapshot?: string; json?: boolean }) => {
      const format = o.format.trim().toLowerCase();
      if (format !== 'parquet' && format !== 'csv') throw new UsageError(`--format must be parquet or csv, got ${JSON.stringify(o.format)}`);
      if (o.from && o.to && o.from > o.to) throw new UsageError(`--from ${o.from} is after --to ${o.to}`);
      const cfg = ctx.config();
      // The ratio table judged by the rules in force and the data as it is, before it is written out.
      const [{ loadRules }, { refreshBeforeReading }] = await Promise.all([import('../../rules/thresholds.ts'), import('../kept-table.ts')]);
      await refreshBeforeReading(cfg, loadRules(cfg.thresholdsFile, { defaultRegion: cfg.defaultRegion }), o.snapshot);
      const { exportSnapshot } = await import('../../store/export.ts');
      const r = await exportSnapshot({
        snapshotPath: o.snapshot ?? cfg.snapshotPath,
        outDir: o.out,
        format,
        tables: o.table,
        from: o.from,
        to: o.to,
        workingStore: cfg.dbPath,
        memoryLimit: cfg.storeMemoryLimit,
        lake: o.snapshot === undefined ? configuredLake(cfg) : undefined,
      });
      if (r.ratiosBehind) process.stderr.write(`cbp export: mart_ratios was written as it is, behind the data: ${r.ratiosBehind}\n`);
      ctx.out(r, human, o.json);
    });
}
