// The run log (table `runs`, migration 005): one row per workflow run, written by the recordRun activity at
// the run's end and read by `cbp status` (store/status.ts).
import type { Store } from './db.ts';
import { upsertSql } from './upsert.ts';

export interface RunRow {
  runId: string;
  /** The workflow's name (activities/types.ts WorkflowName). */
  workflow: string;
  status: 'ok' | 'failed';
  /** ISO 8601 instants (any offset; stored as UTC). */
  startedAt: string;
  finishedAt: string;
  /** The nominal time the run covers (nightly: the schedule's time). */
  asOf?: string;
  /** What the run did; counts and ids, never secrets. */
  summary: Record<string, unknown>;
  error?: string;
}

/**
 * Records a run, replacing an earlier record of the same run id (a retried activity, a re-run). The run log
 * does not raise the store's generation: a run is recorded after its own publish, and a snapshot one run
 * record behind is not stale (docs/spec-decisions.md, status).
 */
export async function recordRun(store: Store, run: RunRow): Promise<void> {
  await store.transaction(
    (s) =>
      s.run(
        upsertSql(s, {
          into: 'runs',
          columns: ['run_id', 'workflow', 'status', 'started_at', 'finished_at', 'as_of', 'summary', 'error'],
          rows: 'VALUES ($1, $2, $3, $4::TIMESTAMPTZ::TIMESTAMP, $5::TIMESTAMPTZ::TIMESTAMP, $6::TIMESTAMPTZ::TIMESTAMP, $7::JSON, $8)',
          key: ['run_id'],
          set: Object.fromEntries(['workflow', 'status', 'started_at', 'finished_at', 'as_of', 'summary', 'error'].map((c) => [c, `excluded.${c}`])),
        }),
        [run.runId, run.workflow, run.status, run.startedAt, run.finishedAt, run.asOf ?? null, JSON.stringify(run.summary ?? {}), run.error ?? null],
      ),
    { generation: false },
  );
}
