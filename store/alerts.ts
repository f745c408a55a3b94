// The alert tables (sql/migrations/005_alerts.sql): alert_states (each level's status per month), alerts (the
// notice history) and alert_outbox (one delivery per notice × notifier): their types and flags here; the notice history's
// and the deliveries' statements in store/alert-history.ts, the records' in store/alert-record.ts, the states read back
// in store/alert-states.ts. What to write is decided elsewhere: alerts/notices.ts derives notices and states (pure),
// alerts/engine.ts and alerts/outbox.ts run evaluation and delivery through these modules. Every write goes through
// Store.transaction, which raises the store's generation: the snapshot's publish step then knows the alert
// history or a delivery state changed (what `cbp alerts` shows analysts).
import type { Store } from './db.ts';

/** A store that can only be read (a snapshot opened read-only fits too). */
type ReadStore = Pick<Store, 'all'>;

/** unknown: a series at a level or in a watch band whose month cannot be judged (a source not loaded): the level is held.
 * due: a representment deadline near or passed (alerts/due.ts).
 * pipeline_failed / pipeline_recovered: a workflow failed for good, and its next success (alerts/pipeline-notices.ts). */
export const NOTICE_KINDS = ['reached', 'escalated', 'resolved', 'projected', 'likely', 'watch', 'unknown', 'due', 'pipeline_failed', 'pipeline_recovered'] as const;
export type NoticeKind = (typeof NOTICE_KINDS)[number];

/** A notice: one row of the alerts table, and what notifiers are sent. */
export interface Notice {
  notice_id: string;
  kind: NoticeKind;
  mid: string;
  network: string;
  program: string;
  level: string;
  previous_level: string | null;
  month: string;
  metric: string | null;
  rule_id: string | null;
  comparison: string | null;
  ratio_threshold: number | null;
  numerator: number | null;
  denominator: number | null;
  denominator_month: string | null;
  ratio: number | null;
  ratio_pct: number | null;
  ratio_bps: number | null;
  is_projection: boolean;
  is_partial: boolean;
  notify: boolean;
  message: string;
  created_at: string;
  /** A `due` notice's case and its due date (YYYY-MM-DD), from due_notices (alerts/due.ts). */
  case_number?: string;
  due_date?: string;
}

/** One row of alert_states: a level's status (projected | reached | resolved) for a month. */
export interface AlertStateRow {
  mid: string;
  network: string;
  program: string;
  level: string;
  month: string;
  status: 'projected' | 'reached' | 'resolved';
  rank: number;
  ratio: number | null;
  numerator: number | null;
  denominator: number | null;
  is_partial: boolean;
  /**
   * first_seen_at of a new state, updated_at of one whose status, rank, figures or is_partial changed (UTC ISO); one
   * recorded as it is now is not rewritten
   */
  seen: string;
}

/**
 * A month an earlier evaluation recorded for a level, with its status then and, when read from the store, the figures
 * it was recorded with (what a state must differ in to be written again: store/alert-record.ts recordJudgement).
 */
export interface RecordedState {
  mid: string;
  network: string;
  program: string;
  level: string;
  month: string;
  status: string;
  rank?: number;
  ratio?: number | null;
  numerator?: number | null;
  denominator?: number | null;
  is_partial?: boolean;
}

/** One notifier's delivery of a notice (an alert_outbox row). */
export interface Delivery {
  notifier: string;
  /** pending | sent | failed (given up; `cbp alerts requeue` puts it back) */
  status: string;
  attempts: number;
  /** The last failure, secrets redacted; null once sent. */
  last_error: string | null;
  next_attempt_at: string | null;
  sent_at: string | null;
}

export interface OutboxRow {
  notice_id: string;
  notifier: string;
  status: string;
  attempts: number;
  last_error: string | null;
}

/** Every notice recorded so far: notice_id → notify (false: recorded as history only). */
export async function noticeFlags(store: ReadStore): Promise<Map<string, boolean>> {
  const rows = await store.all<{ notice_id: string; notify: boolean }>('SELECT notice_id, notify FROM alerts');
  return new Map(rows.map((r) => [r.notice_id, r.notify === true]));
}
