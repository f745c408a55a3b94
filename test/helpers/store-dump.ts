// A store's rows as compared between two runs of the same work (a server run and the local runner, a lake and a
// file): every base table and the views named, each row as sorted JSON, leaving out what legitimately differs.
import type { Store } from '../../store/db.ts';

/** Bookkeeping of the runs themselves (ids, times, fetch records), compared separately or not at all. */
// ratio_source_marks, ratio_input_marks: fingerprints of the source rows the ratio table (its kept inputs) reflects,
// load stamps included; ratio_input_logic: when the kept ratio inputs were refreshed; ratio_mart_state: from which
// month the last refresh judged (a lake that took in a file store judges every month once); ratio_forecast_state: which
// of those writes the forecasts are of; ratio_streaks: the runs a refresh starts from, kept of the series with a state
// when their months were judged, so which months are kept depends on the order of the refreshes (ratio_mart shows them).
export const BOOKKEEPING = new Set(['schema_migrations', 'schema_views', 'store_generation', 'runs', 'report_fetches', 'loads', 'event_loads', 'ratio_source_marks', 'ratio_input_marks', 'ratio_input_logic', 'ratio_mart_state', 'ratio_forecast_state', 'ratio_streaks']);
/**
 * Stored in two parts whose split depends on which window's load came first into the empty store (the
 * first-load path: sql/migrations/001_reports.sql); compared through the view that joins them.
 */
export const SPLIT = new Set(['chargeback_status_log', 'chargeback_initial_loads']);
/**
 * Columns (or table.column) that record when, from which file or by which run a row was seen: they legitimately differ.
 * A journal segment's name has its time, and where the receiver closed a segment depends on how fast the run went, so
 * an event's line in its segment differs too (events_raw, and stg_events__all, which shows it).
 */
export const VOLATILE =
  /(^events_raw\.line$|^stg_events__all\.line$|_seen_at$|^seen_at$|loaded_at$|^landing_file$|^sha256$|fetched_at$|^done_at$|^run_id$|^created_at$|^updated_at$|^recorded_at$|^seen_active_at$|^deleted_at$|^pushed_at$|^sent_at$|^next_attempt_at$|^changed_at$|^explained_at$|^judged_at$|^evaluated_at$|^written_at$|^received_at$|^segment$|^forecast_at$)/;

const big = (_k: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

/** Each base table's rows (and each of `views`'), sorted; runs by workflow, status and as-of only. */
export async function dumpStore(store: Store, views: readonly string[] = ['chargeback_status_history'], opts: { volatile?: RegExp } = {}): Promise<Record<string, string[]>> {
  const volatile = opts.volatile ?? VOLATILE;
  const tables = await store.all<{ table_name: string }>(
    "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() AND table_schema = 'main' AND table_type = 'BASE TABLE' ORDER BY table_name",
  );
  const out: Record<string, string[]> = {};
  for (const t of [...tables.map((x) => x.table_name), ...views]) {
    if (BOOKKEEPING.has(t) || SPLIT.has(t)) continue;
    const rows = await store.all<Record<string, unknown>>(`SELECT * FROM "${t}"`);
    out[t] = rows.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).filter(([k]) => !volatile.test(k) && !volatile.test(`${t}.${k}`))), big)).sort();
  }
  const runs = await store.all<{ workflow: string; status: string; as_of: unknown }>('SELECT workflow, status, as_of FROM runs');
  out.runs = runs.map((r) => JSON.stringify(r, big)).sort();
  return out;
}
