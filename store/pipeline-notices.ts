// Pipeline notices (pipeline_failed, pipeline_recovered) in the notice history (table alerts), so that the outbox
// sends them through the configured notifiers like any other notice. What they say is alerts/pipeline-notices.ts's.
import type { Store } from './db.ts';
import type { Notice } from './alerts.ts';
import { upsertSql } from './upsert.ts';
import { sqlTimestamp } from '../lib/utc.ts';

export const PIPELINE_KINDS = ['pipeline_failed', 'pipeline_recovered'] as const;

/**
 * The latest pipeline notice of a workflow (program holds the workflow), or null: none yet. An aggregate, not ORDER BY
 * … LIMIT 1: on a lake, each bound a top-N pushes into the scan asks the catalog for the table's files again.
 */
export async function latestPipelineNotice(store: Pick<Store, 'all'>, workflow: string): Promise<Pick<Notice, 'notice_id' | 'kind' | 'level' | 'rule_id'> | null> {
  const rows = await store.all<{ notice_id: string; kind: Notice['kind']; level: string; rule_id: string | null }>(
    `SELECT n.notice_id, n.kind, n.level, n.rule_id FROM (SELECT arg_max({'notice_id': notice_id, 'kind': kind, 'level': level, 'rule_id': rule_id},
      (created_at, notice_id)) AS n FROM alerts WHERE kind IN ('pipeline_failed', 'pipeline_recovered') AND program = $w) WHERE n IS NOT NULL`,
    { w: workflow },
  );
  return rows[0] ?? null;
}

const COLUMNS = [
  'notice_id', 'kind', 'mid', 'network', 'program', 'level', 'previous_level', 'month', 'metric', 'rule_id', 'comparison', 'ratio_threshold',
  'numerator', 'denominator', 'denominator_month', 'ratio', 'ratio_pct', 'ratio_bps', 'is_projection', 'is_partial', 'notify', 'message', 'created_at',
] as const;

/** Records a notice once (its id is already there: nothing changes). Raises the store's generation, as every alert write. */
export async function insertNotice(store: Store, n: Notice): Promise<void> {
  const values = COLUMNS.map((c) => (c === 'created_at' ? sqlTimestamp(new Date(n.created_at)) : n[c]));
  const params = COLUMNS.map((c, i) => `$${i + 1}${c === 'created_at' ? '::TIMESTAMP' : ''}`);
  await store.transaction((s) =>
    s.run(upsertSql(s, { into: 'alerts', columns: COLUMNS, rows: `VALUES (${params.join(', ')})`, key: ['notice_id'] }), values as never),
  );
}
