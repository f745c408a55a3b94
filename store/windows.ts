// Report windows in the store: which fetched windows the service had finished when it answered
// (windows_done, skipped by later backfills), and what every fetch saw (report_fetches: the service's clock
// at the answer, so what the loaded data covers is known, whatever range was asked for). Migration 008.
import type { Store } from './db.ts';
import { upsertSql } from './upsert.ts';
import { windowBounds, windowComplete, windowId, type Window } from '../lib/utc.ts';

export interface ReportFetch {
  kind: string;
  window: Window;
  /** The service's clock when it answered (ISO UTC). */
  serviceTime: string;
  /** The local clock when it answered (ISO UTC). */
  fetchedAt: string;
  records: number;
  quarantined: number;
  runId?: string;
}

/** Whether the service, answering at `serviceTime`, had finished the window (its end at or before it); an unreadable time finishes none. */
function windowFinishedAt(w: Window, serviceTime: string): boolean {
  return !Number.isNaN(Date.parse(serviceTime)) && windowComplete(w, serviceTime);
}

/**
 * Records a fetch of a window. A window fetched again keeps the latest service time any of its fetches saw
 * (loads never let an older observation replace a newer one, so the data is known up to that time).
 */
export async function recordReportFetch(store: Store, f: ReportFetch): Promise<void> {
  await store.transaction((s) =>
    s.run(
      upsertSql(s, {
        into: 'report_fetches',
        columns: ['kind', 'window_start', 'window_end', 'service_time', 'fetched_at', 'records', 'quarantined', 'run_id'],
        rows: 'VALUES ($1, $2::DATE, $3::DATE, $4::TIMESTAMPTZ::TIMESTAMP, $5::TIMESTAMPTZ::TIMESTAMP, $6, $7, $8)',
        key: ['kind', 'window_start', 'window_end'],
        set: {
          service_time: 'greatest(report_fetches.service_time, excluded.service_time)', fetched_at: 'excluded.fetched_at', records: 'excluded.records',
          quarantined: 'excluded.quarantined', run_id: 'excluded.run_id',
        },
      }),
      [f.kind, f.window.from, f.window.to, f.serviceTime, f.fetchedAt, f.records, f.quarantined, f.runId ?? null],
    ),
  );
}

/** The ids (`from..to`) of the given windows of `kind` recorded as done. */
export async function doneWindowIds(store: Store, kind: string, windows: Window[]): Promise<string[]> {
  if (windows.length === 0) return [];
  const rows = await store.all<{ window_id: string }>('SELECT window_id FROM windows_done WHERE kind = $1', [kind]);
  const done = new Set(rows.map((r) => r.window_id));
  return windows.map(windowId).filter((id) => done.has(id));
}

/**
 * Records a loaded window's outcome. Finished by the service's clock (`serviceTime` at or after its end):
 * recorded as done, with that time. Not finished: left open, and a done mark recorded earlier is removed
 * (it was wrong: the window was re-fetched and is still running). Returns whether it is done.
 */
export async function recordWindowOutcome(
  store: Store,
  o: { kind: string; window: Window; records: number; quarantined: number; landingFile?: string | null; serviceTime: string; doneAt: string; runId?: string },
): Promise<boolean> {
  const done = windowFinishedAt(o.window, o.serviceTime);
  await store.transaction(async (s) => {
    if (!done) {
      await s.run('DELETE FROM windows_done WHERE kind = $1 AND window_id = $2', [o.kind, windowId(o.window)]);
      return;
    }
    await s.run(
      upsertSql(s, {
        into: 'windows_done',
        columns: ['kind', 'window_id', 'window_start', 'window_end', 'records', 'quarantined', 'landing_file', 'run_id', 'done_at', 'service_time'],
        rows: 'VALUES ($1, $2, $3::DATE, $4::DATE, $5, $6, $7, $8, $9::TIMESTAMPTZ::TIMESTAMP, $10::TIMESTAMPTZ::TIMESTAMP)',
        key: ['kind', 'window_id'],
        set: {
          records: 'excluded.records', quarantined: 'excluded.quarantined', landing_file: 'excluded.landing_file', run_id: 'excluded.run_id',
          done_at: 'excluded.done_at', service_time: 'excluded.service_time',
        },
      }),
      [o.kind, windowId(o.window), o.window.from, o.window.to, o.records, o.quarantined, o.landingFile ?? null, o.runId ?? null, o.doneAt, o.serviceTime],
    );
  });
  return done;
}

/**
 * A span of days of one kind whose data the store holds, known up to `knownUntil` (ISO UTC; null: the whole
 * span). From: every fetch (up to the service's clock at its answer), windows recorded as done (whole: a
 * mark older than migration 008 has no service time and was kept only when its last day was over), and
 * report files loaded by hand (`cbp load` with a window; up to the time their rows were observed). Loads of
 * fetched files older than 008 count only once fetched again: when the service answered them is not known.
 */
export interface CoverageSpan {
  kind: string;
  /** YYYY-MM-DD */
  start: string;
  end: string;
  knownUntil: string | null;
}

export async function coverageSpans(store: Store): Promise<CoverageSpan[]> {
  return store.all<CoverageSpan>(
    `SELECT kind, strftime(window_start, '%Y-%m-%d') AS start, strftime(window_end, '%Y-%m-%d') AS "end",
            strftime(service_time, '%Y-%m-%dT%H:%M:%SZ') AS "knownUntil"
       FROM report_fetches
     UNION ALL
     SELECT kind, strftime(window_start, '%Y-%m-%d'), strftime(window_end, '%Y-%m-%d'), strftime(service_time, '%Y-%m-%dT%H:%M:%SZ')
       FROM windows_done
     UNION ALL
     SELECT l.kind, strftime(l.window_start, '%Y-%m-%d'), strftime(l.window_end, '%Y-%m-%d'), strftime(max(l.seen_at), '%Y-%m-%dT%H:%M:%SZ')
       FROM loads l
      WHERE l.window_start IS NOT NULL AND l.window_end IS NOT NULL
        -- landing.ts importReport's name: a file the user loaded; fetched files are told by report_fetches
        AND regexp_matches(l.landing_file, 'import-[0-9a-f]{12}[.](json|csv)$')
      GROUP BY l.kind, l.window_start, l.window_end`,
  );
}

/** The latest instant a span's data is known for: its last second, or earlier when known only until then. */
export function spanCoveredTo(s: CoverageSpan): string {
  const end = windowBounds({ from: s.start, to: s.end }).end;
  if (s.knownUntil === null) return end;
  return Date.parse(s.knownUntil) < Date.parse(end) ? s.knownUntil : end;
}
