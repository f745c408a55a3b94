// cbp sql: analysts' queries against the published snapshot (opened read-only, so a query never blocks
// the pipeline and never sees a half-finished load), in a session that cannot read or write other files,
// attach databases, load extensions or change its settings (store/analyst.ts).
import { readFileSync, existsSync } from 'node:fs';
import { configuredLake } from '../../store/lake.ts';
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { stringify } from 'csv-stringify/sync';
import { NotFoundError, UsageError } from '../../lib/errors.ts';

type Cell = string | number | boolean | null | Cell[] | { [k: string]: Cell };

function cellText(v: Cell): string {
  if (v === null) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export function renderTable(columns: string[], rows: Cell[][]): string {
  const text = rows.map((r) => r.map(cellText));
  const widths = columns.map((c, i) => Math.min(60, Math.max(c.length, ...text.map((r) => r[i].length))));
  const cut = (s: string, w: number) => (s.length > w ? `${s.slice(0, w - 1)}…` : s.padEnd(w));
  const line = (cells: string[]) => cells.map((c, i) => cut(c, widths[i])).join(' | ').trimEnd();
  return [line(columns), widths.map((w) => '-'.repeat(w)).join('-+-'), ...text.map(line), `(${rows.length} row${rows.length === 1 ? '' : 's'})`].join('\n');
}

export function register(program: Command, ctx: Ctx): void {
  program
    .command('sql')
    .description('Run a query against the published snapshot (read-only, no file access: files come from `cbp export`); see sql/queries/ for worked examples')
    .argument('[query]', 'SQL to run (or use --file)')
    .option('--file <file>', 'read the SQL from a file, e.g. sql/queries/top_reason_codes.sql')
    .option('--format <format>', 'table, csv or json', 'table')
    .option('--snapshot <file>', 'snapshot to query (default CBP_SNAPSHOT_PATH, <CBP_DATA_DIR>/published/cbp.duckdb)')
    .action(async (query: string | undefined, o: { file?: string; format: string; snapshot?: string }) => {
      const format = o.format.trim().toLowerCase();
      if (!['table', 'csv', 'json'].includes(format)) throw new UsageError(`--format must be table, csv or json, got ${JSON.stringify(o.format)}`);
      if (query && o.file) throw new UsageError('give a query or --file, not both');
      if (!query && !o.file) throw new UsageError('give a query, e.g. cbp sql "SELECT count(*) FROM chargebacks", or --file FILE');
      if (o.file && !existsSync(o.file)) throw new NotFoundError(`query file ${o.file} does not exist`);
      const sql = query ?? readFileSync(o.file!, 'utf8');
      const cfg = ctx.config();
      const snapshot = o.snapshot ?? cfg.snapshotPath;
      const { openLakeAnalystSession, openSnapshotSession, runAnalystQuery } = await import('../../store/analyst.ts');
      // A lake is read in place (its latest committed snapshot); any file given as --snapshot opens the same locked way;
      // the working store file is refused (a reader holds its lock).
      const lake = o.snapshot === undefined ? configuredLake(cfg) : undefined;
      const store = lake
        ? await openLakeAnalystSession(lake, { memoryLimit: cfg.storeMemoryLimit })
        : await openSnapshotSession(snapshot, { workingStore: cfg.dbPath, memoryLimit: cfg.storeMemoryLimit });
      try {
        const reader = await runAnalystQuery(store, sql, { notice: (m) => process.stderr.write(`cbp sql: ${m}\n`) });
        // The ratio mart is a kept table: a query of it is told when the snapshot's data is ahead of its ratios.
        if (/\bmart_ratios\b/i.test(sql)) {
          const { martFreshness } = await import('../../store/ratio-mart.ts');
          const behind = await martFreshness(store).then((f) => f.behind, () => null);
          if (behind) process.stderr.write(`cbp sql: mart_ratios is behind the data: ${behind}\n`);
        }
        const columns = reader.columnNames();
        const rows = reader.getRowsJson() as Cell[][];
        if (format === 'json') {
          const objs = rows.map((r) => Object.fromEntries(columns.map((c, i) => [c, r[i]])));
          process.stdout.write(JSON.stringify(objs, null, 2) + '\n');
        } else if (format === 'csv') {
          process.stdout.write(stringify([columns, ...rows.map((r) => r.map(cellText))]));
        } else {
          process.stdout.write(renderTable(columns, rows) + '\n');
        }
      } finally {
        store.close();
      }
    });
}
