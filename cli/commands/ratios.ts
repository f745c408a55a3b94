// cbp ratios: the ratio table with the level each row reaches (rules from CBP_THRESHOLDS_FILE or the
// reference defaults). Reads the published snapshot, else the store opened read-only.
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { NotFoundError, UsageError } from '../../lib/errors.ts';
import type { Store } from '../../store/db.ts';
import { evaluateRows, type RatioRow } from '../../rules/evaluate.ts';
import { evaluateProjections } from '../../rules/projection.ts';
import { loadRules, PROGRAMS, type RuleSet } from '../../rules/thresholds.ts';
import { ruleTargets } from '../../alerts/engine.ts';
import { forEachRatioBatch } from '../../store/ratios.ts';

/**
 * The snapshot when one is published (or named), else the store itself, read-only; either way opened as an
 * analyst session (store/analyst.ts: no file or network access, configuration locked).
 */
export async function openForReading(ctx: Ctx, snapshot?: string): Promise<Store> {
  const cfg = ctx.config();
  const snap = snapshot ?? cfg.snapshotPath;
  const analyst = await import('../../store/analyst.ts');
  if (snapshot || existsSync(snap)) return analyst.openSnapshotSession(snap, { workingStore: cfg.dbPath, memoryLimit: cfg.storeMemoryLimit });
  if (!existsSync(cfg.dbPath)) throw new NotFoundError(`Neither a snapshot (${snap}) nor a store (${cfg.dbPath}) exists yet: load some reports first.`);
  return analyst.openAnalystSession(cfg.dbPath, { memoryLimit: cfg.storeMemoryLimit });
}

export interface RatioOutRow {
  mid: string;
  network: string;
  program: string;
  metric: string;
  month: string;
  numerator: number | null;
  denominator: number | null;
  denominator_month: string | null;
  ratio: number | null;
  ratio_pct: number | null;
  ratio_bps: number | null;
  no_ratio_reason: string | null;
  is_projection: boolean;
  is_partial: boolean;
  level: string | null;
}

/** Ratio rows with the highest level their mid × network × program reaches that month. */
export function withLevels(rows: RatioRow[], rules: RuleSet): RatioOutRow[] {
  const targets = new Set(ruleTargets(rules));
  const key = (r: { mid: string; network: string; program: string; month: string }) => `${r.mid}\u0000${r.network}\u0000${r.program}\u0000${r.month}`;
  const actual = new Map(evaluateRows(rows, rules).map((l) => [key(l), l.level]));
  const projected = new Map(evaluateProjections(rows, rules).map((l) => [key(l), l.level]));
  return rows.map((r) => ({
    mid: r.mid, network: r.network, program: r.program, metric: r.metric, month: r.month,
    numerator: r.numerator, denominator: r.denominator, denominator_month: r.denominator_month,
    ratio: r.ratio, ratio_pct: r.ratio_pct, ratio_bps: r.ratio_bps, no_ratio_reason: r.no_ratio_reason,
    is_projection: r.is_projection, is_partial: r.is_partial,
    level: targets.has(`${r.network}|${r.program}|${r.metric}`) ? ((r.is_projection ? projected : actual).get(key(r)) ?? null) : null,
  }));
}

function fmt(n: number | null, digits = 3): string {
  return n === null ? '-' : Number.isInteger(n) ? String(n) : n.toFixed(digits);
}

export function renderRatios(rows: RatioOutRow[]): string {
  const head = ['mid', 'network', 'program', 'metric', 'month', 'numerator', 'denominator', 'den. month', 'ratio %', 'bps', 'level', 'note'];
  const body = rows.map((r) => [
    r.mid, r.network, r.program, r.metric, r.month, fmt(r.numerator, 2), fmt(r.denominator, 2), r.denominator_month ?? '-',
    r.ratio_pct === null ? '-' : r.ratio_pct.toFixed(4), r.ratio_bps === null ? '-' : r.ratio_bps.toFixed(2), r.level ?? '-',
    [r.is_projection ? 'PROJECTION to month end' : r.is_partial ? 'month to date' : '', r.no_ratio_reason ?? ''].filter(Boolean).join('; '),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(widths[i])).join('  ').trimEnd();
  return [line(head), ...body.map(line), `(${rows.length} row${rows.length === 1 ? '' : 's'})`].join('\n');
}

export function register(program: Command, ctx: Ctx): void {
  program
    .command('ratios')
    .description('Chargeback ratios per MID, network, program and month, with the level each reaches')
    .option('--month <YYYY-MM>', 'only this month (levels still use the months before it)')
    .option('--mid <mid>', 'only this MID')
    .option('--program <program>', `only this program (${PROGRAMS.join(', ')})`)
    .option('--no-projection', 'leave out the projected rows of open months')
    .option('--snapshot <file>', 'snapshot to read (default CBP_SNAPSHOT_PATH; the store read-only when none exists)')
    .option('--json', 'print an array of rows (ratio as an unrounded fraction)')
    .action(async (o: { month?: string; mid?: string; program?: string; projection: boolean; snapshot?: string; json?: boolean }) => {
      if (o.month !== undefined && !/^\d{4}-(0[1-9]|1[0-2])$/.test(o.month)) throw new UsageError(`--month must be YYYY-MM, got ${JSON.stringify(o.month)}`);
      if (o.program !== undefined && !(PROGRAMS as readonly string[]).includes(o.program)) {
        throw new UsageError(`--program: unknown program ${JSON.stringify(o.program)}; expected one of ${PROGRAMS.join(', ')}`);
      }
      const rules = loadRules(ctx.config().thresholdsFile, { defaultRegion: ctx.config().defaultRegion });
      const store = await openForReading(ctx, o.snapshot);
      const out: RatioOutRow[] = [];
      try {
        // Levels need each MID's earlier months, so whole MIDs are read (in batches) and cut to --month after.
        await forEachRatioBatch(store, { mid: o.mid, asOf: o.month ? `${o.month}-01T00:00:00Z` : undefined }, (rows) => {
          for (const r of withLevels(rows, rules)) {
            if (o.month && r.month !== o.month) continue;
            if (o.program && r.program !== o.program) continue;
            if (!o.projection && r.is_projection) continue;
            out.push(r);
          }
        });
      } finally {
        store.close();
      }
      ctx.out(out, renderRatios, o.json);
    });
}
