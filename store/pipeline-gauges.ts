// The pipeline's state as numbers an operator alerts on (activities/pipeline-metrics.ts turns them into Prometheus gauges):
// the last successful run of each workflow, the data covered per report kind, the alert levels in force, the
// quarantine, the rejected orders and the snapshot's lag behind the store. Read from the store (the worker's own,
// or read-only by `cbp metrics`) or, while a writer holds it, from the snapshot, which cannot tell its own lag.
import { statSync } from 'node:fs';
import type { Store } from './db.ts';
import { alertsInForce, quarantineByKind } from './status.ts';
import { coverageSpans, spanCoveredTo } from './windows.ts';
import { rejectedOrders } from './orders.ts';
import { storeVersion } from './generation.ts';
import { snapshotFileGeneration } from './snapshot.ts';
import { REPORT_KINDS } from '../contract/reporting.ts';

/** Every kind a quarantine row can have: the report kinds (store/load) and the webhook's events (store/ingest.ts). */
export const QUARANTINE_KINDS: readonly string[] = [...REPORT_KINDS, 'event'];

export interface PipelineGauges {
  /** Where the figures come from: the store, or the snapshot while a writer holds the store. */
  source: 'store' | 'snapshot';
  lastSuccess: Array<{ workflow: string; at: string }>;
  coveredTo: Array<{ kind: string; at: string }>;
  /** Series (mid × network × program) at each level in their latest month evaluated. */
  alertLevels: Array<{ network: string; program: string; level: string; series: number }>;
  /** Every known kind, 0 where none: an alert on growth sees a kind's first rows as a rise from 0. */
  quarantine: Array<{ kind: string; rows: number }>;
  rejectedOrders: number;
  snapshot: {
    exists: boolean;
    /** When the snapshot file was last published (its mtime), UTC ISO 8601. */
    publishedAt: string | null;
    generation: number | null;
    storeGeneration: number | null;
    /** Store generations the snapshot lacks; null when it cannot be told (read from the snapshot, or another store's copy). */
    generationsBehind: number | null;
  };
}

async function orNone<T>(read: () => Promise<T>, none: T): Promise<T> {
  try {
    return await read();
  } catch {
    // An older store or snapshot without this table: nothing to count.
    return none;
  }
}

/** The quarantine's counts with a 0 for every known kind without rows (any other kind kept as found), by kind. */
function withEveryKind(found: Array<{ kind: string; rows: number }>): Array<{ kind: string; rows: number }> {
  const rows = new Map<string, number>(QUARANTINE_KINDS.map((k) => [k, 0]));
  for (const q of found) rows.set(q.kind, q.rows);
  return [...rows].map(([kind, n]) => ({ kind, rows: n })).sort((a, b) => a.kind.localeCompare(b.kind));
}

/** Reads the gauges' figures; `source` says whether `store` is the store itself or the snapshot. */
export async function readPipelineGauges(store: Store, opts: { snapshotPath: string; source: 'store' | 'snapshot' }): Promise<PipelineGauges> {
  const lastSuccess = await orNone(
    () => store.all<{ workflow: string; at: string }>(`SELECT workflow, strftime(max(finished_at), '%Y-%m-%dT%H:%M:%SZ') AS at FROM runs WHERE status = 'ok' GROUP BY workflow ORDER BY workflow`),
    [],
  );
  const covered = new Map<string, string>();
  for (const span of await orNone(() => coverageSpans(store), [])) {
    const to = spanCoveredTo(span);
    const prev = covered.get(span.kind);
    if (!prev || Date.parse(to) > Date.parse(prev)) covered.set(span.kind, to);
  }
  const levels = new Map<string, { network: string; program: string; level: string; series: number }>();
  for (const a of await alertsInForce(store)) {
    const key = `${a.network}\u0000${a.program}\u0000${a.level}`;
    const cur = levels.get(key) ?? { network: a.network, program: a.program, level: a.level, series: 0 };
    cur.series++;
    levels.set(key, cur);
  }
  const rejected = await orNone(async () => (await rejectedOrders(store, { limit: 0 })).total, 0);
  const own = await orNone(() => storeVersion(store), { storeId: null, generation: null });
  const snap = opts.source === 'snapshot' ? { exists: true, ...own } : await snapshotFileGeneration(opts.snapshotPath);
  const same = opts.source === 'store' && snap.storeId !== null && snap.storeId === own.storeId;
  let publishedAt: string | null = null;
  try {
    publishedAt = statSync(opts.snapshotPath).mtime.toISOString();
  } catch {
    // Not published yet.
  }
  return {
    source: opts.source,
    lastSuccess: lastSuccess.map((r) => ({ workflow: r.workflow, at: r.at })),
    coveredTo: [...covered].map(([kind, at]) => ({ kind, at })).sort((a, b) => a.kind.localeCompare(b.kind)),
    alertLevels: [...levels.values()],
    quarantine: withEveryKind(await quarantineByKind(store)),
    rejectedOrders: Number(rejected),
    snapshot: {
      exists: snap.exists,
      publishedAt,
      generation: snap.generation,
      storeGeneration: opts.source === 'store' ? own.generation : null,
      generationsBehind: same && own.generation !== null && snap.generation !== null ? Math.max(0, own.generation - snap.generation) : null,
    },
  };
}
