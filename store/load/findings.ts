// What a finished load tells its user (cbp load): why its rows were quarantined, and which of its MIDs no MID report
// names (their cases count in no ratio until one does).
import type { ReportKind } from '../../contract/reporting.ts';
import type { Store } from '../db.ts';

type ReadStore = Pick<Store, 'all'>;
type CaseKind = Exclude<ReportKind, 'mid_report'>;

/** Where a kind's loaded cases are, and their key. */
const CASES: Record<CaseKind, { table: string; key: string }> = {
  chargebacks: { table: 'chargebacks', key: 'case_number' },
  prevention: { table: 'prevention_alerts', key: 'alert_case_id' },
};

/** The reason of the first quarantined row of a landing file (by reason), or null. */
export async function firstQuarantineReason(store: ReadStore, landing: string): Promise<string | null> {
  const [first] = await store.all<{ reason: string }>('SELECT reason FROM quarantine WHERE landing_file = $1 ORDER BY reason LIMIT 1', [landing]);
  return first?.reason ?? null;
}

/** The MIDs of a landing file's chargebacks or prevention alerts that no MID report names, the first of them, and whether any MID report is loaded. */
export async function unknownMidsOf(store: ReadStore, kind: CaseKind, landing: string): Promise<{ count: number; first: string | null; anyMidReport: boolean }> {
  const { table } = CASES[kind];
  const [c] = await store.all<{ n: bigint; first: string | null; known: bigint }>(
    `SELECT count(DISTINCT mid) AS n, min(mid) AS first, (SELECT count(*) FROM (SELECT mid FROM mid_stats LIMIT 1)) AS known
       FROM ${table} WHERE landing_file = $1 AND mid IS NOT NULL AND mid NOT IN (SELECT DISTINCT mid FROM mid_stats)`, [landing]);
  return { count: Number(c?.n ?? 0), first: c?.first ?? null, anyMidReport: Number(c?.known ?? 0) > 0 };
}

/** A landing file's cases received outside the window it was loaded for: how many, and the first by date. */
export async function outsideWindow(store: ReadStore, kind: CaseKind, landing: string, w: { from: string; to: string }): Promise<{ count: number; first: string | null }> {
  const { table, key } = CASES[kind];
  const [c] = await store.all<{ n: bigint; first: string | null }>(
    `SELECT count(*) AS n, arg_min(${key} || ' (' || strftime(date_received, '%Y-%m-%d') || ')', date_received) AS first FROM ${table}
      WHERE landing_file = $1 AND (date_received < $2::DATE OR date_received >= $3::DATE + 1)`, [landing, w.from, w.to]);
  return { count: Number(c?.n ?? 0), first: c?.first ?? null };
}
